"""A character language model of your own, graded by topos: the template.

Everything a language-model workload needs, in one file: the model (a one-layer
Llama-style decoder written with the ops a PyTorch user reaches for), its own text file,
the feeds that turn windows of text into token and target ids, the batch order, AdamW at
a constant learning rate. Grade it from the repository's root with

    PYTHONPATH=examples topos grade --workload char_language_model:workload --steps 50

and check its derivatives with `PYTHONPATH=examples topos check --workload
char_language_model:workload`. `--data PATH` trains it on a text file of yours instead.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from topos import (
    AdamW,
    Embedding,
    Indices,
    Linear,
    RMSNorm,
    Rotary,
    Tape,
    attention,
    cross_entropy,
    init,
)
from topos.datasets import TextDataset, TextSplit, load_text
from topos.splitmix64 import SplitMix64
from topos.training import ConstantRate, Recording, Workload

TEXT = Path(__file__).with_name("char_language_model.txt")
CONTEXT = 32  # positions a window predicts
WINDOW = CONTEXT + 1  # its characters: the tokens, and one more for the last target
BATCH = 8  # windows a step
FEATURES, HEADS, HIDDEN = 32, 2, 64
VOCABULARY = len(set(TEXT.read_text(encoding="utf-8")))  # the shipped text's characters


def record(tape: Tape, rows: int, dtype=np.float32, vocabulary: int = VOCABULARY) -> Recording:
    """The model and its loss over `rows` windows, in `dtype` (`topos check` records it
    in float64). Weights are `[inputs, outputs]`, named as PyTorch would name them."""
    seeds = iter(range(100, 200))

    def drawn(*shape: int):
        return init.normal(next(seeds), 0.02)(shape).astype(dtype)

    embed = Embedding(tape, drawn(vocabulary, FEATURES), "embed.weight")
    attention_norm = RMSNorm(tape, FEATURES, "attention_norm", dtype=dtype)
    wq, wk, wv, wo = (
        Linear(tape, drawn(FEATURES, FEATURES), None, f"attention.{name}")
        for name in ("wq", "wk", "wv", "wo")
    )
    ffn_norm = RMSNorm(tape, FEATURES, "ffn_norm", dtype=dtype)
    w1 = Linear(tape, drawn(FEATURES, HIDDEN), None, "feed_forward.w1")
    w3 = Linear(tape, drawn(FEATURES, HIDDEN), None, "feed_forward.w3")
    w2 = Linear(tape, drawn(HIDDEN, FEATURES), None, "feed_forward.w2")
    norm = RMSNorm(tape, FEATURES, "norm", dtype=dtype)
    head = Linear(tape, drawn(FEATURES, vocabulary), None, "output")
    width = FEATURES // HEADS
    rotary = Rotary(tape, CONTEXT, width)  # cos/sin tables, recorded once

    tokens = tape.input(Indices.zeros([rows, CONTEXT], vocabulary))
    targets = tape.input(Indices.zeros([rows, CONTEXT], vocabulary))

    def heads(x):  # [rows * T, D] -> [rows, heads, T, width]
        return x.reshape(rows, CONTEXT, HEADS, width).permute(0, 2, 1, 3)

    x = embed.express(tokens)  # [rows, T, D]
    n = attention_norm.express(x).reshape(-1, FEATURES)
    q = rotary.express(heads(wq.express(n)))  # rotary embeddings between the projection
    k = rotary.express(heads(wk.express(n)))  # and the attention, on q and k per head
    v = heads(wv.express(n))
    mixed = attention(q, k, v, causal=True)  # [rows, heads, T, width]
    x = x + wo.express(mixed.permute(0, 2, 1, 3).reshape(-1, FEATURES)).reshape(x.shape)
    m = ffn_norm.express(x).reshape(-1, FEATURES)
    x = x + w2.express(w1.express(m).silu() * w3.express(m)).reshape(x.shape)
    logits = head.express(norm.express(x)).reshape(rows, CONTEXT, vocabulary)
    loss = cross_entropy(logits, targets)  # the mean over every position
    return Recording(
        loss=loss.symbol,
        parameters=tape.named_parameters(),
        inputs={"tokens": tokens.symbol, "targets": targets.symbol},
        outputs={"logits": logits.symbol},
    )


def load_dataset(directory: str | None) -> TextDataset:
    """The text at `directory` (a file, or a folder holding input.txt), else the shipped
    one; refused when its training part cannot hold one batch's windows."""
    return load_text(directory or TEXT, minimum=BATCH * WINDOW, window=WINDOW)


def fitted(workload: Workload, dataset: TextDataset) -> Workload:
    """The workload with the model's vocabulary sized to the text's."""
    vocabulary = len(dataset.vocabulary)

    def sized(tape: Tape, rows: int, dtype=np.float32) -> Recording:
        return record(tape, rows, dtype, vocabulary)

    return dataclasses.replace(workload, record=sized, adapt=None)


class RandomOffsets:
    """The batch order: step s reads `batch` windows at offsets drawn from splitmix64,
    the same for every route (a pure function of the step)."""

    def __init__(self, split: TextSplit, batch: int, seed: int) -> None:
        self.starts = len(split) - WINDOW + 1
        self.batch = batch
        self.seed = seed

    def indices(self, step: int) -> np.ndarray:
        """The window offsets of step `step`."""
        draws = SplitMix64(self.seed * 1_000_003 + step).draws(self.batch)
        return (draws % np.uint64(self.starts)).astype(np.int64)


def feeds(split: TextSplit, offsets: np.ndarray, recording: Recording) -> dict:
    """The windows at `offsets`: their first CONTEXT ids the tokens, the CONTEXT after the
    first the targets (each position predicts the next character)."""
    windows = split.windows(offsets, WINDOW)
    tokens, targets = windows[:, :CONTEXT], windows[:, 1:]
    return {
        recording.inputs["tokens"]: Indices(tokens.shape, tokens, split.classes),
        recording.inputs["targets"]: Indices(targets.shape, targets, split.classes),
    }


def optimizer() -> AdamW:
    """AdamW; decay by name: every weight but the norms' (the same as rank >= 2 here)."""
    return AdamW(
        3e-3,
        betas=(0.9, 0.99),
        weight_decay=0.1,
        decays=lambda name, shape: not name.endswith("norm.weight"),
    )


workload = Workload(
    name="char_language_model",
    description="a one-layer Llama-style character model on a text of its own",
    record=record,
    load_dataset=load_dataset,
    learning_rate=ConstantRate(3e-3),
    batch_size=BATCH,
    feeds=feeds,
    optimizer=optimizer,
    shuffle_state=1,
    batches=RandomOffsets,
    adapt=fitted,
)
