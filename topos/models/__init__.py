"""Reusable models: the seed's convnet family."""

from topos.models.convnet import ConvNet, record_classifier

__all__ = ["ConvNet", "record_classifier"]
