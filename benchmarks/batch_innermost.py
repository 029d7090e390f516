"""cifar10's convolutions per layer: the current layout against batch-innermost `[C, H, W, N]`.

    python -m benchmarks.batch_innermost [--images 32] [--rounds 40]

Issue 30 asks to measure the batch-innermost layout again on each CPU, layer by layer
(on an AMD EPYC it once took conv1's forward plus kernel gradient 4.1 ms against 10.0;
on Intel it gained nothing in the whole step). For each of cifar10's three 3x3
convolutions (stride 1, padding 1) at `--images` images (32: a shard), on one BLAS
thread, this times the **forward plus the kernel's gradient** two ways, alternated
round by round in one process (medians):

- **current**: topos's own kernels as the recorded route calls them: `im2col` (phase-major
  rows, as the pooling that follows needs), `convolution` (the product) and
  `convolution_kernel` (`patches^T @ g`);
- **batch-innermost**: activations `[C, H + 3, W + 2, N]` (zero-padded, one zero row
  more below so the last tap's slice stays inside, the batch innermost), so a tap `(ky,
  kx)` of the window is one contiguous slice of the flattened `[C, (H + 3) (W + 2) N]`
  matrix, `(ky (W + 2) + kx) N` along: the forward is nine products `W_tap [F, C] @
  X[:, slice]` summed into `[F, H (W + 2) N]` (the two extra columns a row are computed
  and ignored), the kernel's gradient nine products `G [F, H (W + 2) N] @ X[:,
  slice]^T` (`G`'s extra columns zero). No patch matrix;
- **batch-innermost, stacked**: the same layout with the nine slices copied (each a
  contiguous run a channel) into one `[9C, H (W + 2) N]` matrix, then one product each
  way: a patch matrix again, but made of whole rows.

Both are checked to compute the same convolution (to float32 rounding) before timing.
Only the convolution is timed: the pooling, relu and the images' gradient in the other
layout are not, and the whole step is what decides (see docs/performance/tried-and-not-kept.md
for the step measured on Intel).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

#: cifar10's convolutions: name, input channels, filters, image side.
LAYERS = (("conv1", 3, 16, 32), ("conv2", 16, 32, 16), ("conv3", 32, 64, 8))


def current_form(images: np.ndarray, kernel: np.ndarray, gradient: np.ndarray):
    """The recorded route's forward and kernel gradient: (output rows, kernel gradient)."""
    from topos.ops.patch_window import PatchWindow
    from topos.ops.primitives.convolution import im2col
    from topos.ops.primitives.convolution_product import convolution, convolution_kernel

    window = PatchWindow(3, 3, stride=1, padding=1, phases=2)
    patches = im2col.kernel(images, window=window)
    output = convolution.kernel(patches, kernel, images, window=window)
    return output, convolution_kernel.kernel(patches, gradient)


def batch_innermost_form(padded: np.ndarray, taps: np.ndarray, gradient: np.ndarray):
    """The batch-innermost forward and kernel gradient over `padded` `[C, H+3, W+2, N]`,
    `taps` `[9, F, C]` and `gradient` `[F, H (W + 2) N]` (extra columns zero): (output
    `[F, H (W + 2) N]`, kernel gradient `[9, F, C]`)."""
    channels, padded_height, padded_width, batch = padded.shape
    height = padded_height - 3
    length = height * padded_width * batch
    flat = padded.reshape(channels, -1)
    output = np.zeros((taps.shape[1], length), dtype=padded.dtype)
    product = np.empty_like(output)
    kernel_gradient = np.empty_like(taps)
    for tap in range(9):
        ky, kx = divmod(tap, 3)
        start = (ky * padded_width + kx) * batch
        window = flat[:, start : start + length]
        np.matmul(taps[tap], window, out=product)
        output += product
        np.matmul(gradient, window.T, out=kernel_gradient[tap])
    return output, kernel_gradient


def stacked_form(padded: np.ndarray, kernel_rows: np.ndarray, gradient: np.ndarray):
    """`batch_innermost_form` with the taps' slices stacked into one `[9C, L]` matrix
    (tap-major, as `kernel_rows` `[F, 9C]` reads it): (output, kernel gradient `[F, 9C]`)."""
    channels, padded_height, padded_width, batch = padded.shape
    length = (padded_height - 3) * padded_width * batch
    flat = padded.reshape(channels, -1)
    stacked = np.empty((9 * channels, length), dtype=padded.dtype)
    for tap in range(9):
        ky, kx = divmod(tap, 3)
        start = (ky * padded_width + kx) * batch
        stacked[tap * channels : (tap + 1) * channels] = flat[:, start : start + length]
    return kernel_rows @ stacked, gradient @ stacked.T


def _agree(images, kernel, padded, taps) -> None:
    """Both forms give the same convolution (to float32 rounding), or the benchmark stops."""
    channels, filters = images.shape[1], kernel.shape[1]
    batch, height = images.shape[0], images.shape[2]
    rows, _ = current_form(images, kernel, np.zeros((batch * height * height, filters), "f4"))
    gradient = np.zeros((filters, height * (height + 2) * batch), np.float32)
    output, _ = batch_innermost_form(padded, taps, gradient)
    stacked, _ = stacked_form(padded, np.ascontiguousarray(kernel.T), gradient)
    if not np.allclose(stacked, output, rtol=1e-4, atol=1e-4 * float(np.abs(output).max())):
        raise SystemExit(f"batch_innermost: the stacked form differs ({channels} channels)")
    # current rows are phase-major [py, px, n, h/2, w/2]; batch-innermost [f, h, w', n]
    by_pixel = rows.reshape(2, 2, batch, height // 2, height // 2, filters)
    by_pixel = by_pixel.transpose(5, 3, 0, 4, 1, 2).reshape(filters, height, height, batch)
    ours = output.reshape(filters, height, height + 2, batch)[:, :, :height, :]
    scale = float(np.abs(by_pixel).max())
    if not np.allclose(ours, by_pixel, rtol=1e-4, atol=1e-5 * scale):
        raise SystemExit(f"batch_innermost: the two forms differ ({channels} channels)")


def measure(images_count: int, rounds: int) -> list[dict]:
    """Each layer's median ms (forward plus kernel gradient) in both forms."""
    rng = np.random.default_rng(0)
    results = []
    for name, channels, filters, side in LAYERS:
        images = rng.standard_normal((images_count, channels, side, side), dtype=np.float32)
        kernel = rng.standard_normal((9 * channels, filters), dtype=np.float32)
        gradient_rows = rng.standard_normal((images_count * side * side, filters), "f4")
        padded = np.zeros((channels, side + 3, side + 2, images_count), np.float32)
        padded[:, 1 : side + 1, 1:-1, :] = images.transpose(1, 2, 3, 0)
        taps = np.ascontiguousarray(kernel.reshape(9, channels, filters).transpose(0, 2, 1))
        gradient = np.zeros((filters, side, side + 2, images_count), np.float32)
        gradient[:, :, :side, :] = rng.standard_normal((filters, side, side, images_count))
        gradient = gradient.reshape(filters, -1)
        _agree(images, kernel, padded, taps)
        forms = {
            "current": (current_form, (images, kernel, gradient_rows)),
            "batch-innermost": (batch_innermost_form, (padded, taps, gradient)),
            "stacked": (stacked_form, (padded, np.ascontiguousarray(kernel.T), gradient)),
        }
        times = {form: [] for form in forms}
        for round_number in range(rounds):
            order = list(forms)[round_number % 3 :] + list(forms)[: round_number % 3]
            for form in order:
                function, operands = forms[form]
                start = time.perf_counter()
                function(*operands)
                times[form].append(time.perf_counter() - start)
        medians = {form: statistics.median(values) * 1e3 for form, values in times.items()}
        results.append({"layer": name, "channels": channels, "filters": filters, **medians})
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=32, help="images (32: one shard)")
    parser.add_argument("--rounds", type=int, default=40, help="alternated rounds")
    arguments = parser.parse_args(argv)
    from threadpoolctl import threadpool_info, threadpool_limits

    blas = next((pool for pool in threadpool_info() if pool["user_api"] == "blas"), {})
    before = os.getloadavg()[0]
    with threadpool_limits(1):
        results = measure(arguments.images, arguments.rounds)
    print(
        f"{arguments.images} images, one BLAS thread ({blas.get('internal_api')} "
        f"{blas.get('version')} {blas.get('architecture')}); forward plus kernel gradient, "
        f"medians of {arguments.rounds} alternated rounds"
    )
    for row in results:
        current = row["current"]
        print(
            f"  {row['layer']} ({row['channels']} -> {row['filters']}): current "
            f"{current:.2f} ms, batch-innermost {row['batch-innermost']:.2f} ms "
            f"({row['batch-innermost'] / current:.2f}x), stacked {row['stacked']:.2f} ms "
            f"({row['stacked'] / current:.2f}x)"
        )
    print(f"load average {before:.2f} -> {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
