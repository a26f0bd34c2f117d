"""Judge clients for the lm-eval path, the verdict cache and judge tools (compare, agreement, rescore, SFT export)."""
