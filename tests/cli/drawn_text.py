"""What a matplotlib figure shows as text, where: every visible Text artist (titles, axis
labels, tick labels, legend entries, annotations), its box on the canvas, and the pairs
of them that overlap, for tests that a picture's labels never run into one another."""

from __future__ import annotations

from typing import Any


def drawn_texts(figure: Any) -> list[tuple[str, Any]]:
    """Every visible, non-empty text of `figure` with its window extent, after drawing."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    if not isinstance(figure.canvas, FigureCanvasAgg):
        FigureCanvasAgg(figure)  # a figure made without pyplot has no canvas that draws
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    texts = []
    for artist in figure.findobj(Text):
        if not artist.get_visible() or not artist.get_text().strip():
            continue
        if not _drawn(artist, renderer):
            continue
        texts.append((artist.get_text(), artist.get_window_extent(renderer)))
    return texts


def _drawn(artist: Any, renderer: Any) -> bool:
    """Whether matplotlib draws the text: tick labels of ticks outside the view are not."""
    from matplotlib.axis import Tick

    for axes in artist.figure.axes if artist.figure is not None else ():
        for axis in (axes.xaxis, axes.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if artist in (tick.label1, tick.label2):
                    low, high = sorted(axis.get_view_interval())
                    location = tick.get_loc()
                    return isinstance(tick, Tick) and low - 1e-9 <= location <= high + 1e-9
    return True


def overlapping_texts(figure: Any, margin: float = 0.5) -> list[tuple[str, str]]:
    """The pairs of drawn texts whose boxes overlap (by more than `margin` pixels)."""
    texts = drawn_texts(figure)
    pairs = []
    for index, (first, box) in enumerate(texts):
        for second, other in texts[index + 1 :]:
            width = min(box.x1, other.x1) - max(box.x0, other.x0)
            height = min(box.y1, other.y1) - max(box.y0, other.y0)
            if width > margin and height > margin:
                pairs.append((first, second))
    return pairs


def texts_outside(figure: Any, margin: float = 0.5) -> list[str]:
    """The drawn texts that reach beyond the figure's edges."""
    width, height = figure.canvas.get_width_height()
    return [
        text
        for text, box in drawn_texts(figure)
        if min(box.x0, box.y0) < -margin or box.x1 > width + margin or box.y1 > height + margin
    ]


def legends_over_plots(figure: Any) -> list[str]:
    """The legends (by their first entry) that lie over the plotting area of some axes,
    where they would cover lines."""
    from matplotlib.legend import Legend

    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    covering = []
    for legend in figure.findobj(Legend):
        if not legend.get_visible():
            continue
        box = legend.get_window_extent(renderer)
        for axes in figure.axes:
            plot = axes.get_window_extent(renderer)
            if box.overlaps(plot):
                texts = legend.get_texts()
                covering.append(texts[0].get_text() if texts else "a legend")
    return covering
