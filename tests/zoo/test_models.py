"""Builders: the variable-name contract, reuse, averaging, errors, real-data training."""

import ast
import pathlib

import numpy as np
import pytest
import tensorflow as tf

import zoo
from layers import EagerError, ScopeError, ShapeError, ZooError
from tests.conftest import trainable_names
from zoo import autoencoder, get_model, mlp_classifier, model_average
from zoo.data import load_mnist
from zoo.models import (
    conv_autoencoder,
    discriminator,
    embedding_tower,
    generator,
    q_network,
)
from zoo.models.mlp import resumable_dropout
from zoo.models.parts import hidden_stack

v1 = tf.compat.v1


def placeholders(n_in=784, n_classes=10):
    return (
        v1.placeholder(tf.float32, [None, n_in]),
        v1.placeholder(tf.float32, [None, n_classes]),
    )


def test_tied_autoencoder_variables(graph):
    x, _ = placeholders()
    ae = autoencoder(x, tied=True, scope="ae", n_hidden=625)
    assert trainable_names() == ["ae/decoder/b:0", "ae/encoder/W:0", "ae/encoder/b:0"]
    assert ae.decoder.tied_weight is ae.encoder.w
    assert ae.decoded.shape.as_list() == [None, 784] and ae.encoded.shape.as_list() == [
        None,
        625,
    ]


def test_untied_autoencoder_variables(graph):
    x, _ = placeholders()
    ae = autoencoder(x, tied=False, scope="ae")
    assert "ae/decoder/W:0" in trainable_names() and len(trainable_names()) == 4
    assert ae.decoder.w.shape == (625, 784)


def test_autoencoder_loss_matches_numpy(graph):
    x, _ = placeholders(n_in=6)
    ae = autoencoder(x, tied=True, n_hidden=3)
    xv = np.random.default_rng(1).random((4, 6)).astype(np.float32)
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        loss, decoded = sess.run([ae.loss, ae.decoded], {x: xv})
    expected = -np.mean(xv * np.log(decoded) + (1 - xv) * np.log(1 - decoded))
    np.testing.assert_allclose(loss, expected, rtol=1e-5)


def test_autoencoder_reuse_shares(graph):
    x, _ = placeholders()
    first = autoencoder(x, scope="ae")
    second = autoencoder(x, scope="ae", reuse=True)
    assert len(trainable_names()) == 3 and second.encoder.w is first.encoder.w


def test_mlp_reuse_adds_nothing_new_scope_doubles(graph):
    x, y = placeholders()
    m1 = mlp_classifier(x, y, scope="mlp1", hidden=(625, 625), l2=0.01)
    assert trainable_names() == sorted(
        f"mlp1/{n}:0" for n in ("W_hid_1", "b_hid_1", "W_hid_2", "b_hid_2", "W_RO", "b_RO")
    )
    m2 = mlp_classifier(x, y, scope="mlp1", reuse=True)
    assert len(trainable_names()) == 6
    assert all(a.w is b.w for a, b in zip(m1.layers, m2.layers, strict=True))
    mlp_classifier(x, y, scope="mlp2")
    assert len(trainable_names()) == 12


def test_auto_reuse_creates_then_shares(graph):
    x, y = placeholders()
    mlp_classifier(x, y, scope="m", reuse=v1.AUTO_REUSE)
    mlp_classifier(x, y, scope="m", reuse=v1.AUTO_REUSE)
    assert len(trainable_names()) == 6


def test_mlp_loss_and_accuracy_match_numpy(graph):
    x, y = placeholders(n_in=5, n_classes=3)
    m = mlp_classifier(x, y, hidden=(4,), l2=0.5)
    rng = np.random.default_rng(2)
    xv = rng.random((6, 5)).astype(np.float32)
    yv = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 6)]
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        loss, acc, y_pred, w1 = sess.run(
            [m.loss, m.accuracy, m.y_pred, m.layers[0].w], {x: xv, y: yv}
        )
    expected = -np.sum(yv * np.log(y_pred)) + 0.5 * np.sum(w1**2) / 2
    np.testing.assert_allclose(loss, expected, rtol=1e-4)
    assert acc == pytest.approx(np.mean(y_pred.argmax(1) == yv.argmax(1)))


def test_dropout_masks_follow_the_checkpointed_draw_counter(graph):
    tf.compat.v1.set_random_seed(1)
    x = tf.constant(np.ones((50, 4), np.float32))
    y = tf.constant(np.eye(10, dtype=np.float32)[np.arange(50) % 10])
    model = mlp_classifier(x, y, hidden=(200,), keep_prob=0.75)
    again = mlp_classifier(x, y, hidden=(200,), keep_prob=0.75, reuse=True)
    hidden = model.layers[1].input  # the read-out's input: after dropout
    counters = [v for v in tf.compat.v1.global_variables() if "dropout_draws" in v.name]
    (draws,) = counters  # one counter, shared by the reuse build (``again``)
    with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        masks = [session.run(hidden) != 0 for _ in range(3)]
        relu = session.run(model.layers[0].output)
    with tf.compat.v1.Session() as restored:  # a new session, counter as checkpointed
        restored.run(tf.compat.v1.global_variables_initializer())
        draws.load(1, restored)
        resumed = [restored.run(hidden) != 0 for _ in range(2)]

    assert draws.op.name == "mlp/dropout_draws"
    assert draws not in tf.compat.v1.trainable_variables()
    assert again.scope_name == model.scope_name
    np.testing.assert_array_equal(resumed, masks[1:])
    assert (masks[0] != masks[1]).any()
    kept = np.mean(masks[0][relu > 0])
    assert 0.70 < kept < 0.80  # keep_prob 0.75 of 10,000 units


@pytest.mark.parametrize("keep_prob", [0.0, 1.5, -1, True])
def test_keep_prob_out_of_range_is_refused_before_any_variable(graph, keep_prob):
    x = tf.compat.v1.placeholder(tf.float32, [None, 4])
    y = tf.compat.v1.placeholder(tf.float32, [None, 3])
    with pytest.raises(ZooError, match=r"clf: expected keep_prob, the probability"):
        mlp_classifier(x, y, scope="clf", hidden=(5,), keep_prob=keep_prob)
    assert tf.compat.v1.global_variables() == []
    with pytest.raises(ZooError, match=r"resumable_dropout: expected keep_prob"):
        resumable_dropout(x, 2.0, tf.constant(1, tf.int64))


def test_model_average_is_mean_of_softmaxes(graph):
    x, y = placeholders(n_in=5, n_classes=3)
    m1 = mlp_classifier(x, y, scope="a", hidden=(4,))
    m2 = mlp_classifier(x, y, scope="b", hidden=(4,))
    avg = model_average([m1, m2], y)
    xv = np.random.default_rng(3).random((4, 5)).astype(np.float32)
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        p1, p2, pa = sess.run([m1.y_pred, m2.y_pred, avg.y_pred], {x: xv})
    np.testing.assert_allclose(pa, (p1 + p2) / 2, rtol=1e-6)


def test_model_average_errors(graph):
    x, y = placeholders(n_in=5, n_classes=3)
    m1 = mlp_classifier(x, y, scope="a", hidden=(4,))
    with pytest.raises(
        ZooError, match="model_average: expected at least 2 models, found 1"
    ):
        model_average([m1], y)
    y4 = v1.placeholder(tf.float32, [None, 4])
    m2 = mlp_classifier(x, y4, scope="b", hidden=(4,))
    with pytest.raises(ShapeError, match="model_average: expected outputs of one shape"):
        model_average([m1, m2], y)


def test_reuse_true_before_build(graph):
    x, y = placeholders()
    with pytest.raises(
        ScopeError, match=r"mlp1/W_hid_1 to exist \(reuse=True\), found none"
    ):
        mlp_classifier(x, y, scope="mlp1", reuse=True)


def test_second_build_without_reuse(graph):
    x, _ = placeholders()
    autoencoder(x, scope="ae")
    with pytest.raises(
        ScopeError, match=r"ae/encoder: expected no variable ae/encoder/W yet"
    ):
        autoencoder(x, scope="ae")


def test_bad_reuse_and_scope_values(graph):
    x, _ = placeholders()
    with pytest.raises(ScopeError, match=r"ae: expected reuse in .*found 'yes'"):
        autoencoder(x, scope="ae", reuse="yes")
    with pytest.raises(
        ScopeError, match="expected scope to be a non-empty string, found ''"
    ):
        autoencoder(x, scope="")


def test_input_without_static_width(graph):
    x = v1.placeholder(tf.float32, [None, None])
    with pytest.raises(
        ShapeError, match=r"ae: expected x of shape \[batch, n\] with n known"
    ):
        autoencoder(x, scope="ae")


def mlp_with_dropout(x, **kwargs):
    labels = v1.placeholder(tf.float32, [None, 10])
    return mlp_classifier(x, labels, keep_prob=0.5, **kwargs)


HIDDEN_STACK_BUILDERS = [
    mlp_with_dropout,
    generator,
    discriminator,
    embedding_tower,
    q_network,
]


@pytest.mark.parametrize("builder", HIDDEN_STACK_BUILDERS)
@pytest.mark.parametrize(
    "hidden, message",
    [
        ((8, 0), r"^net: expected hidden\[1\] to be an int >= 1, found 0; "),
        ((8, True), r"^net: expected hidden\[1\] to be an int >= 1, found True; "),
        (
            8,
            r"^net: expected hidden to be a sequence of positive ints, found 8; "
            r"pass e\.g\. hidden=\(256,\), or hidden=\(\) for no hidden layer$",
        ),
        ("64", r"^net: expected hidden to be a sequence of positive ints, found '64'; "),
    ],
)
def test_every_hidden_stack_refuses_bad_widths_alike_before_any_variable(
    graph, builder, hidden, message
):
    x = v1.placeholder(tf.float32, [None, 784])
    with pytest.raises(ShapeError, match=message):
        builder(x, scope="net", hidden=hidden)
    assert v1.global_variables() == []


@pytest.mark.parametrize("builder", HIDDEN_STACK_BUILDERS)
def test_every_hidden_stack_takes_any_sequence_and_none(graph, builder):
    x = v1.placeholder(tf.float32, [None, 784])
    builder(x, scope="listed", hidden=[8, 4])
    builder(x, scope="bare", hidden=())
    names = [v.op.name for v in v1.global_variables()]
    listed = [name[len("listed/") :] for name in names if name.startswith("listed/")]
    bare = [name[len("bare/") :] for name in names if name.startswith("bare/")]
    hid = ["W_hid_1", "b_hid_1", "W_hid_2", "b_hid_2"]
    assert [name for name in listed if name not in hid] == bare
    assert [name for name in listed if name in hid] == hid


def test_hidden_stack_names_the_current_scope(graph):
    x = v1.placeholder(tf.float32, [None, 3])
    with v1.variable_scope("outer"), v1.variable_scope("inner"):
        with pytest.raises(ShapeError, match=r"^outer/inner: expected hidden\[0\] .* -1"):
            hidden_stack(x, 3, (-1,))
        layers, top, width = hidden_stack(x, 3, (5, 2))
    assert [layer.w.name for layer in layers] == [
        "outer/inner/W_hid_1:0",
        "outer/inner/W_hid_2:0",
    ]
    assert width == 2 and top.shape.as_list() == [None, 2]


def test_builder_called_eagerly_raises():
    with pytest.raises(EagerError, match=r"ae: expected a graph .*zoo.share"):
        autoencoder(tf.zeros([2, 784]), scope="ae")


def test_registry():
    assert get_model("autoencoder") is autoencoder
    assert set(zoo.MODELS) >= {"autoencoder", "mlp_classifier"}
    with pytest.raises(ZooError, match="Name of model unknown: 'resnet'"):
        get_model("resnet")


def test_builders_import_shared_parts_from_one_module_never_from_a_sibling():
    models = pathlib.Path(zoo.models.__file__).parent
    shared = {"zoo.models.parts", "zoo.models.losses"}
    for path in sorted(models.glob("*.py")):
        if path.name == "__init__.py" or f"zoo.models.{path.stem}" in shared:
            continue
        tree = ast.parse(path.read_text())
        imported = {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module.startswith("zoo.models")
        }
        assert imported <= shared, f"{path.name} imports {sorted(imported - shared)}"
    assert zoo.models.Classifier is zoo.models.parts.Classifier is zoo.Classifier
    assert zoo.models.Autoencoder is zoo.models.parts.Autoencoder is zoo.Autoencoder


@pytest.mark.slow
def test_mlp_learns_real_mnist(graph, mnist_test_dir):
    """Trained on 8,000 real test digits, >= 0.90 accuracy on the other 2,000."""
    data = load_mnist(data_dir=mnist_test_dir).test
    train = type(data)(data.images[:8000], data.labels[:8000], seed=0)
    held_x, held_y = data.images[8000:], data.labels[8000:]
    v1.set_random_seed(0)
    x, y = placeholders()
    model = mlp_classifier(x, y, scope="mlp", hidden=(256, 256), l2=0.001)
    evaluation = mlp_classifier(x, y, scope="mlp", reuse=True, hidden=(256, 256))
    step = v1.train.AdamOptimizer(1e-3).minimize(model.loss)
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        for _ in range(800):
            bx, by = train.next_batch(100)
            sess.run(step, {x: bx, y: by})
        accuracy = sess.run(evaluation.accuracy, {x: held_x, y: held_y})
    assert accuracy >= 0.90


def test_mlp_l2_goes_through_the_regularizer_once_per_variable(graph):
    x = v1.placeholder(tf.float32, [None, 4])
    y = v1.placeholder(tf.float32, [None, 3])
    first = mlp_classifier(x, y, scope="mlp", hidden=(5, 2), l2=0.5)
    mlp_classifier(x, y, scope="mlp", hidden=(5, 2), l2=0.5, reuse=True)
    collected = v1.get_collection(v1.GraphKeys.REGULARIZATION_LOSSES)
    assert [t.name.split("/Regularizer")[0] for t in collected] == [
        "mlp/W_hid_1",
        "mlp/W_hid_2",
    ]
    total = v1.losses.get_regularization_loss()
    penalty = first.loss - tf.reduce_sum(
        tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=first.logits)
    )
    feed = {x: np.ones((2, 4), np.float32), y: np.eye(3, dtype=np.float32)[:2]}
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        total, penalty, w1, w2 = sess.run(
            [total, penalty, *first.layers[0].params[:1], *first.layers[1].params[:1]], feed
        )
    np.testing.assert_allclose(total, 0.5 * ((w1**2).sum() + (w2**2).sum()) / 2, rtol=1e-5)
    np.testing.assert_allclose(penalty, total, rtol=1e-4)


def test_conv_autoencoder_tied_reads_one_kernel_and_reuse_shares(graph):
    x = v1.placeholder(tf.float32, [None, 64])
    ae = conv_autoencoder(x, scope="cae", filters=3, size=3, regularizer=tf.nn.l2_loss)
    again = conv_autoencoder(x, scope="cae", filters=3, size=3, reuse=True)
    assert sorted(v.name for v in v1.trainable_variables()) == [
        "cae/decoder/b:0",
        "cae/encoder/W:0",
        "cae/encoder/b:0",
    ]
    assert ae.decoder.w is ae.encoder.w and again.decoder.w is ae.encoder.w
    assert len(v1.get_collection(v1.GraphKeys.REGULARIZATION_LOSSES)) == 1
    assert ae.encoded.shape.as_list() == [None, 4, 4, 3]
    assert ae.decoded.shape.as_list() == [None, 64]
    xv = np.random.default_rng(0).random((2, 64)).astype(np.float32)
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        logits, loss = sess.run([ae.logits, ae.loss], {x: xv})
    expected = np.mean(np.maximum(logits, 0) - logits * xv + np.log1p(np.exp(-abs(logits))))
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
    with pytest.raises(ShapeError, match=r"a multiple of stride=2, found width 49"):
        conv_autoencoder(v1.placeholder(tf.float32, [None, 49]), scope="odd")


def test_builders_build_no_optimizer_or_training_op():
    """zoo/models/ holds networks and losses: training lives in zoo.training and zoo.rl
    (their Usage docstrings may show a user's optimizer; the code calls none)."""
    training_calls = {"minimize", "apply_gradients", "repeat_step", "repeat_updates"}
    found = []
    for path in sorted(pathlib.Path(zoo.models.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                name = getattr(func, "attr", getattr(func, "id", ""))
                if name in training_calls or name.endswith("Optimizer"):
                    found.append(f"{path.name}:{node.lineno} {name}")
    assert found == []
