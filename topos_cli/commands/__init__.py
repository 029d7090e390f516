"""The commands behind `topos`: each parses its options, asks the harness to run and the
report to judge and show, and returns an exit status. The only layer that imports both
the harness and the report."""
