"""The primitives: each module of this folder registers its operations fully (shape rule,
kernel, derivative rule, memory rules, example); `REGISTRY` maps every name to its
`Primitive`. Every module here is imported, found on disk (`discovery`), so a new
primitive needs its own file and no other edit."""

from topos.ops.discovery import import_modules
from topos.ops.patch_window import PatchWindow
from topos.ops.primitive import REGISTRY, Primitive, lookup

#: Every module of topos.ops, imported (importing registers the primitives).
MODULES = import_modules(__name__, __path__)

__all__ = ["MODULES", "REGISTRY", "PatchWindow", "Primitive", "lookup"]
