"""Shards as threads against shards as forked processes: issue 18's second lever, measured.

    python benchmarks/shard_processes.py [--workload cifar10] [--route recorded] [--steps 40]

The same route of a workload computes the same batches two ways, alternating in
rounds: as topos does (its shards on threads of one process, every product on one
BLAS thread), and with shard 1 in a forked child that holds its own plan and arena
and meets the parent through shared memory: the parent writes the parameters and
shard 1's rows of the feeds, one byte on a pipe starts the child, the child writes its
loss and gradients back and answers with one byte, and the parent adds the shards in
shard order exactly as `RouteProgram.compute` does. Both ways must give the same loss
and gradient bits at every step. Prints the median ms per step of each, their ratio,
and the CPU time each spends, parent and child together.

A prototype to measure the lever, not a route: it times `compute` (forward and
gradients), without the optimizer, for a two-shard workload.
"""

from __future__ import annotations

import argparse
import mmap
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from topos.graph.parameters import Parameters  # noqa: E402
from topos.tensor import Tensor  # noqa: E402
from topos.training import Training  # noqa: E402
from topos.training.route_program import _mean  # noqa: E402
from topos.workloads import resolve  # noqa: E402


def _shared(like: np.ndarray) -> np.ndarray:
    """A zeroed array shaped like `like` in anonymous shared memory (kept across fork)."""
    block = mmap.mmap(-1, max(1, like.nbytes))
    return np.frombuffer(block, dtype=like.dtype, count=like.size).reshape(like.shape)


class ForkedShard:
    """Shard 1 of a two-shard program, computed in a forked child (see the module)."""

    def __init__(self, training: Training) -> None:
        program = training.program
        self.program = program
        self.rows = program.rows
        feeds = training.feeds(0)
        self.feed_symbols = list(feeds)
        self.shared_feeds = {s: _shared(feeds[s].numpy()[self.rows :]) for s in feeds}
        self.parameter_symbols = list(training.parameters.symbols())
        self.shared_parameters = {
            s: _shared(training.parameters.of(s).numpy()) for s in self.parameter_symbols
        }
        self.shared_gradients = {
            s.index: _shared(training.parameters.of(s).numpy()) for s in self.parameter_symbols
        }
        self.shared_loss = _shared(np.zeros(1, np.float32))
        self.to_child_read, self.to_child_write = os.pipe()
        self.to_parent_read, self.to_parent_write = os.pipe()
        self.child = os.fork()
        if self.child == 0:
            os.close(self.to_child_write)
            os.close(self.to_parent_read)
            self._serve(training)
        os.close(self.to_child_read)
        os.close(self.to_parent_write)

    def _serve(self, training: Training) -> None:
        try:
            with threadpool_limits(limits=1, user_api="blas"):
                network = self.program.network
                parameters = Parameters(
                    network,
                    {s.index: Tensor.adopt(a) for s, a in self.shared_parameters.items()},
                )
                feeds = {s: Tensor.adopt(a) for s, a in self.shared_feeds.items()}
                while os.read(self.to_child_read, 1) == b"g":
                    loss, gradients = self.program._compute_shard(1, parameters, feeds)
                    self.shared_loss[0] = loss
                    for index, array in self.shared_gradients.items():
                        np.copyto(array, gradients.by_index(index).numpy())
                    os.write(self.to_parent_write, b"d")
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(0)

    def compute(self, parameters: Parameters, feeds: dict):
        """The mean loss and gradients of the whole batch, shard 1 in the child."""
        for symbol in self.parameter_symbols:
            np.copyto(self.shared_parameters[symbol], parameters.of(symbol).numpy())
        for symbol in self.feed_symbols:
            np.copyto(self.shared_feeds[symbol], feeds[symbol].numpy()[self.rows :])
        os.write(self.to_child_write, b"g")
        first = {s: Tensor.adopt(feeds[s].numpy()[: self.rows]) for s in self.feed_symbols}
        with threadpool_limits(limits=1, user_api="blas"):
            own = self.program._compute_shard(0, parameters, first)
        if os.read(self.to_parent_read, 1) != b"d":
            raise SystemExit("shard_processes: the forked shard died")
        other_gradients = _GradientsView(
            {index: Tensor.adopt(a) for index, a in self.shared_gradients.items()}
        )
        other = (np.float32(self.shared_loss[0]), other_gradients)
        return _mean([own, other], 2, self.program.network.origin)

    def close(self) -> None:
        os.write(self.to_child_write, b"q")
        os.waitpid(self.child, 0)


class _GradientsView:
    """The child's gradients by symbol, as `_mean` reads the shards after the first."""

    def __init__(self, tensors: dict) -> None:
        self.tensors = tensors

    def of(self, symbol):
        return self.tensors[symbol.index]


def _cpu_seconds(child: int) -> float:
    """CPU seconds of this process and of the running child (from /proc: a child's
    rusage counts only once it has been waited for)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return own.ru_utime + own.ru_stime + (int(fields[11]) + int(fields[12])) / ticks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workload", default="cifar10")
    parser.add_argument("--route", default="recorded", choices=("engine", "recorded"))
    parser.add_argument("--steps", type=int, default=40, help="timed steps per way")
    parser.add_argument("--rounds", type=int, default=4)
    arguments = parser.parse_args()
    workload = resolve(arguments.workload)
    if workload.shards != 2:
        raise SystemExit(
            f"shard_processes: {arguments.workload} has {workload.shards} shards, not 2"
        )
    training = Training(workload, arguments.route, workload.dataset(None), arguments.steps)
    parameters = training.parameters
    forked = ForkedShard(training)
    times: dict[str, list[float]] = {"threads": [], "processes": []}
    ways = {"threads": training.program.compute, "processes": forked.compute}
    batches = [training.feeds(step) for step in range(8)]
    cpu: dict[str, float] = {"threads": 0.0, "processes": 0.0}
    try:
        for step in range(4):  # warm-up, and a first bitwise check
            expected = ways["threads"](parameters, batches[step])
            got = ways["processes"](parameters, batches[step])
            _check(expected, got, step)
        per_round = max(1, arguments.steps // arguments.rounds)
        for _ in range(arguments.rounds):
            for way, compute in ways.items():
                before = _cpu_seconds(forked.child)
                for step in range(per_round):
                    start = time.perf_counter()
                    compute(parameters, batches[step % len(batches)])
                    times[way].append(time.perf_counter() - start)
                cpu[way] += _cpu_seconds(forked.child) - before
        for step in range(len(batches)):
            _check(
                ways["threads"](parameters, batches[step]),
                ways["processes"](parameters, batches[step]),
                step,
            )
    finally:
        forked.close()
    threads = statistics.median(times["threads"]) * 1e3
    processes = statistics.median(times["processes"]) * 1e3
    count = len(times["threads"])
    print(
        f"{arguments.workload} {arguments.route}, {count} steps each, load {os.getloadavg()[0]:.2f}"
    )
    for way in ("threads", "processes"):
        median = statistics.median(times[way]) * 1e3
        fastest = min(times[way]) * 1e3
        print(
            f"{way:<10} {median:7.2f} ms/step (min {fastest:.2f}), "
            f"cpu {cpu[way] / count * 1e3:.1f} ms/step"
        )
    print(f"processes/threads {processes / threads:.3f}x; loss and gradient bits identical")


def _check(expected, got, step: int) -> None:
    loss, gradients = expected
    other_loss, other_gradients = got
    assert np.float32(loss).tobytes() == np.float32(other_loss).tobytes(), f"loss differs at {step}"
    for symbol, tensor in gradients.items():
        assert tensor.numpy().tobytes() == other_gradients.of(symbol).numpy().tobytes(), (
            f"gradient {symbol.index} differs at step {step}"
        )


if __name__ == "__main__":
    main()
