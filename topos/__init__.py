"""topos: record a model once, lower it into a plan, train it by two gradient routes."""

__version__ = "0.1.0"
