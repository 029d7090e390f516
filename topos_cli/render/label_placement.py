"""Where a picture's labels go: each label's box, generous for the picture's font, placed
about its point clear of every point's mark, of the other labels and of the boxes given
(a legend, a key), so no label covers another point."""

from __future__ import annotations

from collections.abc import Sequence

#: A label's box, at the picture's 12-pixel font: its height and the width of one
#: character, generous (DejaVu Sans' digits are 0.64 em) so a wide font overlaps nothing.
LABEL_HEIGHT = 14
CHARACTER_EM = 0.64
CHARACTER_WIDTH = 12 * CHARACTER_EM
#: Characters wider than that (DejaVu Sans: '@' 1.0 em, 'm' 0.97, '%' 0.95, '+' 0.84),
#: given a whole em.
WIDE_CHARACTERS = frozenset("@%+mwMW")


def label_width(label: str) -> float:
    """A generous width, in pixels, of `label` at the picture's 12-pixel font."""
    return sum(12.0 if character in WIDE_CHARACTERS else CHARACTER_WIDTH for character in label)


#: How far a label's text reaches below its baseline (DejaVu Sans' descenders at 12 px).
LABEL_DESCENT = 4
#: A point's mark, in pixels from its centre: the circle's radius and its stroke.
MARK_RADIUS = 6


def point_boxes(centres: Sequence[tuple[float, float]]) -> list[tuple[float, float, float, float]]:
    """Each point's mark as a box (left, top, right, bottom): what no label may cover."""
    return [
        (x - MARK_RADIUS, y - MARK_RADIUS, x + MARK_RADIUS, y + MARK_RADIUS) for x, y in centres
    ]


def _candidates(x: float, y: float, width: float) -> list[tuple[float, float]]:
    """Where a label of `width` may start (its baseline) about a point at (x, y): up-right,
    below-right, up-left, below-left, then right, left, above and below it, then the same
    ring farther out, a line at a time, so a crowded point still finds a free place."""
    places = []
    for step in range(12):
        reach = 8 + LABEL_HEIGHT * step
        places += [
            (x + reach, y - reach),
            (x + reach, y + reach + 12),
            (x - reach - width, y - reach),
            (x - reach - width, y + reach + 12),
            (x + reach, y + 4),
            (x - reach - width, y + 4),
            (x - width / 2, y - reach),
            (x - width / 2, y + reach + LABEL_HEIGHT),
        ]
    return places


def label_positions(
    centres: Sequence[tuple[float, float]],
    labels: Sequence[str],
    *,
    bounds: tuple[float, float, float, float] | None = None,
    avoid: Sequence[tuple[float, float, float, float]] = (),
) -> list[tuple[float, float]]:
    """Where each point's label starts (its text baseline): up and to the right of the
    point, else the first place about it (`_candidates`) that covers no label already
    placed, no point's mark (`point_boxes`), no box of `avoid` (left, top, right,
    bottom) and stays within `bounds` (left, top, right, bottom); failing all, moved
    down from up-right a line at a time until it covers none, so points close together
    (remat at 50% and at its floor) stay readable and no label hides a point."""
    obstacles = [*point_boxes(centres), *avoid]

    def box(left: float, baseline: float, width: float) -> tuple[float, float, float, float]:
        return (left, baseline - LABEL_HEIGHT, left + width, baseline + LABEL_DESCENT)

    def covers(left: float, baseline: float, width: float) -> bool:
        mine = box(left, baseline, width)
        return any(
            mine[0] < other[2] and other[0] < mine[2] and mine[1] < other[3] and other[1] < mine[3]
            for other in obstacles
        )

    def inside(left: float, baseline: float, width: float) -> bool:
        if bounds is None:
            return True
        low, top, high, bottom = bounds
        return (
            low <= left
            and left + width <= high
            and top <= baseline - LABEL_HEIGHT
            and (baseline <= bottom)
        )

    positions = []
    for (x, y), label in zip(centres, labels, strict=True):
        width = label_width(label)
        candidates = _candidates(x, y, width)
        free = (
            candidate
            for candidate in candidates
            if inside(*candidate, width) and not covers(*candidate, width)
        )
        left, baseline = next(free, candidates[0])
        if bounds is not None:
            # Kept within the plot: pulled left of its right edge, below its top.
            left = max(bounds[0], min(left, bounds[2] - width))
            baseline = max(baseline, bounds[1] + LABEL_HEIGHT)
        while covers(left, baseline, width):
            baseline += LABEL_HEIGHT
        obstacles.append(box(left, baseline, width))
        positions.append((left, baseline))
    return positions
