"""Figures drawn side by side: each but the first in a fork, the same text as drawn one after
another, and a fork that fails to deliver costs nothing but the time to draw it here."""

from __future__ import annotations

import os
import threading

import psutil
import pytest

from tests.cli.result_examples import example_result
from topos_cli.render import side_by_side
from topos_cli.render.side_by_side import draw_side_by_side


def where_drawn(name):
    return lambda: f"{name} drawn by {os.getpid()}"


def living_children():
    """The pids of this process's children still running (earlier tests' included)."""
    return {child.pid for child in psutil.Process().children() if child.status() != "zombie"}


@pytest.fixture
def forking(monkeypatch):
    """Forks allowed whatever threads earlier tests left idle in this process (a thread
    pool of a route program, say): these drawings take no lock a thread could hold."""
    monkeypatch.setattr(side_by_side, "forking_is_safe", lambda: True)


def test_forking_is_safe_only_while_this_is_the_only_thread():
    assert side_by_side.forking_is_safe() == (threading.active_count() == 1)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not side_by_side.forking_is_safe()
    finally:
        stop.set()
        thread.join()


def test_each_drawing_but_the_first_is_drawn_in_a_process_of_its_own(forking):
    before = living_children()
    texts = draw_side_by_side({name: where_drawn(name) for name in ("a", "b", "c")})
    assert list(texts) == ["a", "b", "c"]
    pids = {name: int(text.rsplit(" ", 1)[1]) for name, text in texts.items()}
    assert pids["a"] == os.getpid()
    assert len({pids["a"], pids["b"], pids["c"]}) == 3
    with pytest.raises(ChildProcessError):
        os.waitpid(pids["b"], os.WNOHANG)  # reaped
    assert living_children() <= before


def test_where_forking_is_not_safe_everything_is_drawn_here(monkeypatch):
    monkeypatch.setattr(side_by_side, "forking_is_safe", lambda: False)
    texts = draw_side_by_side({name: where_drawn(name) for name in ("a", "b")})
    assert texts == {"a": f"a drawn by {os.getpid()}", "b": f"b drawn by {os.getpid()}"}


def test_with_another_thread_running_everything_is_drawn_here():
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        texts = draw_side_by_side({name: where_drawn(name) for name in ("a", "b")})
    finally:
        stop.set()
        thread.join()
    assert texts == {"a": f"a drawn by {os.getpid()}", "b": f"b drawn by {os.getpid()}"}


def test_a_drawing_that_fails_in_its_fork_is_drawn_here_and_its_error_raised_here(forking):
    before = living_children()
    parent = os.getpid()

    def only_here():
        if os.getpid() != parent:
            raise RuntimeError("not in a fork")
        return "drawn here"

    assert draw_side_by_side({"a": where_drawn("a"), "b": only_here})["b"] == "drawn here"

    def never():
        raise RuntimeError("cannot draw")

    with pytest.raises(RuntimeError, match="cannot draw"):
        draw_side_by_side({"a": where_drawn("a"), "b": never})
    assert living_children() <= before


def test_a_failure_here_ends_the_forks_still_drawing(forking):
    def forever():
        threading.Event().wait(60)
        return "late"

    def broken():
        raise ValueError("broken here")

    before = living_children()
    with pytest.raises(ValueError, match="broken here"):
        draw_side_by_side({"a": broken, "b": forever})
    assert living_children() <= before


def test_the_report_figures_are_the_same_text_drawn_side_by_side_or_one_by_one(monkeypatch):
    from topos_cli.render.grade_figures import report_svgs
    from topos_cli.render.report_contents import gather_report_contents
    from topos_cli.result.lenient_result import interpret_result

    contents = gather_report_contents(interpret_result(example_result(steps=20), "test"))
    monkeypatch.setattr(side_by_side, "forking_is_safe", lambda: True)
    together = report_svgs(contents)
    monkeypatch.setattr(side_by_side, "forking_is_safe", lambda: False)
    alone = report_svgs(contents)
    assert set(together) == {"memory", "steps", "loss"}
    assert together == alone
