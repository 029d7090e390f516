"""The PyTorch twin of the `gpt` workload's model (benchmarks only: PyTorch is never a
dependency of topos).

`twin(parameters)` builds the same transformer in PyTorch with every weight copied from
topos' parameters by name (topos stores a Linear weight `[inputs, outputs]`, PyTorch
`[outputs, inputs]`, so those are transposed), and `optimizer(model)` the same AdamW:
lr 1e-3, betas (0.9, 0.99), eps 1e-8, weight decay 0.1 on parameters of rank 2 and
above only. `loss(model, tokens, targets)` is the mean cross-entropy over every position.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import torch
from torch import nn
from torch.nn import functional

CONTEXT = 64
FEATURES = 64
HEADS = 4
BLOCKS = 2


class Block(nn.Module):
    """A pre-norm block: `x + attention(ln1(x))`, then `x + mlp(ln2(x))`."""

    def __init__(self) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(FEATURES)
        self.qkv = nn.Linear(FEATURES, 3 * FEATURES)
        self.projection = nn.Linear(FEATURES, FEATURES)
        self.ln2 = nn.LayerNorm(FEATURES)
        self.expand = nn.Linear(FEATURES, 4 * FEATURES)
        self.project = nn.Linear(4 * FEATURES, FEATURES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, positions, features = x.shape
        width = features // HEADS
        q, k, v = self.qkv(self.ln1(x)).split(features, dim=2)

        def heads(block):
            return block.view(batch, positions, HEADS, width).transpose(1, 2)

        scores = heads(q) @ heads(k).transpose(-2, -1) / math.sqrt(width)
        mask = torch.ones(positions, positions, dtype=torch.bool).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
        mixed = torch.softmax(scores, dim=-1) @ heads(v)
        x = x + self.projection(mixed.transpose(1, 2).reshape(batch, positions, features))
        return x + self.project(functional.gelu(self.expand(self.ln2(x)), approximate="tanh"))


class Twin(nn.Module):
    """Token and position embeddings, the blocks, a final layer norm, a bias-free head."""

    def __init__(self, vocabulary: int) -> None:
        super().__init__()
        self.token_embedding = nn.Embedding(vocabulary, FEATURES)
        self.position_embedding = nn.Parameter(torch.zeros(CONTEXT, FEATURES))
        self.blocks = nn.ModuleList(Block() for _ in range(BLOCKS))
        self.ln_f = nn.LayerNorm(FEATURES)
        self.head = nn.Linear(FEATURES, vocabulary, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.token_embedding(tokens) + self.position_embedding
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def topos_name(name: str) -> str:
    """The topos parameter name of a twin parameter name."""
    renamed = {
        "token_embedding.weight": "token_embedding",
        "position_embedding": "position_embedding",
    }
    if name in renamed:
        return renamed[name]
    for torch_part, topos_part in (
        (".qkv.", ".attention.qkv."),
        (".projection.", ".attention.projection."),
        (".expand.", ".mlp.expand."),
        (".project.", ".mlp.project."),
    ):
        if torch_part in name:
            return name.replace(torch_part, topos_part)
    return name


def twin(named: Mapping[str, np.ndarray]) -> Twin:
    """The twin with every parameter copied from topos' `named` payloads, in their dtype
    (float32, or float64 for a float64 recording)."""
    vocabulary = named["token_embedding"].shape[0]
    dtype = np.asarray(named["token_embedding"]).dtype
    model = Twin(vocabulary)
    if dtype == np.float64:
        model = model.double()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            value = np.asarray(named[topos_name(name)], dtype=dtype)
            if value.ndim == 2 and name not in ("token_embedding.weight", "position_embedding"):
                value = value.T  # topos stores [inputs, outputs]
            parameter.copy_(torch.from_numpy(np.array(value)))
    return model


def gradients(model: Twin) -> dict[str, np.ndarray]:
    """The model's gradients by topos name, in topos' layout."""
    found = {}
    for name, parameter in model.named_parameters():
        value = parameter.grad.detach().numpy().copy()
        if value.ndim == 2 and name not in ("token_embedding.weight", "position_embedding"):
            value = value.T
        found[topos_name(name)] = value
    return found


def optimizer(model: Twin) -> torch.optim.AdamW:
    """AdamW as the workload's: decay only parameters of rank 2 and above."""
    decayed = [p for p in model.parameters() if p.dim() >= 2]
    kept = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decayed, "weight_decay": 0.1}, {"params": kept, "weight_decay": 0.0}],
        lr=1e-3,
        betas=(0.9, 0.99),
        eps=1e-8,
    )


def loss(model: Twin, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The mean cross-entropy over every position."""
    logits = model(tokens)
    return functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


if __name__ == "__main__":
    from benchmarks.catalogue import describe

    raise SystemExit(describe("gpt_twin", __doc__))
