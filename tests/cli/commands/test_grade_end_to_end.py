"""`topos grade` and `topos compare` end to end: real worker processes on a tiny workload."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from tests.cli.grading import TINY, environment, grade_tiny, one_line_error, topos
from topos_cli.result.result_file import SCHEMA

STEPS = 8


@pytest.fixture(scope="module")
def good_grade(tmp_path_factory):
    """Two repeats of both routes of the tiny workload, one thread per worker."""
    folder = tmp_path_factory.mktemp("good")
    completed, result = grade_tiny(
        "tiny",
        folder,
        "--repeat",
        "2",
        "--threads",
        "1",
        "--github-benchmark",
        str(folder / "benchmark.json"),
        steps=STEPS,
    )
    return folder, completed, result


def test_a_good_grade_exits_0_with_a_table_and_a_complete_result(good_grade):
    folder, completed, result = good_grade
    assert completed.returncode == 0, completed.stderr
    assert result["schema"] == SCHEMA and result["status"] == "complete"
    assert result["exit_status"] == 0 and result["steps"] == STEPS
    # The table: one row per route, parity, the summary, which data, predicted vs measured.
    table = completed.stdout
    assert table.splitlines()[0].split()[:2] == ["route", "status"]
    assert "engine" in table and "recorded" in table and "bit-identical" in table
    assert f"losses bit-identical over {STEPS} steps" in table
    assert "data: tiny, synthetic stand-in (fingerprint " in table
    assert "memory: recorded predicted training Δ" in table
    memory_lines = [line for line in table.splitlines() if line.startswith("memory: ")]
    assert len(memory_lines) == 2 and all(
        line.endswith((" unexplained)", " over)")) for line in memory_lines
    ), memory_lines
    # Plain progress goes to stderr, one block per run, and says where the result went.
    assert "[1/4] engine #1: ready after" in completed.stderr
    assert "[4/4] engine #2: ok, peak" in completed.stderr
    assert f"results: {folder / 'result.json'}" in completed.stderr


def test_the_runs_interleave_and_keep_every_raw_figure(good_grade):
    _, _, result = good_grade
    order = [(repeat["route"], repeat["repeat"]) for repeat in result["repeats"]]
    assert order == [("engine", 0), ("recorded", 0), ("recorded", 1), ("engine", 1)]
    assert result["settings"]["order"] == [list(pair) for pair in order]
    first_bits = result["repeats"][0]["loss_bits"]
    for repeat in result["repeats"]:
        assert repeat["status"] == "ok" and repeat["detail"] is None
        assert repeat["loss_bits"] == first_bits and len(first_bits) == STEPS
        assert len(repeat["step_seconds"]) == STEPS
        assert all(seconds > 0 for seconds in repeat["step_seconds"])
        assert repeat["first_step_seconds"] > 0  # the warm-up step, timed on its own
        assert repeat["peak_rss_bytes"] >= repeat["ready_rss_bytes"] > 0
        facts = repeat["facts"]
        assert facts["peak_source"] == "VmHWM" and facts["exit"] == {"status": 0, "signal": None}
        assert facts["ru_maxrss_bytes"] > 0 and facts["rss_timeline"]["samples"] > 0
        ready = facts["ready"]
        assert ready["route"] == repeat["route"] and ready["live_volume"]["peak_bytes"] > 0
        assert ready["plan"][0].startswith("plan: ")


def test_the_result_records_host_threads_environment_data_and_routes(good_grade):
    _, _, result = good_grade
    assert result["host"]["threads"] == 1 and result["settings"]["threads"] == 1
    environment = result["settings"]["environment"]
    assert environment["MALLOC_MMAP_THRESHOLD_"] == "65536"
    assert environment["OPENBLAS_NUM_THREADS"] == environment["OMP_NUM_THREADS"] == "1"
    # The workers saw the same environment before NumPy loaded.
    worker_environment = result["host"]["numerics"]["environment"]
    assert worker_environment["OPENBLAS_NUM_THREADS"] == "1"
    assert worker_environment["MALLOC_MMAP_THRESHOLD_"] == "65536"
    assert result["host"]["numerics"]["numpy"]
    data = result["workload"]["data"]
    assert result["workload"]["name"] == TINY + "tiny"
    assert data["requested"] == "synthetic" and data["source"] == "synthetic"
    assert len(data["fingerprint"]) == 64
    routes = result["routes"]
    assert routes["engine"]["posture"] == "retain" and routes["recorded"]["posture"] == "forward"
    assert routes["engine"]["shards"] == routes["recorded"]["shards"] == 1  # the tiny workload's
    assert routes["recorded"]["gradient_nodes"] > 0 and routes["engine"]["gradient_nodes"] == 0
    predictions = {entry["route"]: entry for entry in result["memory_prediction"]}
    assert (
        predictions["engine"]["predicted_live_bytes"]
        == (routes["engine"]["live_volume"]["peak_bytes"])
    )
    assert predictions["recorded"]["measured_training_delta_bytes"] is not None
    # The whole step's prediction, part by part, and what it leaves unexplained in bytes.
    for route, prediction in predictions.items():
        parts = prediction["parts"]
        assert parts == routes[route]["step_memory"]["parts"]
        assert sum(parts.values()) == prediction["predicted_training_bytes"] > 0
        assert prediction["unexplained_bytes"] == (
            prediction["measured_training_delta_bytes"] - prediction["predicted_training_bytes"]
        )


def test_the_verdict_is_in_the_result_and_the_benchmark_file_is_written(good_grade):
    folder, _, result = good_grade
    verdict = result["verdict"]
    assert verdict["parity"]["status"] == "bit-identical" and verdict["exit_status"] == 0
    assert {route["route"] for route in verdict["routes"]} == {"engine", "recorded"}
    assert all(route["completed"] == 2 for route in verdict["routes"])
    entries = json.loads((folder / "benchmark.json").read_text())
    names = {entry["name"] for entry in entries}
    assert f"{TINY}tiny recorded: time per step" in names
    assert f"{TINY}tiny engine: peak RSS" in names
    assert {entry["unit"] for entry in entries} == {"ms/step", "bytes"}


def test_a_broken_route_pair_fails_parity_with_exit_3(tmp_path):
    completed, result = grade_tiny("process_dependent", tmp_path)
    assert completed.returncode == 3, completed.stderr
    parity = result["verdict"]["parity"]
    assert parity["status"] == "broken" and parity["divergence"]["step"] == 0
    assert parity["divergence"]["ulps"] > 0
    assert result["exit_status"] == 3
    assert "parts at step 0" in completed.stdout and "losses part at step 0" in completed.stdout


def test_json_to_standard_output_keeps_the_table_off_it(tmp_path):
    completed = topos(
        "grade", "--workload", TINY + "tiny", "--steps", "4", "--json", "-", cwd=tmp_path
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)  # nothing else on stdout
    assert result["status"] == "complete" and len(result["repeats"]) == 2
    assert "bit-identical" in completed.stderr
    assert not (tmp_path / "results").exists()


def test_the_default_result_path_and_markdown(tmp_path):
    completed = topos(
        "grade", "--workload", TINY + "tiny", "--steps", "4", "--markdown", cwd=tmp_path
    )
    assert completed.returncode == 0, completed.stderr
    # Named from the workload's own name, "tiny", not the `--workload` spec.
    written = list((tmp_path / "results").glob("grade-tiny-*Z.json"))
    assert len(written) == 1
    assert json.loads(written[0].read_text())["status"] == "complete"
    assert completed.stdout.startswith("| route | status |")
    assert "**recorded:" in completed.stdout


def test_an_overridden_mmap_threshold_reaches_the_workers(tmp_path):
    completed, result = grade_tiny(
        "tiny", tmp_path, "--routes", "recorded", steps=3, MALLOC_MMAP_THRESHOLD_="131072"
    )
    assert completed.returncode == 0, completed.stderr
    assert result["settings"]["environment"]["MALLOC_MMAP_THRESHOLD_"] == "131072"
    assert result["host"]["numerics"]["environment"]["MALLOC_MMAP_THRESHOLD_"] == "131072"
    assert [repeat["route"] for repeat in result["repeats"]] == ["recorded"]


def _slowed(result, factor):
    """A copy of `result` whose recorded step times are `factor` times what they were."""
    doctored = copy.deepcopy(result)
    for repeat in doctored["repeats"]:
        repeat["step_seconds"] = [seconds * factor for seconds in repeat["step_seconds"]]
    return doctored


def _judgeable(result):
    """A copy of `result` as three quiet repeats a route would give: its first runs
    copied to three repeats of steady steps (each a hair apart), without CPU times or
    load warnings (as an older topos's result on a quiet machine), so time is judged
    whatever this machine's load."""
    doctored = copy.deepcopy(result)
    runs = [run for run in doctored["repeats"] if run["repeat"] == 0]
    doctored["repeats"] = []
    for repeat, scale in enumerate((1.0, 1.01, 0.99)):
        for run in runs:
            copied = {**copy.deepcopy(run), "repeat": repeat}
            # Steady steps at the run's median: this machine's load spreads a tiny
            # workload's steps far too widely for any interval to be narrow.
            typical = sorted(run["step_seconds"])[len(run["step_seconds"]) // 2]
            copied["step_seconds"] = [
                typical * scale * (1 + 0.001 * (step % 3 - 1))
                for step in range(len(run["step_seconds"]))
            ]
            copied["step_cpu_seconds"] = []
            doctored["repeats"].append(copied)
    doctored["verdict"]["warnings"] = []
    return doctored


def test_a_baseline_that_was_much_faster_is_a_regression_exit_4(good_grade, tmp_path):
    _, _, result = good_grade
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(_slowed(result, 0.2)))
    # Two repeats each: too few for a test, so inconclusive (5), never "regression".
    completed, new = grade_tiny(
        "tiny", tmp_path, "--repeat", "2", "--baseline", str(baseline), steps=STEPS
    )
    assert completed.returncode == 5, completed.stdout + completed.stderr
    comparison = new["baseline"]["comparison"]
    assert {
        change["status"] for change in comparison["changes"] if change["figure"] == "ms/step"
    } == {"inconclusive"}
    assert "inconclusive" in completed.stdout


def test_compare_exits_4_on_a_regression_and_0_without(good_grade, tmp_path):
    folder, _, result = good_grade
    old = tmp_path / "old.json"
    old.write_text(json.dumps(_judgeable(_slowed(result, 0.2))))
    current = str(tmp_path / "current.json")
    (tmp_path / "current.json").write_text(json.dumps(_judgeable(result)))
    regressed = topos("compare", str(old), current, cwd=tmp_path)
    assert regressed.returncode == 4, regressed.stdout + regressed.stderr
    assert "ms/step" in regressed.stdout and "regression" in regressed.stdout
    thin = topos("compare", str(folder / "result.json"), str(folder / "result.json"), cwd=tmp_path)
    assert thin.returncode == 5, thin.stdout  # two repeats: not tested, inconclusive
    same = topos("compare", current, current, cwd=tmp_path)
    assert same.returncode == 0, same.stderr
    assert "no regression beyond 10% on time, 5% on memory" in same.stdout
    # A tolerance wide enough forgives even a fivefold slowdown.
    forgiven = topos("compare", str(old), current, "--tolerance", "time=1000%", cwd=tmp_path)
    assert forgiven.returncode == 0, forgiven.stdout


def test_compare_refuses_other_workloads_and_schemas_with_exit_2(good_grade, tmp_path):
    folder, _, result = good_grade
    current = str(folder / "result.json")
    other = copy.deepcopy(result)
    other["workload"]["name"] = "mnist"
    (tmp_path / "mnist.json").write_text(json.dumps(other))
    refused = topos("compare", current, str(tmp_path / "mnist.json"), cwd=tmp_path)
    assert refused.returncode == 2
    assert "different workloads" in one_line_error(refused)
    other["schema"] = "topos.grade/999"
    (tmp_path / "future.json").write_text(json.dumps(other))
    refused = topos("compare", str(tmp_path / "future.json"), current, cwd=tmp_path)
    assert refused.returncode == 2
    assert "schema topos.grade/999" in one_line_error(refused)


def test_real_data_files_are_named_in_the_result(tmp_path):
    from tests.datasets.writers import mnist_splits, write_mnist

    folder = write_mnist(tmp_path / "mnist", mnist_splits((80, 10)))
    completed = topos(
        "grade",
        "--workload",
        "mnist",
        "--steps",
        "2",
        "--routes",
        "recorded",
        "--data",
        str(folder),
        "--json",
        str(tmp_path / "result.json"),
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr
    data = json.loads((tmp_path / "result.json").read_text())["workload"]["data"]
    assert data["requested"] == str(folder.resolve()) and data["source"] == str(folder.resolve())
    assert data["format"] == "idx" and data["train_images"] == 80
    assert f"idx files in {folder.resolve()}" in completed.stdout


def test_every_command_has_help_with_an_example(tmp_path):
    for command in (
        ["grade"],
        ["compare"],
        ["report"],
        ["history"],
        ["describe"],
        ["train"],
        ["data", "fetch"],
        ["data", "info"],
    ):
        completed = topos(*command, "--help", cwd=tmp_path)
        assert completed.returncode == 0, completed.stderr
        assert "Example: topos " + command[0] in " ".join(completed.stdout.split())


def test_help_loads_neither_numpy_nor_matplotlib_nor_the_library(tmp_path):
    # What keeps `topos --help` quick is what it does not load (a time limit here would
    # measure the machine's neighbours, not the command).
    from tests.support.parent_process import heavy_modules_loaded

    script = (
        "import sys\n"
        "from topos_cli.app import main\n"
        "sys.argv = ['topos', '--help']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as ended:\n"
        "    assert not ended.code, ended.code\n"
    )
    loaded, completed = heavy_modules_loaded(script, tmp_path, environment())
    assert completed.returncode == 0, completed.stderr
    assert loaded == "loaded []"
    assert "grade" in completed.stdout


def test_a_whole_grade_keeps_numpy_and_the_library_out_of_the_parent(tmp_path):
    from tests.support.parent_process import heavy_modules_loaded

    script = (
        "from topos_cli.commands.grade import GradeOptions, run_grade\n"
        f"options = GradeOptions(workload={TINY + 'tiny'!r}, steps=2, json_path='out.json')\n"
        "assert run_grade(options) == 0\n"
    )
    # The report is drawn too, in its child: still nothing heavy in the parent.
    loaded, completed = heavy_modules_loaded(script, tmp_path, environment(TOPOS_REPORT="on"))
    assert completed.returncode == 0, completed.stderr
    assert loaded == "loaded []"
    assert (tmp_path / "out.html").exists()


def test_describe_says_when_a_plan_runs_once_per_shard():
    from typer.testing import CliRunner

    from topos_cli.app import application

    def describe(workload, *arguments):
        result = CliRunner().invoke(
            application, ["describe", "--workload", TINY + workload, *arguments]
        )
        assert result.exit_code == 0, result.output
        return result.output.splitlines()

    sharded = describe("sharded", "--route", "engine")
    assert "sharded: 2 shards of 8 rows, each running this plan on a thread of its own" in sharded
    assert not any(line.startswith("sharded:") for line in describe("tiny"))
    summary = describe("sharded", "--summary")
    assert summary[0].startswith("recorded the chain rule:")
    # The summary says the shards too: its figures are each shard's plan's.
    assert [line.split(":")[0] for line in summary[1:]] == ["sharded", "plan", "live volume"]


def test_run_says_when_its_plan_runs_once_per_shard():
    from typer.testing import CliRunner

    from topos_cli.app import application

    def run(workload):
        result = CliRunner().invoke(
            application, ["train", "--workload", TINY + workload, "--steps", "2"]
        )
        assert result.exit_code == 0, result.output
        return result.output.splitlines()

    sharded = run("sharded")
    line = "sharded: 2 shards of 8 rows, each running this plan on a thread of its own"
    assert sharded.index(line) < min(
        i for i, text in enumerate(sharded) if text.startswith("plan:")
    )
    assert not any(text.startswith("sharded:") for text in run("tiny"))


def test_the_module_runs_as_a_program(tmp_path):
    """`python -m topos_cli.app` is the console script: every helper it calls is defined
    before `main()` runs."""
    completed = subprocess.run(
        [sys.executable, "-m", "topos_cli.app", "describe", "--workload", TINY + "sharded"],
        cwd=tmp_path,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert "sharded: 2 shards" in completed.stdout
    assert "plan: forward" in completed.stdout
