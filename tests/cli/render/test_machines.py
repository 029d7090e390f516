"""The CI matrix played here: three runners' machines (made by hand: x86 Linux, arm64
Linux, macOS without /proc), each grading two commits, their results handed over as a
folder, a .zip and a .tar.gz as artifacts are, gathered into one history and one site,
never mixing machines."""

from __future__ import annotations

import json
import re
import tarfile
import zipfile
from pathlib import Path

from tests.cli.grading import one_line_error, topos
from tests.cli.machines import MACHINES, machine_result
from topos_cli.judge.history import read_history
from topos_cli.render.history_table import render_history_markdown


def grades(runner: str) -> dict[str, dict]:
    """Two grades on `runner`'s machine: commit a, then commit b."""
    return {
        f"grade-cifar10-{runner}-{commit}.json": machine_result(
            runner,
            repeats=3,
            created=f"2026-08-1{day}T10:00:00Z",
            commit=commit * 40,
        )
        for day, commit in ((4, "a"), (5, "b"))
    }


def write_artifacts(folder: Path) -> list[Path]:
    """The three runners' artifacts: a folder, a zip and a tarball of results."""
    folder.mkdir()
    x86 = folder / "ubuntu-latest"
    x86.mkdir()
    for name, result in grades("ubuntu-latest").items():
        (x86 / name).write_text(json.dumps(result))
    arm = folder / "ubuntu-24.04-arm.zip"
    with zipfile.ZipFile(arm, "w") as archive:
        for name, result in grades("ubuntu-24.04-arm").items():
            archive.writestr(f"results/{name}", json.dumps(result))
        archive.writestr("results/../escape.json", "{}")  # never read: it climbs out
    mac = folder / "macos-14.tar.gz"
    staged = folder / "staged"
    staged.mkdir()
    with tarfile.open(mac, "w:gz") as archive:
        for name, result in grades("macos-14").items():
            (staged / name).write_text(json.dumps(result))
            archive.add(staged / name, arcname=name)
    return [x86, arm, mac]


def test_three_machines_make_three_trends_never_mixed(tmp_path):
    history = read_history(write_artifacts(tmp_path / "artifacts"))
    assert len(history.groups) == 3
    cpus = {MACHINES[runner]["cpu_model"]: runner for runner in MACHINES}
    for group in history.groups:
        runner = cpus[dict(group.key)["CPU"]]
        assert len(group.points) == 2
        # Every point of a trend comes from that runner's artifact, and no other.
        assert all(runner in point.source for point in group.points)
        assert [point.commit for point in group.points] == ["a" * 12, "b" * 12]
    assert len({group.machine_slug for group in history.groups}) == 3
    assert "CPU" in history.grouping_note and "flags" in history.grouping_note
    assert not any("escape" in reason for reason in history.skipped)

    markdown = render_history_markdown(history)
    verdicts = markdown.split("\n\n")[1].splitlines()
    assert len(verdicts) == 2 + 3  # header, rule, one row per machine
    for runner in MACHINES:
        assert sum(MACHINES[runner]["cpu_model"] in row for row in verdicts) == 1


def test_the_site_has_an_index_a_trend_per_machine_and_every_report(machines_site):
    history = read_history(machines_site.artifacts)
    # The pages as `topos history --site` wrote them (`site_pages`, a file each), by path.
    site = machines_site.site
    pages = {path.relative_to(site).as_posix(): path.read_text() for path in site.rglob("*.html")}
    trends = [path for path in pages if path.count("/") == 1]
    reports = [path for path in pages if "/reports/" in path]
    assert len(trends) == 3 and len(reports) == 6
    for path in trends:
        machine = path.split("/")[0]
        own = [group for group in history.groups if group.machine_slug == machine]
        others = [group for group in history.groups if group.machine_slug != machine]
        assert own[0].machine_name.split(" (")[0] in pages[path]
        for other in others:
            # Not one word of another machine's CPU on this machine's trend.
            assert dict(other.key)["CPU"] not in pages[path]
        assert "<svg" in pages[path]
    index = pages["index.html"]
    for path in trends:
        assert f'href="{path}"' in index


def test_topos_history_site_writes_a_site_whose_links_all_resolve(machines_site):
    completed, site = machines_site.completed, machines_site.site
    assert completed.returncode == 0, completed.stderr
    assert "**Verdict per machine**" in completed.stdout
    assert (site / ".nojekyll").exists()
    assert not (machines_site.artifacts[0] / "history.html").exists()
    pages = sorted(site.rglob("*.html"))
    assert len(pages) == 1 + 3 + 6
    for page in pages:
        for link in re.findall(r'href="([^"#]+)"', page.read_text()):
            assert not link.startswith(("/", "http")), f"{page}: {link} is not relative"
            assert (page.parent / link).resolve().exists(), f"{page}: {link} leads nowhere"


def test_the_site_is_never_written_over_an_input(tmp_path):
    artifacts = write_artifacts(tmp_path / "artifacts")
    result = next(artifacts[0].glob("*.json"))
    completed = topos("history", str(artifacts[0]), "--site", str(result), cwd=tmp_path)
    assert completed.returncode == 2
    assert "not a directory" in one_line_error(completed)
    completed = topos("history", str(artifacts[0]), "--site", "-", cwd=tmp_path)
    assert completed.returncode == 2
    assert "--site" in one_line_error(completed)


def _failed_before_ready(result: dict, data: str = "synthetic") -> dict:
    """`result` as a grade that failed before any worker was ready records it: the host
    from the parent (no BLAS, no NumPy), the data only as asked, no route's facts."""
    result["status"], result["exit_status"] = "error", 2
    result["host"]["numerics"] = None
    result["settings"]["data"] = data
    result["workload"]["data"] = {"requested": data, "name": None, "source": None}
    result["routes"] = {}
    return result


def test_a_grade_that_failed_before_ready_invents_no_machine(tmp_path):
    # Issue 39: "9 grades on 2 machines" for one machine, the failed grade's BLAS and
    # NumPy "unknown". It joins the grades it fits; asked for other data, it stays in a
    # group apart, on the same machine.
    folder = tmp_path / "results"
    folder.mkdir()
    for name, result in grades("ubuntu-latest").items():
        (folder / name).write_text(json.dumps(result))
    failed = _failed_before_ready(
        machine_result("ubuntu-latest", repeats=1, created="2026-08-16T10:00:00Z")
    )
    (folder / "grade-cifar10-failed.json").write_text(json.dumps(failed))
    history = read_history([folder])
    assert len(history.groups) == 1
    assert len(history.groups[0].points) == 3
    elsewhere = _failed_before_ready(
        machine_result("ubuntu-latest", repeats=1, created="2026-08-17T10:00:00Z"), "/data"
    )
    (folder / "grade-cifar10-elsewhere.json").write_text(json.dumps(elsewhere))
    history = read_history([folder])
    assert len(history.groups) == 2
    assert len({group.machine_slug for group in history.groups}) == 1
    assert "unknown" not in history.groups[1].machine_name
