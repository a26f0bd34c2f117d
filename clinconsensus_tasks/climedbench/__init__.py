"""CliMedBench: data, the Inspect tasks, the lm-eval glue and the similarity model."""
