"""Tests of the topos library: derivatives, route parity, plans, errors, tensors, optimizers."""
