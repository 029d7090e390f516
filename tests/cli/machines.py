"""Three CI runners' machines, made by hand: the host facts a result of each would hold
(`ubuntu-latest`, `ubuntu-24.04-arm`, `macos-14`), and results of grades on them."""

from __future__ import annotations

import copy
from typing import Any

from tests.cli.result_examples import example_result
from topos_cli.judge.verdict import decide_verdict
from topos_cli.result.repeat import Repeat

#: Per runner, the host facts its grades record.
MACHINES: dict[str, dict[str, Any]] = {
    "ubuntu-latest": {
        "cpu_model": "AMD EPYC 7763 64-Core Processor",
        "cpu_flags": ["avx", "avx2", "fma", "sse4_2"],
        "logical_cores": 4,
        "available_cores": 4,
        "system": "Linux 6.8.0-1017-azure",
        "operating_system": "Ubuntu 24.04.1 LTS",
        "machine": "x86_64",
        "python": "3.12.8 (CPython)",
        "proc_filesystem": True,
        "numerics": {
            "numpy": "2.2.1",
            "blas": {"name": "scipy-openblas", "version": "0.3.28"},
            "thread_pools": [
                {
                    "user_api": "blas",
                    "internal_api": "openblas",
                    "version": "0.3.28",
                    "architecture": "Zen",
                    "num_threads": 4,
                }
            ],
        },
    },
    "ubuntu-24.04-arm": {
        "cpu_model": "Neoverse-N2",
        "cpu_flags": ["asimddp", "bf16", "i8mm", "neon", "sve", "sve2"],
        "logical_cores": 4,
        "available_cores": 4,
        "system": "Linux 6.8.0-1017-azure",
        "operating_system": "Ubuntu 24.04.1 LTS",
        "machine": "aarch64",
        "python": "3.12.8 (CPython)",
        "proc_filesystem": True,
        "numerics": {
            "numpy": "2.2.1",
            "blas": {"name": "scipy-openblas", "version": "0.3.28"},
            "thread_pools": [
                {
                    "user_api": "blas",
                    "internal_api": "openblas",
                    "version": "0.3.28",
                    "architecture": "NEOVERSEN2",
                    "num_threads": 4,
                }
            ],
        },
    },
    "macos-14": {
        "cpu_model": "Apple M1 (Virtual)",
        "cpu_flags": ["asimddp", "asimdhp", "neon"],
        "logical_cores": 3,
        "available_cores": 3,
        "system": "Darwin 23.6.0",
        "operating_system": "macOS 14.7.2",
        "machine": "arm64",
        "python": "3.12.8 (CPython)",
        # No /proc: the peak is sampled (psutil), not the kernel's high-water mark.
        "proc_filesystem": False,
        "numerics": {
            "numpy": "2.2.1",
            "blas": {"name": "scipy-openblas", "version": "0.3.28"},
            "thread_pools": [
                {
                    "user_api": "blas",
                    "internal_api": "openblas",
                    "version": "0.3.28",
                    "architecture": "VORTEX",
                    "num_threads": 3,
                }
            ],
        },
    },
}


def sampled_memory(result: dict[str, Any]) -> dict[str, Any]:
    """`result` as a machine without /proc writes it: every run's peak from sampling."""
    result = copy.deepcopy(result)
    for run in result["repeats"]:
        facts = run.setdefault("facts", {})
        facts["peak_source"] = "sampling"
        facts.setdefault("ready", {})["high_water_source"] = "sampling"
    result["settings"]["memory_measurement"] = "sampled"
    # The verdict such a machine stores is judged on those runs (the sampled-memory warning
    # with it), as `example_result` judges its own: the report shows what is stored.
    repeats = [Repeat.from_json(run) for run in result["repeats"]]
    result["verdict"] = decide_verdict(repeats).record().to_json()
    return result


def machine_result(runner: str, **options: Any) -> dict[str, Any]:
    """A grade's result on `runner`'s machine (`example_result`'s options)."""
    result = example_result(**options)
    host = copy.deepcopy(MACHINES[runner])
    host["git"] = result["host"]["git"]
    result["host"] = host
    if not host["proc_filesystem"]:
        result = sampled_memory(result)
    return result
