"""RssTimeline: a worker's resident set over time, in bounded memory however long it runs.

The monitor samples every few milliseconds; an hour of that is most of a
million samples. The timeline keeps at most `capacity` points, each the
highest sample of an equal slice of time: when it fills, neighbouring points
merge pairwise (keeping the higher) and each new point spans twice the time.
Peaks are never lost, only their timing coarsens.
"""

from __future__ import annotations

from topos_cli.result.repeat import RssTimelineFacts


class RssTimeline:
    """The highest RSS seen in each slice of time since `start` (seconds, monotonic)."""

    def __init__(self, start: float, interval: float, capacity: int = 512) -> None:
        if capacity < 2 or capacity % 2:
            raise ValueError(f"a timeline's capacity is even and at least 2, not {capacity}")
        self.start = start
        self.sample_interval = interval
        self.capacity = capacity
        #: Seconds each point spans; doubles whenever the points fill up.
        self.resolution = interval
        self.points: list[int] = []
        self.samples = 0
        self.peak: int | None = None
        self.last: int | None = None

    def add(self, moment: float, rss_bytes: int) -> None:
        """Records a sample of `rss_bytes` taken at `moment`."""
        self.samples += 1
        self.last = rss_bytes
        self.peak = rss_bytes if self.peak is None else max(self.peak, rss_bytes)
        index = max(0, int((moment - self.start) / self.resolution))
        while index >= self.capacity:
            self._coarsen()
            index = max(0, int((moment - self.start) / self.resolution))
        if index >= len(self.points):
            # A gap (the sampler was starved) repeats the last level rather than inventing zero.
            filler = self.points[-1] if self.points else rss_bytes
            self.points.extend([filler] * (index - len(self.points)))
            self.points.append(rss_bytes)
        else:
            self.points[index] = max(self.points[index], rss_bytes)

    def _coarsen(self) -> None:
        """Halves the number of points: each new point is the higher of two old ones."""
        pairs = zip(self.points[0::2], self.points[1::2] + [0] * (len(self.points) % 2))
        self.points = [max(first, second) for first, second in pairs]
        self.resolution *= 2

    def facts(self) -> RssTimelineFacts:
        """The timeline as a result keeps it: `points[i]` is the peak over
        `[i * resolution, (i + 1) * resolution)` seconds after the worker started."""
        return RssTimelineFacts(
            sample_interval_seconds=self.sample_interval,
            resolution_seconds=self.resolution,
            samples=self.samples,
            sampled_peak_bytes=self.peak,
            points=list(self.points),
        )
