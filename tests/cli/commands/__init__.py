"""`topos` run as a user runs it: each command end to end, its output, exit statuses and errors."""
