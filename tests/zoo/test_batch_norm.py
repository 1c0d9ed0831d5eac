"""BatchNorm in a graph, eagerly (zoo.share), in tf.function (driven by run_steps) and in
Keras (ZooLayer): the same outputs and the same moving statistics, against numpy."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from layers import BatchNorm
from zoo import training
from zoo.sharing.keras import ZooLayer
from zoo.sharing.share import share

v1 = tf.compat.v1
DECAY, EPSILON = 0.9, 1e-3
TRAIN = [np.random.default_rng(seed).normal(1.0, 2.0, (8, 3)) for seed in (0, 1)]
TRAIN = [x.astype(np.float32) for x in TRAIN]
TEST = np.random.default_rng(2).normal(size=(8, 3)).astype(np.float32)


def net(x, training):
    """A user's function with a training argument."""
    return BatchNorm(x, training, decay=DECAY, epsilon=EPSILON).output


def reference():
    """Numpy: both training outputs, the moving statistics after each, the test output."""
    outputs, statistics = [], []
    moving = np.zeros(3), np.ones(3)
    for x in TRAIN:
        mean, variance = x.mean(0), x.var(0)
        outputs.append((x - mean) / np.sqrt(variance + EPSILON))
        moving = tuple(
            DECAY * m + (1 - DECAY) * b
            for m, b in zip(moving, (mean, variance), strict=True)
        )
        statistics.append(moving)
    return outputs, statistics, (TEST - moving[0]) / np.sqrt(moving[1] + EPSILON)


def check(outputs, statistics, test_output):
    want_outputs, want_statistics, want_test = reference()
    np.testing.assert_allclose(outputs, want_outputs, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(statistics, want_statistics, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(test_output, want_test, rtol=1e-4, atol=1e-4)


def moving_statistics(variables, read=np.array):
    """(moving_mean, moving_variance) of a list of variables or a dict name -> variable."""
    if not isinstance(variables, dict):
        variables = {v.name.split(":")[0]: v for v in variables}
    by_name = {name.rpartition("/")[2]: v for name, v in variables.items()}
    return tuple(read(by_name[name]) for name in ("moving_mean", "moving_variance"))


def test_graph_mode_with_one_graph_for_both_modes(graph):
    x = v1.placeholder(tf.float32, [None, 3])
    is_training = v1.placeholder_with_default(True, [])
    model = share(net, "model")
    output = model(x, training=is_training)
    step = training.with_updates(output.op)
    outputs, statistics = [], []
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        for value in TRAIN:
            outputs.append(session.run(output, {x: value}))
            session.run(step, {x: value})  # the output again, and the update
            statistics.append(moving_statistics(model.variables, session.run))
        test_output = session.run(output, {x: TEST, is_training: False})
    check(outputs, statistics, test_output)


def test_eager_and_tf_function_through_run_steps():
    eager = share(net, "eager_model")
    outputs = [eager(tf.constant(x), training=True).numpy() for x in TRAIN[:1]]
    statistics = [moving_statistics(eager.variables)]
    traced = tf.function(lambda x: eager(x, training=True), autograph=False)

    def run_step(count, with_loss):
        outputs.append(traced(tf.constant(TRAIN[1])).numpy())
        statistics.append(moving_statistics(eager.variables))
        return [0.0], None

    training.run_steps(run_step, 1, log_every=1)
    check(outputs, statistics, eager(tf.constant(TEST), training=False).numpy())


def test_keras_follows_its_training_argument():
    layer = ZooLayer(net)
    model = keras.Sequential([keras.Input((3,)), layer])
    model.compile(keras.optimizers.SGD(0.0), "mse")  # gamma and beta stay at 1 and 0
    assert [w.trainable for w in layer.weights] == [True, True, False, False]
    losses, statistics = [], []
    for value in TRAIN:
        losses.append(model.train_on_batch(value, value))
        statistics.append(moving_statistics(layer.tf1_variables))
    want_outputs, _, _ = reference()
    np.testing.assert_allclose(
        losses,
        [np.mean((out - x) ** 2) for out, x in zip(want_outputs, TRAIN, strict=True)],
        rtol=1e-4,
    )
    check(want_outputs, statistics, model.predict(TEST, verbose=0))
    assert np.array_equal(moving_statistics(layer.tf1_variables), statistics[-1])


@pytest.mark.parametrize("training_flag", [True, False])
def test_a_later_eager_call_in_the_other_mode_makes_no_variable(training_flag):
    model = share(net, f"mode_{training_flag}")
    model(tf.constant(TEST), training=training_flag)
    model(tf.constant(TEST), training=not training_flag)
    assert len(model.variables) == 4
