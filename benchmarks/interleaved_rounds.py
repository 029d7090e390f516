"""The interleaved-rounds harness of the step-time benchmarks (step_time.py, gpt_step_time.py).

Each route trains in a worker process of its own (the benchmark's module run as `python
-m benchmarks.NAME --worker ROUTE` from a checkout's root, which calls `serve`),
speaking JSON lines over its pipes. The parent (`Worker`, `run_rounds`) warms every
worker up, then interleaves the rounds: every worker times its steps in round 1, then
every worker in round 2, the order reversed every other round, so a busy spell on the
machine falls on all routes alike. `summarize` turns each worker's times and rusage into
its figures (medians and quartiles by the grader's own statistics,
`topos.measurement.statistics`, not a second kind), `add_ratios` divides them by a
reference route's median (and, paired round by round, `paired_ratio`: a round's ratio
cancels a slow spell of the machine that spans the round), and `print_table` prints them.

What the two benchmarks share beyond that is here too: their command line
(`round_parser`), a worker's announcement (`serve_route`), which routes run
(`timed_routes`), the timing itself (`time_rounds`), parity (`losses_agree`), the JSON's
common part (`round_facts`) and its last words (`conclude`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks import benchmark_report
from topos.measurement.statistics import median, quartiles

#: The repository's root: where a worker runs `python -m benchmarks.NAME` by default.
ROOT = Path(__file__).resolve().parents[1]

USAGE = ("cpu_ms", "system_ms", "minor_faults")
"""What a worker measures of its steps by rusage, summed over a round."""


def serve(step: Callable[[], int], info: dict) -> int:
    """A worker's loop: announces `info`, then answers each input line `{"steps": n}` by
    training n steps with `step` (which returns the loss bits) and reporting their times
    (ms), loss bits and rusage."""
    print(json.dumps(info), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        times, losses = [], []
        before = resource.getrusage(resource.RUSAGE_SELF)
        children_before = _children_cpu_seconds()
        for _ in range(int(request["steps"])):
            start = time.perf_counter()
            losses.append(step())
            times.append((time.perf_counter() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_SELF)
        children = sum(
            seconds - children_before.get(pid, 0.0)
            for pid, seconds in _children_cpu_seconds().items()
        )
        usage = {
            "cpu_ms": (
                (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime) + children
            )
            * 1000,
            "system_ms": (after.ru_stime - before.ru_stime) * 1000,
            "minor_faults": after.ru_minflt - before.ru_minflt,
        }
        print(json.dumps({"times": times, "losses": losses, "usage": usage}), flush=True)
    return 0


def _children_cpu_seconds() -> dict[int, float]:
    """CPU seconds of each live child process of this worker (a route's shard processes),
    by pid: a child's rusage would reach this process only once it is reaped."""
    import psutil

    seconds = {}
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:
            continue
        seconds[child.pid] = times.user + times.system
    return seconds


def serve_route(route: str, step: Callable[[], int]) -> int:
    """Serves `step` as the worker of `route`: announces the route and its pid (and, for a
    PyTorch route, torch's version and threads), then trains as asked (`serve`)."""
    info = {"ready": route, "pid": os.getpid()}
    if route.startswith(("pytorch", "emitted-torch")):
        info = torch_info(info)
    return serve(step, info)


def numbered_steps(step_at: Callable[[int], int]) -> Callable[[], int]:
    """A worker's step function: `step_at(0)`, then `step_at(1)`, and so on, each call
    the next step (its loss's bits returned)."""
    numbers = itertools.count()
    return lambda: step_at(next(numbers))


def loss_bits(loss: Any) -> int:
    """A loss's float32 bit pattern, as a worker reports it."""
    import numpy as np

    return int(np.float32(loss).view(np.uint32))


def torch_step(optimizer: Any, loss: Callable[[], Any]) -> int:
    """One training step of a PyTorch twin: the gradients zeroed, `loss()` computed and
    sent back, the optimizer stepped; returns the loss's bits."""
    optimizer.zero_grad(set_to_none=True)
    value = loss()
    value.backward()
    optimizer.step()
    return loss_bits(value.item())


def torch_info(info: dict) -> dict:
    """`info` with the torch version and thread count (for a PyTorch worker)."""
    import torch

    return {**info, "torch": torch.__version__, "threads": torch.get_num_threads()}


def importable(module: str) -> bool:
    """Whether a worker could import `module` (checked in a subprocess, to keep this one
    lean)."""
    probe = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, check=False
    )
    return probe.returncode == 0


def torch_available() -> bool:
    """Whether a worker could import torch."""
    return importable("torch")


def pytorch_skipped(no_torch: bool) -> str | None:
    """Why the PyTorch twin does not run (None when it does)."""
    if no_torch:
        return "not asked for (--no-torch)"
    if not torch_available():
        return "torch cannot be imported here"
    return None


#: The emitted peers a benchmark times: the workload's recording emitted to PyTorch and
#: JAX (topos.peers), trained by the peer's autodiff and optimizer.
PEERS = {"emitted-torch": "torch", "emitted-jax": "jax"}


def timed_peers(arguments: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    """The emitted peers to time (`PEERS`), and why each other one is not."""
    timed, skipped = [], {}
    for route, framework in PEERS.items():
        if arguments.no_peers:
            skipped[route] = "not asked for (--no-peers)"
        elif framework == "torch" and arguments.no_torch:
            skipped[route] = "not asked for (--no-torch)"
        elif not importable(framework):
            skipped[route] = f"{framework} cannot be imported here"
        else:
            timed.append(route)
    return timed, skipped


def peer_differences(workers: Iterable[Worker], reference: str) -> dict[str, dict[str, float]]:
    """Each emitted peer's relative loss difference from route `reference`: at the first
    step (the same parameters: rounding alone) and the largest over the steps both ran
    (where training may grow it: a peer agrees to rounding, never bit for bit)."""
    import numpy as np

    losses = {worker.route: worker.losses for worker in workers}
    expected = np.array(losses[reference], dtype=np.uint32).view(np.float32).astype(np.float64)
    differences = {}
    for route in PEERS:
        if route in losses:
            count = min(len(expected), len(losses[route]))
            found = np.array(losses[route][:count], dtype=np.uint32).view(np.float32)
            relative = np.abs(found - expected[:count]) / np.abs(expected[:count])
            differences[route] = {
                "first_step": float(relative[0]) if count else float("nan"),
                "largest": float(relative.max(initial=0.0)),
            }
    return differences


class Worker:
    """A route's worker process: `python -m module --worker route` run from `root` (this
    checkout's, or another's: its benchmarks and its topos), its figures under `label`."""

    def __init__(
        self,
        module: str,
        route: str,
        label: str | None = None,
        environment: dict[str, str] | None = None,
        root: Path = ROOT,
    ) -> None:
        self.route = label or route
        self.process = subprocess.Popen(
            [sys.executable, "-m", module, "--worker", route],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            # The root alone on the path (`-m` puts the working directory first): its
            # topos and its benchmarks, never those of another checkout on PYTHONPATH.
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root), **(environment or {})},
        )
        self.info = self._read()
        self.times: list[float] = []
        #: Each timed round's step times (ms), in order: what paired ratios pair.
        self.rounds: list[list[float]] = []
        self.losses: list[int] = []
        self.usage = dict.fromkeys(USAGE, 0)

    def _read(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.route} exited with {self.process.wait()}")
        return json.loads(line)

    def train(self, steps: int) -> dict:
        self.process.stdin.write(json.dumps({"steps": steps}) + "\n")
        self.process.stdin.flush()
        answer = self._read()
        self.times += answer["times"]
        self.rounds.append(answer["times"])
        self.losses += answer["losses"]
        for key, value in answer["usage"].items():
            self.usage[key] += value
        return answer

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def run_rounds(workers: Sequence[Worker], warmup: int, rounds: int, steps: int) -> None:
    """Warms every worker up (its times and usage then forgotten), times `rounds`
    interleaved rounds of `steps` steps each, and closes the workers, come what may."""
    try:
        for worker in workers:
            worker.train(warmup)
            worker.times.clear()
            worker.rounds.clear()
            worker.usage = dict.fromkeys(worker.usage, 0)
        for round_number in range(rounds):
            for worker in workers if round_number % 2 == 0 else reversed(workers):
                worker.train(steps)
    finally:
        for worker in workers:
            worker.close()


def timed_routes(
    topos_routes: Sequence[str], twins: Sequence[str], no_torch: bool
) -> tuple[list[str], str | None]:
    """The routes to time: topos's, then the PyTorch `twins` unless they are skipped; and
    why they are (None when they run)."""
    skipped = pytorch_skipped(no_torch)
    return [*topos_routes, *(twins if skipped is None else ())], skipped


def time_rounds(
    workers: Sequence[Worker],
    arguments: argparse.Namespace,
    per_step: Sequence[str],
    ratios: Mapping[str, str],
) -> dict[str, dict]:
    """Times the workers over the rounds `arguments` asks for (`run_rounds`); returns each
    route's figures (`summarize`, with `per_step` rusage) and its `ratios` (`add_ratios`)."""
    run_rounds(workers, arguments.warmup, arguments.rounds, arguments.steps)
    results = summarize(workers, per_step)
    add_ratios(results, ratios)
    return results


def losses_agree(workers: Iterable[Worker], *pairs: tuple[str, str]) -> bool:
    """Whether the two routes of each pair reported the same loss bits at every step."""
    losses = {worker.route: worker.losses for worker in workers}
    return all(losses[first] == losses[second] for first, second in pairs)


def summarize(workers: Iterable[Worker], per_step: Sequence[str]) -> dict[str, dict]:
    """Each worker's figures by its route: median, quartiles and minimum of its step
    times, and the rusage figures named in `per_step` (of USAGE) per step."""
    results = {}
    for worker in workers:
        times = worker.times
        # The grader's quartiles (type 7, `topos.measurement.statistics`), not a second kind.
        lower, middle, upper = quartiles(times)
        results[worker.route] = {
            "median_ms": middle,
            "q1_ms": lower,
            "q3_ms": upper,
            "min_ms": min(times),
            "steps_timed": len(times),
            "round_medians_ms": [median(steps) for steps in worker.rounds if steps],
            **{f"{key}_per_step": worker.usage[key] / len(times) for key in per_step},
            "info": worker.info,
        }
    return results


def add_ratios(results: dict[str, dict], references: Mapping[str, str]) -> None:
    """Adds to each route's figures, for each `key: route` of `references`, its median
    divided by that route's (None where that route did not run), and the same ratio
    paired by round (`paired_ratio`) as `key_paired`."""
    medians = {key: results.get(route, {}).get("median_ms") for key, route in references.items()}
    for figures in results.values():
        for key, reference in medians.items():
            figures[key] = figures["median_ms"] / reference if reference else None
            against = results.get(references[key])
            figures[f"{key}_paired"] = (
                paired_ratio(figures["round_medians_ms"], against["round_medians_ms"])
                if against
                else None
            )


def paired_ratio(rounds: Sequence[float], reference_rounds: Sequence[float]) -> dict | None:
    """The ratio of a route to a reference paired round by round: the median, over the
    rounds, of the route's median step in a round over the reference's in the same round,
    with the quartiles of those ratios. None with fewer than two rounds.

    The machines here slow down by half for seconds at a time (another tenant on the
    host); a slow spell spans a round of every route alike far more often than it spans
    the whole run alike, so a round's ratio cancels it where the ratio of the run's
    medians need not: the run whose medians say 0.77x and the next 0.92x."""
    ratios = [
        mine / theirs for mine, theirs in zip(rounds, reference_rounds, strict=False) if theirs
    ]
    if len(ratios) < 2:
        return None
    lower, middle, upper = quartiles(ratios)
    return {
        "median": middle,
        "q1": lower,
        "q3": upper,
        "rounds": len(ratios),
    }


def print_peer_differences(
    differences: Mapping[str, Mapping[str, float]], skipped: Mapping[str, str]
) -> None:
    """One line per emitted peer: its loss against recorded's, or why it was skipped."""
    for route, difference in differences.items():
        print(
            f"{route}: loss {difference['first_step']:.1e} from recorded's at the first "
            f"step, at most {difference['largest']:.1e} over the run (relative)"
        )
    for route, reason in skipped.items():
        print(f"{route}: skipped ({reason})")


def print_table(results: dict[str, dict], width: int, ratios: Mapping[str, str]) -> None:
    """A row a route: ms/step, quartiles, minimum, the ratios (`key: heading`), CPU ms
    and minor faults per step; then the same ratios paired by round (`print_paired`)."""
    print(
        f"{'route':<{width}} {'ms/step':>9} {'q1':>8} {'q3':>8} {'min':>8} "
        + "".join(f"{heading:>10} " for heading in ratios.values())
        + f"{'cpu ms':>8} {'faults':>8}"
    )
    for route, figures in results.items():
        shown = "".join(f"{f'{figures[key]:.2f}x' if figures[key] else '-':>10} " for key in ratios)
        print(
            f"{route:<{width}} {figures['median_ms']:9.2f} {figures['q1_ms']:8.2f} "
            f"{figures['q3_ms']:8.2f} {figures['min_ms']:8.2f} {shown}"
            f"{figures['cpu_ms_per_step']:8.1f} {figures['minor_faults_per_step']:8.0f}"
        )
    print_paired(results, width, ratios)


def print_paired(results: dict[str, dict], width: int, ratios: Mapping[str, str]) -> None:
    """The ratios paired by round (`paired_ratio`): a route's median per-round ratio and
    the quartiles of its rounds' ratios, for each ratio `key: heading`."""
    print("paired by round (median of each round's ratio, [quartiles]):")
    for route, figures in results.items():
        cells = []
        for key, heading in ratios.items():
            paired = figures.get(f"{key}_paired")
            if paired:
                cells.append(
                    f"{heading} {paired['median']:.2f} [{paired['q1']:.2f}-{paired['q3']:.2f}]"
                )
        if cells:
            print(f"  {route:<{width}} " + "   ".join(cells))


def environment(variables: Sequence[str]) -> dict[str, str | None]:
    """The environment `variables` the figures depend on (threads, BLAS core type) beside
    what the report's envelope says of the machine (benchmark_report.machine)."""
    return {key: os.environ.get(key) for key in variables}


def round_parser(description: str, rounds: int, steps: int) -> argparse.ArgumentParser:
    """A step-time benchmark's command line: the hidden `--worker ROUTE`, `--rounds` of
    `--steps` timed steps after `--warmup`, `--no-torch` and `--out`; a benchmark adds
    its own options."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=rounds, help="interleaved rounds")
    parser.add_argument("--steps", type=int, default=steps, help="timed steps per round")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument(
        "--no-torch", action="store_true", help="skip the PyTorch twin (and emitted PyTorch)"
    )
    parser.add_argument(
        "--no-peers",
        action="store_true",
        help="skip the emitted peers (the workload's recording emitted to PyTorch and JAX)",
    )
    parser.add_argument("--out", type=Path, help="where to write the JSON")
    return parser


def round_facts(
    arguments: argparse.Namespace,
    workers: Sequence[Worker],
    results: dict[str, dict],
    skipped: str | None,
    parity: bool,
) -> dict:
    """What every step-time benchmark's figures say after its workload: the rounds, each
    route's figures, why the twin was skipped, and whether the loss bits agreed over how
    many (engine's) steps."""
    engine = next(worker for worker in workers if worker.route == "engine")
    return {
        "rounds": arguments.rounds,
        "steps_per_round": arguments.steps,
        "warmup": arguments.warmup,
        "routes": results,
        "pytorch_skipped": skipped,
        "loss_bits_identical": parity,
        "steps_compared": len(engine.losses),
    }


def conclude(benchmark: str, figures: dict, out: Path, started: str, lead: str = "") -> int:
    """A benchmark's last words: why the twin was skipped (if it was), `lead` then whether
    the loss bits agreed and the load average; writes `figures` in the report's envelope
    (benchmark_report) to `out`. 0 when the bits agreed, else 1."""
    if figures["pytorch_skipped"]:
        print(f"pytorch: skipped the comparison ({figures['pytorch_skipped']})")
    parity = figures["loss_bits_identical"]
    print(
        f"{lead}loss bits {'identical' if parity else 'DIFFER'} over "
        f"{figures['steps_compared']} steps; load average {os.getloadavg()[0]:.2f}"
    )
    benchmark_report.write_report(benchmark, figures, out, started)
    return 0 if parity else 1


if __name__ == "__main__":
    from benchmarks.catalogue import describe

    raise SystemExit(describe("interleaved_rounds", __doc__))
