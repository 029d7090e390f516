"""The catalogue of the suite: every module of benchmarks/, its kind and what it measures.

    python -m benchmarks.catalogue [--kind headline|diagnostic|twin|study|support]

The kinds keep apart what a reader comes for:

- **headline**: the figures the README and the performance pages quote (speed, memory);
- **diagnostic**: where a step's time goes, on any machine, whenever a figure moves;
- **twin**: a model written again, by hand in PyTorch or from the public API as a user
  writes it, that a benchmark times beside topos's and a test checks against it;
- **study**: one issue's question, measured once and dated (its notes in the docs'
  performance pages), kept so it can be asked again on another machine;
- **support**: what the benchmarks share (their harness, their JSON, this catalogue).

A module added to benchmarks/ is catalogued here, exactly once
(tests/benchmarks/test_catalogue.py checks it).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass

KINDS = ("headline", "diagnostic", "twin", "study", "support")


@dataclass(frozen=True)
class Entry:
    """One module of the suite: its kind (of KINDS), what it measures or is, and the
    modules it cannot be imported without beyond topos's own dependencies."""

    kind: str
    summary: str
    needs: tuple[str, ...] = ()


CATALOGUE: dict[str, Entry] = {
    # The figures quoted in the README and the performance pages.
    "step_time": Entry(
        "headline",
        "cifar10's ms/step on each route in worker processes, interleaved rounds, beside "
        "the emitted peers and its PyTorch twin",
    ),
    "gpt_step_time": Entry(
        "headline",
        "gpt's (or llama's) ms/step on each route beside its emitted peers and its PyTorch "
        "twin, interleaved rounds",
    ),
    "user_models": Entry(
        "headline",
        "models of one's own graded against their emitted peers, and the plan's cost a node",
    ),
    "frontier": Entry(
        "headline",
        "the speed/memory frontier of cifar10 (`topos frontier`) beside PyTorch's "
        "activation checkpointing",
    ),
    # Where the time goes.
    "profile_step": Entry("diagnostic", "one step's time kernel by kernel, on one route"),
    "plan_replay": Entry(
        "diagnostic", "any workload's step node by node, each kernel replayed alone on its operands"
    ),
    "torch_profile": Entry("diagnostic", "PyTorch's step operator by operator (torch.profiler)"),
    "route_kernels": Entry("diagnostic", "engine against recorded kernel by kernel"),
    "kernel_locality": Entry(
        "diagnostic", "each kernel inside the step against the same call warm in cache"
    ),
    "step_anatomy": Entry(
        "diagnostic", "cifar10's recorded step beside PyTorch's, in the same classes of work"
    ),
    "step_limit": Entry(
        "diagnostic", "a step's GFLOP/s against the machine's measured matrix-product peak"
    ),
    "shard_timeline": Entry(
        "diagnostic", "where a shard-process step's wall time goes, phase by phase"
    ),
    "parity_check": Entry(
        "diagnostic", "both routes' losses and final parameters in one process, bit for bit"
    ),
    "machine_spells": Entry(
        "diagnostic", "the machine's slow spells: each step beside a fixed probe"
    ),
    "grade_overhead": Entry(
        "diagnostic", "what `topos grade` costs beyond the training it measures"
    ),
    "instruction_counts": Entry(
        "diagnostic", "what counting instructions costs, and how steady the counts are"
    ),
    # Models written again.
    "cifar10_model": Entry(
        "twin",
        "the cifar10 model on a route, emitted to a peer, and by hand in PyTorch (torch_twin)",
    ),
    "gpt_twin": Entry("twin", "the gpt model written by hand in PyTorch", ("torch",)),
    "llama_twin": Entry("twin", "the llama model written by hand in PyTorch", ("torch",)),
    "user_written_llama": Entry(
        "twin", "issue 27's llama written from the public API, as a user writes it"
    ),
    # One issue's question each.
    "batch_innermost": Entry(
        "study", "issue 30: cifar10's convolutions in the batch-innermost layout, per layer"
    ),
    "gemm_orientations": Entry(
        "study", "the convolutions' matrix products in every orientation BLAS reads"
    ),
    "product_rules": Entry(
        "study", "issue 30: the convolutions' products under each BLAS-kernel rule"
    ),
    "shard_processes": Entry("study", "issue 18: shards on threads against forked processes"),
    "busy_neighbour": Entry(
        "study", "a workload of one's own beside another BLAS program: busy over quiet"
    ),
    "remat_lowering": Entry(
        "study", "how long lowering the remat route takes; with --against, the plans compared"
    ),
    "remat_optimum": Entry(
        "study",
        "the remat greedy's recomputed FLOPs against HiGHS's optimum, small graphs and "
        "one-block gpt and llama",
        ("scipy",),
    ),
    "remat_against_papers": Entry(
        "study",
        "per built-in, each default frontier budget's activation reduction and recomputed "
        "FLOPs beside MONeT's, Rockmate's and HiRemate's figures, from lowering alone",
    ),
    "remat_ready": Entry("study", "how soon the remat route is ready, beside recorded"),
    # What the benchmarks share.
    "interleaved_rounds": Entry(
        "support", "the step-time benchmarks' worker processes and interleaved rounds"
    ),
    "benchmark_report": Entry("support", "the versioned JSON every benchmark writes"),
    "grade_command": Entry(
        "support", "the one spelling of the `topos grade` a benchmark runs, and its JSON read"
    ),
    "catalogue": Entry("support", "this catalogue"),
}


def entry(name: str) -> Entry:
    """The catalogue's entry of the module `name` (`step_time`, not `benchmarks.step_time`)."""
    return CATALOGUE[name.rpartition(".")[2]]


def describe(name: str, documentation: str | None, argv: Sequence[str] | None = None) -> int:
    """The command line of a module that is imported, never run (a twin, the harness):
    `--help` gives its docstring's first paragraph, and running it says what it is."""
    found = entry(name)
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks.{name}",
        description=(documentation or "").split("\n\n")[0],
        epilog=f"A {found.kind} module of the suite: the benchmarks import it; "
        "nothing to run by itself.",
    )
    parser.parse_args(argv)
    print(f"benchmarks.{name} ({found.kind}): {found.summary}; imported, not run")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Prints the catalogue, kind by kind."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", choices=KINDS, help="only the modules of this kind")
    arguments = parser.parse_args(argv)
    for kind in (arguments.kind,) if arguments.kind else KINDS:
        print(f"{kind}:")
        for name, found in CATALOGUE.items():
            if found.kind == kind:
                needs = f" (needs {', '.join(found.needs)})" if found.needs else ""
                print(f"  {name:<20} {found.summary}{needs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
