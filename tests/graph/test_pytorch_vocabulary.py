"""The ops PyTorch code reaches for, spelled as PyTorch spells them, compute what PyTorch's
do: values and gradients in float64 against `torch` itself (corners included: clamp's
bounds, leaky_relu at 0, max's first winner), erf against the C library, second
derivatives against finite differences, and a user-style model that uses them trains
bit-identically by both routes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.support.routes import engine, finite_differences, recorded
from topos import ShapeError, Tape, Tensor, einsum, matmul
from topos.ops.primitives.erf import error_function

torch = pytest.importorskip("torch")

VALUES = np.random.default_rng(46).standard_normal((3, 4, 5))

#: name: (topos expression, torch expression), over the same [3, 4, 5] values.
PAIRS = {
    "max_dim": (lambda x: x.max(1).values, lambda t: t.max(1).values),
    "max_dim_keepdim": (lambda x: x.max(-1, keepdim=True)[0], lambda t: t.max(-1, True)[0]),
    "max_all": (lambda x: x.max(), lambda t: t.max()),
    "min_dim": (lambda x: x.min(dim=0).values, lambda t: t.min(dim=0).values),
    "amax_dims": (lambda x: x.amax(dim=(0, 2)), lambda t: t.amax(dim=(0, 2))),
    "amin_keepdim": (lambda x: x.amin(1, keepdim=True), lambda t: t.amin(1, keepdim=True)),
    "var": (lambda x: x.var(dim=1), lambda t: t.var(dim=1)),
    "var_population": (
        lambda x: x.var((0, 2), unbiased=False, keepdim=True),
        lambda t: t.var((0, 2), unbiased=False, keepdim=True),
    ),
    "std_all": (lambda x: x.std(), lambda t: t.std()),
    "cumsum": (lambda x: x.cumsum(dim=2), lambda t: t.cumsum(dim=2)),
    "clamp": (lambda x: x.clamp(-0.5, 0.5), lambda t: t.clamp(-0.5, 0.5)),
    "clamp_min": (lambda x: x.clamp(min=0.1), lambda t: t.clamp(min=0.1)),
    "clip_tensor": (
        lambda x: x.clip(min=x * 0.5 - 0.1, max=x.abs() + 0.1),
        lambda t: t.clip(min=t * 0.5 - 0.1, max=t.abs() + 0.1),
    ),
    "erf": (lambda x: x.erf(), torch.erf),
    "sin_cos": (lambda x: x.sin() * x.cos(), lambda t: t.sin() * t.cos()),
    "leaky_relu": (
        lambda x: x.leaky_relu(0.2),
        lambda t: torch.nn.functional.leaky_relu(t, 0.2),
    ),
    "softplus": (
        lambda x: (x * 8.0).softplus(beta=2.0, threshold=10.0),
        lambda t: torch.nn.functional.softplus(t * 8.0, beta=2.0, threshold=10.0),
    ),
    "square": (lambda x: x.square(), torch.square),
    "pow_tensor": (lambda x: (x * x + 1.0).pow(x), lambda t: (t * t + 1.0).pow(t)),
    "rpow": (lambda x: 2.0**x, lambda t: 2.0**t),
    "flatten": (lambda x: x.flatten(1), lambda t: t.flatten(1)),
    "view": (lambda x: x.view(5, -1), lambda t: t.view(5, -1)),
    "unsqueeze_squeeze": (
        lambda x: x.unsqueeze(1).unsqueeze(-1).squeeze(),
        lambda t: t.unsqueeze(1).unsqueeze(-1).squeeze(),
    ),
    "squeeze_dim": (lambda x: x[:, :1].squeeze(1), lambda t: t[:, :1].squeeze(1)),
    "repeat": (lambda x: x.repeat(2, 1, 1, 3), lambda t: t.repeat(2, 1, 1, 3)),
    "expand": (
        lambda x: x[:, :1].expand(2, -1, 4, 5),
        lambda t: t[:, :1].expand(2, -1, 4, 5),
    ),
    "matmul_method": (lambda x: x.matmul(x.T), lambda t: t.matmul(t.mT)),
    "matmul_batched_by_matrix": (lambda x: x @ x[0].T, lambda t: t @ t[0].T),
    "matmul_vector": (lambda x: matmul(x, x[0, 0]), lambda t: torch.matmul(t, t[0, 0])),
    "matmul_broadcast": (lambda x: x[:1] @ x.T, lambda t: t[:1] @ t.mT),
    "einsum_matrix": (
        lambda x: einsum("ij,kj->ik", x[0], x[1]),
        lambda t: torch.einsum("ij,kj->ik", t[0], t[1]),
    ),
    "einsum_batched": (
        lambda x: einsum("bij,bkj->bik", x, x),
        lambda t: torch.einsum("bij,bkj->bik", t, t),
    ),
    "einsum_dot": (
        lambda x: einsum("bi,bi->b", x[0], x[1]),
        lambda t: torch.einsum("bi,bi->b", t[0], t[1]),
    ),
    "einsum_implicit": (lambda x: einsum("bij", x), lambda t: torch.einsum("bij", t)),
    "einsum_three": (
        lambda x: einsum("ij,jk,kl->il", x[0], x[1].T, x[2]),
        lambda t: torch.einsum("ij,jk,kl->il", t[0], t[1].T, t[2]),
    ),
}


def _both(topos_expression, torch_expression, values=VALUES):
    """The value and the gradient (of the output's weighted sum) by topos and by torch."""
    weights = None

    def build(tape, tensors):
        x = tape.parameter(tensors[0])
        return topos_expression(x), [x.symbol]

    outcome = recorded(build, [values], 7, np.float64)
    tape = Tape(dtype=np.float64)
    output, _ = build(tape, [Tensor(values.shape, values, dtype=np.float64)])
    weights = np.random.default_rng(7).standard_normal(tuple(output.shape))
    leaf = torch.tensor(values, requires_grad=True)
    expected = torch_expression(leaf)
    (expected * torch.from_numpy(weights)).sum().backward()
    return outcome, expected.detach().numpy(), leaf.grad.numpy()


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_each_op_computes_and_differentiates_as_pytorch(name):
    topos_expression, torch_expression = PAIRS[name]
    outcome, loss_terms, gradient = _both(topos_expression, torch_expression)
    weights = np.random.default_rng(7).standard_normal(loss_terms.shape)
    np.testing.assert_allclose(outcome.loss, (loss_terms * weights).sum(), rtol=1e-12)
    np.testing.assert_allclose(outcome.gradients[0], gradient, rtol=1e-10, atol=1e-12)


def test_corners_send_the_gradient_where_pytorch_does():
    # On clamp's bounds, at leaky_relu's 0 and on a tie of max(dim): PyTorch's choices.
    values = np.array([[-1.0, -0.5, 0.0, 0.5, 1.0, 0.5]])
    for topos_expression, torch_expression in (
        (lambda x: x.clamp(-0.5, 0.5), lambda t: t.clamp(-0.5, 0.5)),
        (lambda x: x.leaky_relu(0.3), lambda t: torch.nn.functional.leaky_relu(t, 0.3)),
        (lambda x: x.max(1).values, lambda t: t.max(1).values),
    ):
        outcome, _, gradient = _both(topos_expression, torch_expression, values)
        np.testing.assert_array_equal(outcome.gradients[0], gradient)


def test_max_dim_answers_the_first_winners_positions_as_argmax_does():
    values = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, -1.0, 2.0, 2.0]])
    tape = Tape(dtype=np.float64)
    x = tape.parameter(Tensor(values.shape, values, dtype=np.float64))
    found = x.max(1)
    roots = [found.values, found.indices, x.argmax(1), x.argmin(dim=1), x.argmax()]
    network = tape.into_network()
    run = network.entry([root.symbol for root in roots]).lower().forward(network.parameters())
    read = [run.of(root.symbol).numpy() for root in roots]
    expected = [[3.0, 2.0], [1.0, 0.0], [1.0, 0.0], [3.0, 1.0], 1.0]
    for answer, wanted in zip(read, expected):
        np.testing.assert_array_equal(answer, wanted)


def test_erf_is_the_c_librarys_to_within_1e_15():
    points = np.concatenate([np.linspace(-7.0, 7.0, 20001), [0.0, 1e-300, -1e-8, 2.0, np.inf]])
    expected = np.array([math.erf(point) for point in points])
    assert np.max(np.abs(error_function(points) - expected)) <= 1e-15
    assert np.isnan(error_function(np.array([np.nan]))[0])


def _second_order(expression):
    """A build whose loss is the expression's weighted sum plus half the squared norm of
    its own recorded gradient: the expression differentiated twice."""

    def build(tape, tensors):
        x = tape.parameter(tensors[0])
        output = expression(x)
        weights = tape.leaf(
            Tensor(
                output.shape,
                np.linspace(-1, 1, output.shape.volume).reshape(tuple(output.shape)),
                dtype=tape.dtype,
            )
        )
        first = (output * weights).sum()
        ((_, gradient),) = tape.differentiate(first, [x.symbol])
        penalty = tape.value(gradient)
        return first + (penalty * penalty).sum() * 0.5, [x.symbol]

    return build


@pytest.mark.parametrize(
    "expression",
    [
        lambda x: x.sin() + x.cos(),
        lambda x: x.erf(),
        lambda x: x.softplus(beta=1.5),
        lambda x: (x * x + 1.0) ** x,
        lambda x: x.cumsum(1).tanh(),
        lambda x: x.amax(1) * x.amin(0).sum(),
        lambda x: x.var(1).sqrt(),
        lambda x: x.leaky_relu(0.2) * x,
        lambda x: x.clamp(-0.75, 0.75) * x,
    ],
    ids=[
        "sin_cos",
        "erf",
        "softplus",
        "tensor_power",
        "cumsum",
        "max_min",
        "std",
        "leaky",
        "clamp",
    ],
)
def test_second_derivatives_match_finite_differences(expression):
    values = [np.random.default_rng(3).permutation(12).reshape(3, 4) * 0.15 - 0.85]
    build = _second_order(expression)
    numeric = finite_differences(build, values, 5)
    for route in (engine, recorded):
        outcome = route(build, values, 5, np.float64)
        np.testing.assert_allclose(outcome.gradients[0], numeric[0], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(
    ("record", "words"),
    [
        (lambda x: x.var(0, unbiased=True)[:1].var(0), "correction"),
        (lambda x: x.expand(4, 3), "extent 2, not 1"),
        (lambda x: x.repeat(2), "at least one per axis"),
        (lambda x: einsum("ii->i", x), "repeats a letter"),
        (lambda x: einsum("ij,jk->ik", x, x), "extents"),
        (lambda x: einsum("...j->j", x), "'...'"),
        (lambda x: x.flatten(1, 0), "comes after"),
        (lambda x: x.unsqueeze(3), "outside"),
    ],
)
def test_misuse_is_one_clear_shape_error(record, words):
    x = Tape().parameter(Tensor.filled([2, 3], 1.0))
    with pytest.raises(ShapeError, match=words):
        record(x)


def test_a_user_model_in_this_vocabulary_trains_identically_by_both_routes():
    # A convnet block as a PyTorch user writes it: batch norm with var(unbiased=False),
    # leaky_relu, a clamp, global max and average pooling by amax and mean(dim=...),
    # flatten, a head by matmul, erf-GELU, log-softmax through amax; both routes' bits.
    rng = np.random.default_rng(11)
    arrays = [rng.standard_normal((4, 3, 6, 6)), rng.standard_normal((6, 5)) * 0.3]

    def build(tape, tensors):
        images, head = (tape.parameter(tensor) for tensor in tensors)
        mean = images.mean(dim=(0, 2, 3), keepdim=True)
        variance = images.var(dim=(0, 2, 3), unbiased=False, keepdim=True)
        x = ((images - mean) / (variance + 1e-5).sqrt()).leaky_relu(0.1).clamp(-3.0, 3.0)
        pooled = x.amax(dim=(2, 3)).unsqueeze(-1)
        features = einsum(
            "ncx,ncy->nxy", pooled, x.mean(dim=(2, 3)).unsqueeze(-1).expand(-1, -1, 2)
        )
        features = features.flatten(1).repeat(1, 3)
        logits = features.matmul(head)
        logits = logits * 0.5 * (1.0 + (logits / math.sqrt(2.0)).erf())
        shifted = logits - logits.amax(dim=1, keepdim=True)
        log_probabilities = shifted - shifted.exp().sum(dim=1, keepdim=True).log()
        return log_probabilities.max(1).values, [images.symbol, head.symbol]

    for dtype in (np.float32, np.float64):
        first = engine(build, arrays, 2, dtype)
        second = recorded(build, arrays, 2, dtype)
        assert first.loss.tobytes() == second.loss.tobytes()
        for left, right in zip(first.gradients, second.gradients):
            assert left.tobytes() == right.tobytes()
