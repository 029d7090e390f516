"""The harness: preparing a grade, supervising its workers, counting their work."""
