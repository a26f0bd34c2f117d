"""ClinConsensus: data, the Inspect task, the lm-eval glue and log readers."""
