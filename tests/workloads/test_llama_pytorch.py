"""The `llama` workload against an independent PyTorch model of issue 27's specification,
written here from the specification (not generated from topos): the same initial draws
(`init.normal(seed, 0.02)`, seeds 51, 52, ...), the same batches, PyTorch's own autodiff
and AdamW. Agreement within a stated tolerance, never bits. Skipped without torch."""

from __future__ import annotations

import numpy as np
import pytest

from topos import init
from topos.training import Training
from topos.workloads import resolve

torch = pytest.importorskip("torch")
F = torch.nn.functional

D, LAYERS, HEADS, WIDTH, HIDDEN, T, EPS, THETA = 64, 2, 4, 16, 172, 64, 1e-6, 10000.0
STEPS = 5


class TorchLlama(torch.nn.Module):
    """The specification in PyTorch: weights `[in, out]` as drawn, so `x @ w`."""

    def __init__(self, vocabulary: int) -> None:
        super().__init__()
        seeds = iter(range(51, 100))

        def drawn(*shape):
            payload = init.normal(next(seeds), 0.02)(shape).numpy()
            return torch.nn.Parameter(torch.tensor(np.array(payload)))

        def ones():
            return torch.nn.Parameter(torch.ones(D))

        weights = {"tok_embeddings.weight": drawn(vocabulary, D)}
        for layer in range(LAYERS):
            prefix = f"layers.{layer}"
            for name in ("wq", "wk", "wv", "wo"):
                weights[f"{prefix}.attention.{name}.weight"] = drawn(D, D)
            weights[f"{prefix}.feed_forward.w1.weight"] = drawn(D, HIDDEN)
            weights[f"{prefix}.feed_forward.w3.weight"] = drawn(D, HIDDEN)
            weights[f"{prefix}.feed_forward.w2.weight"] = drawn(HIDDEN, D)
            weights[f"{prefix}.attention_norm.weight"] = ones()
            weights[f"{prefix}.ffn_norm.weight"] = ones()
        weights["output.weight"] = drawn(D, vocabulary)
        weights["norm.weight"] = ones()
        self.named = weights
        self.weights = torch.nn.ParameterList(weights.values())
        frequencies = THETA ** (-np.arange(0, WIDTH, 2, dtype=np.float64) / WIDTH)
        angles = np.outer(np.arange(T, dtype=np.float64), frequencies)
        angles = np.concatenate([angles, angles], axis=1)  # both halves: Llama's emb
        self.cos = torch.tensor(np.cos(angles), dtype=torch.float32)
        self.sin = torch.tensor(np.sin(angles), dtype=torch.float32)

    @staticmethod
    def norm(x, weight):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * weight

    def rope(self, x):
        half = WIDTH // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * self.cos + rotated * self.sin

    def forward(self, tokens, targets):
        w = self.named
        batch = tokens.shape[0]
        x = w["tok_embeddings.weight"][tokens]
        for layer in range(LAYERS):
            p = f"layers.{layer}"
            n = self.norm(x, w[f"{p}.attention_norm.weight"])

            def heads(y):
                return y.view(batch, T, HEADS, WIDTH).transpose(1, 2)

            q = self.rope(heads(n @ w[f"{p}.attention.wq.weight"]))
            k = self.rope(heads(n @ w[f"{p}.attention.wk.weight"]))
            v = heads(n @ w[f"{p}.attention.wv.weight"])
            scores = (q @ k.transpose(-1, -2)) * 0.25
            causal = torch.ones(T, T, dtype=torch.bool).tril()
            scores = scores.masked_fill(~causal, float("-inf"))
            mixed = torch.softmax(scores, dim=-1) @ v
            x = x + mixed.transpose(1, 2).reshape(batch, T, D) @ w[f"{p}.attention.wo.weight"]
            m = self.norm(x, w[f"{p}.ffn_norm.weight"])
            gate = F.silu(m @ w[f"{p}.feed_forward.w1.weight"])
            x = (
                x
                + (gate * (m @ w[f"{p}.feed_forward.w3.weight"])) @ w[f"{p}.feed_forward.w2.weight"]
            )
        logits = self.norm(x, w["norm.weight"]) @ w["output.weight"]
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def test_loss_and_training_agree_with_an_independent_pytorch_model():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    workload = resolve("llama")
    dataset = workload.dataset(None)
    training = Training(workload, "recorded", dataset, STEPS)
    model = TorchLlama(len(dataset.vocabulary))
    initial = training.parameters.named()
    for name, parameter in model.named.items():
        np.testing.assert_array_equal(parameter.detach().numpy(), initial[name].numpy())
    decayed = [p for p in model.named.values() if p.dim() >= 2]
    kept = [p for p in model.named.values() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decayed, "weight_decay": 0.1}, {"params": kept, "weight_decay": 0.0}],
        lr=1e-3,
        betas=(0.9, 0.99),
        eps=1e-8,
    )
    inputs = training.recording.inputs
    ours, theirs = [], []
    for step in range(STEPS):
        feeds = training.feeds(step)
        tokens = torch.tensor(feeds[inputs["tokens"]].numpy().astype(np.int64))
        targets = torch.tensor(feeds[inputs["targets"]].numpy().astype(np.int64))
        optimizer.zero_grad()
        loss = model(tokens, targets)
        loss.backward()
        optimizer.step()
        theirs.append(float(loss.detach()))
        ours.append(float(training.step(step)))
    # Step 0: the same function of the same parameters, to float32 rounding.
    assert ours[0] == pytest.approx(theirs[0], rel=1e-5)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)
    final = training.parameters.named()
    for name, parameter in model.named.items():
        np.testing.assert_allclose(
            final[name].numpy(), parameter.detach().numpy(), rtol=1e-3, atol=1e-5, err_msg=name
        )
