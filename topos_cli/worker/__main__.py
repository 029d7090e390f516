"""`python -m topos_cli.worker`: one route of one workload in a process of its own."""

from topos_cli.shared.exit_without_teardown import exit_without_teardown
from topos_cli.worker.route_worker import die_with_parent, main

# Only as a process of its own: a caller of main() keeps its own fate.
die_with_parent()
# The events are sent and the shard processes ended: nothing else is left to do.
exit_without_teardown(main())
