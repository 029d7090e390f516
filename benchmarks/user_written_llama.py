"""The `llama` workload's model written by a user: issue 27's Llama from the public API the
README teaches (`examples/char_language_model.py`'s ops: `Embedding`, `Linear`, `RMSNorm`,
`Rotary`, `attention`, `.silu()`, `cross_entropy`), not from `topos.models.llama`.

The same sizes, seeds, parameter names and recording order as the built-in, so it starts
from the same weights and, if the public ops reach every kernel the built-in does,
records the very same graph: `gpt_step_time.py --workload llama --user-written` times it
beside the built-in and checks that their losses have the same bits.

`workload` is the built-in `llama` workload with this model as its recording; nothing
else (data, batches, shards, AdamW) changes.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from topos import (
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
from topos.datasets import Dataset
from topos.training import Recording, Workload
from topos.workloads import resolve

CONTEXT, FEATURES, HEADS, LAYERS, HIDDEN = 64, 64, 4, 2, 172
WIDTH = FEATURES // HEADS
FIRST_SEED = 51  # tok_embeddings, then per layer wq, wk, wv, wo, w1, w3, w2, then output
SYNTHETIC_VOCABULARY = 50  # the synthetic text's characters (as the built-in's default)


def record(
    tape: Tape, rows: int, dtype=np.float32, vocabulary: int = SYNTHETIC_VOCABULARY
) -> Recording:
    """The model and the mean cross-entropy over `rows` windows of CONTEXT tokens."""
    seeds = iter(range(FIRST_SEED, FIRST_SEED + 7 * LAYERS + 2))

    def drawn(*shape: int):
        return init.normal(next(seeds), 0.02)(shape).astype(dtype)

    embed = Embedding(tape, drawn(vocabulary, FEATURES), "tok_embeddings.weight")
    layers = []
    for layer in range(LAYERS):
        name = f"layers.{layer}"
        attention_norm = RMSNorm(tape, FEATURES, f"{name}.attention_norm", dtype=dtype)
        wq, wk, wv, wo = (
            Linear(tape, drawn(FEATURES, FEATURES), None, f"{name}.attention.{part}")
            for part in ("wq", "wk", "wv", "wo")
        )
        ffn_norm = RMSNorm(tape, FEATURES, f"{name}.ffn_norm", dtype=dtype)
        w1 = Linear(tape, drawn(FEATURES, HIDDEN), None, f"{name}.feed_forward.w1")
        w3 = Linear(tape, drawn(FEATURES, HIDDEN), None, f"{name}.feed_forward.w3")
        w2 = Linear(tape, drawn(HIDDEN, FEATURES), None, f"{name}.feed_forward.w2")
        layers.append((attention_norm, wq, wk, wv, wo, ffn_norm, w1, w3, w2))
    norm = RMSNorm(tape, FEATURES, "norm", dtype=dtype)
    head = Linear(tape, drawn(FEATURES, vocabulary), None, "output")
    rotary = Rotary(tape, CONTEXT, WIDTH, dtype=dtype)
    parameters = tape.named_parameters()

    tokens = tape.input(Indices.zeros([rows, CONTEXT], vocabulary))
    targets = tape.input(Indices.zeros([rows, CONTEXT], vocabulary))

    def heads(x):  # [rows * T, D] -> [rows, heads, T, width]
        return x.reshape(rows, CONTEXT, HEADS, WIDTH).permute(0, 2, 1, 3)

    x = embed.express(tokens)
    for attention_norm, wq, wk, wv, wo, ffn_norm, w1, w3, w2 in layers:
        n = attention_norm.express(x).reshape(-1, FEATURES)
        q = rotary.express(heads(wq.express(n)))
        k = rotary.express(heads(wk.express(n)))
        v = heads(wv.express(n))
        mixed = attention(q, k, v, causal=True)
        x = x + wo.express(mixed.permute(0, 2, 1, 3).reshape(-1, FEATURES)).reshape(x.shape)
        m = ffn_norm.express(x).reshape(-1, FEATURES)
        x = x + w2.express(w1.express(m).silu() * w3.express(m)).reshape(x.shape)
    logits = head.express(norm.express(x).reshape(-1, FEATURES)).reshape(rows, CONTEXT, vocabulary)
    loss = cross_entropy(logits, targets)
    return Recording(
        loss=loss.symbol,
        parameters=parameters,
        inputs={"tokens": tokens.symbol, "targets": targets.symbol},
        outputs={"logits": logits.symbol},
    )


def adapt(workload: Workload, dataset: Dataset) -> Workload:
    """The workload with its vocabulary sized to `dataset`'s."""
    vocabulary = len(dataset.vocabulary)
    return dataclasses.replace(workload, record=functools.partial(record, vocabulary=vocabulary))


workload = dataclasses.replace(
    resolve("llama"),
    name="llama-user-written",
    description="issue 27's Llama written from the public API, as a user would",
    record=record,
    adapt=adapt,
)


if __name__ == "__main__":
    from benchmarks.catalogue import describe

    raise SystemExit(describe("user_written_llama", __doc__))
