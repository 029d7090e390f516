"""A native verdict's memory is its routes' step tensors: the table's memory column and
ratio, the summary's clause, the training Δ said for what it is (the heap's growth),
the native frontier's table and flags; a result from a worker that measured none reads
as it did, and topos's own routes' verdict is unchanged."""

from __future__ import annotations

from msgspec.structs import replace as msgspec_replace

from tests.support.native_runs import native_run
from topos_cli.judge.verdict import decide_verdict
from topos_cli.render.native_frontier_point import NativeFrontierPoint, flag_memory
from topos_cli.render.native_frontier_table import native_frontier_headers, native_frontier_rows
from topos_cli.render.verdict_table import (
    VERDICT_HEADERS,
    render_verdict_plain,
    verdict_headers,
    verdict_rows,
)
from topos_cli.result.worker_facts import ReadyFacts
from topos_cli.shared.units import MEBIBYTE


def test_a_native_verdicts_memory_is_its_step_tensors():
    # The user's CNN as measured: RSS said checkpoint costs more (6.0 against 9.7 MiB of
    # heap growth); its tensors say it holds 0.75x eager's.
    runs = [native_run("eager", 6.0, 24 * MEBIBYTE), native_run("checkpoint", 9.7, 18 * MEBIBYTE)]
    verdict = decide_verdict(runs)
    headers = verdict_headers(verdict)
    assert "Δ MiB" not in headers and "step MiB" in headers
    assert len(headers) == len(VERDICT_HEADERS)
    rows = {row[0]: dict(zip(headers, row, strict=True)) for row in verdict_rows(verdict)}
    assert rows["eager"]["step MiB"] == "24.0" and rows["eager"]["memory"] == "reference"
    assert rows["checkpoint"]["step MiB"] == "18.0"
    assert rows["checkpoint"]["memory"] == "0.75x step tensors"
    assert "checkpoint: " in verdict.summary and "0.75x eager's step tensors" in verdict.summary
    assert "the memory" not in verdict.summary
    text = render_verdict_plain(verdict)
    # The heap's growth is still there, said for what it is.
    assert "heap growth beyond the warm-up" in text and "checkpoint 9.7" in text
    memory = verdict.route("checkpoint").memory.record().to_json()
    assert memory["step_tensor_bytes"] == 18 * MEBIBYTE and memory["step_tensor_ratio"] == 0.75


def test_an_older_native_result_and_topos_routes_read_as_before():
    # An older worker's ready facts, without the field: they load, and say none.
    facts = ReadyFacts.from_json(
        {"native": {"framework": "torch", "reference": "eager", "exact": True}}
    )
    assert facts.native.step_tensor_bytes is None and facts.native.gradient_scale is None
    for native in (True, False):
        names = ("eager", "checkpoint") if native else ("engine", "recorded")
        runs = [native_run(names[0], 6.0, None, native), native_run(names[1], 9.0, None, native)]
        verdict = decide_verdict(runs)
        assert verdict_headers(verdict) == VERDICT_HEADERS
        row = verdict_rows(verdict)[1]
        assert row[VERDICT_HEADERS.index("Δ MiB")] == "9.0"
        assert row[VERDICT_HEADERS.index("memory")].endswith("(Δ 1.50x)")
        assert "heap growth" not in render_verdict_plain(verdict)
        assert "step_tensor_bytes" not in verdict.route(names[1]).memory.record().to_json()


def test_the_native_frontier_shows_and_flags_by_step_tensors():
    def point(label, budget, delta, tensors):
        return NativeFrontierPoint(
            label,
            budget,
            "ok",
            milliseconds=10.0,
            training_delta_bytes=int(delta * MEBIBYTE),
            peak_rss_bytes=400 * MEBIBYTE,
            step_tensor_bytes=None if tensors is None else int(tensors * MEBIBYTE),
            compiled=budget is not None,
        )

    # The heap's growth says budget 0.2 is the leaner, the step tensors the other way.
    points = flag_memory(
        [
            point("eager", None, 6.0, 24.0),
            point("compile-budget-0.2", 0.2, 1.0, 21.0),
            point("compile-budget-0.8", 0.8, 8.0, 19.0),
        ],
        0.05,
    )
    headers = native_frontier_headers(points)
    assert "heap Δ MiB" in headers and "training Δ MiB" not in headers
    step = headers.index("step MiB")
    assert headers[step + 1].startswith("PyTorch's estimate")
    rows = native_frontier_rows(points)
    assert [row[step] for row in rows] == ["24.00", "21.00", "19.00"]
    flagged = {p.label: p.flags for p in points}
    assert flagged["compile-budget-0.8"] == ()
    (flag,) = flagged["compile-budget-0.2"]
    assert flag == "more memory than budget 0.8's point: step tensors 21.0 MiB against 19.0 MiB"
    # From older workers, without step tensors: judged by the training Δ, as before.
    older = [point(p.label, p.budget, p.training_delta_bytes / MEBIBYTE, None) for p in points]
    assert all(p.flags == () for p in flag_memory(older, 0.05))


def test_a_compiled_routes_gradients_are_said_on_the_models_scale():
    compiled = native_run("compile", 9.0, 20 * MEBIBYTE)
    native = compiled.ready.native
    errors = {"stem.bias": 3e-8, "head.weight": 2e-7}
    scaled = msgspec_replace(native, exact=False, gradient_errors=errors, gradient_scale=0.6)
    older = msgspec_replace(native, exact=False, gradient_errors=errors)
    for facts, words in (
        (scaled, "error on the model's gradient scale"),
        (older, "relative error"),
    ):
        ready = msgspec_replace(compiled.ready, native=facts)
        run = msgspec_replace(compiled, facts=msgspec_replace(compiled.facts, ready=ready))
        verdict = decide_verdict([native_run("eager", 6.0, 24 * MEBIBYTE), run])
        (agreement,) = verdict.agreements
        assert f"largest {words} 2e-07 (head.weight)" in agreement.describe()


def test_a_route_whose_step_tensors_went_unmeasured_shows_a_dash_not_its_heap_growth():
    runs = [native_run("eager", 6.0, 24 * MEBIBYTE), native_run("checkpoint", 9.7, None)]
    verdict = decide_verdict(runs)
    headers = verdict_headers(verdict)
    row = dict(zip(headers, verdict_rows(verdict)[1], strict=True))
    assert row["step MiB"] == "—" and row["memory"] == "—"
    assert "the memory" not in verdict.summary and "step tensors" not in verdict.summary
