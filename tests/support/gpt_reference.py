"""An independent float32 implementation of the `gpt` workload's model in NumPy alone:
its loss and every parameter's gradient, by hand-written backpropagation (no topos).

Written from the specification (issue 14), not from topos' code: layer norms with the
biased variance and eps 1e-5, attention with the three q/k/v blocks of one fused
product, the tanh gelu, the causal mask as -inf before a max-shifted softmax. Weights
are `[inputs, outputs]`, as topos stores them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

EPS = 1e-5
HEADS = 4
GELU_SCALE = math.sqrt(2.0 / math.pi)
GELU_CUBIC = 0.044715


def _layer_norm(x, weight, bias):
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    inverse = 1.0 / np.sqrt(variance + np.float32(EPS))
    normalised = centred * inverse
    return normalised * weight + bias, (normalised, inverse)


def _layer_norm_backward(gradient, weight, saved):
    normalised, inverse = saved
    weight_gradient = (gradient * normalised).reshape(-1, normalised.shape[-1]).sum(axis=0)
    bias_gradient = gradient.reshape(-1, normalised.shape[-1]).sum(axis=0)
    g = gradient * weight
    features = normalised.shape[-1]
    input_gradient = (
        inverse
        / features
        * (
            features * g
            - g.sum(axis=-1, keepdims=True)
            - normalised * (g * normalised).sum(axis=-1, keepdims=True)
        )
    )
    return input_gradient, weight_gradient, bias_gradient


def _gelu(x):
    inner = GELU_SCALE * (x + GELU_CUBIC * x**3)
    tangent = np.tanh(inner)
    return 0.5 * x * (1.0 + tangent), tangent


def _gelu_backward(gradient, x, tangent):
    slope = 0.5 * (1.0 + tangent) + 0.5 * x * (1.0 - tangent**2) * GELU_SCALE * (
        1.0 + 3.0 * GELU_CUBIC * x**2
    )
    return gradient * slope


def loss_and_gradients(
    parameters: Mapping[str, np.ndarray], tokens: np.ndarray, targets: np.ndarray, blocks: int = 2
) -> tuple[np.float32, dict[str, np.ndarray]]:
    """The mean cross-entropy of `targets` given `tokens` (`[B, T]` ints) and the gradient
    of every parameter, by name, all float32."""
    p = {name: np.asarray(value, dtype=np.float32) for name, value in parameters.items()}
    grads = {name: np.zeros_like(value) for name, value in p.items()}
    batch, positions = tokens.shape
    features = p["position_embedding"].shape[1]
    width = features // HEADS
    mask = np.triu(np.ones((positions, positions), dtype=bool), 1)

    x = p["token_embedding"][tokens] + p["position_embedding"][:positions]
    saved = []
    for block in range(blocks):
        name = f"blocks.{block}"
        h, ln1 = _layer_norm(x, p[f"{name}.ln1.weight"], p[f"{name}.ln1.bias"])
        qkv = h @ p[f"{name}.attention.qkv.weight"] + p[f"{name}.attention.qkv.bias"]

        def heads(part):
            return part.reshape(batch, positions, HEADS, width).transpose(0, 2, 1, 3)

        q = heads(qkv[..., :features])
        k = heads(qkv[..., features : 2 * features])
        v = heads(qkv[..., 2 * features :])
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(width))
        scores = np.where(mask, np.float32(-np.inf), scores)
        shifted = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights = shifted / shifted.sum(axis=-1, keepdims=True)
        mixed = (weights @ v).transpose(0, 2, 1, 3).reshape(batch, positions, features)
        attended = (
            mixed @ p[f"{name}.attention.projection.weight"]
            + p[f"{name}.attention.projection.bias"]
        )
        x1 = x + attended
        h2, ln2 = _layer_norm(x1, p[f"{name}.ln2.weight"], p[f"{name}.ln2.bias"])
        expanded = h2 @ p[f"{name}.mlp.expand.weight"] + p[f"{name}.mlp.expand.bias"]
        activated, tangent = _gelu(expanded)
        projected = activated @ p[f"{name}.mlp.project.weight"] + p[f"{name}.mlp.project.bias"]
        saved.append(
            (x, h, ln1, q, k, v, weights, mixed, x1, h2, ln2, expanded, tangent, activated)
        )
        x = x1 + projected
    final, ln_f = _layer_norm(x, p["ln_f.weight"], p["ln_f.bias"])
    logits = final @ p["head.weight"]
    peak = logits.max(axis=-1, keepdims=True)
    exponentials = np.exp(logits - peak)
    total = exponentials.sum(axis=-1, keepdims=True)
    log_total = np.log(total) + peak
    picked = np.take_along_axis(logits, targets[..., None], axis=-1)
    count = batch * positions
    loss = np.float32((log_total - picked).sum() / count)

    # Backward.
    dlogits = exponentials / total
    np.put_along_axis(
        dlogits, targets[..., None], np.take_along_axis(dlogits, targets[..., None], -1) - 1, -1
    )
    dlogits /= np.float32(count)
    grads["head.weight"] = final.reshape(-1, features).T @ dlogits.reshape(-1, dlogits.shape[-1])
    dfinal = dlogits @ p["head.weight"].T
    dx, grads["ln_f.weight"], grads["ln_f.bias"] = _layer_norm_backward(
        dfinal, p["ln_f.weight"], ln_f
    )
    for block in reversed(range(blocks)):
        name = f"blocks.{block}"
        _, h, ln1, q, k, v, weights, mixed, _, h2, ln2, expanded, tangent, activated = saved[block]
        # x2 = x1 + project(gelu(expand(ln2(x1))))
        dprojected = dx
        grads[f"{name}.mlp.project.weight"] = activated.reshape(
            -1, activated.shape[-1]
        ).T @ dprojected.reshape(-1, features)
        grads[f"{name}.mlp.project.bias"] = dprojected.reshape(-1, features).sum(axis=0)
        dactivated = dprojected @ p[f"{name}.mlp.project.weight"].T
        dexpanded = _gelu_backward(dactivated, expanded, tangent)
        grads[f"{name}.mlp.expand.weight"] = h2.reshape(-1, features).T @ dexpanded.reshape(
            -1, dexpanded.shape[-1]
        )
        grads[f"{name}.mlp.expand.bias"] = dexpanded.reshape(-1, dexpanded.shape[-1]).sum(axis=0)
        dh2 = dexpanded @ p[f"{name}.mlp.expand.weight"].T
        dx1_ln, grads[f"{name}.ln2.weight"], grads[f"{name}.ln2.bias"] = _layer_norm_backward(
            dh2, p[f"{name}.ln2.weight"], ln2
        )
        dx1 = dx + dx1_ln
        # x1 = x0 + projection(attention(ln1(x0)))
        dattended = dx1
        grads[f"{name}.attention.projection.weight"] = mixed.reshape(
            -1, features
        ).T @ dattended.reshape(-1, features)
        grads[f"{name}.attention.projection.bias"] = dattended.reshape(-1, features).sum(axis=0)
        dmixed = dattended @ p[f"{name}.attention.projection.weight"].T
        dmixed = dmixed.reshape(batch, positions, HEADS, width).transpose(0, 2, 1, 3)
        dweights = dmixed @ v.transpose(0, 1, 3, 2)
        dv = weights.transpose(0, 1, 3, 2) @ dmixed
        dscores = weights * (dweights - (dweights * weights).sum(axis=-1, keepdims=True))
        dscores /= np.float32(math.sqrt(width))
        dq = dscores @ k
        dk = dscores.transpose(0, 1, 3, 2) @ q

        def merged(part):
            return part.transpose(0, 2, 1, 3).reshape(batch, positions, features)

        dqkv = np.concatenate([merged(dq), merged(dk), merged(dv)], axis=-1)
        grads[f"{name}.attention.qkv.weight"] = h.reshape(-1, features).T @ dqkv.reshape(
            -1, 3 * features
        )
        grads[f"{name}.attention.qkv.bias"] = dqkv.reshape(-1, 3 * features).sum(axis=0)
        dh = dqkv @ p[f"{name}.attention.qkv.weight"].T
        dx0_ln, grads[f"{name}.ln1.weight"], grads[f"{name}.ln1.bias"] = _layer_norm_backward(
            dh, p[f"{name}.ln1.weight"], ln1
        )
        dx = dx1 + dx0_ln
    grads["position_embedding"] = np.zeros_like(p["position_embedding"])
    grads["position_embedding"][:positions] = dx.sum(axis=0)
    table = np.zeros_like(p["token_embedding"])
    np.add.at(table, tokens.reshape(-1), dx.reshape(-1, features))
    grads["token_embedding"] = table
    return loss, grads
