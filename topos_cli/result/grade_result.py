"""GradeResult: the whole result of a grade (or a frontier) as its file holds it, typed.

    {
      "schema": "topos.grade/1",
      "created": "2026-08-14T10:15:00Z",
      "tool": {"name": "topos", "version": "0.1.0"},
      "project": ProjectFacts,              # the project graded: repository, commit, dirty
      "host": HostFacts,                    # the machine, plus what the workers add
      "workload": {"name": "cifar10", "data": DataFacts},
      "steps": 300,
      "settings": GradeSettings,            # routes, repeat, threads, environment, ...
      "repeats": [Repeat, ...],          # raw: per-step times, loss bits, facts
      "verdict": {...},                     # the report's verdict (its settings typed)
      "status": "complete", "exit_status": 0, "error": null, "interrupted": null,
      "routes": {"engine": RouteFacts, ...},
      "memory_prediction": [MemoryPrediction, ...],
      "baseline": null, "frontier": null
    }

The raw repeats are authoritative: a verdict or a comparison can always be recomputed
from them. This module is the one place a field of a result is named; `result_file`
reads and writes the file.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from topos_cli.result.checkout_comparison_record import CheckoutComparisonRecord
from topos_cli.result.checkout_facts import CheckoutFacts
from topos_cli.result.comparison_record import ComparisonRecord
from topos_cli.result.data_facts import DataFacts
from topos_cli.result.instruction_counts import RouteCounts
from topos_cli.result.native_agreement_record import NativeAgreementRecord
from topos_cli.result.pairing_record import PairingRecord
from topos_cli.result.parity_record import ParityRecord
from topos_cli.result.peer_agreement_record import PeerAgreementRecord
from topos_cli.result.repeat import Repeat
from topos_cli.result.result_part import Bytes, Count, Ratio, ResultPart, Seconds, SignedBytes
from topos_cli.result.route_verdict_record import RouteVerdictRecord
from topos_cli.result.tolerance import CompareSettings
from topos_cli.result.verdict_settings import VerdictSettings
from topos_cli.result.worker_facts import (
    CodeFacts,
    LiveVolume,
    Numerics,
    RematFacts,
    StepMemoryFacts,
)

#: The schema this topos writes and reads. A change that breaks readers bumps the number.
SCHEMA = "topos.grade/1"

#: What every topos result schema starts with, to tell "another schema" from "not ours".
SCHEMA_FAMILY = "topos.grade/"


class Tool(ResultPart):
    """The program that wrote the result."""

    name: str = "topos"
    version: str = "unknown"


class GitFacts(ResultPart):
    """A checkout's commit, and whether its tree had uncommitted changes (`host.git`:
    topos's own checkout, where topos runs from one)."""

    commit: str | None = None
    dirty: bool | None = None


class ProjectFacts(ResultPart):
    """The project graded: the git repository of the working directory (its name, its
    `origin` remote or else its path, its top-level directory), its commit, and whether
    its tree had uncommitted changes. History groups and labels grades by its commit."""

    name: str | None = None
    repository: str | None = None
    root: str | None = None
    commit: str | None = None
    dirty: bool | None = None


class HostFacts(ResultPart):
    """The machine a grade ran on (gathered without NumPy), and the numerics its workers
    computed with."""

    cpu_model: str | None = None
    #: The instruction-set extensions that steer a kernel's speed (`avx2`, `avx512f`, `neon`,
    #: `sve`, ...): only those of `harness.host.MATTERING_FLAGS` the CPU has, sorted.
    cpu_flags: list[str] | None = None
    logical_cores: Count | None = None
    available_cores: Count | None = None
    physical_cores: Count | None = None
    load_average: list[Ratio] | None = None
    memory_bytes: Bytes | None = None
    system: str | None = None
    #: The operating system by name and release: `Ubuntu 24.04.1 LTS`, `macOS 14.5`.
    operating_system: str | None = None
    machine: str | None = None
    python: str | None = None
    python_executable: str | None = None
    git: GitFacts | None = None
    #: Where /proc is missing, workers cannot read VmHWM and fall back to sampling.
    proc_filesystem: bool | None = None
    numerics: Numerics | None = None
    threads: Count | None = None


class WorkloadFacts(ResultPart):
    """The workload graded, by name, and its data."""

    name: str
    data: DataFacts | None = None


class GradeSettings(ResultPart):
    """What the grade was asked to do, and how it measured."""

    routes: list[str] = msgspec.field(default_factory=list)
    repeat: Count | None = None
    #: `--repeat auto`'s time budget (`None`: a fixed number of repeats), and why the
    #: repeats stopped where they did, in words.
    repeat_budget_seconds: Seconds | None = None
    repeat_stop: str | None = None
    #: The runs in the order they ran: `[route, repeat]` pairs.
    order: list[tuple[str, Count]] = msgspec.field(default_factory=list)
    threads: Count | None = None
    timeout_seconds: Seconds | None = None
    data: str | None = None
    environment: dict[str, str | None] = msgspec.field(default_factory=dict)
    sample_interval_seconds: Seconds | None = None
    #: How each memory figure was measured, in words.
    memory_method: dict[str, str] = msgspec.field(default_factory=dict)
    #: `exact` when every completed run's peak is the kernel's high-water mark (VmHWM),
    #: `sampled` when one's is not (no /proc: psutil and ru_maxrss, coarser).
    memory_measurement: Literal["exact", "sampled"] | None = None
    tolerance: CompareSettings | None = None
    baseline: str | None = None
    budget: str | None = None
    #: Steps each worker runs and throws away before the measured ones (`--warmup`).
    warmup_steps: Count | None = None


class RouteFacts(ResultPart):
    """Per route, what its worker said at ready: plan summary, live volume, node counts."""

    posture: str | None = None
    shards: Count | None = None
    plan: list[str] = msgspec.field(default_factory=list)
    live_volume: LiveVolume | None = None
    remat: RematFacts | None = None
    forward_nodes: Count | None = None
    gradient_nodes: Count | None = None
    lower_seconds: Seconds | None = None
    #: Remat's search, when the grade's planning child ran it before the workers
    #: (`ReadyFacts.planning_seconds`); None when the worker's lowering searched.
    planning_seconds: Seconds | None = None
    warm_up_seconds: Seconds | None = None
    high_water_source: str | None = None
    step_memory: StepMemoryFacts | None = None


class MemoryPrediction(ResultPart):
    """A route's predicted training delta beside the measured one."""

    route: str
    predicted_live_bytes: Bytes | None = None
    predicted_training_bytes: Bytes | None = None
    parts: dict[str, Bytes] | None = None
    moment: str | None = None
    measured_training_delta_bytes: SignedBytes | None = None
    #: What the prediction leaves unexplained (negative: it predicted more).
    unexplained_bytes: SignedBytes | None = None
    ratio: Ratio | None = None
    within_tolerance: bool | None = None
    tolerance: Ratio | None = None
    tolerance_floor_bytes: Bytes | None = None


class Interruption(ResultPart):
    """A grade cut short: the signal, and the runs that never ran."""

    signal: str
    not_run: list[tuple[str, Count]] = msgspec.field(default_factory=list)


class BaselineComparison(ResultPart):
    """The comparison with `--baseline`: its path, and the comparison (`ComparisonRecord`)."""

    path: str | None = None
    comparison: ComparisonRecord | None = None


class SideCode(ResultPart):
    """What one side of `--against` imported, as its workers said (`CodeFacts`), with the
    commit (and dirty flag) of the checkout each file lies in."""

    code: CodeFacts | None = None
    workload_commit: str | None = None
    workload_dirty: bool | None = None
    topos_commit: str | None = None
    topos_dirty: bool | None = None


class AgainstFacts(ResultPart):
    """`--against`: the other checkout, the comparison of this checkout with it, and its
    runs, kept apart from this checkout's repeats; what each side imported (`this`,
    `other`)."""

    checkout: CheckoutFacts = CheckoutFacts()
    comparison: CheckoutComparisonRecord | None = None
    repeats: list[Repeat] = msgspec.field(default_factory=list)
    sides: dict[str, SideCode] = msgspec.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The section as its file holds it; each run as `Repeat.to_json` writes it."""
        # Stays for the runs alone: `Repeat.to_json` adds its derived loss fields.
        data = super().to_json()
        data["repeats"] = [run.to_json() for run in self.repeats]
        return data


class RefusedPoint(ResultPart):
    """A frontier's budget that was not graded, and why."""

    point: str
    budget: str | None = None
    why: str | None = None


class FlaggedPoint(ResultPart):
    """A native frontier's point flagged for its memory, and why in one line: more than
    a larger budget's point measured, or a plan its partitioner estimated over what its
    budget allows."""

    point: str
    why: str


class FrontierFacts(ResultPart):
    """A frontier's budgets, the points graded, those refused, and its picture."""

    budgets: list[str] = msgspec.field(default_factory=list)
    points: list[str] = msgspec.field(default_factory=list)
    refused: list[RefusedPoint] = msgspec.field(default_factory=list)
    picture: str | None = None
    #: Budgets whose plans are the same, each group graded once as one point.
    same_plans: list[list[str]] = msgspec.field(default_factory=list)
    #: A native workload's frontier (`topos frontier` on a PyTorch or JAX step): its
    #: points flagged for their memory (`FlaggedPoint`).
    flagged: list[FlaggedPoint] = msgspec.field(default_factory=list)


class StoredWarning(ResultPart):
    """A warning a verdict gave (a busy machine, varying step times): its kind, the route
    it is about, what it says and what to do about it."""

    kind: str
    message: str
    route: str | None = None
    remedy: str | None = None
    #: What warnings of this kind share, and this route's part (`warning_groups`).
    cause: str | None = None
    detail: str | None = None


class JudgedVerdict(ResultPart, forbid_unknown_fields=False):
    """The verdict as a result keeps it, every part a typed record: the judge's `Verdict`
    builds it (`Verdict.record`) and can always recompute it from the repeats. Reading is
    tolerant of what it does not know (a field a later topos adds is left aside, one an
    earlier topos lacked takes its default) and refuses a known field of the wrong type,
    in one line naming it."""

    settings: VerdictSettings = VerdictSettings()
    reference: str | None = None
    summary: str | None = None
    exit_status: int | None = None
    parity: ParityRecord | None = None
    routes: list[RouteVerdictRecord] = msgspec.field(default_factory=list)
    pairings: list[PairingRecord] = msgspec.field(default_factory=list)
    #: Each peer route's agreement with topos (`PeerAgreement.record`).
    peers: list[PeerAgreementRecord] = msgspec.field(default_factory=list)
    #: Each compiled native route's agreement with its reference (`NativeAgreement.record`).
    native: list[NativeAgreementRecord] = msgspec.field(default_factory=list)
    warnings: list[StoredWarning] = msgspec.field(default_factory=list)
    #: Per route a frontier picture draws (its time and training Δ measured), whether the
    #: time judgement tells it from every other such route (`told_apart`); `None` in a
    #: result written before it was kept.
    told_apart: dict[str, bool] | None = None

    def route(self, name: str) -> RouteVerdictRecord:
        """The verdict on the route called `name`; raises `KeyError` if none."""
        for route in self.routes:
            if route.route == name:
                return route
        raise KeyError(name)

    @property
    def agreements(self) -> list[PeerAgreementRecord | NativeAgreementRecord]:
        """The routes judged by agreement, not bits: the peers', then a native
        workload's compiled routes', as the verdict judged them."""
        return [*self.peers, *self.native]

    def keeps_every_word(self) -> bool:
        """Whether render can draw the verdict from this record alone: every word and
        flag it reads (the agreements' cells, the pairings' phrases, `told_apart`) kept.
        A result written before they were kept is judged again from its repeats."""
        return (
            self.told_apart is not None
            and all(agreement.cell for agreement in self.agreements)
            and all(pairing.phrase for pairing in self.pairings)
        )


Status = Literal["complete", "interrupted", "error", "failed"]


class GradeResult(ResultPart, kw_only=True):
    """The whole result of a grade (or frontier), as its file holds it."""

    schema: str = SCHEMA
    created: str | None = None
    tool: Tool = Tool()
    #: The project graded (the working directory's git repository), `None` outside git.
    project: ProjectFacts | None = None
    host: HostFacts = HostFacts()
    workload: WorkloadFacts
    steps: Count
    settings: GradeSettings = GradeSettings()
    repeats: list[Repeat] = msgspec.field(default_factory=list)
    verdict: JudgedVerdict | None = None
    status: Status | None = None
    exit_status: int | None = None
    error: str | None = None
    interrupted: Interruption | None = None
    routes: dict[str, RouteFacts] = msgspec.field(default_factory=dict)
    memory_prediction: list[MemoryPrediction] = msgspec.field(default_factory=list)
    baseline: BaselineComparison | None = None
    frontier: FrontierFacts | None = None
    against: AgainstFacts | None = None
    #: Each route's counted steps (`grade --measure instructions`); None when not asked.
    counts: list[RouteCounts] | None = None

    def to_json(self) -> dict[str, Any]:
        """The result as its file holds it; each run as `Repeat.to_json` writes it."""
        # Stays for the runs alone: `Repeat.to_json` adds its derived loss fields.
        data = super().to_json()
        data["repeats"] = [run.to_json() for run in self.repeats]
        if self.against is not None:
            data["against"] = self.against.to_json()
        return data
