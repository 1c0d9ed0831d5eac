"""The ZooLayer ResNet row of the speed bench: both contenders train, the JSON's shape."""

import importlib.util
import types

import numpy as np
import pytest

from experiments.bench import speed, zoo_layer_resnet

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tf_slim") is None, reason="needs tf-slim"
)


def test_the_row_times_graph_mode_and_zoo_layer_and_gives_their_ratio():
    rng = np.random.default_rng(0)
    train = types.SimpleNamespace(
        images=rng.random((8, 784), dtype=np.float32),
        labels=np.eye(10, dtype=np.float32)[rng.integers(0, 10, 8)],
    )
    args = types.SimpleNamespace(batch_size=4, steps=2, rounds=1, warmup=0, steps_per_run=1)
    row = zoo_layer_resnet.bench(train, args, speed.timed, speed.ratios)["zoo_layer_resnet"]
    speeds, cpu = row["steps_per_s"], row["cpu_ms_per_step"]
    assert set(speeds) == {"graph", "zoo_layer"} and all(s > 0 for s in speeds.values())
    assert row["ratio"] == pytest.approx(speeds["zoo_layer"] / speeds["graph"])
    assert row["cpu_ratio"] == pytest.approx(cpu["graph"] / cpu["zoo_layer"])
    assert row["batch_size"] == 4
