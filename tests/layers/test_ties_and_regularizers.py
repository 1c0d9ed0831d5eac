"""Transposed ties beyond dense (conv kernel, embedding matrix); regularizers."""

import numpy as np
import pytest
import tensorflow as tf

from layers import (
    Conv2D,
    Conv2DTranspose,
    Decoder,
    Embedding,
    Encoder,
    FullConnected,
    ReadOut,
    ShapeError,
    TieError,
    ZooError,
)
from layers.variables import l2_regularizer

v1 = tf.compat.v1
LOSSES = v1.GraphKeys.REGULARIZATION_LOSSES


def run(fetches, feed=None):
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        return sess.run(fetches, feed)


def conv_transpose_numpy(y, w, stride, size):
    """VALID transposed convolution: every input pixel scatters ``W`` into the output."""
    batch, height, width, _ = y.shape
    side = lambda n: (n - 1) * stride + size  # noqa: E731
    out = np.zeros((batch, side(height), side(width), w.shape[2]), np.float32)
    for i in range(height):
        for j in range(width):
            patch = np.einsum("bo,pqco->bpqc", y[:, i, j, :], w)
            out[:, i * stride : i * stride + size, j * stride : j * stride + size] += patch
    return out


def test_tied_conv_transpose_reads_the_conv_kernel_and_matches_numpy(graph):
    x = v1.placeholder(tf.float32, [None, 7, 7, 2])
    conv = Conv2D(x, 3, 2, 4, scope="enc", stride=2, padding="VALID")
    before = len(v1.trainable_variables())
    up = Conv2DTranspose(
        conv.output, 3, 4, 2, scope="dec", stride=2, padding="VALID", tie_to="enc"
    )
    assert up.tied_weight is conv.w and up.w is conv.w
    assert up.params == [up.b] and len(v1.trainable_variables()) == before + 1
    assert up.output.shape.as_list() == [None, 7, 7, 2]
    xv = np.random.default_rng(0).normal(size=(2, 7, 7, 2)).astype(np.float32)
    y, out, w, b = run([conv.output, up.logits, conv.w, up.b], {x: xv})
    np.testing.assert_allclose(
        out, conv_transpose_numpy(y, w, 2, 3) + b, rtol=1e-5, atol=1e-5
    )


def test_conv_tied_to_a_bias_free_conv_transpose_reads_its_kernel(graph):
    z = v1.placeholder(tf.float32, [None, 3, 3, 4])
    up = Conv2DTranspose(z, 3, 4, 2, scope="dec", stride=2, padding="VALID", bias=False)
    assert up.b is None and up.params == [up.w] and up.w.shape == (3, 3, 2, 4)
    down = Conv2D(up.output, 3, 2, 4, scope="enc", stride=2, padding="VALID", tie_to="dec")
    assert down.tied_weight is up.w and down.w is up.w and down.params == [down.b]
    assert [v.name for v in v1.trainable_variables()] == ["dec/W:0", "enc/b:0"]
    zv = np.random.default_rng(0).normal(size=(2, 3, 3, 4)).astype(np.float32)
    up_logits, y, down_logits, w, b = run(
        [up.logits, up.output, down.logits, up.w, down.b], {z: zv}
    )
    np.testing.assert_allclose(
        up_logits, conv_transpose_numpy(zv, w, 2, 3), rtol=1e-5, atol=1e-5
    )
    patches = np.stack(
        [[y[:, 2 * i : 2 * i + 3, 2 * j : 2 * j + 3] for j in range(3)] for i in range(3)]
    )
    expected = np.einsum("ijbpqc,pqco->bijo", patches, w) + b
    np.testing.assert_allclose(down_logits, expected, rtol=1e-5, atol=1e-5)


def test_untied_conv_transpose_owns_a_kernel_and_same_padding_doubles(graph):
    h = v1.placeholder(tf.float32, [None, 4, 4, 8])
    up = Conv2DTranspose(h, 5, 8, 1, stride=2, scope="up")
    assert [v.name for v in up.params] == ["up/W:0", "up/b:0"]
    assert up.w.shape == (5, 5, 1, 8) and up.tied_weight is None
    assert up.output.shape.as_list() == [None, 8, 8, 1]


def test_conv_transpose_errors(graph):
    x = v1.placeholder(tf.float32, [None, 6, 6, 1])
    Conv2D(x, 3, 1, 4, scope="enc")
    h = v1.placeholder(tf.float32, [None, 6, 6, 4])
    with pytest.raises(TieError, match=r"dec: expected the tied weight enc/W with shape"):
        Conv2DTranspose(h, 5, 4, 1, scope="dec", tie_to="enc")
    with pytest.raises(TieError, match=r"dec: expected no regularizer on a layer tied"):
        Conv2DTranspose(h, 3, 4, 1, scope="dec", tie_to="enc", regularizer=tf.nn.l2_loss)
    unknown = v1.placeholder(tf.float32, [None, None, None, 4])
    with pytest.raises(ShapeError, match=r"dec: expected .* with height and width known"):
        Conv2DTranspose(unknown, 3, 4, 1, scope="dec", tie_to="enc")


def test_output_projection_tied_to_the_embedding_matches_numpy(graph):
    ids = v1.placeholder(tf.int32, [None])
    embedding = Embedding(ids, 7, 3)
    projection = ReadOut(embedding.output, 3, 7, scope="softmax", tie_to="embedding")
    assert projection.tied_weight is embedding.w and embedding.w.name == "embedding/W:0"
    assert [v.name for v in v1.trainable_variables()] == ["embedding/W:0", "softmax/b:0"]
    id_values = np.array([0, 6, 2, 2])
    rows, logits, probs, e, b = run(
        [embedding.output, projection.logits, projection.output, embedding.w, projection.b],
        {ids: id_values},
    )
    np.testing.assert_array_equal(rows, e[id_values])
    np.testing.assert_allclose(logits, e[id_values] @ e.T + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)


def test_embedding_errors(graph):
    with pytest.raises(ZooError, match="embedding: expected integer ids, found float32"):
        Embedding(v1.placeholder(tf.float32, [None]), 7, 3)
    with pytest.raises(ShapeError, match="expected vocab to be an int >= 1, found 0"):
        Embedding(v1.placeholder(tf.int32, [None]), 0, 3)


def test_layer_regularizer_lands_in_the_collection_once_per_variable(graph):
    x = v1.placeholder(tf.float32, [None, 4])
    l2 = l2_regularizer(0.5)
    with v1.variable_scope("net"):
        first = FullConnected(x, 4, 3, regularizer=l2)
    with v1.variable_scope("net", reuse=True):
        again = FullConnected(x, 4, 3, regularizer=l2)
    conv = Conv2D(v1.placeholder(tf.float32, [None, 4, 4, 1]), 3, 1, 2, regularizer=l2)
    collected = v1.get_collection(LOSSES)
    assert len(collected) == 2  # net/W once, the conv kernel once; no biases
    assert again.w is first.w and again.regularization_loss is not None
    w, conv_w, losses, own, total = run(
        [
            first.w,
            conv.w,
            collected,
            first.regularization_loss,
            v1.losses.get_regularization_loss(),
        ]
    )
    np.testing.assert_allclose(own, 0.5 * (w**2).sum() / 2, rtol=1e-5)
    np.testing.assert_allclose(losses[0], own, rtol=1e-6)
    np.testing.assert_allclose(total, own + 0.5 * (conv_w**2).sum() / 2, rtol=1e-5)


def test_scope_regularizer_applies_to_every_get_variable(graph):
    x = v1.placeholder(tf.float32, [None, 4])
    with v1.variable_scope("net", regularizer=tf.nn.l2_loss):
        layer = FullConnected(x, 4, 3)
    assert layer.regularization_loss is None  # only the layer's own argument
    names = sorted(t.name for t in v1.get_collection(LOSSES))
    assert names == ["net/W/Regularizer/L2Loss:0", "net/b/Regularizer/L2Loss:0"]


def test_regularizer_on_a_tied_decoder_is_refused(graph):
    x = v1.placeholder(tf.float32, [None, 6])
    Encoder(x, 6, 3)
    with pytest.raises(TieError, match="decoder: expected no regularizer on a layer tied"):
        Decoder(x[:, :3], 3, 6, tie_to="encoder", regularizer=tf.nn.l2_loss)
