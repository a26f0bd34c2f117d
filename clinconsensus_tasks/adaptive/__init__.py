"""Adaptive testing (IRT) for CliMedBench: the item bank and session engine, and the `cat` commands."""
