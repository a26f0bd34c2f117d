"""CliMedBench scoring: scenarios and prompts, answer extraction, Kendall's tau, Chinese ROUGE-1."""
