"""zoo.compat.nn: under install(), conv2d_transpose and its siblings give their output
the static shape of a constant output_shape, as TF 1.x's Conv2DBackpropInput did."""

import numpy as np
import pytest
import tensorflow as tf

import zoo.compat
from tests.zoo.test_compat import uninstalled  # noqa: F401  (autouse: nothing installed)
from zoo.compat.nn import OUTPUT_SHAPE_ARGUMENT, static_shape

v1 = tf.compat.v1
rng = np.random.default_rng(0)


def deconv(z, batch_size):
    """DCGAN's generator layer, as carpedm20's ops.py writes it: a constant
    output_shape, then a reshape to the output's static shape."""
    w = v1.get_variable("w", [5, 5, 4, 8], initializer=v1.random_normal_initializer())
    out = v1.nn.conv2d_transpose(
        z, w, output_shape=[batch_size, 4, 4, 4], strides=[1, 2, 2, 1]
    )
    return v1.reshape(v1.nn.bias_add(out, v1.zeros([4])), out.get_shape())


def run_deconv(batch_size=3):
    """The deconv of a batch through a placeholder of unknown batch size.

    Returns:
        The program's output and TensorFlow's own conv2d_transpose on the same input.
    """
    with tf.Graph().as_default():
        z = v1.placeholder(tf.float32, [None, 2, 2, 8])
        with v1.variable_scope("g_h1"):
            out = deconv(z, batch_size)
        w = v1.trainable_variables()[0]
        plain = tf.nn.conv2d_transpose(z, w, [batch_size, 4, 4, 4], [1, 2, 2, 1])
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            return out.shape.as_list(), *sess.run(
                [out, plain], {z: rng.standard_normal((batch_size, 2, 2, 8))}
            )


def test_dcgan_deconv_fails_without_install_and_runs_with_it_unchanged_in_value():
    with pytest.raises(ValueError, match="partially known TensorShape"):
        run_deconv()
    zoo.compat.install()
    shape, ours, theirs = run_deconv()
    assert shape == [3, 4, 4, 4]
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("name", sorted(OUTPUT_SHAPE_ARGUMENT))
def test_every_sibling_takes_its_batch_from_output_shape_and_uninstall_restores(name):
    original = getattr(v1.nn, name)
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 2, 2, 8])
        w = v1.ones([3, 3, 4, 8])
        calls = {
            "conv2d_transpose": lambda nn: nn.conv2d_transpose(
                x, w, [5, 4, 4, 4], [1, 2, 2, 1]
            ),
            "conv1d_transpose": lambda nn: nn.conv1d_transpose(x[:, 0], w[0], [5, 4, 4], 2),
            "conv_transpose": lambda nn: nn.conv_transpose(x, w, [5, 4, 4, 4], 2),
            "atrous_conv2d_transpose": lambda nn: nn.atrous_conv2d_transpose(
                x, w, [5, 2, 2, 4], 2, "SAME"
            ),
            "conv2d_backprop_input": lambda nn: nn.conv2d_backprop_input(
                [5, 4, 4, 4], w, x, [1, 2, 2, 1], "SAME"
            ),
        }
        assert calls[name](v1.nn).shape[0] is None  # TensorFlow 2's rule
        zoo.compat.install()
        assert getattr(v1.nn, name) is not original
        assert calls[name](v1.nn).shape[0] == 5  # TF 1.x's
    zoo.compat.uninstall()
    assert getattr(v1.nn, name) is original


def test_static_shape_keeps_what_is_known_at_graph_build():
    with tf.Graph().as_default():
        batch = v1.shape(v1.placeholder(tf.float32, [None, 2]))[0]
        assert static_shape([7, 4, 4, 2]) == [7, 4, 4, 2]
        assert static_shape([batch, 4, 4, 2]) == [None, 4, 4, 2]
        assert static_shape(tf.stack([batch, 4, 4, 2])) == [None, 4, 4, 2]
        assert static_shape(v1.placeholder(tf.int32, [4])) is None
