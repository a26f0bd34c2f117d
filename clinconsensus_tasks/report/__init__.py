"""The results report: a self-contained HTML page and a Markdown summary from Inspect logs and lm-eval samples."""
