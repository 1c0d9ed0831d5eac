"""The tf1_keras bench row: our side of the timing program runs its three parts (tiny:
one run of a few steps, no TF 2.15 side); the row's shape."""

import pytest

from experiments.bench import tf1_keras


@pytest.mark.slow
def test_the_row_times_fit_the_estimator_and_a_session_loop_under_install(tmp_path):
    parts = tf1_keras.measure(steps=5, repeats=1, python=str(tmp_path / "no_python"))
    assert set(parts) == {"fit", "estimator", "session"}
    for row in parts.values():
        assert set(row) == {"ours"}  # no reference: no tf215 side, no ratio
        assert (
            row["ours"]["steps_per_second"] > 0 and row["ours"]["steps_per_cpu_second"] > 0
        )
