"""Judging results: time, counts, verdicts, compare and history."""
