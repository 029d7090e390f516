"""The PyTorch vocabulary: the `torch.Tensor` methods, `torch.nn.functional` functions and
`torch.nn` layers training code uses most, each beside the topos name that spells it.

Each entry names where topos would have it (`Value.amax`, `topos.einsum`,
`topos.nn.BatchNorm2d`); `spelled()` looks that name up in the library as it is, so the
documentation page written from this table (`docs/write_vocabulary.py`) says "not yet"
exactly for the names that do not exist, and a test checks the committed page against a
fresh one: the page cannot claim what the code lacks, nor miss what it gained.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Word:
    """One PyTorch name, where topos spells it (`Value.<method>`, `topos.<name>` or
    `topos.nn.<name>`, with how it is called), and a note on a difference worth knowing."""

    torch: str
    topos: str
    call: str = ""
    note: str = ""


#: Section title: the words of that section, in the order training code meets them.
VOCABULARY: dict[str, tuple[Word, ...]] = {
    "torch.Tensor methods": (
        Word("x + y, x - y, x * y, x / y, -x", "Value.__add__", "x + y, ..."),
        Word(
            "x @ y, x.matmul(y), torch.matmul",
            "Value.matmul",
            "x @ y, x.matmul(y), topos.matmul(x, y)",
        ),
        Word("x ** y, x.pow(y)", "Value.pow", "x ** y, x.pow(y)", "a number or a Value exponent"),
        Word("x.square()", "Value.square"),
        Word("x.exp(), x.log()", "Value.log", "x.exp(), x.log() (x.ln())"),
        Word("x.sqrt(), x.rsqrt()", "Value.rsqrt", "x.sqrt(), x.rsqrt()"),
        Word("x.abs()", "Value.abs"),
        Word("x.sin(), x.cos()", "Value.sin", "x.sin(), x.cos()"),
        Word("x.tanh(), x.sigmoid()", "Value.sigmoid", "x.tanh(), x.sigmoid()"),
        Word("x.erf()", "Value.erf"),
        Word("x.relu()", "Value.relu"),
        Word("x.clamp(min, max), x.clip", "Value.clamp", "x.clamp(min, max), x.clip(min, max)"),
        Word(
            "x.maximum(y), x.minimum(y)",
            "Value.minimum",
            "x.maximum(y), x.minimum(y)",
            "a tie sends the gradient to x",
        ),
        Word("x.sum(dim, keepdim)", "Value.sum", "x.sum(dim=..., keepdim=...)"),
        Word("x.mean(dim, keepdim)", "Value.mean", "x.mean(dim=..., keepdim=...)"),
        Word(
            "x.max(), x.max(dim)",
            "Value.max",
            "x.max(), x.max(dim) -> (values, indices)",
            "the gradient to the first largest entry",
        ),
        Word("x.min(), x.min(dim)", "Value.min", "x.min(), x.min(dim) -> (values, indices)"),
        Word(
            "x.amax(dim), x.amin(dim)",
            "Value.amax",
            "x.amax(dim), x.amin(dim)",
            "a tie's gradient to its first entry (PyTorch splits it)",
        ),
        Word(
            "x.argmax(dim), x.argmin(dim)",
            "Value.argmax",
            "x.argmax(dim), x.argmin(dim)",
            "floats; not differentiable",
        ),
        Word("x.var(dim), x.std(dim)", "Value.var", "x.var(dim, unbiased=...), x.std(dim)"),
        Word("x.cumsum(dim)", "Value.cumsum"),
        Word("x.logsumexp(dim)", "Value.logsumexp", "x.logsumexp(axis)"),
        Word("x.reshape(...), x.view(...)", "Value.view", "x.reshape(...), x.view(...)"),
        Word("x.flatten(start_dim, end_dim)", "Value.flatten"),
        Word(
            "x.unsqueeze(dim), x.squeeze(dim)", "Value.squeeze", "x.unsqueeze(dim), x.squeeze(dim)"
        ),
        Word(
            "x.permute(...), x.transpose(-2, -1), x.T",
            "Value.permute",
            "x.permute(...), x.transpose(), x.T",
            "transpose swaps the last two axes",
        ),
        Word("x.expand(...)", "Value.expand", "x.expand(...)", "a view; -1 keeps an extent"),
        Word("x.repeat(...)", "Value.repeat"),
        Word("x[...] (basic indexing)", "Value.__getitem__", "x[0], x[:, 1:3], x[..., None]"),
        Word("x.narrow(dim, start, length)", "Value.narrow"),
        Word(
            "x.gather(dim, index)",
            "Value.gather",
            "x.gather(axis, positions)",
            "positions along one axis, not an index tensor",
        ),
        Word("x.masked_fill(mask, value)", "Value.masked_fill"),
        Word("x.detach()", "Value.detach"),
        Word("x.to(dtype), x.float()", "Value.float"),
        Word("x.shape", "Value.shape", "x.shape (a Shape)"),
        Word("x.size()", "Value.size"),
    ),
    "torch functions": (
        Word("torch.cat, torch.stack", "topos.concat", "topos.concat(values, axis), topos.stack"),
        Word("torch.split, torch.chunk", "topos.split"),
        Word("torch.where(condition, x, y)", "topos.where"),
        Word(
            "torch.einsum",
            "topos.einsum",
            "topos.einsum('ij,jk->ik', a, b)",
            "no '...', no diagonals",
        ),
        Word("torch.zeros, torch.ones, torch.full", "topos.Tensor", "Tensor.filled(shape, value)"),
    ),
    "torch.nn.functional": (
        Word("F.relu, F.gelu(approximate='tanh')", "topos.gelu", "x.relu(), topos.gelu(x)"),
        Word("F.gelu (exact)", "Value.erf", "x * 0.5 * (1 + (x / 2 ** 0.5).erf())"),
        Word("F.silu", "Value.silu", "x.silu()"),
        Word("F.leaky_relu", "Value.leaky_relu", "x.leaky_relu(negative_slope)"),
        Word("F.softplus", "Value.softplus", "x.softplus(beta, threshold)"),
        Word(
            "F.softmax, F.log_softmax",
            "topos.log_softmax",
            "topos.softmax(x, axis), topos.log_softmax",
        ),
        Word("F.cross_entropy", "topos.cross_entropy"),
        Word("F.nll_loss", "topos.nn.nll_loss"),
        Word("F.mse_loss", "topos.nn.mse_loss"),
        Word("F.l1_loss", "topos.nn.l1_loss"),
        Word("F.binary_cross_entropy_with_logits", "topos.nn.binary_cross_entropy_with_logits"),
        Word("F.conv2d", "topos.conv2d"),
        Word("F.max_pool2d", "topos.max_pool"),
        Word("F.avg_pool2d, F.adaptive_avg_pool2d", "topos.nn.adaptive_avg_pool2d"),
        Word("F.layer_norm", "topos.layer_norm"),
        Word("F.embedding", "topos.embedding"),
        Word("F.dropout", "topos.dropout"),
        Word("F.scaled_dot_product_attention", "topos.attention"),
        Word("F.pad", "Value.pad", "x.pad(((before, after), ...))"),
    ),
    "torch.nn layers": (
        Word("nn.Linear", "topos.Linear"),
        Word("nn.Conv2d", "topos.Conv2d"),
        Word("nn.Conv1d", "topos.nn.Conv1d"),
        Word("nn.Embedding", "topos.Embedding"),
        Word("nn.LayerNorm", "topos.LayerNorm"),
        Word("nn.RMSNorm", "topos.RMSNorm"),
        Word("nn.BatchNorm1d, nn.BatchNorm2d", "topos.nn.BatchNorm2d"),
        Word("nn.GroupNorm", "topos.nn.GroupNorm"),
        Word("nn.AvgPool2d", "topos.nn.AvgPool2d"),
        Word("nn.GRU", "topos.nn.GRU"),
        Word("nn.LSTM", "topos.nn.LSTM"),
        Word(
            "nn.MultiheadAttention",
            "topos.CausalSelfAttention",
            "topos.CausalSelfAttention",
            "causal self-attention",
        ),
        Word("nn.Module", "topos.Module"),
        Word("torch.optim.SGD, Adam, AdamW", "topos.AdamW", "topos.SGD, topos.Adam, topos.AdamW"),
    ),
}


def spelled(word: Word) -> bool:
    """Whether the name `word.topos` exists in the library as it is."""
    owner, _, attribute = word.topos.rpartition(".")
    if owner == "Value":
        from topos.graph.value import Value

        return hasattr(Value, attribute)
    try:
        module = importlib.import_module(owner)
    except ImportError:
        return False
    return hasattr(module, attribute)


def page() -> str:
    """The vocabulary page's Markdown: one table per section, "not yet" where the
    library has no such name."""
    lines = [
        "# The PyTorch vocabulary",
        "",
        "What training code written for PyTorch calls, and how topos spells it. The",
        "tables are written from the library itself (`topos/vocabulary.py`, by",
        "`docs/write_vocabulary.py`): a name the library lacks says **not yet**, and a",
        "test checks this page against a fresh one. `x` is a `Value`; PyTorch's `dim=` and",
        "`keepdim=` are accepted where topos says `axis=` and `keepdims=`.",
        "",
    ]
    for section, words in VOCABULARY.items():
        lines += [f"## {section}", "", "| PyTorch | topos | note |", "| --- | --- | --- |"]
        for word in words:
            if spelled(word):
                call = word.call or word.topos.replace("Value.", "x.")
                cell = f"`{call}`"
            else:
                cell = "**not yet**"
            note = word.note if spelled(word) else ""
            lines.append(f"| `{word.torch}` | {cell} | {note} |")
        lines.append("")
    return "\n".join(lines)
