"""A small transformer written in plain PyTorch, graded by topos route by route.

    topos grade --workload examples/torch_transformer.py \
        --routes eager,checkpoint,selective --steps 20

topos trains each route in a process of its own from the same initial parameters, on
the same batches in the same order, and says whether the checkpointed steps are
bit-identical to the eager one, what they cost in time and what they save in memory.
Nothing below imports topos but the workload's description at the end.
"""

from __future__ import annotations

import torch
from torch import nn

from topos.native import TorchWorkload

VOCABULARY = 32
CONTEXT = 32
WIDTH = 64
HEADS = 4
LAYERS = 2
DROPOUT = 0.1


class Block(nn.Module):
    """A pre-norm transformer layer: causal self-attention, then a feed-forward net."""

    def __init__(self) -> None:
        super().__init__()
        self.attention_norm = nn.LayerNorm(WIDTH)
        self.attention = nn.MultiheadAttention(WIDTH, HEADS, dropout=DROPOUT, batch_first=True)
        self.feed_forward_norm = nn.LayerNorm(WIDTH)
        self.feed_forward = nn.Sequential(
            nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH), nn.Dropout(DROPOUT)
        )

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        length = hidden.shape[1]
        causal = torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)
        normed = self.attention_norm(hidden)
        attended, _ = self.attention(normed, normed, normed, attn_mask=causal, need_weights=False)
        hidden = hidden + attended
        return hidden + self.feed_forward(self.feed_forward_norm(hidden))


class Transformer(nn.Module):
    """Token and position embeddings, `LAYERS` blocks, a final norm and the logits."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens = nn.Embedding(VOCABULARY, WIDTH)
        self.positions = nn.Embedding(CONTEXT, WIDTH)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCABULARY)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden = self.tokens(tokens) + self.positions(torch.arange(tokens.shape[1]))
        for block in self.blocks:
            hidden = block(hidden)
        return self.head(self.norm(hidden))


def next_token_loss(model: Transformer, tokens: torch.Tensor, targets: torch.Tensor):
    """Mean cross-entropy of each next token."""
    logits = model(tokens)
    return nn.functional.cross_entropy(logits.reshape(-1, VOCABULARY), targets.reshape(-1))


def sequences(directory: str | None):
    """512 windows of a deterministic sequence with structure to learn (each token a
    function of the two before it), and the same windows shifted by one as targets."""
    generator = torch.Generator().manual_seed(7)
    stream = [int(value) for value in torch.randint(VOCABULARY, (2,), generator=generator)]
    while len(stream) < 512 + CONTEXT + 1:
        stream.append((stream[-1] * 3 + stream[-2] + 1) % VOCABULARY)
    text = torch.tensor(stream)
    windows = torch.stack([text[start : start + CONTEXT + 1] for start in range(512)])
    return windows[:, :-1], windows[:, 1:]


workload = TorchWorkload(
    name="torch-transformer",
    model=Transformer,
    loss=next_token_loss,
    optimizer=lambda parameters: torch.optim.AdamW(parameters, lr=3e-3),
    data=sequences,
    batch_size=16,
    blocks=lambda model: model.blocks,
)
