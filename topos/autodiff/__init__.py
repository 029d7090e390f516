"""The chain rule both gradient routes share, and the algebras it runs with.

Between `graph` (what is recorded) and `engine` (what runs): `sweep` walks a graph
right to left applying each primitive's derivative rule through an `Algebra`:

- `RecordingAlgebra` appends each operation to the tape (the recorded route,
  `record_chain_rule`, which `Tape.differentiate` calls);
- `EagerAlgebra` runs each operation's kernel now (the engine's `Run.backward`);
- `ShapeAlgebra` infers shapes and memory orders only, recording every call, from
  which the engine plans the eager sweep's memory.
"""

from topos.autodiff.algebra import Algebra
from topos.autodiff.chain_rule import Schedule, backward_schedule, sweep
from topos.autodiff.eager_algebra import EagerAlgebra
from topos.autodiff.recorded_chain_rule import record_chain_rule
from topos.autodiff.recording_algebra import RecordingAlgebra
from topos.autodiff.shape_algebra import ShapeAlgebra, ShapeOperand, SimulatedCall, Storage

__all__ = [
    "Algebra",
    "EagerAlgebra",
    "RecordingAlgebra",
    "Schedule",
    "ShapeAlgebra",
    "ShapeOperand",
    "SimulatedCall",
    "Storage",
    "backward_schedule",
    "record_chain_rule",
    "sweep",
]
