"""zoo.training.repeat_step: K steps in one session.run, exactly as K runs of one step."""

import signal

import numpy as np
import pytest
import tensorflow as tf

from layers import BatchNorm
from layers.errors import ScopeError, ZooError
from zoo import training
from zoo.data import DataSet
from zoo.data.batches import GraphBatches
from zoo.models import autoencoder
from zoo.training.checkpoints import Checkpointer

OPTIMIZERS = {
    "adagrad": lambda: tf.compat.v1.train.AdagradOptimizer(0.1),
    "adam": lambda: tf.compat.v1.train.AdamOptimizer(0.01),
    "momentum": lambda: tf.compat.v1.train.MomentumOptimizer(0.1, 0.9),
}


def dataset(n=40, nan_row=None):
    """A DataSet of ``n`` random images (one NaN pixel in ``nan_row`` if given)."""
    rng = np.random.default_rng(5)
    images = rng.random((n, 784), dtype=np.float32)
    if nan_row is not None:
        images[nan_row, 0] = np.nan
    return DataSet(images, np.eye(10, dtype=np.float32)[rng.integers(0, 10, n)], seed=4)


def loss_and_code_mean(images, _labels):
    model = autoencoder(images, n_hidden=16, scope="ae")
    return model.loss, {"code_mean": tf.reduce_mean(model.encoded)}


def train(
    steps_per_run,
    steps,
    optimizer="adagrad",
    data=None,
    checkpointer=None,
    feed=None,
    log_every=3,
    jit_compile=False,
    loss_fn=loss_and_code_mean,
):
    """Trains ``loss_fn`` (a small autoencoder), batches of 8; returns (logged,
    weights, step, #vars)."""
    data = data or dataset()
    with tf.Graph().as_default() as graph:
        tf.compat.v1.set_random_seed(0)
        batches = GraphBatches(data, 8, window=12)
        global_step = tf.compat.v1.train.get_or_create_global_step()
        step = training.repeat_step(
            loss_fn,
            OPTIMIZERS[optimizer](),
            batches,
            steps_per_run,
            global_step=global_step,
            jit_compile=jit_compile,
        )
        init = tf.compat.v1.global_variables_initializer()
    graph.finalize()
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)
        batches.initialize(session)
        logged, _ = training.train_loop(
            session,
            step,
            None,
            batches,
            steps,
            8,
            feed,
            log_every=log_every,
            checkpointer=checkpointer,
        )
        weights = session.run(graph.get_collection("trainable_variables"))
        n_variables = len(graph.get_collection("variables"))
        return logged, weights, session.run(global_step), n_variables


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_k_steps_per_run_equal_one_step_per_run_bit_for_bit(optimizer):
    one = train(1, 29, optimizer)  # 29 steps of 8 from 40 examples: 5+ epochs
    many = train(5, 29, optimizer)  # 5 runs of 5, then a run of 4

    logged, weights, global_step, n_variables = many
    assert logged == one[0]
    assert [entry[0] for entry in logged] == list(range(0, 29, 3))
    assert set(logged[0][2]) == {"code_mean"}
    for a, b in zip(weights, one[1], strict=True):
        np.testing.assert_array_equal(a, b)
    assert global_step == one[2] == 29
    assert n_variables == one[3]  # slots made once, outside the loop


def decay_by_the_scope_regularizer(images, _labels):
    """TF1 weight decay: the scope's regularizer, summed by get_regularization_loss."""
    with tf.compat.v1.variable_scope("net", regularizer=lambda w: 0.5 * tf.nn.l2_loss(w)):
        w = tf.compat.v1.get_variable("w", [784, 4])
    fit = tf.reduce_mean(tf.square(images @ w - 1.0))
    return fit + tf.compat.v1.losses.get_regularization_loss()


def decay_in_the_losses_collection(images, _labels):
    """The CIFAR-10 tutorial's idiom: every term in "losses", the loss their sum."""
    w = tf.compat.v1.get_variable("w", [784, 4])
    tf.compat.v1.add_to_collection("losses", 0.5 * tf.nn.l2_loss(w))
    tf.compat.v1.add_to_collection("losses", tf.reduce_mean(tf.square(images @ w - 1.0)))
    return tf.add_n(tf.compat.v1.get_collection("losses"))


@pytest.mark.parametrize(
    "loss_fn", [decay_by_the_scope_regularizer, decay_in_the_losses_collection]
)
def test_tf1_weight_decay_in_the_loop_decays_each_steps_weights(loss_fn):
    one = train(1, 12, loss_fn=loss_fn)
    many = train(4, 12, loss_fn=loss_fn)
    assert many[0] == one[0]  # each step's loss, decay included
    for a, b in zip(many[1], one[1], strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_loop_leaves_the_graphs_loss_collections_as_they_were(graph):
    batches = GraphBatches(dataset(), 8, window=12)
    training.repeat_step(
        decay_in_the_losses_collection, tf.compat.v1.train.AdagradOptimizer(0.1), batches, 4
    )
    terms = tf.compat.v1.get_collection("losses")
    assert len(terms) == 2 and {t.graph for t in terms} == {graph}  # the one-step build's


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_an_xla_compiled_loop_gives_the_numbers_of_one_compiled_step(optimizer):
    one = train(1, 29, optimizer, jit_compile=True)
    many = train(5, 29, optimizer, jit_compile=True)
    plain = train(5, 29, optimizer)

    assert many[0] == one[0]
    for compiled_k, compiled_one, uncompiled in zip(many[1], one[1], plain[1], strict=True):
        np.testing.assert_array_equal(compiled_k, compiled_one)
        np.testing.assert_allclose(compiled_k, uncompiled, rtol=1e-4, atol=1e-6)
    # XLA's kernels round differently: equal weights would mean nothing was compiled
    assert any(not np.array_equal(a, b) for a, b in zip(many[1], plain[1], strict=True))
    assert many[2] == one[2] == 29
    assert many[3] == plain[3]  # no variable made by the compiled loop


def test_a_run_is_cut_at_checkpoints_and_a_resume_extends_exactly(tmp_path):
    straight = train(1, 23)
    checkpointer = Checkpointer(str(tmp_path), every=5)
    train(4, 11, checkpointer=checkpointer)  # runs of 4, 1 (checkpoint at 5), 4, 1, 1
    assert checkpointer.loops == 1
    resumed = train(7, 23, checkpointer=Checkpointer(str(tmp_path), every=5, resume=True))

    assert resumed[0] == straight[0]
    for a, b in zip(resumed[1], straight[1], strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_signal_is_answered_within_one_run_of_k_steps(tmp_path):
    runs = []

    def feed():
        runs.append(len(runs))
        if len(runs) == 2:  # during the second run: steps 6 to 11
            signal.raise_signal(signal.SIGINT)
        return {}

    with pytest.raises(training.RunInterrupted, match="at step 12 of 30"):
        train(6, 30, checkpointer=Checkpointer(str(tmp_path), every=100), feed=feed)


def first_batch_holding(data, row, batch_size=8):
    """The step whose batch holds ``row``, in the DataSet's order."""
    probe = DataSet(data.images, data.labels, seed=data.seed)
    step = 0
    while row not in probe.next_indices(batch_size):
        step += 1
    return step


@pytest.mark.parametrize("steps_per_run", [1, 6])
def test_the_nan_guard_names_the_first_bad_step_inside_a_run(tmp_path, steps_per_run):
    data = dataset(nan_row=17)
    bad = first_batch_holding(data, 17)

    with pytest.raises(training.NonFiniteLossError, match=f"found nan at step {bad};"):
        train(steps_per_run, 30, data=data, checkpointer=Checkpointer(str(tmp_path)))


def test_bad_steps_per_run_and_unloopable_inputs_are_refused(graph):
    batches = GraphBatches(dataset(), 8, window=12)
    optimizer = tf.compat.v1.train.AdagradOptimizer(0.1)
    for k in (0, 13, 2.0, True):
        with pytest.raises(
            ZooError, match=r"expected steps_per_run to be an int in \[1, 12\]"
        ):
            training.repeat_step(loss_and_code_mean, optimizer, batches, k)
    with pytest.raises(ZooError, match="expected jit_compile True or False, found 'yes'"):
        training.repeat_step(loss_and_code_mean, optimizer, batches, 4, jit_compile="yes")
    with pytest.raises(ZooError, match="a feed_dict source cannot be looped"):
        training.repeat_step(loss_and_code_mean, optimizer, dataset(), 4)
    with pytest.raises(ZooError, match=r"expected loss_fn to return a scalar loss"):
        training.repeat_step(lambda x, y: [x], optimizer, batches, 4)


def test_a_loss_fn_that_makes_new_variables_in_the_loop_is_refused(graph):
    batches = GraphBatches(dataset(), 8, window=12)
    calls = []

    def fresh_scope_each_call(images, _labels):
        calls.append(1)
        return autoencoder(images, n_hidden=4, scope=f"ae{len(calls)}").loss

    with pytest.raises(ScopeError, match=r"repeat_step: expected loss_fn to build the"):
        training.repeat_step(
            fresh_scope_each_call, tf.compat.v1.train.AdagradOptimizer(0.1), batches, 4
        )


def test_a_repeated_step_takes_no_separate_loss(graph):
    batches = GraphBatches(dataset(), 8, window=12)
    step = training.repeat_step(
        loss_and_code_mean, tf.compat.v1.train.AdagradOptimizer(0.1), batches, 4
    )
    with tf.compat.v1.Session() as session:
        with pytest.raises(ZooError, match=r"train: expected loss=None and no metrics="):
            training.train_loop(session, step, step.loss, batches, 3, 8)


def batch_norm_loss(images, _labels):
    normalized = BatchNorm(images, True, decay=0.9).output
    return tf.reduce_mean(tf.square(normalized - 0.5))


def train_batch_norm(data, steps_per_run, steps, checkpointer=None):
    """Trains ``batch_norm_loss`` (batches of 8); returns the moving mean and variance."""
    with tf.Graph().as_default() as graph:
        batches = GraphBatches(data, 8, window=12)
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
        if steps_per_run == "plain":  # train_loop runs the graph's UPDATE_OPS with it
            loss = batch_norm_loss(batches.images, None)
            step = optimizer.minimize(loss)
        else:  # in the loop, each iteration's own update; never the one-step graph's
            step = training.repeat_step(batch_norm_loss, optimizer, batches, steps_per_run)
            loss = None
        init = tf.compat.v1.global_variables_initializer()
        moving = [v for v in tf.compat.v1.global_variables() if "moving" in v.name]
    graph.finalize()
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)
        batches.initialize(session)
        training.train_loop(
            session, step, loss, batches, steps, 8, log_every=4, checkpointer=checkpointer
        )
        return session.run(moving)


@pytest.mark.parametrize("steps_per_run", [4, 1, "plain", "resumed"])
def test_the_loops_move_batch_norm_statistics_once_per_step(steps_per_run, tmp_path):
    data = dataset()
    if steps_per_run == "resumed":  # the loop's checkpoint holds the moving statistics
        train_batch_norm(data, 4, 2, Checkpointer(str(tmp_path), every=2))
        resumed = Checkpointer(str(tmp_path), every=2, resume=True)
        got = train_batch_norm(data, 4, 4, resumed)
    else:
        got = train_batch_norm(data, steps_per_run, 4)
    mean, variance = np.zeros(784), np.ones(784)
    copy = DataSet(data.images, data.labels, seed=data.seed)
    for _ in range(4):
        images = copy.next_batch(8)[0]
        mean = 0.9 * mean + 0.1 * images.mean(0)
        variance = 0.9 * variance + 0.1 * images.var(0)
    np.testing.assert_allclose(got, [mean, variance], rtol=1e-5, atol=1e-6)


def test_with_updates_adds_nothing_without_batch_norm(graph):
    loss = autoencoder(tf.compat.v1.placeholder(tf.float32, [None, 784]), n_hidden=4).loss
    train_op = tf.compat.v1.train.AdagradOptimizer(0.1).minimize(loss)
    assert training.with_updates(train_op) is train_op
