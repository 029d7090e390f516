"""ShardProcesses: the shards past the first computed in forked children (Linux only).

Two shard threads of one process contend for the interpreter lock in NumPy's many
small calls; two processes do not (issue 18, lever 2). On its first step the parent
forks one child per shard past the first. Each child holds the program's plan for its
shard (lowered in the parent before the fork; its arena its own) and meets the parent
through anonymous shared memory: the parent copies the parameters (one copy all
children read) and shard i's rows of the feeds in, writes one byte on child i's pipe,
computes shard 0 itself, and reads one byte back; the child has written its loss and
gradients into shared memory by then. The parent adds the shards in shard order as
the threads do (`RouteProgram.compute`), so the bits are the same.

Lifecycle: a child dies with its parent (PR_SET_PDEATHSIG, and end of file on its
pipe), ends on an interrupt, and reports an exception as a one-line `ShardProcessError`
in the parent; every wait of the parent ends on an answer or end of file, never on
a timeout alone. `close()` (also at exit) ends and reaps the children.

Memory: a child's cost is its private memory (`topos.system.process_memory`), read by the child
at ready (`mark_ready`) and, while tracking, at the end of each computation, when it
holds its arena, roots and gradients (`memory`).
"""

from __future__ import annotations

import contextlib
import gc
import mmap
import os
import signal
import struct
import sys
import time
import weakref
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from topos.graph.parameter_gradients import ParameterGradients
from topos.graph.parameters import Parameters
from topos.graph.symbol import Symbol
from topos.indices import Indices
from topos.system.free_chunk_reservation import reserve_free_chunks
from topos.system.process_memory import private_bytes
from topos.tensor import Tensor
from topos.training.object_arenas import carve_object_arenas
from topos.training.private_pages import own_written_pages
from topos.training.resident_bytes import mmap_threshold
from topos.training.shard_work import ShardWork

COMPUTE, RELEASE, READY, SYNC, QUIT = b"c", b"r", b"m", b"s", b"q"
DONE, FAILED = b"d", b"e"


class ShardProcessError(RuntimeError):
    """A shard's process failed or ended: the message says which and why, in one line."""


def available() -> bool:
    """Whether forked shard processes can run here (Linux)."""
    return sys.platform.startswith("linux")


def in_processes(choice: bool | None) -> bool:
    """Where a workload's `shard_processes` choice puts the shards past the first: in
    processes for True, on threads for False, and for None (the built-in workloads'
    choice) in processes where they can run, else on threads."""
    return available() if choice is None else choice


def require_linux() -> None:
    """Raises a one-line error where forked shard processes cannot run."""
    if not available():
        raise ShardProcessError(
            f"shard processes need Linux (fork, prctl and /proc); this is {sys.platform}: "
            f"train the shards on threads (shard_processes=False)"
        )


def _shared(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A zeroed array in anonymous shared memory, which forked children keep mapped."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64))
    block = mmap.mmap(-1, max(1, size * dtype.itemsize))
    return np.frombuffer(block, dtype=dtype, count=size).reshape(shape)


class _Child:
    """The parent's handle on one shard's process and the shared memory they meet in."""

    def __init__(self, shard: int, feeds: Mapping[Symbol, Tensor | Indices], parameters) -> None:
        self.shard = shard
        self.pid = 0
        self.commands = -1  # the parent writes commands here
        self.answers = -1  # and reads answers here
        self.feeds = {
            symbol: (
                _shared(feed.numpy().shape, feed.numpy().dtype),
                getattr(feed, "classes", None),
            )
            for symbol, feed in feeds.items()
        }
        self.gradients = {
            index: _shared(array.shape, array.dtype) for index, array in parameters.items()
        }
        #: The gradients as the parent reads them: read-only views, made once.
        self.gradient_tensors = {
            index: Tensor.adopt(array) for index, array in self.gradients.items()
        }
        dtype = next(iter(parameters.values())).dtype if parameters else np.float32
        self.loss = _shared((1,), dtype)
        #: Private bytes at ready and the largest read at a computation's end since.
        self.memory = _shared((2,), np.int64)


class ShardProcesses:
    """Shards 1..N-1 of a program in forked children (see the module): `work()` says
    what they compute, asked once each time they are forked (the program may set its
    `around_shard_step` after making this, until its first step)."""

    def __init__(self, work: Callable[[], ShardWork]) -> None:
        require_linux()
        self._work = work
        self.work: ShardWork | None = None
        self.children: list[_Child] = []
        self.parameters: dict[int, np.ndarray] = {}
        self.pending = False
        self._finalizer: weakref.finalize | None = None

    # -- the parent's side -------------------------------------------------------

    def submit(self, parameters: Parameters, pieces: Sequence[Mapping[Symbol, object]]) -> None:
        """Starts shards 1.. on the children (forking them on the first call): copies the
        parameters and each shard's rows of the feeds into shared memory, then one byte."""
        if not self.children:
            self._start(parameters, pieces)
        for index, array in parameters.arrays().items():
            np.copyto(self.parameters[index], array)
        for child in self.children:
            for symbol, (buffer, _) in child.feeds.items():
                np.copyto(buffer, pieces[child.shard][symbol].numpy())
        for child in self.children:
            self._send(child, COMPUTE)
        self.pending = True

    def collect(self) -> list[tuple[np.floating, ParameterGradients]]:
        """Shards 1..'s losses and gradients, once every child has answered (views of
        shared memory, valid until the next `submit`)."""
        self.pending = False
        results = []
        failure = None
        for child in self.children:
            try:
                self._answer(child)
            except ShardProcessError as error:
                failure = failure or error
                continue
            gradients = ParameterGradients(self.work.network.origin, child.gradient_tensors)
            results.append((child.loss[0], gradients))
        if failure is not None:
            self.close()
            raise failure
        return results

    def drain(self) -> None:
        """Waits out a submitted computation nobody will collect (the parent's own shard
        failed), so the children are ready for the next."""
        if self.pending:
            with contextlib.suppress(ShardProcessError):
                self.collect()

    def release(self) -> None:
        """Frees every child's plan arena (the next computation allocates it again)."""
        self._everyone(RELEASE)

    def mark_ready(self) -> list[int]:
        """Each child collects garbage, carves its object arenas (`object_arenas`) and reads
        its private memory: the baseline of its training delta; from now on it reads it
        again at every computation's end. Returns the children's private bytes at ready,
        in shard order."""
        self._everyone(READY)
        return [int(child.memory[0]) for child in self.children]

    def memory(self) -> list[tuple[int, int]]:
        """Each child's private bytes at ready and the largest read since, shard order
        (once each child has finished the reading it takes after answering a step)."""
        self._everyone(SYNC)
        return [(int(child.memory[0]), int(child.memory[1])) for child in self.children]

    @property
    def pids(self) -> list[int]:
        """The children's process ids, shard order (empty before the first step)."""
        return [child.pid for child in self.children]

    def close(self) -> None:
        """Ends and reaps the children (closing their pipes); a later step forks anew."""
        if self._finalizer is not None:
            self._finalizer()
        self.children = []
        self.pending = False

    def _everyone(self, command: bytes) -> None:
        for child in self.children:
            self._send(child, command)
        for child in self.children:
            self._answer(child)

    def _send(self, child: _Child, command: bytes) -> None:
        try:
            os.write(child.commands, command)
        except OSError as error:
            raise ShardProcessError(
                f"shard {child.shard}'s process cannot be reached ({error.strerror}): "
                f"it has ended{_exit_status(child.pid)}"
            ) from None

    def _answer(self, child: _Child) -> None:
        """Reads one answer (blocking until it comes or the pipe ends)."""
        head = _read_exactly(child.answers, 1)
        if head == DONE:
            return
        if head == FAILED:
            (length,) = struct.unpack("<I", _read_exactly(child.answers, 4) or b"\0\0\0\0")
            message = _read_exactly(child.answers, length).decode("utf-8", "replace")
            raise ShardProcessError(f"shard {child.shard}'s process failed: {message}")
        raise ShardProcessError(
            f"shard {child.shard}'s process ended without answering{_exit_status(child.pid)}"
        )

    def _start(self, parameters: Parameters, pieces: Sequence[Mapping[Symbol, object]]) -> None:
        self.work = work = self._work()
        arrays = parameters.arrays()
        self.parameters = {
            index: _shared(array.shape, array.dtype) for index, array in arrays.items()
        }
        self.children = [_Child(shard, pieces[shard], arrays) for shard in range(1, work.shards)]
        parent = os.getpid()
        # Objects that exist now are never looked at by a later collection in either
        # process, so a collection does not write to pages both share (each write would
        # copy a page into the child's private memory).
        gc.collect()
        gc.freeze()
        for child in self.children:
            commands_read, commands_write = os.pipe()
            answers_read, answers_write = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: never returns
                _serve(self, work, child, parent, commands_read, answers_write)
            os.close(commands_read)
            os.close(answers_write)
            child.pid, child.commands, child.answers = pid, commands_write, answers_read
        self._finalizer = weakref.finalize(
            self, _end_children, [(c.pid, c.commands, c.answers) for c in self.children]
        )


def _exit_status(pid: int) -> str:
    """`: exit status N` / `: killed by SIGX` once the child `pid` is reaped, else empty."""
    for _ in range(100):  # it is ending: give it up to a second to be reaped
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return ""
        if done:
            if os.WIFSIGNALED(status):
                return f" (killed by {signal.Signals(os.WTERMSIG(status)).name})"
            return f" (exit status {os.WEXITSTATUS(status)})"
        time.sleep(0.01)
    return ""


def _read_exactly(descriptor: int, count: int) -> bytes:
    """`count` bytes from a pipe, or fewer if it ends first."""
    data = b""
    while len(data) < count:
        try:
            chunk = os.read(descriptor, count - len(data))
        except InterruptedError:
            continue
        if not chunk:
            break
        data += chunk
    return data


def _end_children(children: list[tuple[int, int, int]]) -> None:
    """Asks each child to quit, closes its pipes and reaps it; one still running after two
    seconds is killed."""
    for _pid, commands, answers in children:
        for descriptor in (commands, answers):
            try:
                if descriptor == commands:
                    os.write(commands, QUIT)
            except OSError:
                pass
            with contextlib.suppress(OSError):
                os.close(descriptor)
    deadline = time.monotonic() + 2.0
    for pid, _, _ in children:
        while True:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                break
            if done:
                break
            if time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.005)
    gc.unfreeze()


# -- the child's side ----------------------------------------------------------------


def _die_with(parent: int) -> None:
    """Asks Linux to kill this process when `parent` ends (and ends now if it has)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # end of file on the command pipe still ends it
    if os.getppid() != parent:
        os._exit(1)


def _serve(
    processes: ShardProcesses,
    work: ShardWork,
    child: _Child,
    parent: int,
    commands: int,
    answers: int,
) -> None:
    """The child's loop: one command at a time until QUIT or end of file; never returns."""
    status = 0
    try:
        _die_with(parent)
        # Only its own two pipes: the parent's other descriptors (the grader's event
        # pipe, sibling children's pipes) must close when the parent closes them.
        for low, high in _ranges_without(3, os.sysconf("SC_OPEN_MAX"), {commands, answers}):
            os.closerange(low, high)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # an interrupt ends it at once
        own_written_pages()  # no page copied later, by either process: see private_pages
        # The free heap chunks the fork handed down must not serve the run's mapped-size
        # arrays (the roots' block of a model with small gradients): see free_chunk_reservation.
        reserve_free_chunks(mmap_threshold())
        network = work.network
        parameters = Parameters(
            network, {index: Tensor.adopt(array) for index, array in processes.parameters.items()}
        )
        feeds = {
            symbol: Tensor.adopt(buffer) if classes is None else _indices(buffer, classes)
            for symbol, (buffer, classes) in child.feeds.items()
        }
        plan = work.plans[child.shard]
        tracking = False
        around = work.around_step
        measured = 0
        with work.blas_limit():
            while True:
                command = _read_exactly(commands, 1)
                if command in (b"", QUIT):
                    break
                try:
                    if command == COMPUTE:
                        if tracking and around is not None:
                            around[0]()
                        run = plan.forward(parameters, feeds)
                        loss = run.of(work.loss).scalar()
                        gradients = work.gradients(run, parameters)
                        if tracking and around is not None:
                            around[1](measured)
                            measured += 1
                        child.loss[0] = loss
                        for symbol in gradients:
                            np.copyto(child.gradients[symbol.index], gradients.of(symbol).numpy())
                        os.write(answers, DONE)
                        if tracking:
                            # Its peak: the arena, roots and gradients all held. Read after
                            # answering (about half a millisecond), while the parent adds.
                            now = private_bytes() or 0
                            child.memory[1] = max(int(child.memory[1]), now)
                        # Nothing of this run outlives it (its roots share one block: see
                        # FreshBlock), so the next one's peak is its own buffers alone.
                        del run, gradients
                        continue
                    elif command == RELEASE:
                        plan.release()
                    elif command == READY:
                        gc.collect()
                        carve_object_arenas()
                        child.memory[0] = child.memory[1] = private_bytes() or 0
                        tracking = True
                    os.write(answers, DONE)
                except Exception as error:  # the parent hears it, in one line
                    text = str(error).splitlines()[0] if str(error) else ""
                    message = f"{type(error).__name__}: {text}" if text else type(error).__name__
                    data = message.encode("utf-8", "replace")[:4000]
                    os.write(answers, FAILED + struct.pack("<I", len(data)) + data)
    except BaseException:
        status = 1
    finally:
        os._exit(status)


def _classes(feed: object) -> int | None:
    """An index feed's bound (None for a tensor)."""
    return feed.classes if isinstance(feed, Indices) else None


def _indices(buffer: np.ndarray, classes: int) -> Indices:
    """Indices over `buffer` without a copy (the parent has checked the values)."""
    part = Indices.__new__(Indices)
    part._array = buffer
    from topos.tensor import Shape

    part._shape = Shape(buffer.shape)
    part.classes = classes
    return part


def _ranges_without(low: int, high: int, kept: set[int]) -> list[tuple[int, int]]:
    """`[low, high)` as ranges that leave out the descriptors in `kept`."""
    ranges, start = [], low
    for descriptor in sorted(kept):
        if start < descriptor:
            ranges.append((start, descriptor))
        start = max(start, descriptor + 1)
    if start < high:
        ranges.append((start, high))
    return ranges
