"""Tiny workloads for the grader's end-to-end tests: a small model on a small synthetic set.

Each is named on the command line as `tests.cli.tiny_workloads:<attribute>`
(the tests put the project's root on the worker's PYTHONPATH). `tiny` trains
normally, in a few milliseconds per step, and `sharded` is `tiny` in two shards
of eight rows; the others break on purpose, each in one of the ways issue 6
lists, so the grader's handling of it can be seen in a real worker process:

- `paced`: `tiny` computing for `PACED_SECONDS` more in every step (see `PACED_SHIFT`);
- `process_dependent`: its initial weights depend on the process id, so two
  processes (two routes) train different trajectories and parity must break;
- `raises`: raises a RuntimeError at step `FAILING_STEP`;
- `exits`: calls `os._exit(3)` at step `FAILING_STEP`, skipping every handler;
- `hangs`: sleeps forever at step `FAILING_STEP`;
- `hoards`: caps its address space with RLIMIT_AS while recording, then
  allocates at step `FAILING_STEP` until the limit stops it;
- `diverges`: its learning rate turns NaN at step `FAILING_STEP`, so the
  loss is NaN from the next step on — on both routes alike (`diverges_alone`:
  on the recorded route only);
- `misshapen`: records a matrix product of mismatched shapes (a ShapeError
  at the recording line);
- `detaches`: starts `sleep 300` in a session of its own (out of the worker's
  process group, holding the worker's standard error) and trains on;
  `detaches_and_hangs` does the same, then sleeps forever. The detached
  process's id is written to the file `TINY_DETACHED_PID_FILE` names;
- `blocks_its_result`: replaces the folder `TINY_BLOCKED_FOLDER` names by a
  file, so the grade cannot write its result there at the end (and
  `blocks_its_result_and_raises` then raises, failing its route).

The hooks ride on `learning_rate(step, steps)`, which the training loop calls
once per step after the gradients, so a failure lands in the middle of
training, after the worker said `ready`. All but `diverges` fail in the
`recorded` worker only, so the grade can be seen to finish `engine`.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import subprocess
import sys
import time
from typing import Any

import numpy as np

from topos import Linear, Shape, Tape, Tensor, cross_entropy, init
from topos.datasets.synthetic import synthetic_dataset
from topos.training import Recording, StepSchedule, Workload

SIDE = 8
CLASSES = 4
HIDDEN = 16
BATCH = 16
FAILING_STEP = 3


def load_dataset(directory: str | None) -> object:
    """A synthetic 1x8x8 set of four classes, whatever directory is named (the tests use none)."""
    return synthetic_dataset(
        "tiny", 7, (1, SIDE, SIDE), (256, 32), CLASSES, mean=(0.5,), deviation=(0.25,)
    )


def record(tape: Tape, rows: int, perturbation: float = 0.0, dtype: Any = np.float32) -> Recording:
    """A two-layer perceptron over flattened 8x8 images, with cross-entropy loss."""
    hidden_weights = init.kaiming(31)
    output_weights = init.kaiming(32)
    first_weights = hidden_weights(Shape([SIDE * SIDE, HIDDEN]))
    if perturbation:
        first_weights = first_weights + perturbation
    first_bias = hidden_weights(Shape([HIDDEN])).astype(dtype)
    first = Linear(tape, first_weights.astype(dtype), first_bias)
    second_weights = output_weights(Shape([HIDDEN, CLASSES])).astype(dtype)
    second = Linear(tape, second_weights, output_weights(Shape([CLASSES])).astype(dtype))
    images = tape.input(Tensor.filled([rows, 1, SIDE, SIDE], 0.0, dtype=dtype))
    targets = tape.input(Tensor.selection([0] * rows, CLASSES, 1.0, dtype=dtype))
    logits = second.express(first.express(images.reshape(rows, SIDE * SIDE)).relu())
    loss = cross_entropy(logits, targets)
    return Recording(
        images.symbol,
        targets.symbol,
        logits.symbol,
        loss.symbol,
        first.parameters() + second.parameters(),
    )


tiny = Workload(
    name="tiny",
    description="a 64 -> 16 -> 4 perceptron on synthetic 8x8 images",
    record=record,
    load_dataset=load_dataset,
    learning_rate=StepSchedule(0.1, 0.01),
    batch_size=BATCH,
    shuffle_state=9,
)


def _record_per_process(tape: Tape, rows: int) -> Recording:
    # A weight shift as small as one part in a million per process id is enough:
    # the first loss already differs in its last bits.
    return record(tape, rows, perturbation=1e-6 * (os.getpid() % 997 + 1))


sharded = dataclasses.replace(tiny, shards=2)

process_dependent = dataclasses.replace(tiny, record=_record_per_process)


def worker_route() -> str | None:
    """The route this worker process trains (from its command line), if it is a worker."""
    arguments = sys.argv
    if "--route" in arguments[:-1]:
        return arguments[arguments.index("--route") + 1]
    return None


@dataclasses.dataclass(frozen=True)
class FailingSchedule:
    """The tiny schedule, with `action()` run when step `FAILING_STEP` asks for its rate,
    in a worker of route `route` (or of every route when `route` is None)."""

    action: object
    route: str | None = "recorded"

    def __call__(self, step: int, steps: int) -> float:
        if step == FAILING_STEP and self.route in (None, worker_route()):
            rate = self.action()
            if rate is not None:  # an action that returns nothing lets training go on
                return rate
        return tiny.learning_rate(step, steps)


def _raise() -> float:
    raise RuntimeError(f"the tiny workload fails at step {FAILING_STEP} on purpose")


def _exit() -> float:
    os._exit(3)


def _hang() -> float:
    while True:
        time.sleep(60)


def _hoard() -> float:
    hoard = []
    while True:
        hoard.append(bytearray(16 * 1024 * 1024))


def _detach() -> None:
    detached = subprocess.Popen(["sleep", "300"], start_new_session=True)
    pid_file = os.environ.get("TINY_DETACHED_PID_FILE")
    if pid_file:
        with open(pid_file, "w") as file:
            file.write(str(detached.pid))


def _detach_and_hang() -> None:
    _detach()
    _hang()


def _block_result_folder() -> None:
    folder = os.environ["TINY_BLOCKED_FOLDER"]
    for name in os.listdir(folder):
        os.remove(os.path.join(folder, name))
    os.rmdir(folder)
    with open(folder, "w") as file:
        file.write("in the way")


def _block_result_folder_and_raise() -> None:
    _block_result_folder()
    _raise()


def _not_a_number() -> float:
    return float("nan")


def _record_under_a_memory_limit(tape: Tape, rows: int) -> Recording:
    # The limit is the address space already mapped plus 256 MiB, so loading and
    # the first steps fit, and the hoard does not.
    with open("/proc/self/status") as status:
        mapped = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize"))
    limit = mapped + 256 * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return record(tape, rows)


def _record_misshapen(tape: Tape, rows: int) -> Recording:
    images = tape.input(Tensor.filled([rows, SIDE * SIDE], 0.0))
    weights = tape.parameter(Tensor.filled([SIDE, CLASSES], 0.5))
    logits = images @ weights  # deliberately wrong: [rows, 64] @ [8, 4]
    targets = tape.input(Tensor.selection([0] * rows, CLASSES, 1.0))
    loss = cross_entropy(logits, targets)
    return Recording(images.symbol, targets.symbol, logits.symbol, loss.symbol, [weights.symbol])


raises = dataclasses.replace(tiny, learning_rate=FailingSchedule(_raise))
exits = dataclasses.replace(tiny, learning_rate=FailingSchedule(_exit))
hangs = dataclasses.replace(tiny, learning_rate=FailingSchedule(_hang))
hoards = dataclasses.replace(
    tiny, record=_record_under_a_memory_limit, learning_rate=FailingSchedule(_hoard)
)
diverges = dataclasses.replace(tiny, learning_rate=FailingSchedule(_not_a_number, route=None))
diverges_alone = dataclasses.replace(tiny, learning_rate=FailingSchedule(_not_a_number))
misshapen = dataclasses.replace(tiny, record=_record_misshapen)
detaches = dataclasses.replace(tiny, learning_rate=FailingSchedule(_detach))
blocks_its_result = dataclasses.replace(tiny, learning_rate=FailingSchedule(_block_result_folder))
blocks_its_result_and_raises = dataclasses.replace(
    tiny, learning_rate=FailingSchedule(_block_result_folder_and_raise)
)
detaches_and_hangs = dataclasses.replace(tiny, learning_rate=FailingSchedule(_detach_and_hang))


#: `paced`'s pause in every step and the shift of its first weights: the `--against`
#: tests rewrite these two lines in a second checkout, so that its code, and only its
#: code, trains faster (no pause) or other bits (shifted weights).
PACED_SECONDS = 0.02
PACED_SHIFT = 0.0


def _paced_rate(step: int, steps: int) -> float:
    # Busy, not asleep: the step's CPU time explains its wall time, as a real kernel's
    # would, so the time judgement does not take the pause for a disturbance.
    until = time.perf_counter() + PACED_SECONDS
    while time.perf_counter() < until:
        pass
    return tiny.learning_rate(step, steps)


def _record_shifted(tape: Tape, rows: int) -> Recording:
    return record(tape, rows, perturbation=PACED_SHIFT)


paced = dataclasses.replace(tiny, record=_record_shifted, learning_rate=_paced_rate)


#: `sleepy`'s pause in every step: asleep, so the machine's load cannot take it from the
#: step (a wait without a preemption is the route's own), and both routes' steps last
#: about as long: their time is decisively within any tolerance above a few per cent.
SLEEPY_SECONDS = 0.05


def _sleepy_rate(step: int, steps: int) -> float:
    time.sleep(SLEEPY_SECONDS)
    return tiny.learning_rate(step, steps)


sleepy = dataclasses.replace(tiny, learning_rate=_sleepy_rate)
