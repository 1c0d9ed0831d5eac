"""Conv2D and MaxPool: names, shapes, sharing, numerics against numpy, errors."""

import numpy as np
import pytest
import tensorflow as tf

from layers import ScopeError, ShapeError
from layers.conv import Conv2D, MaxPool

v1 = tf.compat.v1


def images(side=6, channels=1):
    return v1.placeholder(tf.float32, [None, side, side, channels])


def test_conv_names_shapes_and_output_shape(graph):
    conv = Conv2D(images(), 5, 1, 32, names=("W_conv1", "b_conv1"))
    assert conv.w.name == "W_conv1:0" and conv.w.shape == (5, 5, 1, 32)
    assert conv.b.name == "b_conv1:0" and conv.b.shape == (32,)
    assert conv.params == [conv.w, conv.b]
    assert conv.output.shape.as_list() == [None, 6, 6, 32]


def test_conv_reuse_shares_and_new_scope_doubles(graph):
    x = images()
    with v1.variable_scope("net"):
        first = Conv2D(x, 3, 1, 4, scope="c")
    with v1.variable_scope("net", reuse=True):
        second = Conv2D(x, 3, 1, 4, scope="c")
    assert second.w is first.w and len(v1.trainable_variables()) == 2
    assert first.scope_name == "net/c" and first.w.name == "net/c/W:0"
    Conv2D(x, 3, 1, 4, scope="d")
    assert len(v1.trainable_variables()) == 4


@pytest.mark.parametrize("bias", [True, False])
def test_conv_and_pool_match_numpy(graph, bias):
    x = images(side=4, channels=2)
    conv = Conv2D(x, 3, 2, 3, scope="c", padding="VALID", activation=tf.identity, bias=bias)
    pool = MaxPool(x)
    names = [v.op.name for v in v1.global_variables()]
    assert names == (["c/W", "c/b"] if bias else ["c/W"])
    assert conv.params == v1.trainable_variables() and (conv.b is None) != bias
    rng = np.random.default_rng(0)
    xv = rng.normal(size=(2, 4, 4, 2)).astype(np.float32)
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        out, pooled, w = sess.run([conv.output, pool.output, conv.w], {x: xv})
    expected = np.zeros((2, 2, 2, 3), np.float32)
    for i in range(2):
        for j in range(2):
            patch = xv[:, i : i + 3, j : j + 3, :]
            expected[:, i, j, :] = np.einsum("bhwc,hwco->bo", patch, w) + 0.1 * bias
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(pooled, xv.reshape(2, 2, 2, 2, 2, 2).max(axis=(2, 4)))


def test_conv_rejects_flat_input(graph):
    x = v1.placeholder(tf.float32, [None, 784])
    with pytest.raises(ShapeError, match=r"conv1: expected input of shape \[batch, height"):
        Conv2D(x, 5, 1, 32, scope="conv1")


def test_conv_rejects_channel_mismatch(graph):
    with pytest.raises(ShapeError, match=r"Conv2D: expected .*, 3\], found .*pass n_in=1"):
        Conv2D(images(), 5, 3, 32)


def test_conv_rejects_bad_size(graph):
    with pytest.raises(ShapeError, match="expected size to be an int >= 1, found 0"):
        Conv2D(images(), 0, 1, 32)


def test_conv_reuse_before_build_is_scope_error(graph):
    with v1.variable_scope("net", reuse=True):
        with pytest.raises(ScopeError, match="net/c: expected variable net/c/W to exist"):
            Conv2D(images(), 3, 1, 4, scope="c")


def test_pool_rejects_flat_input(graph):
    with pytest.raises(ShapeError, match="pool1: expected input of shape"):
        MaxPool(v1.placeholder(tf.float32, [None, 784]), name="pool1")
