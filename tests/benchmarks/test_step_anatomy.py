"""step_anatomy puts each side's work in the same classes: every convolution kernel of
the cifar10 plan (its im2col and the three products) with PyTorch's convolutions, the
pooling lanes with PyTorch's max pooling, and nothing else in either."""

from benchmarks.cifar10_model import build
from benchmarks.step_anatomy import CONVOLUTIONS, OTHER_KERNELS, POOLING, topos_class, torch_class


def test_the_cifar10_plans_kernels_fall_in_the_classes_of_the_work_they_do():
    trainer = build("recorded", batch=4, shards=1)
    operations = {node.operation for node in trainer.network.nodes}
    by_class: dict[str, set[str]] = {}
    for operation in operations:
        by_class.setdefault(topos_class(operation), set()).add(operation)
    assert by_class[CONVOLUTIONS] == {
        "im2col",
        "convolution",
        "convolution_kernel",
        "convolution_images",
    }
    assert by_class[POOLING] == {"lane_argmax", "lane_max", "lane_place"}
    # The head's products, the bias, relu and its gradient are not convolution work.
    assert {"matmul", "add", "relu", "heaviside"} <= by_class[OTHER_KERNELS]


def test_pytorchs_operators_fall_in_the_same_classes():
    assert torch_class("aten::mkldnn_convolution") == CONVOLUTIONS
    assert torch_class("aten::convolution_backward") == CONVOLUTIONS
    assert torch_class("aten::max_pool2d_with_indices") == POOLING
    assert torch_class("aten::max_pool2d_with_indices_backward") == POOLING
    for operator in ("aten::threshold_backward", "aten::addmm", "aten::fill_", "aten::mm"):
        assert torch_class(operator) == OTHER_KERNELS
