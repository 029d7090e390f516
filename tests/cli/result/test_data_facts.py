"""The data facts are one record: what a worker says it loaded (`ready.dataset`) and what
the result says the grade used (`workload.data`) read into the same `DataFacts`, their
JSON field names as they were, and a result written before (a worker's facts without
`requested`) still reads (issue 44)."""

from __future__ import annotations

import json

from topos_cli.judge.verdict import decide_verdict
from topos_cli.result.data_facts import DataFacts
from topos_cli.result.grade_result import WorkloadFacts
from topos_cli.result.repeat import Repeat
from topos_cli.result.result_file import compose_result, read_result
from topos_cli.result.worker_facts import ReadyFacts

#: A worker's data facts as workers have always written them: no `requested`.
LOADED = {
    "name": "mnist",
    "source": "synthetic",
    "format": None,
    "fingerprint": "8bc00cf64ce4",
    "train_images": 60000,
}


def test_what_a_worker_loaded_and_what_the_grade_used_are_one_record():
    ready = ReadyFacts.from_json({"dataset": LOADED})
    used = WorkloadFacts.from_json({"name": "mnist", "data": {"requested": "synthetic", **LOADED}})
    assert type(ready.dataset) is type(used.data) is DataFacts
    # The same facts, but for what was asked for, which only the grade knows.
    assert ready.dataset.requested is None and used.data.requested == "synthetic"
    assert {**ready.dataset.to_json(), "requested": "synthetic"} == used.data.to_json()
    # The grade's record keeps its JSON field names, in their order.
    assert list(used.data.to_json()) == ["requested", *LOADED]


def test_a_result_written_before_reads_its_data_facts_back():
    bits = (0x40133333, 0x400CCCCD)
    runs = [
        Repeat(
            "engine",
            0,
            "ok",
            bits,
            (0.01, 0.01),
            peak_rss_bytes=2 << 20,
            ready_rss_bytes=1 << 20,
            facts={"ready": {"dataset": LOADED}},
        )
    ]
    data = compose_result(
        workload={"name": "mnist", "data": {"requested": "synthetic", **LOADED}},
        host={"cpu_model": "test CPU"},
        steps=2,
        repeats=runs,
        verdict=decide_verdict(runs),
    ).to_json()
    # As an older topos wrote it: the worker's facts had no `requested` at all.
    del data["repeats"][0]["facts"]["ready"]["dataset"]["requested"]
    result = read_result(json.loads(json.dumps(data)), "old.json")
    assert result.workload.data.fingerprint == "8bc00cf64ce4"
    assert result.workload.data.requested == "synthetic"
    (run,) = result.repeats
    assert run.ready.dataset == DataFacts(**LOADED)
