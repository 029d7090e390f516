"""The `topos` command: grade gradient routes in isolated processes."""
