"""zoo.parallel.sync: N workers on TensorFlow's collectives take the step one process
takes on the whole batch; a batch that does not split is refused before any process."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from layers import ZooError
from zoo.parallel import cluster_spec, sync

v1 = tf.compat.v1
ROOT = pathlib.Path(__file__).resolve().parents[2]
BATCH, STEPS = 64, 100
WORKER = """
import sys
import numpy as np
from tests.zoo.test_sync import build, data, optimizer
from zoo.parallel import sync
index, addresses, out = int(sys.argv[1]), sys.argv[2].split(","), sys.argv[3]
result = sync.train(index, addresses, build, optimizer, *data(), {batch}, {steps})
values = {{name.replace("/", "|"): value for name, value in result.values.items()}}
np.savez(out, losses=result.losses, **values)
"""


def build(x, y):
    """A TF1 MLP on get_variable: the mean squared error of its predictions."""
    h = x
    for layer, width in enumerate((16, 1)):
        with v1.variable_scope(f"dense_{layer}"):
            w = v1.get_variable(
                "w", [h.shape[-1], width], initializer=v1.glorot_uniform_initializer(seed=7)
            )
            b = v1.get_variable("b", [width], initializer=v1.zeros_initializer())
            h = h @ w + b
            h = tf.nn.relu(h) if width > 1 else h
    return tf.reduce_mean((h - y) ** 2)


def optimizer():
    return v1.train.AdagradOptimizer(0.1)


def data():
    """A learnable target: y = tanh(x @ a), 2048 examples of 8 features."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2048, 8)).astype(np.float32)
    return x, np.tanh(x @ rng.standard_normal((8, 1))).astype(np.float32)


def one_process():
    """The same model and data in one process on the whole batch: ``{name: value}``."""
    images, labels = data()
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [BATCH, 8])
        y = v1.placeholder(tf.float32, [BATCH, 1])
        loss = build(x, y)
        update = optimizer().minimize(loss)
        variables = v1.trainable_variables()
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            losses = []
            for step in range(STEPS):
                rows = (np.arange(BATCH) + step * BATCH) % len(images)
                feed = {x: images[rows], y: labels[rows]}
                losses.append(session.run([update, loss], feed)[1])
            names = [v.op.name for v in variables]
            return losses, dict(zip(names, session.run(variables), strict=True))


@pytest.mark.slow
def test_two_workers_on_half_batches_equal_one_process_on_the_batch(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER.format(batch=BATCH, steps=STEPS))
    addresses = ",".join(f"127.0.0.1:{port}" for port in cluster_spec.free_ports(2))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers = [
        subprocess.Popen(
            [sys.executable, str(script), str(i), addresses, str(tmp_path / f"w{i}.npz")],
            env=env,
        )
        for i in range(2)
    ]
    assert [w.wait(timeout=300) for w in workers] == [0, 0]
    results = [np.load(tmp_path / f"w{i}.npz") for i in range(2)]
    losses, values = one_process()
    for result in results:
        for name, value in values.items():
            np.testing.assert_allclose(result[name.replace("/", "|")], value, atol=1e-5)
        np.testing.assert_allclose(result["losses"], losses, rtol=1e-5)
    assert losses[-1] < 0.5 * losses[0]  # it learned: equal is not equal at the start


@pytest.mark.parametrize("workers", [3, 0, 2.0])
def test_a_batch_that_does_not_split_is_refused(workers):
    with pytest.raises(
        ZooError,
        match=rf"sync: expected a worker count that divides the batch size 64, found "
        rf"{workers!r} workers; pass a batch size that is a multiple",
    ):
        sync.check_split(64, workers)
