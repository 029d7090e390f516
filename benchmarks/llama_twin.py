"""The PyTorch twin of the `llama` workload's model (benchmarks only: PyTorch is never a
dependency of topos), written from issue 27's specification.

`twin(parameters)` builds the model in PyTorch with every weight copied from topos'
parameters by name (topos stores a Linear weight `[inputs, outputs]`, PyTorch's
`nn.Linear` `[outputs, inputs]`, so those are transposed), and `optimizer(model)` the same
AdamW: lr 1e-3, betas (0.9, 0.99), eps 1e-8, weight decay 0.1 on parameters of rank 2
and above only. `loss(model, tokens, targets)` is the mean cross-entropy over every
position.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from torch import nn
from torch.nn import functional

CONTEXT, FEATURES, HEADS, LAYERS, HIDDEN, EPS, THETA = 64, 64, 4, 2, 172, 1e-6, 10000.0
WIDTH = FEATURES // HEADS


class RMSNorm(nn.Module):
    """`x / sqrt(mean(x^2) + eps) * weight` over the last axis."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(FEATURES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * self.weight


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wq, self.wk, self.wv, self.wo = (
            nn.Linear(FEATURES, FEATURES, bias=False) for _ in range(4)
        )

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        batch, positions, features = x.shape

        def heads(block):
            return block.view(batch, positions, HEADS, WIDTH).transpose(1, 2)

        q, k, v = heads(self.wq(x)), heads(self.wk(x)), heads(self.wv(x))
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        mixed = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(mixed.transpose(1, 2).reshape(batch, positions, features))


class FeedForward(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w1 = nn.Linear(FEATURES, HIDDEN, bias=False)
        self.w3 = nn.Linear(FEATURES, HIDDEN, bias=False)
        self.w2 = nn.Linear(HIDDEN, FEATURES, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(functional.silu(self.w1(x)) * self.w3(x))


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attention_norm = RMSNorm()
        self.attention = Attention()
        self.ffn_norm = RMSNorm()
        self.feed_forward = FeedForward()

    def forward(self, x, cos, sin):
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Twin(nn.Module):
    """Token embeddings, the layers, a final RMS norm, an untied bias-free head."""

    def __init__(self, vocabulary: int) -> None:
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocabulary, FEATURES)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.norm = RMSNorm()
        self.output = nn.Linear(FEATURES, vocabulary, bias=False)
        frequencies = THETA ** (-np.arange(0, WIDTH, 2, dtype=np.float64) / WIDTH)
        angles = np.outer(np.arange(CONTEXT, dtype=np.float64), frequencies)
        angles = np.concatenate([angles, angles], axis=1)
        self.register_buffer("cos", torch.tensor(np.cos(angles), dtype=torch.float32))
        self.register_buffer("sin", torch.tensor(np.sin(angles), dtype=torch.float32))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.tok_embeddings(tokens)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin)
        return self.output(self.norm(x))


def twin(named: Mapping[str, np.ndarray]) -> Twin:
    """The twin with every parameter copied from topos' `named` payloads (same names)."""
    model = Twin(named["tok_embeddings.weight"].shape[0])
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            value = np.asarray(named[name], dtype=np.float32)
            if value.ndim == 2 and name != "tok_embeddings.weight":
                value = value.T  # topos stores [inputs, outputs]
            parameter.copy_(torch.from_numpy(np.array(value)))
    return model


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

    raise SystemExit(describe("llama_twin", __doc__))
