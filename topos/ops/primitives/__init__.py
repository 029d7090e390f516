"""The primitives, one module each and nothing else: each registers its operations
fully (shape rule, kernel, derivative rule, memory rules, FLOPs, example, emission)
when imported. `topos.ops` imports every module of this folder, found on disk, so a new
primitive is a new file here and no other edit."""
