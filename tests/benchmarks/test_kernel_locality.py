"""kernel_locality's warm calls repeat the step's arithmetic: an operand the output is
written over gets its values back before each call, and no other array is touched."""

import numpy as np

from benchmarks.kernel_locality import _restorer


def test_an_operand_the_output_overwrites_is_put_back_before_each_warm_call():
    product = np.arange(6, dtype=np.float32).reshape(2, 3)
    bias = np.ones(3, dtype=np.float32)
    restore = _restorer((product, bias), {"out": product})
    for _ in range(3):  # a bias added in place into its product, called again and again
        restore()
        np.add(product, bias, out=product)
    assert product.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert bias.tolist() == [1, 1, 1]


def test_a_call_writing_elsewhere_restores_nothing():
    left, right, out = (np.full(4, value, dtype=np.float32) for value in (1, 2, 0))
    restore = _restorer((left, right), {"out": out})
    np.add(left, right, out=out)
    restore()
    assert out.tolist() == [3, 3, 3, 3]
    assert _restorer((left,), {})() is None
