"""The `llama` workload: a small Llama-style character transformer on `gpt`'s text (issue 27).

Data, batches and schedule are `gpt`'s: `--data PATH` names a UTF-8 text file or a folder
holding `input.txt` (else the synthetic text); the vocabulary is the text's sorted
distinct characters; each step reads 32 windows of 65 characters at offsets drawn from
splitmix64 (batch-order seed 7), the first 64 the tokens and the 64 after the first the
targets. The model is `Llama` (topos.models.llama): D 64, 2 layers, 4 heads of 16,
pre-norm RMS norms (eps 1e-6), rotary (half-split, theta 10000) on q and k, causal
attention scaled by 1/4, a SwiGLU feed-forward of 172, a final RMS norm and an untied
head, no biases; seeds 51, 52, ... The loss is the mean cross-entropy over all 32 x 64
positions; AdamW at a constant 1e-3, betas (0.9, 0.99), eps 1e-8, weight decay 0.1 on
parameters of rank 2 and above. Two shards of 16 windows, as `gpt` trains them.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np

from topos.datasets import Dataset
from topos.graph.tape import Tape
from topos.models.llama import Llama, LlamaShape
from topos.nn.optimizers import AdamW
from topos.training.constant_rate import ConstantRate
from topos.training.random_windows import random_windows
from topos.training.workload import Recording, Workload
from topos.workloads.gpt import (
    BATCH_ORDER_SEED,
    BATCH_WINDOWS,
    CONTEXT,
    SYNTHETIC_VOCABULARY,
    WINDOW,
    feeds,
    language_model_recording,
    load_dataset,
)

FIRST_SEED = 51


def record(
    tape: Tape, rows: int, dtype: Any = np.float32, vocabulary: int = SYNTHETIC_VOCABULARY
) -> Recording:
    """Records the model over `rows` windows and its loss, in `dtype`: index inputs
    `tokens` and `targets` `[rows, 64]`, output `logits` `[rows, 64, vocabulary]`."""
    model = Llama(tape, LlamaShape(vocabulary, CONTEXT), FIRST_SEED, dtype)
    return language_model_recording(tape, model, rows, vocabulary)


def adapt(workload: Workload, dataset: Dataset) -> Workload:
    """The workload with its vocabulary sized to `dataset`'s."""
    vocabulary = len(dataset.vocabulary)
    return dataclasses.replace(workload, record=functools.partial(record, vocabulary=vocabulary))


def optimizer() -> AdamW:
    """AdamW as the issue fixes it: decay only the matrices (rank >= 2)."""
    return AdamW(1e-3, betas=(0.9, 0.99), epsilon=1e-8, weight_decay=0.1, decays=_decays)


def _decays(shape) -> bool:
    return shape.rank >= 2


workload = Workload(
    name="llama",
    description="a Llama-style character transformer: 2 pre-norm layers of RMS norm, "
    "4-head causal attention with rotary q and k, a SwiGLU feed-forward, D 64, context 64",
    record=record,
    load_dataset=load_dataset,
    learning_rate=ConstantRate(1e-3),
    batch_size=BATCH_WINDOWS,
    feeds=feeds,
    optimizer=optimizer,
    shuffle_state=BATCH_ORDER_SEED,
    shards=2,
    shard_processes=None,
    batches=random_windows(WINDOW),
    adapt=adapt,
)
