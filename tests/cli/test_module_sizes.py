"""No module on the command side holds more than 450 lines (issue 44): past that size a
module has held several concepts each time it was read, and was split by concept."""

from __future__ import annotations

from pathlib import Path

import topos_cli

LIMIT = 450


def test_no_command_side_module_is_over_the_limit():
    root = Path(topos_cli.__file__).parent
    sizes = {
        str(path.relative_to(root)): len(path.read_text(encoding="utf-8").splitlines())
        for path in root.rglob("*.py")
    }
    assert len(sizes) > 100  # the command side itself was read, not an empty folder
    over = {name: lines for name, lines in sizes.items() if lines > LIMIT}
    assert not over, f"over {LIMIT} lines (split by concept): {over}"
