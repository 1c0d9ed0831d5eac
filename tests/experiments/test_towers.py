"""The harness pieces experiments.towers reads its results with."""

import numpy as np

from experiments.harness.train import first_step_reaching, mean_in_chunks
from tests.conftest import tf


def test_a_mean_in_uneven_chunks_is_the_mean_over_every_example(graph):
    values = np.arange(10, dtype=np.float64) ** 2
    x = tf.compat.v1.placeholder(tf.float64, [None])
    with tf.compat.v1.Session() as session:
        mean = mean_in_chunks(session, tf.reduce_mean(x), {x: values}, 4)  # 4 + 4 + 2
    assert mean == values.mean()
    assert mean != np.mean([values[:4].mean(), values[4:8].mean(), values[8:].mean()])


def test_the_first_step_reaching_a_target_reads_the_smoothed_values():
    logged = [(0, 0.1), (50, 0.9), (100, 0.7), (150, 0.9), (200, 0.9)]
    assert first_step_reaching(logged, 0.75, smoothing=1) == 50
    assert first_step_reaching(logged, 0.75, smoothing=2) == 100  # (0.9 + 0.7) / 2
    assert first_step_reaching(logged, 0.75, smoothing=3) == 150  # (0.9 + 0.7 + 0.9) / 3
    assert first_step_reaching(logged, 0.95, smoothing=1) is None
