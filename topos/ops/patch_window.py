"""PatchWindow: the window a convolution's patches are taken through, as one frozen value."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PatchWindow:
    """The `kernel_height x kernel_width` window of a convolution, moved by `stride` over
    images zero-padded by `padding` on every side; with `phases = P > 1` the patch rows
    come phase-major (see `ops/convolution.py`).

    A node attribute of im2col, col2im, convolution and convolution_images: frozen, so
    it hashes and compares by value (the eager algebra compares a call's attributes
    with the simulated ones), and it prints as its fields, as a plan's description
    always has (`phases` only when it is not 1).
    """

    kernel_height: int
    kernel_width: int
    stride: int = 1
    padding: int = 0
    phases: int = 1

    def output_extents(self, height: int, width: int) -> tuple[int, int]:
        """How many window positions fit along the padded height and width."""
        return (
            output_extent(height, self.kernel_height, self.stride, self.padding),
            output_extent(width, self.kernel_width, self.stride, self.padding),
        )

    @property
    def taps(self) -> int:
        """The number of pixels under the window: `kernel_height * kernel_width`."""
        return self.kernel_height * self.kernel_width

    def __str__(self) -> str:
        fields = (
            f"kernel_height={self.kernel_height}, kernel_width={self.kernel_width}, "
            f"stride={self.stride}, padding={self.padding}"
        )
        return fields if self.phases == 1 else f"{fields}, phases={self.phases}"


def output_extent(extent: int, kernel: int, stride: int, padding: int) -> int:
    """How many windows of `kernel` at `stride` fit along a padded axis of `extent`."""
    return (extent + 2 * padding - kernel) // stride + 1
