"""ClinConsensus scoring: rubric prompts, verdict parsing, the grading protocol and the summary metrics."""
