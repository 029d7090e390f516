"""A convolution's products cut by the machine's BLAS kernels: with OpenBLAS's AVX2 kernels
(Haswell, Zen) the forward is one product and the kernel's gradient one product `g^T @
patches` transposed into place, elsewhere `matmul`'s and `matmul_tn`'s blocks. Either
rule is the same product to float32 rounding; each rule's bits are fixed by the shapes
(never by the operands' or output's layout), its temporaries live in the workspace the
memory plan gives it, and both routes call it, so they stay bit-identical under either."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from tests.support.allocations import peak_allocation
from topos import SGD, Conv2d, Shape, Tape, Tensor, cross_entropy, init
from topos.ops import REGISTRY, blas_kernel
from topos.ops.primitives import convolution_product

convolution = REGISTRY["convolution"]
convolution_kernel = REGISTRY["convolution_kernel"]

# cifar10's three products at four images: (rows, depth, filters).
SHAPES = [(4 * 1024, 27, 16), (4 * 256, 144, 32), (4 * 64, 288, 64)]
RULES = {"avx2": True, "blocked": False}


def operands(rows: int, depth: int, filters: int):
    rng = np.random.default_rng(rows + depth + filters)
    patches = rng.standard_normal((rows, depth)).astype(np.float32)
    kernel = rng.standard_normal((depth, filters)).astype(np.float32)
    gradient = rng.standard_normal((rows, filters)).astype(np.float32)
    return patches, kernel, gradient


def rule(name: str):
    """The convolution's products as on a machine whose BLAS kernels take `name`'s rule."""
    return mock.patch.object(convolution_product, "packs_every_product", lambda: RULES[name])


def test_the_rule_follows_the_kernel_name_openblas_reports():
    with mock.patch.object(blas_kernel, "blas_kernel", lambda: "haswell"):
        assert blas_kernel.packs_every_product()
    with mock.patch.object(blas_kernel, "blas_kernel", lambda: "zen"):
        assert blas_kernel.packs_every_product()
    for other in ("skylakex", "cooperlake", "neoversen1", ""):
        with mock.patch.object(blas_kernel, "blas_kernel", lambda other=other: other):
            assert not blas_kernel.packs_every_product()
    # Read once a process: the same answer every time it is asked.
    assert blas_kernel.blas_kernel() == blas_kernel.blas_kernel()


def test_the_kernel_name_is_numpy_s_openblas():
    numpy_directory = Path("/site-packages/numpy")

    def pool(api: str, path: str, architecture: str) -> dict:
        return {"internal_api": api, "filepath": path, "architecture": architecture}

    other = pool("openblas", "/opt/other/libopenblas.so", "SkylakeX")
    shipped = pool("openblas", "/site-packages/numpy.libs/libscipy_openblas64_.so", "Haswell")
    mkl = pool("mkl", "/opt/intel/libmkl_rt.so", None)
    assert blas_kernel.numpy_openblas_kernel([other, shipped], numpy_directory) == "haswell"
    assert blas_kernel.numpy_openblas_kernel([mkl, other], numpy_directory) == "skylakex"
    assert blas_kernel.numpy_openblas_kernel([mkl], numpy_directory) == ""
    assert blas_kernel.numpy_openblas_kernel([], numpy_directory) == ""


@pytest.mark.parametrize("name", sorted(RULES))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_each_rule_is_the_product_to_rounding(name, shape):
    patches, kernel, gradient = operands(*shape)
    exact_product = patches.astype(np.float64) @ kernel
    exact_gradient = patches.astype(np.float64).T @ gradient
    with rule(name):
        product = convolution.kernel(patches, kernel, None, window=None)
        kernel_gradient = convolution_kernel.kernel(patches, gradient)
    np.testing.assert_allclose(product, exact_product, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(kernel_gradient, exact_gradient, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_the_avx2_rule_is_one_product_and_elsewhere_the_blocked_ones(shape):
    patches, kernel, gradient = operands(*shape)
    with rule("avx2"):
        assert convolution.kernel(patches, kernel, None, window=None).tobytes() == (
            np.matmul(patches, kernel).tobytes()
        )
        assert convolution_kernel.kernel(patches, gradient).tobytes() == (
            np.ascontiguousarray(np.matmul(gradient.T, patches).T).tobytes()
        )
    with rule("blocked"):
        assert convolution.kernel(patches, kernel, None, window=None).tobytes() == (
            REGISTRY["matmul"].kernel(patches, kernel).tobytes()
        )
        assert convolution_kernel.kernel(patches, gradient).tobytes() == (
            REGISTRY["matmul_tn"].kernel(patches, gradient).tobytes()
        )


@pytest.mark.parametrize("name", sorted(RULES))
def test_the_bits_do_not_depend_on_the_layouts(name):
    patches, kernel, gradient = operands(*SHAPES[1])
    with rule(name):
        product = convolution.kernel(patches, kernel, None, window=None)
        kernel_gradient = convolution_kernel.kernel(patches, gradient)
        product_out = np.empty(product.shape, np.float32, order="F")
        convolution.kernel(
            np.asfortranarray(patches),
            np.asfortranarray(kernel),
            None,
            out=product_out,
            window=None,
        )
        gradient_out = np.empty(kernel_gradient.shape, np.float32, order="F")
        convolution_kernel.kernel(
            np.asfortranarray(patches), np.asfortranarray(gradient), out=gradient_out
        )
    assert np.ascontiguousarray(product_out).tobytes() == product.tobytes()
    assert np.ascontiguousarray(gradient_out).tobytes() == kernel_gradient.tobytes()


@pytest.mark.parametrize("name", sorted(RULES))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_the_kernel_gradient_works_in_its_workspace(name, shape):
    patches, _, gradient = operands(*shape)
    with rule(name):
        size = convolution_kernel.memory.workspace_elements(
            [Shape(patches.shape), Shape(gradient.shape)], [(0, 1), (0, 1)], {}
        )
        if name == "avx2":
            assert size == shape[1] * shape[2]
        workspace = np.full(size, np.nan, np.float32)
        out = np.empty((shape[1], shape[2]), np.float32)
        reference = convolution_kernel.kernel(patches, gradient)
        call = lambda: convolution_kernel.kernel(patches, gradient, out=out, workspace=workspace)  # noqa: E731
        assert peak_allocation(call) < 4096
    assert out.tobytes() == reference.tobytes()


@pytest.mark.parametrize("name", sorted(RULES))
def test_the_routes_train_a_convolution_bit_identically_under_either_rule(name):
    def train(route: str) -> list[bytes]:
        tape = Tape()
        layer = Conv2d(
            tape, init.normal(3, 0.3)(Shape([8, 3, 3, 3])), Tensor.filled([8], 0.0), 1, 1
        )
        images = tape.input(Tensor.filled([4, 3, 16, 16], 0.0))
        targets = tape.input(Tensor.selection([0] * 4, 8))
        pooled = layer.express_max_pooled(images, 2).relu()
        logits = pooled.sum(axis=(2, 3))
        loss = cross_entropy(logits, targets)
        adjoints = tape.differentiate(loss.symbol, layer.parameters())
        network = tape.into_network()
        rng = np.random.default_rng(7)
        feeds = {
            images.symbol: Tensor.adopt(rng.standard_normal((4, 3, 16, 16)).astype(np.float32)),
            targets.symbol: Tensor.selection([1, 5, 2, 7], 8),
        }
        parameters = network.parameters()
        for _ in range(3):
            if route == "recorded":
                run = network.entry(adjoints.roots()).lower().forward(parameters, feeds)
                gradients = run.recorded_gradients(adjoints)
            else:
                plan = network.entry([loss.symbol]).backward().lower()
                run = plan.forward(parameters, feeds)
                gradients = run.backward(loss.symbol).parameters(parameters)
            parameters = SGD(0.1).step(parameters, gradients)
        return [parameters.of(weight).numpy().tobytes() for weight in layer.parameters()]

    with rule(name):
        assert train("engine") == train("recorded")
