"""The peer routes: a workload's recording emitted to PyTorch or JAX and trained there.

Each primitive states its emission beside its kernel (`topos.ops.emission`);
`EmittedProgram` runs a recording's forward program node by node in a peer namespace
(`TorchNamespace`, `JaxNamespace`); `TorchEmitter` and `JaxEmitter` add the peer's
autodiff and optimizer; `PeerTraining` is one peer route of a workload, as `Training`
is one of topos's routes. Importing this package imports neither peer: the emitters do,
when a peer route runs.
"""

from topos.peers.emitted_program import EmittedProgram
from topos.peers.peer_training import PeerTraining, make_emitter

__all__ = ["EmittedProgram", "PeerTraining", "make_emitter"]
