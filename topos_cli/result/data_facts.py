"""DataFacts: which data a grade trained on, one record wherever it is said: a worker's
ready facts (`ReadyFacts.dataset`: what it loaded) and the result's workload
(`WorkloadFacts.data`: that, with what the grade was asked for)."""

from __future__ import annotations

from topos_cli.result.result_part import Count, ResultPart


class DataFacts(ResultPart):
    """Which data: what was asked for (`requested`: the `--data` folder or `synthetic`;
    the grade fills it, a worker leaves it `None`), and what the worker loaded: its name,
    where it came from (`synthetic` for the built-in stand-in, else the folder or file
    read), its format, its fingerprint and its training images. Every field has a
    default, so an older result (a worker's facts without `requested`) still reads."""

    requested: str | None = None
    name: str | None = None
    source: str | None = None
    format: str | None = None
    fingerprint: str | None = None
    train_images: Count | None = None
