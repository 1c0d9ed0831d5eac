"""conv_classifier and GradientStep: variable names, reuse, equality with minimize,
transforms and accumulation against numpy, errors."""

import functools

import numpy as np
import pytest
import tensorflow as tf

from layers import ShapeError, ZooError
from zoo.models.conv import conv_classifier
from zoo.models.mlp import mlp_classifier
from zoo.training.gradients import (
    GradientStep,
    add_noise,
    average,
    clip_by_global_norm,
    global_norm,
    scale,
)

v1 = tf.compat.v1
SEED_NAMES = [
    f"conv/{kind}_{layer}"
    for layer in ("conv1", "conv2", "fc1", "fc2")
    for kind in ("W", "b")
]


def placeholders(n_in=784):
    return v1.placeholder(tf.float32, [None, n_in]), v1.placeholder(tf.float32, [None, 10])


def batch(n, n_in=784, seed=0):
    rng = np.random.default_rng(seed)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, n)]
    return rng.random((n, n_in), dtype=np.float32), labels


def test_conv_classifier_has_the_seed_variables_and_shares(graph):
    x, y = placeholders()
    keep_prob = v1.placeholder_with_default(1.0, [])
    net = conv_classifier(x, y, keep_prob=keep_prob)
    shapes = {v.op.name: v.shape.as_list() for v in v1.trainable_variables()}
    assert sorted(shapes) == sorted(SEED_NAMES)
    assert shapes["conv/W_conv2"] == [5, 5, 32, 64] and shapes["conv/W_fc1"] == [3136, 1024]
    again = conv_classifier(x, y, reuse=True)
    assert len(v1.trainable_variables()) == 8
    assert again.layers[0].w is net.layers[0].w and net.y_pred.shape.as_list() == [None, 10]


def test_conv_classifier_rejects_non_square_input(graph):
    x, y = placeholders(n_in=100 + 1)
    with pytest.raises(ShapeError, match=r"conv: expected x of shape \[batch, side \*"):
        conv_classifier(x, y)


def variable_values(sess):
    return {v.op.name: sess.run(v) for v in v1.trainable_variables()}


def small_mlp(optimizer):
    """An MLP on 20 inputs, its :class:`GradientStep` and ``feed_of(n, seed)``, the
    feed of a random batch of ``n`` examples."""
    x, y = placeholders(n_in=20)
    net = mlp_classifier(x, y, hidden=(16,))

    def feed_of(n, seed=0):
        return dict(zip((x, y), batch(n, n_in=20, seed=seed), strict=True))

    return net, GradientStep(net.loss, optimizer), feed_of


@pytest.mark.parametrize(
    "optimizer",
    [
        functools.partial(v1.train.GradientDescentOptimizer, 0.1),
        functools.partial(v1.train.AdamOptimizer, 1e-3),
    ],
)
def test_apply_computed_gradients_equals_minimize(graph, optimizer):
    net, step, feed_of = small_mlp(optimizer())
    minimize = optimizer().minimize(net.loss)
    feed = feed_of(8)
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        start = variable_values(sess)
        step.apply(sess, step.compute(sess, feed))
        via_numpy = variable_values(sess)
        for v in v1.trainable_variables():
            v.load(start[v.op.name], sess)
        sess.run(minimize, feed)
        fused = variable_values(sess)
    assert sorted(via_numpy) == sorted(step.names) and len(step.names) == 4
    for name in step.names:
        assert not np.array_equal(via_numpy[name], start[name])
        np.testing.assert_array_equal(via_numpy[name], fused[name])


def test_compute_returns_every_gradient_as_numpy_in_variable_order(graph):
    net, step, feed_of = small_mlp(v1.train.GradientDescentOptimizer(0.1))
    feed = feed_of(8)
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        grads = step.compute(sess, feed)
        expected = sess.run(v1.gradients(net.loss, v1.trainable_variables()), feed)
    assert [name for _, name in grads] == [v.op.name for v in v1.trainable_variables()]
    for (value, _), want in zip(grads, expected, strict=True):
        assert isinstance(value, np.ndarray)
        np.testing.assert_allclose(value, want, rtol=1e-6)


def test_accumulated_apply_is_one_sgd_step_on_the_mean_gradient(graph):
    _, step, feed_of = small_mlp(v1.train.GradientDescentOptimizer(0.5))
    feeds = [feed_of(4, seed) for seed in range(3)]
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        start = variable_values(sess)
        each = [step.compute(sess, feed) for feed in feeds]
        step.apply(sess, step.accumulate(sess, feeds))
        after = variable_values(sess)
    for i, name in enumerate(step.names):
        mean = (each[0][i][0] + each[1][i][0] + each[2][i][0]) / 3
        expected = start[name] - 0.5 * mean
        np.testing.assert_allclose(after[name], expected, rtol=1e-5, atol=1e-6)


def test_transforms_against_numpy():
    grads = [(np.array([3.0, 0.0]), "a"), (np.array([[4.0]]), "b")]
    assert global_norm(grads) == pytest.approx(5.0)
    scaled = scale(grads, 2.0)
    np.testing.assert_array_equal(scaled[0][0], [6.0, 0.0])
    clipped = clip_by_global_norm(grads, 1.0)
    np.testing.assert_allclose(clipped[0][0], [0.6, 0.0])
    np.testing.assert_allclose(clipped[1][0], [[0.8]])
    assert global_norm(clipped) == pytest.approx(1.0)
    assert clip_by_global_norm(grads, 10.0) is grads
    noisy = add_noise(grads, 0.1, np.random.default_rng(0))
    assert [name for _, name in noisy] == ["a", "b"]
    diff = noisy[0][0] - grads[0][0]
    assert 0 < np.abs(diff).max() < 1.0
    np.testing.assert_allclose(diff, 0.1 * np.random.default_rng(0).normal(size=2))


def test_numpy_clip_matches_tensorflow():
    values = [np.arange(6.0).reshape(2, 3), np.array([-7.0, 2.0])]
    clipped = clip_by_global_norm(list(zip(values, "ab", strict=True)), 3.0)
    expected, _ = tf.clip_by_global_norm([tf.constant(v) for v in values], 3.0)
    for (value, _), want in zip(clipped, expected, strict=True):
        np.testing.assert_allclose(value, want.numpy(), rtol=1e-6)


def test_average_against_numpy_and_mismatch():
    first = [(np.array([1.0, 2.0]), "a")]
    second = [(np.array([3.0, 6.0]), "a")]
    np.testing.assert_array_equal(average([first, second])[0][0], [2.0, 4.0])
    with pytest.raises(ZooError, match="average: expected every list for"):
        average([first, [(np.array([1.0, 2.0]), "b")]])
    with pytest.raises(ZooError, match="average: expected at least one gradient list"):
        average([])


def test_apply_rejects_gradients_that_do_not_match_the_variables(graph):
    _, step, feed_of = small_mlp(v1.train.GradientDescentOptimizer(0.1))
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        grads = step.compute(sess, feed_of(4))
        with pytest.raises(ZooError, match=r"apply: expected gradients for \['mlp/W_hid"):
            step.apply(sess, grads[:-1])
        with pytest.raises(ZooError, match="pass the .gradient, name. list compute"):
            step.apply(sess, grads[::-1])
        wrong = [(np.zeros(3), name) for _, name in grads]
        with pytest.raises(ShapeError, match=r"of mlp/W_hid_1 with shape \[20, 16\]"):
            step.apply(sess, wrong)


def test_loss_without_variables_is_an_error(graph):
    x, _ = placeholders(n_in=3)
    with pytest.raises(ZooError, match="GradientStep: expected variables that"):
        GradientStep(tf.reduce_sum(x), v1.train.GradientDescentOptimizer(0.1))
    v1.get_variable("unrelated", [2])
    with pytest.raises(ZooError, match="GradientStep: expected variables that"):
        GradientStep(tf.reduce_sum(x), v1.train.GradientDescentOptimizer(0.1))
