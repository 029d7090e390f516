"""A model of a kind the PyTorch guide does not show, written from it alone as a new user
would (issue 48): a part-of-speech-style tagger, embeddings, a 2-layer LSTM with dropout
between its layers, two residual feed-forward blocks with LayerNorm and dropout, a tag
head; on small sizes for the tests. `workload` checkpoints the blocks, `with_lstm` the
LSTM too."""

import torch
from torch import nn

from topos.native import TorchWorkload

VOCABULARY, TAGS, LENGTH, WIDTH = 40, 6, 12, 24


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(WIDTH)
        self.net = nn.Sequential(
            nn.Linear(WIDTH, 2 * WIDTH), nn.ReLU(), nn.Dropout(0.1), nn.Linear(2 * WIDTH, WIDTH)
        )

    def forward(self, x):
        return x + self.net(self.norm(x))


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCABULARY, WIDTH)
        self.drop = nn.Dropout(0.1)
        self.lstm = nn.LSTM(WIDTH, WIDTH, num_layers=2, dropout=0.2, batch_first=True)
        self.blocks = nn.ModuleList([Residual(), Residual()])
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, TAGS)

    def forward(self, tokens):
        x, _ = self.lstm(self.drop(self.embed(tokens)))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def loss(model, tokens, tags):
    logits = model(tokens)
    return nn.functional.cross_entropy(logits.reshape(-1, TAGS), tags.reshape(-1))


def data(directory):
    generator = torch.Generator().manual_seed(11)
    tokens = torch.randint(VOCABULARY, (64, LENGTH), generator=generator)
    previous = torch.roll(tokens, 1, dims=1)
    tags = (tokens + 2 * previous) % TAGS
    return tokens, tags


workload = TorchWorkload(
    name="lstm-tagger",
    model=Tagger,
    loss=loss,
    optimizer=lambda parameters: torch.optim.Adam(parameters, lr=2e-3),
    data=data,
    batch_size=8,
    blocks=lambda model: model.blocks,
)

# The LSTM checkpointed as well: the blocks may be modules of different kinds.
with_lstm = TorchWorkload(
    name="lstm-tagger-whole",
    model=Tagger,
    loss=loss,
    optimizer=lambda parameters: torch.optim.Adam(parameters, lr=2e-3),
    data=data,
    batch_size=8,
    blocks=lambda model: [model.lstm, *model.blocks],
)
