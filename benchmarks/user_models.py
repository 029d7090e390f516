"""Models of one's own against their emitted peers, and the plan's cost per node (issue 47).

    python -m benchmarks.user_models [--rounds 3] [--steps 30] [--workload MODULE:ATTR ...]
                                     [--checkout PATH ...] [--chain 400] [--no-grades]

Two parts, each measured side by side in one run (the machines are shared):

- **Grades.** Each round grades every workload (by default the two templates,
  `image_classifier` and `sequence_model`, the char language model, and the test
  suite's user GRU and ResNet) with `topos grade --routes recorded,torch,jax` as a
  user runs it, once per checkout given (`--checkout`, default this one; the peers
  are emitted from each checkout's recording), checkouts and workloads interleaved
  round by round. It prints each route's median ms/step (wall, and the process's CPU
  time a step beside it) over the rounds, and recorded/torch and recorded/jax: the
  ratio of the medians, and the median of the rounds' own ratios (paired by round,
  so a slow spell spanning one round cancels). With several checkouts, each later
  one's recorded step over the first's, the same two ways, in wall and CPU time.
- **Per node.** A chain of `--chain` small elementwise nodes (`[8, 32]`: multiply,
  add, tanh in turn) run by a topos forward plan, against the same ops in PyTorch
  eager on one thread, alternated: µs per node beside µs per PyTorch op. Then the
  same chain with its gradient (topos's recorded plan over the loss and the gradient,
  every gradient node counted; PyTorch's forward and `backward()`, per forward op).
  Then the user GRU's recorded plan forward (a recurrent cell: small matrix
  products, sigmoids, tanh, gate products), µs per evaluated node.

Print the CPU and the load with the figures; the script prints `lscpu`'s model name and
the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.grade_command import run_grade

ROOT = Path(__file__).resolve().parent.parent

#: The models graded by default: the templates, the char model, the tests' user models.
WORKLOADS = (
    "image_classifier:workload",
    "sequence_model:workload",
    "char_language_model:workload",
    "tests.support.user_models:gru_workload",
    "tests.support.user_models:resnet_workload",
)
PEERS = ("torch", "jax")


def cpu_name() -> str:
    """The CPU's model name as `lscpu` gives it (or the platform's processor)."""
    try:
        listing = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        import platform

        return platform.processor() or "unknown CPU"
    fields = dict(line.split(":", 1) for line in listing.splitlines() if ":" in line)
    name = fields.get("Model name", "unknown CPU").strip()
    family, model = fields.get("CPU family", "").strip(), fields.get("Model", "").strip()
    return f"{name} (family {family} model {model}, {os.cpu_count()} CPUs)"


def grade(checkout: Path, workload: str, steps: int, folder: Path) -> dict[str, tuple]:
    """One grade of `workload` on recorded and the peers with `checkout`'s code: each
    route's (median wall seconds a step, median CPU seconds a step)."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join([str(checkout / "examples"), str(checkout)])
    arguments = ["--workload", workload, "--routes", "recorded," + ",".join(PEERS)]
    _, found = run_grade(
        [*arguments, "--steps", str(steps)],
        folder / "grade.json",
        environment=environment,
        cwd=folder,
    )
    times: dict[str, tuple] = {}
    if not found:
        return times  # the grade failed before writing a result: its routes show as failed
    for repeat in found["repeats"]:
        if repeat["status"] == "ok" and repeat["step_seconds"]:
            times[repeat["route"]] = (
                statistics.median(repeat["step_seconds"]),
                statistics.median(repeat.get("step_cpu_seconds") or [float("nan")]),
            )
    return times


def grades(arguments) -> None:
    """The grades part: rounds of every workload on every checkout, then the table."""
    checkouts = [Path(path).resolve() for path in (arguments.checkout or [ROOT])]
    found: dict[tuple, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="user-models-") as scratch:
        folder = Path(scratch)
        for round_number in range(arguments.rounds):
            for workload in arguments.workload or WORKLOADS:
                for checkout in checkouts:
                    times = grade(checkout, workload, arguments.steps, folder)
                    found.setdefault((workload, checkout), []).append(times)
            print(f"round {round_number + 1}/{arguments.rounds} done, load {_load()}", flush=True)
            # The table so far after every round: a long run interrupted still says something.
            table(found)


def table(found: dict[tuple, list[dict]]) -> None:
    """Each route's medians over the rounds so far, and recorded over each peer."""
    header = f"{'workload':<42} {'checkout':<18} {'route':<9} {'ms/step':>8} {'CPU ms':>7}"
    print(f"\n{header}  recorded/peer: medians, paired by round")
    for (workload, checkout), rounds in found.items():
        for route in ("recorded", *PEERS):
            walls = [times[route][0] for times in rounds if route in times]
            cpus = [times[route][1] for times in rounds if route in times]
            if not walls:
                print(f"{workload:<42} {checkout.name:<18} {route:<9} {'failed':>8}")
                continue
            line = (
                f"{workload:<42} {checkout.name:<18} {route:<9} "
                f"{statistics.median(walls) * 1000:8.2f} {statistics.median(cpus) * 1000:7.2f}"
            )
            if route != "recorded":
                pairs = [
                    t["recorded"][0] / t[route][0] for t in rounds if "recorded" in t and route in t
                ]
                recorded = [t["recorded"][0] for t in rounds if "recorded" in t]
                if pairs and recorded:
                    ratio = statistics.median(recorded) / statistics.median(walls)
                    line += f"  {ratio:.2f}x, paired {statistics.median(pairs):.2f}x"
            print(line)
    _against_first_checkout(found)


def _against_first_checkout(found: dict[tuple, list[dict]]) -> None:
    """Each later checkout's recorded step over the first checkout's, per workload: the
    ratio of the medians and the median of the rounds' own ratios (the two checkouts'
    grades run back to back in a round, so a slow spell spanning a round cancels), in
    wall time and in the process's CPU time (which a busy neighbour's preemption does
    not lengthen)."""
    checkouts = list(dict.fromkeys(checkout for _, checkout in found))
    if len(checkouts) < 2:
        return
    first = checkouts[0]
    print(f"\nrecorded against {first.name}'s recorded (wall; CPU), medians, paired by round")
    for workload in dict.fromkeys(workload for workload, _ in found):
        base = found.get((workload, first), [])
        for checkout in checkouts[1:]:
            rounds = found.get((workload, checkout), [])
            line = f"{workload:<42} {checkout.name:<18}"
            for column, label in ((0, "wall"), (1, "CPU")):
                pairs = [
                    ours["recorded"][column] / theirs["recorded"][column]
                    for ours, theirs in zip(rounds, base)
                    if "recorded" in ours and "recorded" in theirs
                ]
                ours = [t["recorded"][column] for t in rounds if "recorded" in t]
                theirs = [t["recorded"][column] for t in base if "recorded" in t]
                if not pairs:
                    line += f"  {label} failed"
                    continue
                ratio = statistics.median(ours) / statistics.median(theirs)
                line += f"  {label} {ratio:.2f}x, paired {statistics.median(pairs):.2f}x"
            print(line)


def _chain(tape, x, weights):
    """`len(weights)` rounds of multiply, add and tanh: three small nodes a round."""
    for weight in weights:
        x = (x * weight + weight).tanh()
    return x


def per_node(arguments) -> None:
    """The per-node part: a chain of small elementwise nodes, forward and with its
    gradient, on a topos plan and in PyTorch eager, alternated; then the GRU's plan."""
    import numpy as np

    from topos import Tape, Tensor

    rounds_of_three = max(1, arguments.chain // 3)
    tape = Tape()
    x = tape.input(Tensor.filled([8, 32], 0.5))
    weights = [tape.parameter(Tensor.filled([8, 32], 0.9)) for _ in range(rounds_of_three)]
    out = _chain(tape, x, weights)
    loss = out.sum()
    adjoints = tape.differentiate(loss, weights)
    network = tape.into_network()
    parameters = network.parameters()
    forward_plan = network.entry([out]).lower()
    gradient_plan = network.entry(adjoints.roots()).lower()
    feeds = {x.symbol: np.full((8, 32), 0.5, np.float32)}
    forward_nodes = sum(not network.nodes[i].is_source for i in forward_plan.evaluated)
    gradient_nodes = sum(not network.nodes[i].is_source for i in gradient_plan.evaluated)

    def topos_forward():
        forward_plan.forward(parameters, feeds)

    def topos_gradient():
        gradient_plan.forward(parameters, feeds)

    runners = {"topos forward": topos_forward, "topos gradient": topos_gradient}
    torch = None
    try:
        import torch
    except ImportError:
        print("torch does not import: the PyTorch side is left out")
    if torch is not None:
        torch.set_num_threads(1)
        torch_x = torch.full((8, 32), 0.5)
        torch_weights = [torch.full((8, 32), 0.9, requires_grad=True) for _ in weights]

        def torch_forward():
            with torch.no_grad():
                value = torch_x
                for weight in torch_weights:
                    value = torch.tanh(value * weight + weight)

        def torch_gradient():
            value = torch_x
            for weight in torch_weights:
                value = torch.tanh(value * weight + weight)
            value.sum().backward()
            for weight in torch_weights:
                weight.grad = None

        runners["torch forward"] = torch_forward
        runners["torch gradient"] = torch_gradient

    gru_plan, gru_parameters, gru_feeds = _gru_plan()
    gru_nodes = sum(not gru_plan.network.nodes[i].is_source for i in gru_plan.evaluated)
    runners["gru recorded"] = lambda: gru_plan.forward(gru_parameters, gru_feeds)
    found = {name: [] for name in runners}
    for runner in runners.values():
        runner()  # warm: arenas bound, plans compiled
    for _ in range(arguments.node_rounds):
        for name, runner in runners.items():
            start = time.process_time()
            for _ in range(20):
                runner()
            found[name].append((time.process_time() - start) / 20)
    ops = 3 * rounds_of_three
    median = {name: statistics.median(times) for name, times in found.items()}
    print(f"\nper node (CPU time, medians of {arguments.node_rounds} alternated rounds of 20):")
    print(
        f"  chain forward: topos {median['topos forward'] * 1e6 / forward_nodes:.2f} us a node "
        f"({forward_nodes} nodes)"
        + (
            f"; PyTorch eager {median['torch forward'] * 1e6 / ops:.2f} us an op ({ops} ops)"
            if torch is not None
            else ""
        )
    )
    print(
        f"  chain with its gradient: topos {median['topos gradient'] * 1e3:.3f} ms, "
        f"{median['topos gradient'] * 1e6 / gradient_nodes:.2f} us a node ({gradient_nodes} "
        f"nodes), {median['topos gradient'] * 1e6 / ops:.2f} us a forward op"
        + (
            f"; PyTorch forward+backward {median['torch gradient'] * 1e3:.3f} ms, "
            f"{median['torch gradient'] * 1e6 / ops:.2f} us a forward op"
            if torch is not None
            else ""
        )
    )
    print(
        f"  user GRU recorded plan: {median['gru recorded'] * 1e3:.3f} ms, "
        f"{median['gru recorded'] * 1e6 / gru_nodes:.2f} us a node ({gru_nodes} nodes)"
    )


def _gru_plan():
    """The user GRU's recorded plan over its loss and gradients, its parameters, a batch."""
    from tests.support.user_models import gru_workload
    from topos import Tape

    dataset = gru_workload.load_dataset(None)
    tape = Tape()
    recording = gru_workload.record(tape, gru_workload.batch_size)
    adjoints = tape.differentiate(recording.loss, recording.parameters)
    network = tape.into_network()
    order = gru_workload.batches(dataset.train, gru_workload.batch_size, gru_workload.shuffle_state)
    feeds = gru_workload.feeds(dataset.train, order.indices(0), recording)
    return network.entry(adjoints.roots()).lower(), network.parameters(), feeds


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of grades")
    parser.add_argument("--steps", type=int, default=30, help="steps a grade")
    parser.add_argument("--workload", action="append", help="MODULE:ATTR (repeatable)")
    parser.add_argument("--checkout", action="append", help="a checkout to grade with (repeatable)")
    parser.add_argument("--chain", type=int, default=300, help="elementwise nodes a chain")
    parser.add_argument("--node-rounds", type=int, default=15, help="per-node rounds")
    parser.add_argument("--no-grades", action="store_true", help="only the per-node part")
    parser.add_argument("--no-nodes", action="store_true", help="only the grades")
    arguments = parser.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    print(f"CPU: {cpu_name()}; load average before: {_load()}")
    if not arguments.no_nodes:
        per_node(arguments)
    if not arguments.no_grades:
        grades(arguments)
    print(f"load average after: {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
