"""Plans: what describe() prints, which nodes are evaluated, and when each buffer dies.

The forward plan's liveness is observed during a real run (the observer sees the
buffers held after each computed node) and compared with the plan's prediction.
"""

from __future__ import annotations

import re
import tracemalloc
from types import SimpleNamespace

import numpy as np
import pytest

from topos import Conv2d, GraphError, Linear, Tape, Tensor, cross_entropy, max_pool

NODE_LINE = re.compile(
    r"^\s*(?P<index>\d+)\s+(?P<label>\S.*?)\s+(?P<shape>\[[\d, ]*\])\s+"
    r"(?P<liveness>kept|freed after \d+|releasable after \d+|retained)$"
)
FORWARD_HEAD = re.compile(r"^plan: forward; (\d+) of (\d+) nodes evaluated, (\d+) readable$")
FORWARD_VOLUME = re.compile(r"^live volume: peak (\d+) elements at node (\d+), retain-all (\d+)$")
RETAIN_HEAD = re.compile(r"^plan: retain; (\d+) of (\d+) nodes evaluated, (\d+) readable$")
RETAIN_VOLUME = re.compile(r"^live volume: retain-all (\d+), release floor (\d+) at node (\d+)$")


def tiny():
    """x[4] (input), w[4] (parameter); a = x*w; b = exp(a); c = b + a; d = sum(c);
    and e = tanh(x), which no root needs."""
    tape = Tape()
    x = tape.input(Tensor([4], [0.1, 0.2, 0.3, 0.4]))
    w = tape.parameter(Tensor([4], [1.0, -1.0, 2.0, 0.5]))
    a = x * w
    b = a.exp()
    c = b + a
    d = c.sum()
    e = x.tanh()
    values = {"x": x, "w": w, "a": a, "b": b, "c": c, "d": d, "e": e}
    assert [value.index for value in values.values()] == list(range(7))
    return tape.into_network(), SimpleNamespace(**{k: v.symbol for k, v in values.items()})


def liveness_column(plan) -> list[str]:
    lines = plan.describe().splitlines()[:-3]
    return [NODE_LINE.match(line).group("liveness") for line in lines]


def test_tiny_forward_plan_by_hand():
    network, s = tiny()
    plan = network.entry([s.d]).lower()
    *_, head, volume, _arena = plan.describe().splitlines()
    assert head == "plan: forward; 6 of 7 nodes evaluated, 1 readable"
    # counted: x 4, a 4, b 4, c 4, d 1 (the parameter is the caller's). Live: 4 at x;
    # 8 at a, then x goes; 8 at b; 8 at c, which takes over b's slot (c = b + a is b's
    # last read), then a goes; 5 at d, then c goes.
    assert volume == "live volume: peak 8 elements at node 2, retain-all 17"
    assert liveness_column(plan) == [
        "freed after 2",
        "freed after 2",
        "freed after 4",
        "freed after 4",
        "freed after 5",
        "kept",
    ]


@pytest.mark.parametrize("posture", ["forward", "retain"])
def test_a_replica_computes_the_same_in_an_arena_of_its_own(posture: str):
    network, s = tiny()
    entry = network.entry([s.d])
    plan = entry.lower() if posture == "forward" else entry.backward().lower()
    first = plan.forward(network.parameters(), defaults=True).of(s.d).numpy().tobytes()
    twin = plan.replica()
    assert twin.describe() == plan.describe()
    assert twin.arena_blocks() == []  # allocated on its own first run, not shared
    assert twin.forward(network.parameters(), defaults=True).of(s.d).numpy().tobytes() == first
    assert len(plan.arena_blocks()) == len(twin.arena_blocks()) == 1
    assert not np.may_share_memory(plan.arena_blocks()[0], twin.arena_blocks()[0])
    # The original's runs are not made stale by the replica's.
    assert plan.generation == twin.generation == 1


def test_tiny_retain_plan_by_hand():
    network, s = tiny()
    plan = network.entry([s.d]).backward().lower()
    *_, head, volume, _arena = plan.describe().splitlines()
    assert head == "plan: retain; 6 of 7 nodes evaluated, 1 readable"
    assert volume == "live volume: retain-all 17, release floor 12 at node 4"
    assert liveness_column(plan) == [
        "releasable after 2",
        "releasable after 2",
        "releasable after 4",
        "releasable after 4",
        "releasable after 5",
        "retained",
    ]


def test_tiny_plan_with_an_inner_root():
    network, s = tiny()
    plan = network.entry([s.d, s.a, s.d]).lower()
    *_, head, volume, _arena = plan.describe().splitlines()
    assert head == "plan: forward; 6 of 7 nodes evaluated, 2 readable"
    # a stays: 4, 8 (x goes), 8, 8 (c takes over b's slot), 9 (c goes).
    assert volume == "live volume: peak 9 elements at node 5, retain-all 17"
    assert liveness_column(plan)[2] == "kept"
    run = plan.forward(network.parameters(), defaults=True)
    np.testing.assert_allclose(run.of(s.a).numpy(), [0.1, -0.2, 0.6, 0.2], rtol=1e-6)
    with pytest.raises(GraphError, match="freed after 4"):
        run.of(s.b)


def test_non_ancestors_are_not_evaluated():
    network, s = tiny()
    plan = network.entry([s.a]).lower()
    assert plan.describe().splitlines()[-3] == "plan: forward; 3 of 7 nodes evaluated, 1 readable"
    listed = [
        int(NODE_LINE.match(line).group("index")) for line in plan.describe().splitlines()[:-3]
    ]
    assert listed == [0, 1, 2]
    computed = []
    run = plan.forward(
        network.parameters(), defaults=True, observer=lambda node, live: computed.append(node)
    )
    assert computed == [2]
    with pytest.raises(GraphError, match="not evaluated"):
        run.of(s.e)


def model():
    """A small convnet with its recorded chain rule, s.a dead branch, and inputs first."""
    tape = Tape()
    images = tape.input(Tensor([2, 1, 6, 6], np.linspace(-1, 1, 72), dtype=np.float32))
    targets = tape.input(Tensor.selection([2, 0], 3))
    rng = np.random.default_rng(5)
    conv = Conv2d(
        tape,
        Tensor([2, 1, 3, 3], rng.standard_normal(18), np.float32),
        Tensor.filled([2], 0.1),
        1,
        1,
    )
    head = Linear(
        tape, Tensor([18, 3], rng.standard_normal(54), np.float32), Tensor.filled([3], 0.0)
    )
    features = max_pool(conv.express(images).relu(), 2, 2).reshape(2, 18)
    loss = cross_entropy(head.express(features), targets)
    (features * 2.0).tanh()  # s.a dead branch
    adjoints = tape.differentiate(loss, [*conv.parameters(), *head.parameters()])
    return tape.into_network(), adjoints, loss.symbol


def expected_releases(network, plan, roots) -> dict[int, int]:
    """A view's reference goes after its last consumer; any other buffer's after the last
    consumer of itself or of any view of it (a view keeps its base's bytes alive)."""
    last, base, end = {}, {}, {}
    views = plan.memory.views
    for index in plan.evaluated:
        for input_index in network.nodes[index].inputs:
            last[input_index] = index
    for index in plan.evaluated:
        base[index] = base[network.nodes[index].inputs[0]] if index in views else index
        end[base[index]] = max(end.get(base[index], index), last.get(index, index))
    return {
        index: last.get(index, index) if index in views else end[index]
        for index in plan.evaluated
        if index not in roots
    }


def counted_volume(network, indices, views=frozenset()) -> int:
    """Elements of the real buffers among `indices` (views hold none of their own)."""
    return sum(
        network.nodes[i].shape.volume
        for i in indices
        if network.nodes[i].operation not in ("parameter", "leaf") and i not in views
    )


def observe(plan, network):
    observations = []
    plan.forward(
        network.parameters(),
        defaults=True,
        observer=lambda node, live: observations.append((node, sorted(live))),
    )
    return observations


def test_forward_plan_drops_each_buffer_after_its_last_consumer():
    network, adjoints, _ = model()
    plan = network.entry(adjoints.roots()).lower()
    roots = {symbol.index for symbol in adjoints.roots()}
    releases = expected_releases(network, plan, roots)
    assert plan.releases == releases
    assert len(plan.evaluated) < len(network.nodes)  # the dead branch
    views = plan.memory.views
    assert views  # reshapes and permutes of the convolution, the bias broadcast

    observations = observe(plan, network)
    computed = [i for i in plan.evaluated if not network.nodes[i].is_source]
    assert [node for node, _ in observations] == computed
    sources = [i for i in plan.evaluated if network.nodes[i].is_source]
    freed_somewhere = set()
    for node, live in observations:
        predicted = sorted(
            i
            for i in plan.evaluated
            if (i in sources or i <= node)
            and not (i in releases and releases[i] <= node)
            and i not in views
        )
        assert live == predicted, f"after node {node}"
        freed_somewhere |= {i for i in releases if releases[i] == node and i not in views}
        # Right after its last consumer, s.a non-root buffer is gone; s.a root never goes.
        assert not freed_somewhere & set(live)
        assert roots & {i for i in plan.evaluated if i <= node} <= set(live)
    assert set(observations[-1][1]) == roots
    assert freed_somewhere == set(releases) - views


def test_observed_volume_is_the_plans_profile():
    network, adjoints, _ = model()
    plan = network.entry(adjoints.roots()).lower()
    views = plan.memory.views
    held = [i for i in plan.evaluated if network.nodes[i].is_source]
    peak, peak_node = counted_volume(network, held), plan.evaluated[0]
    for node, live in observe(plan, network):
        before_release = counted_volume(network, {*held, node}, views)
        if before_release > peak:
            peak, peak_node = before_release, node
        held = live
    assert (plan.live.peak, plan.live.peak_node) == (peak, peak_node)
    assert plan.live.retain_all == counted_volume(network, plan.evaluated, views)
    assert plan.live.peak < plan.live.retain_all


def test_retain_plan_keeps_everything():
    network, _, loss = model()
    plan = network.entry([loss]).backward().lower()
    assert plan.releases == {}
    sources = {i for i in plan.evaluated if network.nodes[i].is_source}
    for node, live in observe(plan, network):
        held = sources | {i for i in plan.evaluated if i <= node}
        assert set(live) == held - plan.memory.views


@pytest.mark.parametrize("posture", ["forward", "retain"])
def test_describe_lists_every_evaluated_node_then_the_summary_and_arena_lines(posture: str):
    network, adjoints, loss = model()
    entry = network.entry(adjoints.roots())
    plan = entry.lower() if posture == "forward" else network.entry([loss]).backward().lower()
    lines = plan.describe().splitlines()
    assert len(lines) == len(plan.evaluated) + 3
    roots = set(plan.roots)
    last = {}
    for index in plan.evaluated:
        for input_index in network.nodes[index].inputs:
            last[input_index] = index
    freed = expected_releases(network, plan, roots)
    for line, index in zip(lines, plan.evaluated):
        match = NODE_LINE.match(line)
        assert match, line
        node = network.nodes[index]
        assert int(match["index"]) == index
        assert match["label"].split("(")[0] == node.operation
        assert match["shape"] == str(node.shape) == str(list(node.shape)).replace("'", "")
        if posture == "forward":
            expected = "kept" if index in roots else f"freed after {freed[index]}"
        else:
            expected = "retained" if index in roots else f"releasable after {last[index]}"
        assert match["liveness"] == expected

    head, volume = lines[-3:-1]
    counted = counted_volume(network, plan.evaluated, plan.memory.views)
    if posture == "forward":
        evaluated, total, readable = map(int, FORWARD_HEAD.match(head).groups())
        peak, peak_node, retain_all = map(int, FORWARD_VOLUME.match(volume).groups())
        assert readable == len(adjoints.roots()) == len(roots)
    else:
        evaluated, total, readable = map(int, RETAIN_HEAD.match(head).groups())
        retain_all, peak, peak_node = map(int, RETAIN_VOLUME.match(volume).groups())
        assert readable == 1
    assert (evaluated, total) == (len(plan.evaluated), len(network.nodes))
    assert evaluated < total
    assert retain_all == counted
    assert (peak, peak_node) == (plan.live.peak, plan.live.peak_node)
    assert peak < retain_all


def traced_peaks(plan, parameters, feeds) -> tuple[int, int]:
    """The peak bytes NumPy allocates (it reports to tracemalloc) during a plan's first
    forward run (which allocates its arena) and during its second."""
    tracemalloc.start()
    try:
        plan.forward(parameters, feeds, defaults=True)
        first = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        baseline = tracemalloc.get_traced_memory()[0]
        plan.forward(parameters, feeds, defaults=True)
        second = tracemalloc.get_traced_memory()[1] - baseline
        return first, second
    finally:
        tracemalloc.stop()


def test_the_forward_plan_really_frees_memory():
    # Not only the run's buffer list: the bytes themselves. A recorded-route convnet
    # allocates at its peak about what the plan predicts, far below keeping everything.
    tape = Tape()
    rng = np.random.default_rng(3)
    first = Conv2d(
        tape,
        Tensor([8, 3, 3, 3], rng.standard_normal(216), np.float32),
        Tensor.filled([8], 0.0),
        1,
        1,
    )
    second = Conv2d(
        tape,
        Tensor([16, 8, 3, 3], rng.standard_normal(1152) * 0.1, np.float32),
        Tensor.filled([16], 0.0),
        1,
        1,
    )
    head = Linear(
        tape,
        Tensor([256, 10], rng.standard_normal(2560) * 0.05, np.float32),
        Tensor.filled([10], 0.0),
    )
    images = tape.input(Tensor.filled([16, 3, 16, 16], 0.0))
    targets = tape.input(Tensor.selection(list(range(10)) + [0] * 6, 10))
    stage = max_pool(first.express(images).relu(), 2, 2)
    stage = max_pool(second.express(stage).relu(), 2, 2)
    loss = cross_entropy(head.express(stage.reshape(16, 256)), targets)
    adjoints = tape.differentiate(
        loss, [*first.parameters(), *second.parameters(), *head.parameters()]
    )
    network = tape.into_network()
    plan = network.entry(adjoints.roots()).lower()
    feeds = {images.symbol: Tensor([16, 3, 16, 16], rng.standard_normal(12288), np.float32)}
    first, second = traced_peaks(plan, network.parameters(), feeds)
    # Holding everything means every node's buffer, and room for the largest kernel's
    # scratch (the images' gradient of a convolution is made in a workspace).
    scratch = max(slot.size for slot in plan.memory.workspaces.values())
    predicted = plan.predicted_training_bytes
    everything = plan.live_bytes(plan.retain_all) + scratch
    assert predicted < everything * 0.6
    # The first run allocates the arena (and its roots); later runs only their roots.
    assert first <= predicted * 1.1 + 65536, (first, predicted)
    # Beyond the roots, only kernels' small transients (NumPy's ufunc buffers, a bias
    # row tiled for long loops) remain per run.
    assert second <= plan.root_bytes + plan.arena_bytes / 4, (second, plan.root_bytes)
