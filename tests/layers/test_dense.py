"""Layers: names, shapes, counts, sharing, tying, numerics against numpy, errors."""

import numpy as np
import pytest
import tensorflow as tf

from layers import Decoder, Encoder, FullConnected, ReadOut
from layers.errors import EagerError, ScopeError, ShapeError, TieError, ZooError
from layers.variables import function_of_graph
from tests.conftest import trainable_names

v1 = tf.compat.v1


def run(fetches, feed=None):
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        return sess.run(fetches, feed)


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def test_encoder_names_shapes_and_output(graph):
    x = v1.placeholder(tf.float32, [None, 784])
    enc = Encoder(x, 784, 625, scope="encoder")
    assert enc.w.name == "encoder/W:0" and enc.w.shape == (784, 625)
    assert enc.b.name == "encoder/b:0" and enc.b.shape == (625,)
    assert enc.params == [enc.w, enc.b]
    assert enc.output is enc.output  # a property, not a method that replaces itself
    assert enc.output.shape.as_list() == [None, 625]
    assert enc.scope_name == "encoder"


def test_layers_match_numpy(graph):
    rng = np.random.default_rng(0)
    xv = rng.random((5, 6)).astype(np.float32)
    x = v1.placeholder(tf.float32, [None, 6])
    enc = Encoder(x, 6, 4)
    dec = Decoder(enc.output, 4, 6, tie_to="encoder")
    fc = FullConnected(x, 6, 3, names=("W_fc", "b_fc"))
    ro = ReadOut(fc.output, 3, 2, names=("W_ro", "b_ro"))
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        for var in (enc.b, dec.b, fc.b, ro.b):
            var.load(rng.normal(size=var.shape).astype(np.float32), sess)
        w, b, db, fw, fb, rw, rb = sess.run([enc.w, enc.b, dec.b, fc.w, fc.b, ro.w, ro.b])
        got = sess.run([enc.output, dec.output, fc.output, ro.output, ro.logits], {x: xv})
    h = sigmoid(xv @ w + b)
    relu = np.maximum(xv @ fw + fb, 0)
    logits = relu @ rw + rb
    softmax = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    expected = [h, sigmoid(h @ w.T + db), relu, softmax, logits]
    for value, want in zip(got, expected, strict=True):
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)


def test_initializers_follow_the_seeds(graph):
    x = v1.placeholder(tf.float32, [None, 300])
    fc = FullConnected(x, 300, 400, names=("W1", "b1"))
    ro = ReadOut(x, 300, 400, names=("W2", "b2"))
    w_fc, w_ro, b = run([fc.w, ro.w, fc.b])
    assert np.abs(w_fc).max() <= 2 * 0.05 + 1e-6  # truncated at two stddevs
    assert np.abs(w_ro).max() > 2 * 0.05  # plain normal has tails
    assert 0.042 < w_fc.std() < 0.046  # truncation leaves 0.88 of the stddev
    assert 0.048 < w_ro.std() < 0.052
    assert not b.any()


def test_overridden_initializer_and_activation(graph):
    x = v1.placeholder(tf.float32, [None, 3])
    layer = FullConnected(
        x,
        3,
        2,
        activation=tf.identity,
        w_init=v1.ones_initializer(),
        b_init=v1.ones_initializer(),
    )
    out = run(layer.output, {x: -np.ones((1, 3), np.float32)})
    np.testing.assert_allclose(out, [[-2.0, -2.0]])


def test_tied_decoder_reads_encoder_weight(graph):
    x = v1.placeholder(tf.float32, [None, 784])
    with v1.variable_scope("ae"):
        enc = Encoder(x, 784, 625, scope="encoder")
        before = len(v1.trainable_variables())
        dec = Decoder(enc.output, 625, 784, scope="decoder", tie_to="encoder")
    assert dec.tied_weight is enc.w
    assert len(v1.trainable_variables()) == before + 1  # only decoder/b
    assert dec.params == [dec.b] and dec.b.name == "ae/decoder/b:0"
    assert dec.w.shape == (625, 784) and dec.w.op.name == "ae/decoder/W_tied"
    w, wt = run([enc.w, dec.w])
    np.testing.assert_array_equal(wt, w.T)


def test_untied_decoder_owns_weight(graph):
    x = v1.placeholder(tf.float32, [None, 784])
    enc = Encoder(x, 784, 625)
    dec = Decoder(enc.output, 625, 784)
    assert dec.w.name == "decoder/W:0" and dec.w.shape == (625, 784)
    assert dec.tied_weight is None
    assert trainable_names() == ["decoder/W:0", "decoder/b:0", "encoder/W:0", "encoder/b:0"]


def test_tie_to_accepts_the_variable(graph):
    x = v1.placeholder(tf.float32, [None, 8])
    enc = Encoder(x, 8, 4)
    dec = Decoder(enc.output, 4, 8, tie_to=enc.w)
    assert dec.tied_weight is enc.w


def test_reuse_shares_and_new_scope_duplicates(graph):
    x = v1.placeholder(tf.float32, [None, 10])
    with v1.variable_scope("net"):
        a = FullConnected(x, 10, 5)
    with v1.variable_scope("net", reuse=True):
        b = FullConnected(x, 10, 5)
    assert a.w is b.w and len(v1.trainable_variables()) == 2
    with v1.variable_scope("other"):
        FullConnected(x, 10, 5)
    assert len(v1.trainable_variables()) == 4
    xv = np.ones((2, 10), np.float32)
    out_a, out_b = run([a.output, b.output], {x: xv})
    np.testing.assert_array_equal(out_a, out_b)


def test_error_classes_are_value_errors():
    for cls in (ScopeError, ShapeError, TieError, EagerError):
        assert issubclass(cls, ZooError) and issubclass(cls, ValueError)


def test_building_twice_without_reuse_names_variable_and_fix(graph):
    x = v1.placeholder(tf.float32, [None, 10])
    Encoder(x, 10, 5, scope="enc")
    with pytest.raises(
        ScopeError, match=r"enc: expected no variable enc/W yet .*reuse=True"
    ):
        Encoder(x, 10, 5, scope="enc")


def test_reuse_before_build_says_build_first(graph):
    x = v1.placeholder(tf.float32, [None, 10])
    with v1.variable_scope("net", reuse=True):
        with pytest.raises(
            ScopeError, match=r"expected variable net/W to exist .*reuse=False"
        ):
            FullConnected(x, 10, 5)


def test_reuse_with_other_shape_is_shape_error(graph):
    x = v1.placeholder(tf.float32, [None, 10])
    with v1.variable_scope("net"):
        FullConnected(x, 10, 5)
    with v1.variable_scope("net", reuse=True):
        with pytest.raises(ShapeError, match=r"net/W with shape \[10, 6\], found shape"):
            FullConnected(x, 10, 6)


@pytest.mark.parametrize(
    "shape, build, message",
    [
        pytest.param(
            [None, 100],
            lambda x: Encoder(x, 784, 625),
            r"encoder: expected input of shape \[batch, 784\], found .*n_in=100",
            id="input width",
        ),
        pytest.param(
            [None, 28, 28],
            lambda x: FullConnected(x, 784, 10),
            r"FullConnected: expected input .*flatten",
            id="input rank",
        ),
        pytest.param(
            [None, 4],
            lambda x: Encoder(x, 4, 0),
            r"encoder: expected n_out to be an int >= 1, found 0; pass n_out=<int>",
            id="size",
        ),
    ],
)
def test_wrong_input_or_size_is_a_shape_error(graph, shape, build, message):
    with pytest.raises(ShapeError, match=message):
        build(v1.placeholder(tf.float32, shape))


def test_tie_to_missing_scope(graph):
    x = v1.placeholder(tf.float32, [None, 625])
    with v1.variable_scope("ae"):
        with pytest.raises(
            TieError,
            match=r"ae/decoder: expected tie_to='encoder' .*found no variable ae/encoder/W",
        ):
            Decoder(x, 625, 784, tie_to="encoder")


def test_tie_to_wrong_shape(graph):
    x = v1.placeholder(tf.float32, [None, 784])
    enc = Encoder(x, 784, 100)
    with pytest.raises(
        TieError,
        match=r"decoder: expected the tied weight encoder/W with shape \[784, 625\]",
    ):
        Decoder(enc.output, 625, 784, tie_to="encoder")


def test_eager_build_raises_instead_of_duplicating():
    assert tf.executing_eagerly()
    x = tf.zeros([2, 4])
    with pytest.raises(
        EagerError, match=r"encoder: expected a graph .*found eager execution"
    ):
        Encoder(x, 4, 3)


def test_tf_function_build_raises():
    @tf.function
    def build(x):
        return FullConnected(x, 4, 3).output

    with pytest.raises(EagerError, match="make_template"):
        build(tf.zeros([2, 4]))


def test_a_function_traced_for_its_graph_reuses_the_graphs_variables(graph):
    built = FullConnected(v1.placeholder(tf.float32, [None, 4]), 4, 3, scope="fc")
    seen = []

    @tf.function(autograph=False)
    def reuse(x):
        with v1.variable_scope(v1.get_variable_scope(), reuse=True):
            layer = FullConnected(x, 4, 3, scope="fc")
        seen.append(layer.w)
        return layer.output

    @tf.function(autograph=False)
    def make_new(x):
        return FullConnected(x, 4, 3, scope="other").w

    with pytest.raises(EagerError, match="fc: expected a graph"):
        reuse(tf.zeros([2, 4]))  # not traced under function_of_graph
    with function_of_graph():
        reuse(tf.zeros([2, 4]))
        with pytest.raises(ScopeError, match="other: expected no variable other/W yet"):
            make_new(tf.zeros([2, 4]))  # loudly, never a silent second variable
    assert seen == [built.w]
    # other/ was made once, by the first trace; the second trace failed on it
    names = [v.name for v in v1.global_variables()]
    assert names == ["fc/W:0", "fc/b:0", "other/W:0", "other/b:0"]


def test_function_of_graph_refuses_eager_execution():
    with pytest.raises(EagerError, match="function_of_graph: expected a graph"):
        with function_of_graph():
            pass


def test_template_shares_in_eager():
    template = v1.make_template("net", lambda x: FullConnected(x, 4, 3).w)
    w1 = template(tf.zeros([2, 4]))
    w2 = template(tf.ones([2, 4]))
    assert w1 is w2 and w1.name == "net/W:0"
