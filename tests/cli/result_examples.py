"""Grade results made by hand for the tests of pictures: every part a real grade writes
(timelines, ready facts, memory prediction, verdict), with figures known in advance."""

from __future__ import annotations

from typing import Any

import msgspec

from topos_cli.judge.verdict import decide_verdict
from topos_cli.result.float_bits import float32_bits
from topos_cli.result.repeat import Repeat
from topos_cli.result.result_file import compose_result

MEBIBYTE = 1024 * 1024

#: Per route: ms/step, RSS at ready and the training delta (MiB), the planned training MiB.
ROUTES = {
    "engine": (20.0, 200, 54, 53),
    "recorded": (18.0, 200, 27, 26),
}

#: Eight routes, as a frontier grades them: the reference, recorded, and remat at budgets
#: (figures close together on purpose, so their labels and bars crowd).
EIGHT_ROUTES = {
    "engine": (20.0, 200, 54, 53),
    "recorded": (18.0, 200, 27, 26),
    "remat": (19.5, 201, 20, 19),
    "remat@90%": (18.2, 200, 25, 24),
    "remat@75%": (18.9, 200, 22, 21),
    "remat@50%": (19.4, 201, 17, 16),
    "remat@40%": (21.7, 199, 14, 13),
    "remat@35%": (24.9, 200, 12, 12),
}


def some_routes(count: int) -> dict[str, tuple[float, int, int, int]]:
    """The first `count` (1 to 8) of `EIGHT_ROUTES`, for `example_result(routes=...)`."""
    return dict(list(EIGHT_ROUTES.items())[:count])


def _run(
    route: str,
    repeat: int,
    steps: int,
    *,
    broken_at: int | None,
    failed: bool,
    figures: tuple[float, int, int, int],
) -> Repeat:
    """One run: a falling loss, steady step times with a slow first step, a timeline."""
    milliseconds, ready, delta, _ = figures
    scale = 1.0 + 0.01 * repeat
    bits = [float32_bits(2.3 - 0.01 * step) for step in range(steps)]
    if broken_at is not None and route == "recorded":
        bits[broken_at] += 3
    seconds = [milliseconds * scale * (1.0 + 0.02 * (step % 3)) / 1000.0 for step in range(steps)]
    seconds[0] *= 3  # the first measured step is slow, as real ones are
    if failed and route == "recorded":
        bits, seconds = bits[: steps // 2], seconds[: steps // 2]
    ready_bytes, peak_bytes = ready * MEBIBYTE, (ready + delta) * MEBIBYTE
    ready_after = 1.0
    points = [int(ready_bytes * index / 100) for index in range(100)]  # loading, 0.01 s a point
    points += [peak_bytes] * (int(sum(seconds) / 0.01) + 1)
    facts = {
        "ready_after_seconds": ready_after,
        "ready": {"warm_up_seconds": 0.5, "posture": "forward", "shards": 1},
        "rss_timeline": {
            "sample_interval_seconds": 0.005,
            "resolution_seconds": 0.01,
            "samples": 2 * len(points),
            "sampled_peak_bytes": peak_bytes,
            "points": points,
        },
    }
    return Repeat(
        route,
        repeat,
        "failed" if failed and route == "recorded" else "ok",
        tuple(bits),
        tuple(seconds),
        ready_rss_bytes=ready_bytes,
        peak_rss_bytes=peak_bytes,
        detail="exit status 1\nValueError: boom" if failed and route == "recorded" else None,
        facts=facts,
    )


def example_result(
    *,
    steps: int = 30,
    repeats: int = 1,
    broken_at: int | None = None,
    failed: bool = False,
    created: str = "2026-08-14T10:15:00Z",
    commit: str = "0123456789abcdef0123456789abcdef01234567",
    threads: int | None = None,
    ms_scale: dict[str, float] | None = None,
    routes: dict[str, tuple[float, int, int, int]] | None = None,
    losses: dict[str, list[float]] | None = None,
) -> dict[str, Any]:
    """A result of the `cifar10` workload as `topos grade` writes it; `routes` (by name:
    ms/step, ready MiB, training Δ MiB, planned MiB) replaces engine and recorded, and
    `losses` (by route) replaces a route's falling loss, as a peer's own would."""
    routes = ROUTES if routes is None else routes
    runs = []
    for repeat in range(repeats):
        for route, figures in routes.items():
            run = _run(route, repeat, steps, broken_at=broken_at, failed=failed, figures=figures)
            if route in (losses or {}):
                bits = tuple(float32_bits(loss) for loss in losses[route])
                run = msgspec.structs.replace(run, loss_bits=bits)
            factor = (ms_scale or {}).get(route, 1.0)
            if factor != 1.0:
                run = Repeat.from_json(
                    {**run.to_json(), "step_seconds": [s * factor for s in run.step_seconds]}
                )
            runs.append(run)
    verdict = decide_verdict(runs)
    host = {
        "cpu_model": "Test CPU",
        "logical_cores": 2,
        "available_cores": 2,
        "git": {"commit": commit, "dirty": False},
        "numerics": {"numpy": "2.0", "blas": {"name": "openblas", "version": "0.3"}},
    }
    result = compose_result(
        workload={
            "name": "cifar10",
            "data": {
                "requested": "synthetic",
                "name": "cifar10",
                "source": "synthetic",
                "format": "synthetic",
                "fingerprint": "8bc00cf64ce4b3b8",
            },
        },
        host=host,
        steps=steps,
        repeats=runs,
        verdict=verdict,
        settings={
            "routes": list(routes),
            "repeat": repeats,
            "threads": threads,
            "environment": {},
            "sample_interval_seconds": 0.005,
        },
    ).to_json()
    result["created"] = created
    result["status"] = "complete"
    result["exit_status"] = verdict.exit_status
    result["memory_prediction"] = [
        {
            "route": route,
            "predicted_live_bytes": (planned - 2) * MEBIBYTE,
            "predicted_training_bytes": planned * MEBIBYTE,
            "measured_training_delta_bytes": delta * MEBIBYTE,
            "ratio": delta / planned,
        }
        for route, (_, _, delta, planned) in routes.items()
    ]
    result["routes"] = {route: {"shards": 1} for route in routes}
    return result
