"""zoo.parallel.sync: N workers on TensorFlow's collectives take the step one process
takes on the whole batch, in graph mode and through zoo.share in tf.function (TF2's
MultiWorkerMirroredStrategy); a batch that does not split is refused before any
process."""

import os
import pathlib
import re
import signal
import socket
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from layers import BatchNorm, ZooError
from tests import forkserver
from zoo.parallel import cluster_spec, sync
from zoo.parallel.loopback import PrivateNetwork

v1 = tf.compat.v1
ROOT = pathlib.Path(__file__).resolve().parents[2]
BATCH, STEPS, EVERY = 64, 400, 50
EAGER_STEPS = 100
WORKER = """
import sys
import numpy as np
from tests.zoo.test_sync import build, data, optimizer
from zoo.parallel import sync
index, addresses, out, ckpt, per_run, timeout = (
    sys.argv[1], sys.argv[2].split(","), *sys.argv[3:]
)
result = sync.train(int(index), addresses, build, optimizer, *data(), {batch}, {steps},
                    ckpt, {every}, int(per_run), float(timeout) or None)
values = {{name.replace("/", "|"): value for name, value in result.values.items()}}
np.savez(out, losses=result.losses, **values)
"""


def build(x, y, batch_norm=True):
    """A TF1 MLP on get_variable with batch norm (in training, its moving statistics
    in UPDATE_OPS): the mean squared error of its predictions."""
    h = x
    for layer, width in enumerate((16, 1)):
        with v1.variable_scope(f"dense_{layer}"):
            w = v1.get_variable(
                "w", [h.shape[-1], width], initializer=v1.glorot_uniform_initializer(seed=7)
            )
            b = v1.get_variable("b", [width], initializer=v1.zeros_initializer())
            h = h @ w + b
            if width > 1:
                h = tf.nn.relu(BatchNorm(h, training=True).output if batch_norm else h)
    return tf.reduce_mean((h - y) ** 2)


def optimizer():
    return v1.train.AdagradOptimizer(0.1)


def data():
    """A learnable target: y = tanh(x @ a), 2048 examples of 8 features."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2048, 8)).astype(np.float32)
    return x, np.tanh(x @ rng.standard_normal((8, 1))).astype(np.float32)


EAGER_WORKER = """
import json, os, sys
import numpy as np
import tensorflow as tf
from tests.zoo.test_sync import eager_training
index, addresses, out = int(sys.argv[1]), sys.argv[2].split(","), sys.argv[3]
os.environ["TF_CONFIG"] = json.dumps(
    {"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}}
)
losses, values = eager_training(tf.distribute.MultiWorkerMirroredStrategy(), index)
np.savez(out, losses=losses, **{name.replace("/", "|"): v for name, v in values.items()})
"""


def eager_training(strategy, index):
    """Trains ``zoo.share(build)`` (no batch norm) in a ``tf.function`` under
    ``strategy`` with a TF1 optimizer, worker ``index`` on its share of each batch.

    Returns:
        The losses (the whole batch's) and ``{variable name: value}``.
    """
    import zoo

    tf.random.set_seed(0)  # the same initial weights whatever ran in this process before
    images, labels = data()
    workers = strategy.num_replicas_in_sync
    share = BATCH // workers
    with strategy.scope():
        model = zoo.share(build, "net", batch_norm=False)
        model(tf.zeros([share, 8]), tf.zeros([share, 1]))  # the variables, mirrored
        adagrad = optimizer()

    @tf.function
    def step(x, y):
        def replica(x, y):
            with tf.GradientTape() as tape:
                loss = model(x, y) / workers  # the gradients are summed over workers
            gradients = tape.gradient(loss, model.trainable_variables)
            adagrad.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
            return loss

        return strategy.reduce("SUM", strategy.run(replica, (x, y)), axis=None)

    losses = []
    for s in range(EAGER_STEPS):
        rows = (np.arange(share) + s * BATCH + index * share) % len(images)
        losses.append(float(step(images[rows], labels[rows])))
    return losses, {v.name: v.numpy() for v in model.variables}


def start_workers(tmp_path, checkpoints, steps_per_run, operation_timeout=0):
    """Two worker processes on loopback, writing ``w<index>.npz`` when done; each run
    after the first within ``operation_timeout`` seconds (0: no bound)."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER.format(batch=BATCH, steps=STEPS, every=EVERY))
    addresses = ",".join(f"127.0.0.1:{port}" for port in cluster_spec.free_ports(2))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return [
        forkserver.popen(
            [sys.executable, script, str(i), addresses, tmp_path / f"w{i}.npz",
             checkpoints, str(steps_per_run), str(operation_timeout)],
            env=env,
        )
        for i in range(2)
    ]


def checkpointed_step(checkpoints):
    """The step the chief's latest checkpoint names, or 0."""
    state = checkpoints / "checkpoint"
    text = state.read_text() if state.exists() else ""
    return int(text.split("\n")[0].rsplit("-", 1)[1].rstrip('"')) if text else 0


# Each fault after a new checkpoint: (workers SIGKILLed, steps per session.run after it).
KILLS = (((0, 1), 7), ((1,), 3), ((1,), 1))
STRAGGLER_S = 2  # worker 1 stopped this long, well within the operation timeout


@pytest.mark.slow
def test_two_workers_on_half_batches_equal_one_process_even_killed_and_resumed(tmp_path):
    """Worker 1 stopped (SIGSTOP) 2 s, a straggler: both wait, then go on. Then both
    workers SIGKILLed mid-run after a checkpoint, then worker 1 alone, twice (its peer
    fails naming it): each time both start again from the last checkpoint, with another
    K steps per session.run. The end: every weight and every loss of the last resumed
    steps as one process with the workers' arithmetic (two shards; 5 steps per run: the
    runs' lengths change nothing)."""
    checkpoints = tmp_path / "checkpoints"
    bound = {"operation_timeout": 30}  # a survivor never waits for a dead peer unbounded
    workers, resumed_from = start_workers(tmp_path, checkpoints, 1, **bound), 0

    def wait_for_a_checkpoint():
        deadline = time.monotonic() + 300
        while not resumed_from + EVERY <= checkpointed_step(checkpoints) < STEPS:
            assert time.monotonic() < deadline and all(w.poll() is None for w in workers)
            time.sleep(0.005)

    wait_for_a_checkpoint()
    workers[1].send_signal(signal.SIGSTOP)
    time.sleep(0.5)  # a checkpoint of a step taken before the stop is written by now
    stopped_at = checkpointed_step(checkpoints)
    time.sleep(STRAGGLER_S)
    assert all(w.poll() is None for w in workers)  # the other waits, nobody fails
    assert checkpointed_step(checkpoints) == stopped_at  # no step without worker 1
    workers[1].send_signal(signal.SIGCONT)
    for killed, steps_per_run in KILLS:
        wait_for_a_checkpoint()
        for index in killed:
            workers[index].send_signal(signal.SIGKILL)
        codes = [w.wait(timeout=120) for w in workers]
        assert [codes[i] for i in killed] == [-signal.SIGKILL] * len(killed)
        assert all(code not in (0, None) for code in codes)  # the peer ends too, failed
        resumed_from = checkpointed_step(checkpoints)
        workers = start_workers(tmp_path, checkpoints, steps_per_run, **bound)
    assert [w.wait(timeout=300) for w in workers] == [0, 0]
    results = [np.load(tmp_path / f"w{i}.npz") for i in range(2)]
    reference = sync.one_process(
        build, optimizer, *data(), BATCH, STEPS, steps_per_run=5, shards=2
    )
    losses, values = reference.losses, reference.values
    for result in results:
        for name, value in values.items():
            np.testing.assert_allclose(result[name.replace("/", "|")], value, atol=1e-5)
        np.testing.assert_allclose(result["losses"], losses[resumed_from:], rtol=1e-5)
    assert losses[-1] < 0.5 * losses[0]  # it learned: equal is not equal at the start


@pytest.mark.slow
def test_share_in_tf_function_on_two_workers_equals_one_process(tmp_path):
    """TF2's MultiWorkerMirroredStrategy, eagerly: a get_variable function through
    zoo.share, traced once per worker, mirrored, 100 steps equal to one process."""
    script = tmp_path / "eager_worker.py"
    script.write_text(EAGER_WORKER)
    addresses = ",".join(f"127.0.0.1:{port}" for port in cluster_spec.free_ports(2))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    outs = [tmp_path / f"e{i}.npz" for i in range(2)]
    logs = [tmp_path / f"e{i}.log" for i in range(2)]
    network = PrivateNetwork()  # their ports out of other tests' reach
    try:
        workers = []
        for i, (out, log) in enumerate(zip(outs, logs, strict=True)):
            command = network.command([sys.executable, script, str(i), addresses, out])
            with open(log, "w") as stderr:
                workers.append(forkserver.popen(command, env=env, stderr=stderr))
        losses, values = eager_training(tf.distribute.get_strategy(), 0)
        codes = [w.wait(timeout=300) for w in workers]
    finally:
        network.close()
    assert codes == [0, 0], [log.read_text()[-2000:] for log in logs]
    assert sorted(values) == ["net/dense_0/b:0", "net/dense_0/w:0", "net/dense_1/b:0",
                              "net/dense_1/w:0"]  # fmt: skip
    for out in outs:
        result = np.load(out)
        for name, value in values.items():
            np.testing.assert_allclose(result[name.replace("/", "|")], value, atol=1e-5)
        np.testing.assert_allclose(result["losses"], losses, rtol=1e-5)
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.parametrize(
    ("error", "failed"),
    [
        (tf.errors.DeadlineExceededError(None, None, "deadline"),
         "no step within the timeout of 3 s"),
        (tf.errors.UnavailableError(None, None, "reset"),
         r"the all-reduce failed \(UnavailableError\)"),
    ],
)  # fmt: skip
def test_a_lost_worker_is_named_silent_or_absent(error, failed, monkeypatch):
    """Worker 0's run fails as a collective on a lost worker does; worker 1 listens
    but never answers (stopped), nothing listens at worker 2's address (killed)."""

    class Session:
        def run(self, fetches, feed_dict, options):
            assert options.timeout_in_ms == 3000
            raise error

    monkeypatch.setattr(sync, "PROBE_S", 0.2)
    with socket.create_server(("127.0.0.1", 0)) as stopped:
        silent = f"127.0.0.1:{stopped.getsockname()[1]}"
        absent = f"127.0.0.1:{cluster_spec.free_ports(1)[0]}"
        run = sync.bounded_run(Session(), 0, ["127.0.0.1:1", silent, absent], 3, None)
        with pytest.raises(sync.LostWorkerError) as lost:
            run("loss")
    assert isinstance(lost.value, ZooError)
    assert re.fullmatch(
        rf"worker:0: expected every worker in each synchronous step, found {failed}, "
        rf"with worker 1 \({silent}, logs/worker-1.log\) silent, worker 2 "
        rf"\({absent}, logs/worker-2.log\) absent; restart every worker from the last "
        r"checkpoint \(experiments.ps: --resume RUN_DIR; its launcher restarts them "
        r"itself\)",
        str(lost.value),
    ), str(lost.value)


@pytest.mark.parametrize("workers", [3, 0, 2.0])
def test_a_batch_that_does_not_split_is_refused(workers):
    with pytest.raises(
        ZooError,
        match=rf"sync: expected a worker count that divides the batch size 64, found "
        rf"{workers!r} workers; pass a batch size that is a multiple",
    ):
        sync.check_split(64, workers)
