"""A native step's memory as its framework counts it (`topos.native.step_tensors`), on
models written as users write them: a small PyTorch CNN with batch norms and residual
blocks, where checkpointing must hold fewer tensors than eager (resident memory, the
heap's growth alone, showed the inverse); a JAX step whose layers run under a scan,
where `nothing_saveable` must assign no more temporaries than `jit`; and step 0's
gradients judged on the model's scale, so a convolution's bias feeding a batch norm
(its true gradient zero) is never a large error between two correct computations."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from topos.training.gradient_errors import gradient_errors_on_model_scale

torch = pytest.importorskip("torch")


def user_cnn(bias: bool = False):
    """A user's image classifier: a stem, two residual blocks of convolution and batch
    norm, a linear head; tiny images so the test is quick."""
    from torch import nn
    from torch.nn import functional

    from topos.native import TorchWorkload

    class Block(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=bias)
            self.bn1 = nn.BatchNorm2d(channels)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=bias)
            self.bn2 = nn.BatchNorm2d(channels)

        def forward(self, x):
            y = functional.relu(self.bn1(self.conv1(x)))
            return functional.relu(x + self.bn2(self.conv2(y)))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 8, 3, padding=1)
            self.blocks = nn.ModuleList([Block(8), Block(8)])
            self.head = nn.Linear(8, 10)

        def forward(self, x):
            x = functional.relu(self.stem(x))
            for block in self.blocks:
                x = block(x)
            return self.head(x.mean(dim=(2, 3)))

    def data(directory):
        generator = torch.Generator().manual_seed(4)
        images = torch.randn(16, 3, 12, 12, generator=generator)
        return images, torch.randint(0, 10, (16,), generator=generator)

    return TorchWorkload(
        name="my-cnn",
        model=Net,
        loss=lambda model, images, labels: functional.cross_entropy(model(images), labels),
        optimizer=lambda parameters: torch.optim.SGD(parameters, lr=0.05, momentum=0.9),
        data=data,
        batch_size=8,
        blocks=lambda model: model.blocks,
    )


def test_checkpointing_a_users_cnn_holds_fewer_step_tensors_than_eager():
    from topos.native.torch_training import TorchTraining

    workload = user_cnn()
    measured = {}
    for route in ("eager", "checkpoint"):
        training = TorchTraining(workload, route, None, 2)
        training.compare_with_reference()
        tensors = training.step_tensors()
        assert tensors.source == "torch.profiler" and tensors.parts["events"] > 0
        measured[route] = tensors.peak_bytes
        # The step's gradients are among its tensors: at least every parameter's bytes.
        parameters = sum(p.numel() * p.element_size() for p in training.model.parameters())
        assert tensors.peak_bytes >= parameters
        # Thrown away: the measured steps start from no gradient, as they would have.
        assert all(p.grad is None for p in training.model.parameters())
    # Each block's convolutions, norms and activations are recomputed, not kept.
    assert measured["checkpoint"] < measured["eager"], measured


#: A JAX user's deep perceptron whose layers run under `jax.lax.scan`, each layer the
#: block the checkpointing routes wrap (`remat`).
DEPTH, WIDTH = 6, 32


def _jax_workload():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    from topos.native import JaxWorkload, sgd

    def parameters(key):
        weights = jax.random.normal(key, (DEPTH, WIDTH, WIDTH)) * 0.1
        return {"weights": weights, "biases": jnp.zeros((DEPTH, WIDTH))}

    def layer(hidden, weights_and_bias):
        weights, bias = weights_and_bias
        return jnp.tanh(jnp.tanh(hidden @ weights + bias) * 1.5 + hidden), None

    def loss(parameters, inputs, targets, remat=lambda block: block):
        layers = (parameters["weights"], parameters["biases"])
        hidden, _ = jax.lax.scan(remat(layer), inputs, layers)
        return jnp.mean((hidden.sum(axis=1) - targets) ** 2)

    def data(directory):
        inputs = np.random.default_rng(5).standard_normal((512, WIDTH)).astype(np.float32)
        return inputs, np.sin(inputs.sum(axis=1))

    return JaxWorkload(
        name="deep-perceptron",
        parameters=parameters,
        loss=loss,
        optimizer=sgd(0.05),
        data=data,
        batch_size=256,
    )


def _jax_step_tensors(workload) -> dict[str, int]:
    from topos.native.jax_training import JaxTraining

    measured = {}
    for route in ("jit", "checkpoint-nothing-saveable"):
        tensors = JaxTraining(workload, route, None, 1).step_tensors()
        assert tensors is not None and tensors.source == "xla buffer assignment"
        parts = tensors.parts
        assert tensors.peak_bytes == parts["temp"] + parts["output"] - parts["alias"]
        measured[route] = parts["temp"]
    return measured


def test_nothing_saveable_assigns_no_more_temporaries_than_jit_under_a_scan():
    # A scan's backward loop is a loop of its own: XLA cannot merge the recomputed layer
    # with the forward one, so what nothing_saveable does not save is not kept.
    measured = _jax_step_tensors(_jax_workload())
    assert measured["checkpoint-nothing-saveable"] <= measured["jit"], measured
    # Unrolled in a Python loop instead, XLA's CPU pipeline drops the checkpoint's optimization
    # barriers and its common-subexpression elimination merges the recomputation back into
    # the forward pass (measured on jax 0.10: the same temp to a few bytes): nothing to
    # assert of it, so it is not compiled here.


def test_a_conv_bias_feeding_a_batch_norm_is_judged_on_the_models_scale():
    # The batch norm subtracts the bias right back: its true gradient is zero, and float32
    # and float64 each give their own rounding noise, two correct gradients.
    from torch.nn import functional

    model = user_cnn(bias=True).seeded_model()
    precise = copy.deepcopy(model).double()
    generator = torch.Generator().manual_seed(1)
    images = torch.randn(8, 3, 12, 12, generator=generator)
    labels = torch.randint(0, 10, (8,), generator=generator)
    functional.cross_entropy(model(images), labels).backward()
    functional.cross_entropy(precise(images.double()), labels).backward()
    pairs = [
        (name, ours.grad.numpy(), theirs.grad.numpy())
        for (name, ours), (_, theirs) in zip(
            model.named_parameters(), precise.named_parameters(), strict=True
        )
    ]
    bias = "blocks.0.conv1.bias"
    got, wanted = next((g, w) for name, g, w in pairs if name == bias)
    # Each parameter's own relative error calls it wrong: the old judgement.
    own = np.linalg.norm(got - wanted) / np.linalg.norm(wanted)
    assert own > 1e-2, own
    errors, scale = gradient_errors_on_model_scale(pairs)
    assert scale == pytest.approx(max(np.linalg.norm(w) for _, _, w in pairs))
    assert errors[bias] < 1e-5 and max(errors.values()) < 1e-5, errors
    # A wrong gradient is still of the model's own size.
    wrong = [(name, g + (0.05 if name == bias else 0.0), w) for name, g, w in pairs]
    assert gradient_errors_on_model_scale(wrong)[0][bias] > 1e-2


def test_the_routes_comparison_says_its_scale():
    from topos.native.torch_training import TorchTraining

    training = TorchTraining(user_cnn(bias=True), "checkpoint", None, 1)
    comparison = training.compare_with_reference()
    assert comparison.gradient_scale is not None and comparison.gradient_scale > 0
    assert comparison.differing_gradients == []
    assert set(comparison.gradient_errors.values()) == {0.0}
