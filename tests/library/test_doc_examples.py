"""The library's worked examples in the docs run as written, each page's Python blocks
in order in a fresh interpreter (a primitive a page registers stays in its process)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["docs/guide/library.md", "docs/reference/extending.md"]


@pytest.mark.parametrize("page", PAGES)
def test_a_pages_python_runs(page: str, tmp_path: Path):
    text = (ROOT / page).read_text()
    blocks = re.findall(r"^```python\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)
    assert blocks, f"{page} has no Python example"
    script = tmp_path / "page.py"
    script.write_text("\n".join(blocks))
    completed = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
