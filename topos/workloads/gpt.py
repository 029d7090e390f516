"""The `gpt` workload: a small character-level transformer on a text (issue 14).

Data: `--data PATH` names a UTF-8 text file or a folder holding `input.txt`; without it
the synthetic text stands in. The vocabulary is the text's sorted distinct characters;
the first 90% trains, the last 10% validates. Each step reads 32 windows of 65
characters at offsets drawn from splitmix64 (batch-order seed 7): the first 64 are the
input tokens, the next 64 (shifted by one) the targets. The model is `GPT` (topos.models)
with D 64, 4 heads, 2 blocks, context 64; the loss the mean cross-entropy over all 32 x 64
positions; AdamW at a constant 1e-3, betas (0.9, 0.99), eps 1e-8, weight decay 0.1 on
parameters of rank 2 and above. Two shards of 16 windows, one per core, the second in a
forked process where that can run (Linux), else on a thread (`gpt-threads` keeps it on
a thread everywhere).
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from typing import Any

import numpy as np

from topos import AdamW, Indices, Tape, cross_entropy
from topos.datasets import Dataset
from topos.datasets.synthetic_text import CONSONANTS, VOWELS
from topos.datasets.text import load_text
from topos.datasets.text_split import TextSplit
from topos.models.gpt import GPT, GPTShape
from topos.training.random_windows import random_windows
from topos.training.workload import Recording, Workload

CONTEXT = 64
WINDOW = CONTEXT + 1
BATCH_WINDOWS = 32
BATCH_ORDER_SEED = 7
FIRST_SEED = 31

#: The synthetic text's vocabulary size, known without generating it: its letters in
#: both cases, the space, the newline and `!,.?` (the test pins it to the text's).
SYNTHETIC_VOCABULARY = 2 * len(CONSONANTS + VOWELS) + 6


def record(
    tape: Tape, rows: int, dtype: Any = np.float32, vocabulary: int = SYNTHETIC_VOCABULARY
) -> Recording:
    """Records the model over `rows` windows and its loss, in `dtype`: index inputs
    `tokens` and `targets` `[rows, 64]`, output `logits` `[rows, 64, vocabulary]`."""
    model = GPT(tape, GPTShape(vocabulary, CONTEXT), FIRST_SEED, dtype)
    return language_model_recording(tape, model, rows, vocabulary)


def language_model_recording(tape: Tape, model: Any, rows: int, vocabulary: int) -> Recording:
    """A character model's recording over `rows` windows, its parameters already on the
    tape: index inputs `tokens` and `targets` `[rows, 64]`, the `logits` it expresses, and
    the mean cross-entropy over every position (gpt's and llama's alike)."""
    tokens = tape.input(Indices.zeros([rows, CONTEXT], vocabulary))
    targets = tape.input(Indices.zeros([rows, CONTEXT], vocabulary))
    logits = model.express(tokens)
    loss = cross_entropy(logits, targets)
    return Recording(
        loss=loss.symbol,
        parameters=model.named_parameters(),
        inputs={"tokens": tokens.symbol, "targets": targets.symbol},
        outputs={"logits": logits.symbol},
    )


def feeds(split: TextSplit, offsets: np.ndarray, recording: Recording) -> dict:
    """The windows at `offsets`: their first 64 characters as `tokens`, the 64 after the
    first as `targets`."""
    windows = split.windows(offsets, WINDOW)
    classes = split.classes
    return {
        recording.inputs["tokens"]: Indices(
            windows[:, :CONTEXT].shape, windows[:, :CONTEXT], classes
        ),
        recording.inputs["targets"]: Indices(windows[:, 1:].shape, windows[:, 1:], classes),
    }


def load_dataset(directory: str | None) -> Dataset:
    """The text at `directory` (a file or a folder holding input.txt), or the synthetic
    text; a text whose training part cannot hold one batch's windows is refused."""
    return load_text(directory, minimum=BATCH_WINDOWS * WINDOW, window=WINDOW)


#: Above this, what the vocabulary alone costs a worker is worth a warning (bytes).
VOCABULARY_WARNING_BYTES = 256 * 2**20
#: float32 copies of each vocabulary-sized weight a training step holds: the weight, its
#: gradient and AdamW's two moments.
_WEIGHT_COPIES = 4
#: float32 copies of the logits a step holds: the logits, their softmax, their gradient.
_LOGIT_COPIES = 3


def vocabulary_bytes(vocabulary: int, features: int = 64) -> int:
    """An estimate of the memory a training step spends on the vocabulary: the token
    embedding and the head (`vocabulary x features` each, with gradient and AdamW
    moments) and the logits (`rows x context x vocabulary`, with softmax and gradient).
    It grows linearly in the vocabulary, which a text of many distinct characters makes
    huge (60,000 characters cost 2.2 GiB per worker)."""
    weights = 2 * vocabulary * features * _WEIGHT_COPIES
    logits = BATCH_WINDOWS * CONTEXT * vocabulary * _LOGIT_COPIES
    return 4 * (weights + logits)


def vocabulary_warning(vocabulary: int) -> str | None:
    """One line saying that `vocabulary` distinct characters make the model's memory
    explode, or None when they do not."""
    estimate = vocabulary_bytes(vocabulary)
    if estimate <= VOCABULARY_WARNING_BYTES:
        return None
    return (
        f"warning: a vocabulary of {vocabulary:,} distinct characters costs the gpt model "
        f"about {estimate / 2**30:.1f} GiB per worker (embedding, head and logits); a "
        f"character corpus usually has a few hundred"
    )


def adapt(workload: Workload, dataset: Dataset) -> Workload:
    """The workload with its vocabulary sized to `dataset`'s; a vocabulary that makes the
    model's memory explode is said in one line on stderr (`vocabulary_warning`), which a
    grade passes on from its workers."""
    vocabulary = len(dataset.vocabulary)
    warning = vocabulary_warning(vocabulary)
    if warning is not None:
        sys.stderr.write(f"topos: {warning}\n")
        sys.stderr.flush()
    return dataclasses.replace(workload, record=functools.partial(record, vocabulary=vocabulary))


def optimizer() -> AdamW:
    """AdamW as the issue fixes it: decay only the weights and embeddings (rank >= 2)."""
    return AdamW(1e-3, betas=(0.9, 0.99), epsilon=1e-8, weight_decay=0.1, decays=_decays)


def _decays(shape) -> bool:
    return shape.rank >= 2


def _constant_rate(step: int, steps: int) -> float:
    return 1e-3


workload = Workload(
    name="gpt",
    description="a character transformer: 2 pre-norm blocks of 4-head causal attention and "
    "a gelu MLP, D 64, context 64",
    record=record,
    load_dataset=load_dataset,
    learning_rate=_constant_rate,
    batch_size=BATCH_WINDOWS,
    feeds=feeds,
    optimizer=optimizer,
    shuffle_state=BATCH_ORDER_SEED,
    shards=2,
    shard_processes=None,
    batches=random_windows(WINDOW),
    adapt=adapt,
)
