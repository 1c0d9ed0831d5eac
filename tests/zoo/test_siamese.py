"""Siamese twins: one tower's variables read by both images, the two-tower ablation,
the contrastive loss against numpy, in-batch pairs, errors, eager and Keras."""

import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf

from layers import ScopeError, ShapeError, ZooError
from zoo import share
from zoo.models import embedding_tower, partners_in_batch, siamese
from zoo.sharing.inspect import inspect_model, readers
from zoo.sharing.keras import ZooLayer

v1 = tf.compat.v1
_scopes = itertools.count()
TOWER = ["W_embed", "W_hid_1", "b_embed", "b_hid_1"]


def names():
    return sorted(v.op.name for v in v1.global_variables())


def pair_placeholders(width=784):
    return (
        v1.placeholder(tf.float32, [None, width]),
        v1.placeholder(tf.float32, [None, width]),
        v1.placeholder(tf.float32, [None]),
    )


def test_shared_tower_is_one_set_of_variables_read_by_both_images(graph):
    net = siamese(*pair_placeholders(), hidden=(16,), embedding_size=4)
    assert names() == [f"siamese/tower/{n}" for n in TOWER]
    first, second = net.towers
    for a, b in zip(first.layers, second.layers, strict=True):
        assert a.w is b.w and a.b is b.b
    w = v1.global_variables()[0]
    assert readers(w) == ("siamese/x1/tower/MatMul", "siamese/x2/tower/MatMul")
    assert net.embedding1.shape.as_list() == [None, 4] and net.loss.shape == []


def test_reuse_creates_nothing_and_a_second_build_without_reuse_fails(graph):
    x1, x2, same = pair_placeholders()
    net = siamese(x1, x2, same, hidden=(16,), embedding_size=4)
    probe = siamese(x1, x1, scope="siamese", reuse=True, hidden=(16,), embedding_size=4)
    assert len(names()) == 4 and probe.loss is None
    assert probe.towers[0].layers[0].w is net.towers[0].layers[0].w
    with pytest.raises(ScopeError, match="siamese/tower/W_hid_1 yet \\(reuse=False\\)"):
        siamese(x1, x2, same, hidden=(16,), embedding_size=4)


def test_two_towers_have_separate_variables(graph):
    net = siamese(*pair_placeholders(), shared=False, hidden=(16,), embedding_size=4)
    assert names() == [f"siamese/tower_{i}/{n}" for i in (1, 2) for n in TOWER]
    first, second = net.towers
    assert first.scope_name == "siamese/tower_1" and second.scope_name == "siamese/tower_2"
    for a, b in zip(first.layers, second.layers, strict=True):
        assert a.w is not b.w
    assert all(len(readers(v)) == 1 for v in v1.global_variables())
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        w1, w2 = session.run([first.layers[0].w, second.layers[0].w])
    assert not np.allclose(w1, w2)


def numpy_tower(x, w_hid, b_hid, w_embed, b_embed):
    return np.maximum(x @ w_hid + b_hid, 0) @ w_embed + b_embed


@pytest.mark.parametrize("shared", [True, False])
def test_distance_and_contrastive_loss_match_numpy(graph, shared):
    x1, x2, same = pair_placeholders(width=6)
    net = siamese(x1, x2, same, shared=shared, hidden=(5,), embedding_size=3, margin=2.0)
    rng = np.random.default_rng(0)
    a, b = rng.random((2, 8, 6)).astype(np.float32)
    b[0] = a[0]  # identical images: distance 0, gradient finite
    s = np.array([1, 0, 1, 0, 1, 0, 1, 0], np.float32)
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        towers = [
            session.run([layer.w for layer in t.layers] + [layer.b for layer in t.layers])
            for t in net.towers
        ]
        distance, loss = session.run([net.distance, net.loss], {x1: a, x2: b, same: s})
        grads = session.run(
            tf.gradients(net.loss, v1.trainable_variables()), {x1: a, x2: b, same: s}
        )
    (w1, we1, b1, be1), (w2, we2, b2, be2) = towers
    d = np.linalg.norm(
        numpy_tower(a, w1, b1, we1, be1) - numpy_tower(b, w2, b2, we2, be2), axis=1
    )
    expected = np.mean(0.5 * (s * d**2 + (1 - s) * np.maximum(0, 2.0 - d) ** 2))
    np.testing.assert_allclose(distance, d, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
    assert all(np.isfinite(g).all() for g in grads)


def test_partners_in_batch_pair_half_of_one_class_by_the_stated_rule(graph):
    labels = v1.placeholder(tf.int64, [None])
    partner_op, same_op = partners_in_batch(labels)
    values = np.random.default_rng(3).integers(0, 10, 64)
    with v1.Session() as session:
        partner, same = session.run([partner_op, same_op], {labels: values})
        again = session.run(partner_op, {labels: values})
        single = session.run([partner_op, same_op], {labels: [4]})
    n = len(values)
    for i in range(n):
        want_same = i % 2 == 0
        k = next(k for k in range(1, n) if (values[(i + k) % n] == values[i]) == want_same)
        assert partner[i] == (i + k) % n
    np.testing.assert_array_equal(same, values[partner] == values)
    np.testing.assert_array_equal(same, np.arange(n) % 2 == 0)  # every class has 2+
    np.testing.assert_array_equal(again, partner)
    assert single[0].tolist() == [0] and single[1].tolist() == [1.0]


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"embedding_size": 0}, ShapeError, "siamese: expected embedding_size to be a "
         "positive int, found 0"),
        ({"hidden": (16, -2)}, ShapeError, "siamese/tower: expected hidden\\[1\\] to be a "
         "positive int, found -2"),
        ({"hidden": 16}, ShapeError, "expected hidden to be a sequence"),
        ({"margin": 0.0}, ZooError, "siamese: expected margin, .* > 0, found 0.0"),
        ({"margin": "1"}, ZooError, "siamese: expected margin, .* found '1'"),
        ({"reuse": "yes"}, ScopeError, "siamese: expected reuse in"),
    ],
)  # fmt: skip
def test_bad_arguments_name_the_scope_before_any_variable(graph, kwargs, error, message):
    with pytest.raises(error, match=message):
        siamese(*pair_placeholders(), **kwargs)
    assert v1.global_variables() == []


def test_bad_inputs_name_the_scope(graph):
    x1, x2, _ = pair_placeholders()
    narrow = v1.placeholder(tf.float32, [None, 10])
    with pytest.raises(ShapeError, match="siamese: expected x2 as wide as x1 \\(784\\)"):
        siamese(x1, narrow)
    with pytest.raises(ShapeError, match="siamese: expected same of shape \\[batch\\]"):
        siamese(x1, x2, v1.placeholder(tf.float32, [None, 1]))
    assert v1.global_variables() == []


def test_inspect_shows_each_tower_variable_read_twice():
    rows, _ = inspect_model("siamese", hidden=(8,), embedding_size=2)
    assert [row.name for row in rows] == [f"siamese/tower/{n}" for n in TOWER]
    assert all(len(row.readers) == 2 for row in rows)


@pytest.mark.parametrize("shared, count", [(True, 4), (False, 8)])
def test_eager_share_makes_the_variables_once(shared, count):
    scope = f"twins{next(_scopes)}"
    model = share(siamese, scope, shared=shared, hidden=(8,), embedding_size=3)
    rng = np.random.default_rng(0)
    a, b = (tf.constant(rng.random((5, 6), dtype=np.float32)) for _ in range(2))
    same = tf.constant([1.0, 0.0, 1.0, 0.0, 1.0])
    first = model(a, b, same)
    second = model(b, a, same)
    assert len(model.variables) == count and np.isfinite(first.loss.numpy())
    if shared:  # one tower: swapping the images gives the same distances
        np.testing.assert_allclose(second.distance, first.distance, rtol=1e-5)
    with pytest.raises(ScopeError, match="found it would create"):
        model(a, b, same, hidden=(8, 8))


def test_keras_twins_share_one_zoo_layer():
    tower = ZooLayer("embedding_tower", output="embedding", hidden=(8,), embedding_size=3)
    left, right = keras.Input((6,)), keras.Input((6,))
    model = keras.Model([left, right], [tower(left), tower(right)])
    assert len(model.trainable_weights) == 4
    assert tower.variable_names == [
        f"embedding_tower/{n}" for n in ("W_hid_1", "b_hid_1", "W_embed", "b_embed")
    ]
    x = np.random.default_rng(0).random((4, 6)).astype("float32")
    out_left, out_right = model([x, x])
    np.testing.assert_allclose(out_left, out_right)


def test_embedding_tower_alone(graph):
    x = v1.placeholder(tf.float32, [None, 784])
    tower = embedding_tower(x, hidden=(), embedding_size=2)
    assert names() == ["tower/W_embed", "tower/b_embed"]
    assert tower.embedding.shape.as_list() == [None, 2]
