"""zoo.share: one set of variables in eager, tf.function and graph mode; checkpoints."""

import itertools

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.ops import variable_scope as _vs

from layers import DataError, ScopeError, ShapeError
from tests.zoo import tf1_code
from zoo import autoencoder, mlp_classifier
from zoo.sharing.share import restore_by_name, save_by_name, share

v1 = tf.compat.v1
_scopes = itertools.count()


def fresh_scope():
    """A scope no other test used: the share registry is per process."""
    return f"ae{next(_scopes)}"


def names(variables):
    return [v.name for v in variables]


def batch(rows=4, width=6, seed=0):
    return np.random.default_rng(seed).random((rows, width)).astype(np.float32)


def test_eager_names_match_graph_mode_and_calls_reuse():
    scope = fresh_scope()
    model = share(autoencoder, scope, tied=True, n_hidden=3)
    assert model.variables == []
    first = model(tf.constant(batch()))
    second = model(tf.constant(batch(rows=2)))
    assert names(model.variables) == [
        f"{scope}/{n}:0" for n in ("decoder/b", "encoder/W", "encoder/b")
    ]
    assert (
        second.encoder.w is first.encoder.w
        and second.decoder.tied_weight is first.encoder.w
    )
    with tf.Graph().as_default():
        graph_model = autoencoder(
            v1.placeholder(tf.float32, [None, 6]), scope=scope, n_hidden=3
        )
        graph_names = sorted(v.name for v in v1.trainable_variables())
    assert names(model.trainable_variables) == graph_names
    assert graph_model.scope_name == model.scope_name == scope


def test_tf_function_reuses_the_eager_variables():
    model = share(autoencoder, fresh_scope(), n_hidden=3)
    eager = model(tf.constant(batch()))
    traced = []

    @tf.function
    def loss(x):
        result = model(x)
        traced.append(result.encoder.w)
        return result.loss

    x = tf.constant(batch(seed=1))
    np.testing.assert_allclose(loss(x), model(x).loss, rtol=1e-6)
    loss(tf.constant(batch(rows=7)))
    assert traced and all(w is eager.encoder.w for w in traced)
    assert len(model.variables) == 3


def test_variables_created_inside_tf_function_first():
    model = share(autoencoder, fresh_scope(), tied=False, n_hidden=3)

    @tf.function
    def loss(x):
        return model(x).loss

    loss(tf.constant(batch()))
    loss(tf.constant(batch(seed=2)))
    weights = model.variables
    assert len(weights) == 4
    assert model(tf.constant(batch())).encoder.w is weights[2]


def test_graph_and_eager_outputs_equal_with_the_same_weights(tmp_path):
    scope = fresh_scope()
    x_value = batch(rows=5)
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 6])
        graph_model = share(autoencoder, scope, n_hidden=3)
        built = graph_model(x)
        again = graph_model(x)
        assert len(graph_model.variables) == 3 and again.encoder.w is built.encoder.w
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            graph_decoded = session.run(built.decoded, {x: x_value})
            path = save_by_name(
                graph_model.variables, str(tmp_path / "graph.ckpt"), session
            )
    model = share(autoencoder, scope, n_hidden=3)
    model(tf.constant(x_value))
    restore_by_name(model.variables, path)
    np.testing.assert_allclose(
        model(tf.constant(x_value)).decoded, graph_decoded, rtol=1e-6
    )


def test_checkpoint_from_graph_saver_into_eager_and_back(tmp_path):
    scope = fresh_scope()
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 6])
        graph_model = autoencoder(x, scope=scope, n_hidden=3)
        train = v1.train.AdagradOptimizer(0.5).minimize(graph_model.loss)
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            for _ in range(3):
                session.run(train, {x: batch()})
            trained = session.run({v.name: v for v in v1.trainable_variables()})
            path = v1.train.Saver().save(session, str(tmp_path / "graph.ckpt"))
    model = share(autoencoder, scope, n_hidden=3)
    model(tf.constant(batch()))
    restore_by_name(model.variables, str(tmp_path))
    for variable in model.variables:
        np.testing.assert_array_equal(variable.numpy(), trained[variable.name])
    model.variables[1].assign_add(tf.ones_like(model.variables[1]))
    back = save_by_name(model.variables, str(tmp_path / "eager.ckpt"))
    with tf.Graph().as_default():
        autoencoder(v1.placeholder(tf.float32, [None, 6]), scope=scope, n_hidden=3)
        with v1.Session() as session:
            v1.train.Saver().restore(session, back)
            w = session.run(v1.trainable_variables()[0])
    np.testing.assert_array_equal(w, trained[f"{scope}/encoder/W:0"] + 1)
    assert path.endswith("graph.ckpt")


def test_reuse_true_and_auto_reuse_share_one_store():
    scope = fresh_scope()
    owner = share(autoencoder, scope, n_hidden=3)
    owner(tf.constant(batch()))
    user = share(autoencoder, scope, reuse=True, n_hidden=3)
    auto = share(autoencoder, scope, reuse=v1.AUTO_REUSE, n_hidden=3)
    assert user(tf.constant(batch())).encoder.w is owner.variables[1]
    assert auto(tf.constant(batch())).encoder.w is owner.variables[1]
    created = share(autoencoder, fresh_scope(), reuse=v1.AUTO_REUSE, n_hidden=3)
    created(tf.constant(batch()))
    assert len(created.variables) == 3


def test_mlp_classifier_shares_in_eager():
    model = share(mlp_classifier, fresh_scope(), hidden=(4,))
    x, y = tf.constant(batch()), tf.one_hot([0, 1, 2, 0], 3)
    first = model(x, y)
    assert model(x, y).layers[0].w is first.layers[0].w and len(model.variables) == 4


def test_reuse_false_on_a_scope_with_variables_raises():
    scope = fresh_scope()
    share(autoencoder, scope, n_hidden=3)(tf.constant(batch()))  # gone after the call
    keep = share(autoencoder, scope, n_hidden=3)
    keep(tf.constant(batch()))
    with pytest.raises(ScopeError, match=rf"{scope}: expected no variables .*reuse=False"):
        share(autoencoder, scope, n_hidden=3)(tf.constant(batch()))


def test_a_share_held_only_by_a_reference_cycle_frees_its_scope():
    scope = fresh_scope()
    cycle = {"share": share(autoencoder, scope, n_hidden=3)}
    cycle["self"] = cycle  # as a traceback kept by a failed run does
    cycle["share"](tf.constant(batch()))
    del cycle

    again = share(autoencoder, scope, n_hidden=3)(tf.constant(batch()))  # no ScopeError

    assert again.encoder.w.name == f"{scope}/encoder/W:0"


def test_reuse_true_before_creation_raises():
    with pytest.raises(ScopeError, match=r"expected variables under ae\d+ to exist"):
        share(autoencoder, fresh_scope(), reuse=True)(tf.constant(batch()))


def test_later_call_that_would_create_a_variable_raises():
    scope = fresh_scope()
    model = share(autoencoder, scope, n_hidden=3)
    model(tf.constant(batch()), tied=True)
    with pytest.raises(ScopeError, match=rf"would create {scope}/decoder/W; call with"):
        model(tf.constant(batch()), tied=False)
    assert len(model.variables) == 3

    @tf.function
    def untied(x):
        return model(x, tied=False).loss

    with pytest.raises(ScopeError, match=rf"would create {scope}/decoder/W"):
        untied(tf.constant(batch()))


def test_bad_arguments_raise():
    with pytest.raises(ScopeError, match="expected scope to be a non-empty string"):
        share(autoencoder, "")
    with pytest.raises(ScopeError, match="expected reuse in"):
        share(autoencoder, "ae", reuse="yes")


def test_restore_errors(tmp_path):
    with pytest.raises(DataError, match="expected a TensorFlow checkpoint"):
        restore_by_name([], str(tmp_path / "none"))
    model = share(autoencoder, fresh_scope(), n_hidden=3)
    model(tf.constant(batch()))
    path = save_by_name(model.variables, str(tmp_path / "a.ckpt"))
    other = share(autoencoder, fresh_scope(), n_hidden=3)
    other(tf.constant(batch()))
    with pytest.raises(ScopeError, match=r"ae\d+/decoder/b \(no 'ae\d+/decoder/b' in"):
        restore_by_name(other.variables, path)
    bigger = tf.Variable(tf.zeros([6, 4]), name=f"{model.scope_name}/encoder/W")
    with pytest.raises(ShapeError, match=r"ae\d+/encoder/W \[6, 4\] float32 vs ae"):
        restore_by_name([bigger], path)


def test_any_tf1_function_shares_in_eager_with_its_regularization_losses():
    scope = fresh_scope()
    model = share(tf1_code.siamese, scope)
    left, right = (tf.constant(batch(width=tf1_code.WIDTH, seed=s)) for s in (1, 2))
    first = model(left, right)
    assert names(model.variables) == [f"{scope}/tower/W:0", f"{scope}/tower/b:0"]
    W = model.variables[0]
    (penalty,) = model.regularization_losses  # once, though both towers ask for W
    np.testing.assert_allclose(penalty, tf1_code.L2 * (W.numpy() ** 2).sum() / 2, rtol=1e-5)

    @tf.function
    def loss(left, right):
        return tf.reduce_mean(model(left, right)) + tf.add_n(model.regularization_losses)

    with tf.GradientTape() as tape:
        value = loss(left, right)
    gradient = tape.gradient(value, W)
    np.testing.assert_allclose(value, tf.reduce_mean(first) + penalty, rtol=1e-5)
    assert gradient is not None and len(model.variables) == 2


def test_graph_mode_regularization_losses_are_the_collection_once_per_variable():
    with tf.Graph().as_default():
        left = v1.placeholder(tf.float32, [None, tf1_code.WIDTH])
        model = share(tf1_code.siamese, "net")
        model(left, left)
        model(left, left)  # reuse=True: no new variable, no new loss
        losses = model.regularization_losses
        assert [t.name for t in losses] == ["net/tower/W/Regularizer/mul:0"]
        assert losses == v1.get_collection(v1.GraphKeys.REGULARIZATION_LOSSES)


def test_a_regularizer_handed_to_the_store_counts_once_per_variable():
    """What TF1 layers do with ``kernel_regularizer``: make the weight, then hand the
    regularizer to the default variable store's ``add_regularizer``, on every call."""

    def tf1_layer(x):
        w = v1.get_variable("W", [6, 2])
        b = v1.get_variable("b", [2], initializer=v1.zeros_initializer())
        store = _vs._get_default_variable_store()
        store.add_regularizer(w, tf.nn.l2_loss)
        store.add_regularizer(b, v1.no_regularizer)  # gives no loss: left out
        return x @ w + b

    model = share(tf1_layer, fresh_scope())
    for _ in range(3):
        model(tf.constant(batch()))
    W = model.variables[0]
    assert W.name.endswith("/W:0")
    (loss,) = model.regularization_losses
    np.testing.assert_allclose(loss, (W.numpy() ** 2).sum() / 2, rtol=1e-6)


def decayed(x):
    """A layer whose weight decay goes into the "losses" collection (CIFAR-10 style)."""
    with v1.variable_scope("layer"):
        w = tf1_code.decayed_weight("W", [6, 3], 0.5, tf1_code.WEIGHT_DECAY)
        return tf.matmul(x, w)


def test_the_losses_collection_is_in_regularization_losses_in_every_mode():
    x = batch()
    model = share(decayed, fresh_scope())
    model(tf.constant(x))
    (w,) = model.variables
    new = np.random.default_rng(1).random((6, 3)).astype(np.float32)
    w.assign(new)
    traced = tf.function(lambda x: (model(x), model.regularization_losses)[1])(x)
    model(tf.constant(x))  # eagerly: the latest call's values
    for losses in (traced, model.regularization_losses):
        np.testing.assert_allclose(losses, [tf1_code.WEIGHT_DECAY * (new**2).sum() / 2])
    assert v1.get_collection("losses") == []  # eager calls leave the global graph alone

    with tf.Graph().as_default():
        graph_model = share(decayed, "decayed")
        graph_model(v1.placeholder(tf.float32, [None, 6]))
        graph_model(v1.placeholder(tf.float32, [None, 6]))  # the latest call's, once
        losses = graph_model.regularization_losses
        with v1.Session() as session:
            graph_model.variables[0].load(new, session)
            values = session.run(losses)
    np.testing.assert_allclose(values, [tf1_code.WEIGHT_DECAY * (new**2).sum() / 2])
