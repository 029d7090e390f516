"""The primitives and the framework that registers them, kept apart: `primitives/` holds
one module a primitive and nothing else, each registering its operations fully (shape
rule, kernel, derivative rule, memory rules, FLOPs, example); this folder holds the
framework (`Primitive` and its registry, discovery, emission, the rules' vocabularies and
the kernels several primitives share). `REGISTRY` maps every name to its `Primitive`.
Every module of `primitives/` is imported, found on disk (`discovery`), so a new
primitive needs its own file there and no other edit."""

from topos.ops import primitives
from topos.ops.discovery import import_modules
from topos.ops.patch_window import PatchWindow
from topos.ops.primitive import REGISTRY, Primitive, lookup

#: Every module of topos.ops.primitives, imported (importing registers the primitives).
MODULES = import_modules(primitives.__name__, primitives.__path__)

__all__ = ["MODULES", "REGISTRY", "PatchWindow", "Primitive", "lookup"]
