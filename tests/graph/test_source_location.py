"""Every recorded node remembers the user's line that recorded it, outside the library."""

from __future__ import annotations

from pathlib import Path

from topos import Linear, Shape, Tape, Tensor, cross_entropy, init


def test_a_node_points_at_the_users_line_not_the_layers():
    tape = Tape()
    layer = Linear(tape, init.xavier(1)(Shape([4, 3])), Tensor.filled([3], 0.0))
    inputs = tape.input(Tensor.filled([2, 4], 0.0))
    logits = layer.express(inputs)  # the line the matmul and add must name
    targets = tape.input(Tensor.selection([0, 1], 3))
    loss = cross_entropy(logits, targets)
    product = tape.nodes[logits.index - 2]
    assert product.operation == "matmul"
    assert Path(product.source.filename).resolve() == Path(__file__).resolve()
    assert (
        product.source.text()
        == "logits = layer.express(inputs)  # the line the matmul and add must name"
    )
    assert tape.nodes[loss.index].source.text() == "loss = cross_entropy(logits, targets)"
    assert tape.nodes[0].source.text().startswith("layer = Linear(")


def test_the_chain_rule_is_located_where_differentiate_was_called():
    tape = Tape()
    weights = tape.parameter(Tensor.filled([3], 2.0))
    loss = (weights * weights).sum()
    adjoints = tape.differentiate(loss, [weights])
    _, gradient = next(iter(adjoints))
    assert "differentiate" in tape.nodes[gradient.index].source.text()


def test_a_built_in_model_is_located_in_its_own_lines_not_the_graders():
    from topos.training import RouteProgram
    from topos.workloads import resolve

    program = RouteProgram(resolve("mnist"), "recorded")
    nodes = program.network.nodes
    first_parameter = next(node for node in nodes if node.operation == "parameter")
    assert first_parameter.source.filename.endswith(str(Path("topos", "models", "convnet.py")))
    assert "Conv2d(" in first_parameter.source.text() or "init." in first_parameter.source.text()


def test_a_tools_frames_are_machinery_once_it_names_its_folder(tmp_path, monkeypatch):
    # A tool that records on the user's behalf (the grader does) names its folder, and
    # a node then points at the user's line that called the tool, not into the tool.
    import importlib
    import sys

    from topos.graph import source_location

    folder = tmp_path / "some_tool"
    folder.mkdir()
    (folder / "recorder.py").write_text(
        "def record(tape):\n    return tape.parameter(tape_payload()).exp()\n\n"
        "def tape_payload():\n    from topos import Tensor\n    return Tensor.filled([2], 1.0)\n"
    )
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setattr(source_location, "_TOOLS", [])
    recorder = importlib.import_module("recorder")
    try:
        tape = Tape()
        inside = recorder.record(tape)
        assert "exp()" in tape.nodes[inside.index].source.text()
        source_location.count_as_machinery(str(folder))
        outside = recorder.record(tape)  # the line the tool's node must name
        assert "the line the tool's node must name" in tape.nodes[outside.index].source.text()
    finally:
        sys.modules.pop("recorder", None)
