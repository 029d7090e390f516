"""The cifar10 convolutions' matrix products in every orientation BLAS reads without a copy.

    python -m benchmarks.gemm_orientations [--rounds 15] [--repeat 5]

For each conv layer (rows R = N*OH*OW, depth K = C*KH*KW, filters F) it times
the forward product, the weight gradient and the patch gradient in each
orientation and layout that needs no copy of an operand: the current
rows-major forms (`[R, K] @ [K, F]`, `A^T G`, `G W^T`), the same products with
the other operand order or transpose flag, the channels-first forms (an im2col
of `[K, R]` and a gradient of `[F, R]`), `np.dot` against `np.matmul`, writing
with `out=` or not, and row chunks. Every operand is contiguous (a transposed
operand is a transposed view of a contiguous one, which BLAS reads with its
transpose flag). Candidates run interleaved, round by round (the order rotated
each round), and the table gives each one's median ms per call and its ratio to
the current form.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

LAYERS = {  # name: (rows, depth, filters)
    "conv1": (64 * 32 * 32, 27, 16),
    "conv2": (64 * 16 * 16, 144, 32),
    "conv3": (64 * 8 * 8, 288, 64),
}


def candidates(rows: int, depth: int, filters: int, chunk: int) -> dict[str, dict]:
    """name -> (product, callable), for the three products of one layer."""
    generator = np.random.default_rng(0)

    def data(*shape):
        return generator.standard_normal(shape).astype(np.float32)

    a = data(rows, depth)  # patches, rows-major [R, K]
    at = np.ascontiguousarray(a.T)  # patches, channels-first [K, R]
    w = data(depth, filters)  # kernel [K, F]
    wt = np.ascontiguousarray(w.T)  # kernel [F, K] (the weights as stored, c-major)
    g = data(rows, filters)  # output gradient [R, F]
    gt = np.ascontiguousarray(g.T)  # output gradient [F, R]
    out_rf = np.empty((rows, filters), np.float32)
    out_fr = np.empty((filters, rows), np.float32)
    out_kf = np.empty((depth, filters), np.float32)
    out_fk = np.empty((filters, depth), np.float32)
    out_rk = np.empty((rows, depth), np.float32)
    out_kr = np.empty((depth, rows), np.float32)

    def chunked(left, right, out):
        for start in range(0, left.shape[0], chunk):
            np.matmul(left[start : start + chunk], right, out=out[start : start + chunk])

    return {
        "forward": {
            "A@W [R,K]@[K,F] (current)": lambda: np.matmul(a, w, out=out_rf),
            "A@W no out=": lambda: np.matmul(a, w),
            "np.dot(A, W, out=)": lambda: np.dot(a, w, out=out_rf),
            "A@Wt.T (nt, weights as stored)": lambda: np.matmul(a, wt.T, out=out_rf),
            f"A@W in {chunk}-row chunks": lambda: chunked(a, w, out_rf),
            "Wt@At [F,K]@[K,R] (channels-first)": lambda: np.matmul(wt, at, out=out_fr),
            "W.T@At (tn, channels-first)": lambda: np.matmul(w.T, at, out=out_fr),
            "At.T@W -> [R,F] (tn, channels-first patches)": lambda: np.matmul(at.T, w, out=out_rf),
        },
        "weight grad": {
            "A.T@G -> [K,F] (current tn)": lambda: np.matmul(a.T, g, out=out_kf),
            "G.T@A -> [F,K] (tn)": lambda: np.matmul(g.T, a, out=out_fk),
            "np.dot(A.T, G, out=)": lambda: np.dot(a.T, g, out=out_kf),
            "Gt@At.T -> [F,K] (channels-first nt)": lambda: np.matmul(gt, at.T, out=out_fk),
            "At@Gt.T -> [K,F] (channels-first nt)": lambda: np.matmul(at, gt.T, out=out_kf),
            "At@G -> [K,F] (mixed nn)": lambda: np.matmul(at, g, out=out_kf),
            "Gt@A -> [F,K] (mixed nn)": lambda: np.matmul(gt, a, out=out_fk),
        },
        "patch grad": {
            "G@W.T -> [R,K] (current nt)": lambda: np.matmul(g, w.T, out=out_rk),
            "G@Wt -> [R,K] (nn)": lambda: np.matmul(g, wt, out=out_rk),
            "np.dot(G, W.T, out=)": lambda: np.dot(g, w.T, out=out_rk),
            f"G@W.T in {chunk}-row chunks": lambda: chunked(g, w.T, out_rk),
            "Wt.T@Gt -> [K,R] (channels-first tn)": lambda: np.matmul(wt.T, gt, out=out_kr),
            "W@Gt -> [K,R] (channels-first nn)": lambda: np.matmul(w, gt, out=out_kr),
            "W@G.T -> [K,R] (nt, channels-first patches)": lambda: np.matmul(w, g.T, out=out_kr),
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=5, help="calls per timing")
    parser.add_argument("--chunk", type=int, default=4096)
    arguments = parser.parse_args(argv)
    for layer, (rows, depth, filters) in LAYERS.items():
        products = candidates(rows, depth, filters, arguments.chunk)
        for product, forms in products.items():
            times = {name: [] for name in forms}
            for form in forms.values():
                form()
            names = list(forms)
            for round_ in range(arguments.rounds):
                # Rotate the order each round, so no candidate always runs first.
                shift = round_ % len(names)
                for name in names[shift:] + names[:shift]:
                    form = forms[name]
                    start = time.perf_counter()
                    for _ in range(arguments.repeat):
                        form()
                    times[name].append((time.perf_counter() - start) / arguments.repeat * 1e3)
            medians = {name: statistics.median(values) for name, values in times.items()}
            baseline = next(iter(medians.values()))
            print(f"{layer} [R={rows}, K={depth}, F={filters}] {product}")
            for name, value in medians.items():
                print(f"  {value:7.3f} ms  {value / baseline:5.2f}x  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
