"""The ZooLayer ResNet bench row: its four contenders train; the JSON's shape."""

import importlib.util
import types

import numpy as np
import pytest

from experiments.bench import speed, zoo_layer_resnet

# ratio suffix -> (ZooLayer, graph mode): one step per call; K (fit's steps_per_execution,
# repeat_step's steps_per_run)
PAIRS = {"": ("zoo_layer", "graph"), "_loop": ("zoo_layer_spe", "graph_loop")}
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tf_slim") is None, reason="needs tf-slim"
)


def test_the_row_times_graph_mode_and_zoo_layer_and_gives_their_ratios():
    rng = np.random.default_rng(0)
    train = types.SimpleNamespace(
        images=rng.random((8, 784), dtype=np.float32),
        labels=np.eye(10, dtype=np.float32)[rng.integers(0, 10, 8)],
    )
    args = types.SimpleNamespace(batch_size=4, steps=2, rounds=1, warmup=0, steps_per_run=2)
    row = zoo_layer_resnet.bench(train, args, speed.timed, speed.ratios)["zoo_layer_resnet"]
    speeds, cpu = row["steps_per_s"], row["cpu_ms_per_step"]
    assert set(speeds) == {"graph", "zoo_layer", "graph_loop", "zoo_layer_spe"}
    assert all(s > 0 for s in speeds.values())
    for suffix, (ours, graph) in PAIRS.items():
        assert row["ratio" + suffix] == pytest.approx(speeds[ours] / speeds[graph])
        assert row["cpu_ratio" + suffix] == pytest.approx(cpu[graph] / cpu[ours])
    assert (row["batch_size"], row["steps_per_run"]) == (4, 2)
