"""The result schema: reading, writing, bits and tolerances."""
