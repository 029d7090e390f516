"""GPTProbe: the `gpt` workload's model recorded forward-only, to measure a trained model's
validation loss and to sample text from it.

A probe is a second recording of the same model (same names, same shapes) for its own
number of windows, lowered without gradients, so every intermediate is freed right
after its last use; trained parameters move onto it by name.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from topos import Indices, Tape, Tensor
from topos.datasets.text_split import TextSplit
from topos.splitmix64 import SplitMix64
from topos.workloads.gpt import CONTEXT, WINDOW, record


class GPTProbe:
    """The model over `rows` windows of a `vocabulary`-character text: its loss and
    logits as forward-only plans."""

    def __init__(self, vocabulary: int, rows: int) -> None:
        tape = Tape()
        self.rows = rows
        self.vocabulary = vocabulary
        self.recording = record(tape, rows, vocabulary=vocabulary)
        self.network = tape.into_network()
        self.loss_plan = self.network.entry([self.recording.loss]).lower()
        self.logits_plan = self.network.entry([self.recording.outputs["logits"]]).lower()

    def _feeds(self, tokens: np.ndarray, targets: np.ndarray) -> dict:
        inputs = self.recording.inputs
        return {
            inputs["tokens"]: Indices(tokens.shape, tokens, self.vocabulary),
            inputs["targets"]: Indices(targets.shape, targets, self.vocabulary),
        }

    def validation_loss(
        self, named: Mapping[str, Tensor], split: TextSplit, windows: int | None = None
    ) -> float:
        """The mean cross-entropy over the split's consecutive, non-overlapping windows
        (as many whole batches of `rows` windows as it holds, or as the first `windows`
        of them make; at least one batch)."""
        parameters = self.network.parameters(named)
        count = (len(split) - 1) // CONTEXT
        if windows is not None:
            count = min(count, windows)
        batches = max(count // self.rows, 1)
        total = 0.0
        for batch in range(batches):
            starts = (np.arange(self.rows) + batch * self.rows) % max(count, 1) * CONTEXT
            windows = split.windows(starts, WINDOW)
            run = self.loss_plan.forward(parameters, self._feeds(windows[:, :-1], windows[:, 1:]))
            total += float(run.of(self.recording.loss).scalar())
        return total / batches

    def sample(
        self, named: Mapping[str, Tensor], prompt: np.ndarray, length: int, seed: int = 1
    ) -> np.ndarray:
        """`length` ids drawn one by one after `prompt` (ids, at least one), each from the
        model's softmax at the last position of the latest 64 (draws from splitmix64)."""
        if self.rows != 1:
            raise ValueError("GPTProbe.sample: record the probe for one window")
        parameters = self.network.parameters(named)
        generator = SplitMix64(seed)
        ids = [int(token) for token in prompt]
        logits_symbol = self.recording.outputs["logits"]
        for _ in range(length):
            context = ids[-CONTEXT:]
            used = len(context)
            # The attention is causal: what follows the context cannot change its logits.
            tokens = np.zeros((1, CONTEXT), dtype=np.intp)
            tokens[0, :used] = context
            run = self.logits_plan.forward(parameters, self._feeds(tokens, tokens))
            logits = run.of(logits_symbol).numpy()[0, used - 1].astype(np.float64)
            probabilities = np.exp(logits - logits.max())
            probabilities /= probabilities.sum()
            draw = generator.units(1)[0]
            choice = int(np.searchsorted(np.cumsum(probabilities), draw, side="right"))
            ids.append(min(choice, self.vocabulary - 1))
        return np.array(ids[len(prompt) :], dtype=np.intp)
