"""What a matplotlib figure shows as text, where: every visible Text artist (titles, axis
labels, tick labels, legend entries, annotations), its box on the canvas, and the pairs
of them that overlap, for tests that a picture's labels never run into one another.

A figure is drawn once for all the checks: drawing is most of their cost (a figure of
eight routes takes over half a second), and a suite that drew it once a check paid
for it three times."""

from __future__ import annotations

from typing import Any


def assert_readable(figure: Any) -> None:
    """Fails unless no two drawn texts of `figure` overlap, all lie inside it, and no
    legend covers a plot."""
    renderer = _draw(figure)
    texts = drawn_texts(figure, renderer)
    assert overlapping_texts(texts) == []
    assert texts_outside(figure, texts) == []
    assert legends_over_plots(figure, renderer) == []


def _draw(figure: Any) -> Any:
    """Draws `figure` on an Agg canvas and returns the renderer that drew it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(figure.canvas, FigureCanvasAgg):
        FigureCanvasAgg(figure)  # a figure made without pyplot has no canvas that draws
    figure.canvas.draw()
    return figure.canvas.get_renderer()


def drawn_texts(figure: Any, renderer: Any) -> list[tuple[str, Any]]:
    """Every visible, non-empty text of the drawn `figure` with its window extent."""
    from matplotlib.text import Text

    hidden_tick_labels = _tick_labels_outside_the_view(figure)
    texts = []
    for artist in figure.findobj(Text):
        if not artist.get_visible() or not artist.get_text().strip():
            continue
        if id(artist) in hidden_tick_labels:
            continue
        texts.append((artist.get_text(), artist.get_window_extent(renderer)))
    return texts


def _tick_labels_outside_the_view(figure: Any) -> set[int]:
    """The ids of the tick labels matplotlib does not draw: those of ticks outside their
    axis's view."""
    hidden = set()
    for axes in figure.axes:
        for axis in (axes.xaxis, axes.yaxis):
            low, high = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not low - 1e-9 <= tick.get_loc() <= high + 1e-9:
                    hidden.update((id(tick.label1), id(tick.label2)))
    return hidden


def overlapping_texts(texts: list[tuple[str, Any]], margin: float = 0.5) -> list[tuple[str, str]]:
    """The pairs of `texts` whose boxes overlap (by more than `margin` pixels)."""
    pairs = []
    for index, (first, box) in enumerate(texts):
        for second, other in texts[index + 1 :]:
            width = min(box.x1, other.x1) - max(box.x0, other.x0)
            height = min(box.y1, other.y1) - max(box.y0, other.y0)
            if width > margin and height > margin:
                pairs.append((first, second))
    return pairs


def texts_outside(figure: Any, texts: list[tuple[str, Any]], margin: float = 0.5) -> list[str]:
    """The `texts` that reach beyond the edges of the drawn `figure`."""
    width, height = figure.canvas.get_width_height()
    return [
        text
        for text, box in texts
        if min(box.x0, box.y0) < -margin or box.x1 > width + margin or box.y1 > height + margin
    ]


def legends_over_plots(figure: Any, renderer: Any) -> list[str]:
    """The legends (by their first entry) of the drawn `figure` that lie over the plotting
    area of some axes, where they would cover lines."""
    from matplotlib.legend import Legend

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
