"""The Estimator bench row: its four contenders train; the JSON's shape and ratios."""

import types

import numpy as np
import pytest

from experiments.bench import estimator


@pytest.mark.slow
def test_the_row_times_the_session_loops_estimator_and_tpu_estimator():
    rng = np.random.default_rng(0)
    train = types.SimpleNamespace(
        images=rng.random((200, 784), dtype=np.float32),
        labels=np.eye(10, dtype=np.float32)[rng.integers(0, 10, 200)],
    )
    args = types.SimpleNamespace(steps=4, rounds=1, warmup=0, steps_per_run=2)
    row = estimator.bench(train, args)["estimator"]
    speeds = row["steps_per_s"]
    loops = {"session_loop", "session_loop_loss"}
    assert set(speeds) == {*loops, "estimator", "tpu_estimator"}
    assert all(s > 0 for s in speeds.values()) and row["estimator_setup_s"] > 0
    loop = speeds["session_loop"]
    assert row["ratio_estimator"] == pytest.approx(speeds["estimator"] / loop)
    with_loss = speeds["session_loop_loss"]
    assert row["ratio_estimator_loss"] == pytest.approx(speeds["estimator"] / with_loss)
    cpu = row["cpu_ms_per_step"]
    assert set(cpu) == set(speeds) and all(ms > 0 for ms in cpu.values())
    assert row["cpu_ratio_estimator"] == cpu["session_loop"] / cpu["estimator"]
    assert row["ratio_tpu_to_estimator"] == pytest.approx(
        speeds["tpu_estimator"] / speeds["estimator"]
    )
    assert (row["batch_size"], row["steps_per_run"]) == (100, 2)


def test_the_clock_starts_after_the_untimed_runs():
    clock = estimator._Clock(untimed=3)
    clock.begin()
    for _ in range(3):
        clock.after_run(None, None)
    assert (clock.runs, clock.first) == (0, clock.last)  # the warm-up's end
    started = clock.first
    for _ in range(5):
        clock.after_run(None, None)
    assert clock.runs == 5 and clock.first == started and clock.last > started
