"""Partial and renamed restores from a checkpoint written by plain TF1 code.

The checkpoint is a TF1 program's: hand-made ``get_variable``s under ``siamese/net``,
trained one Adagrad step (slots saved too) with a global step, saved by
``tf.compat.v1.train.Saver``. The new code calls the tower scope ``tower`` and adds a
head the checkpoint does not have.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from layers import ScopeError, ShapeError, ZooError
from tests.zoo import tf1_code
from zoo.sharing.keras import ZooLayer
from zoo.sharing.restore import restore_scope
from zoo.sharing.share import restore_by_name, share

v1 = tf.compat.v1
RENAME = {"net/": "tower/"}


@pytest.fixture(scope="module")
def tf1_checkpoint(tmp_path_factory):
    """Returns (prefix, {"W": array, "b": array}) of the TF1 program's checkpoint."""
    directory = tmp_path_factory.mktemp("tf1")
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, tf1_code.WIDTH])
        with v1.variable_scope("siamese/net"):
            w = v1.get_variable(
                "W",
                [tf1_code.WIDTH, tf1_code.CODE],
                initializer=v1.random_normal_initializer(),
            )
            b = v1.get_variable(
                "b", [tf1_code.CODE], initializer=v1.constant_initializer(0.5)
            )
        loss = tf.reduce_sum(tf.nn.relu(tf.matmul(x, w) + b))
        step = v1.train.get_or_create_global_step()
        train = v1.train.AdagradOptimizer(0.1).minimize(loss, global_step=step)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(train, {x: np.ones((2, tf1_code.WIDTH), np.float32)})
            values = sess.run({"W": w, "b": b})
            prefix = v1.train.Saver().save(sess, str(directory / "model.ckpt"), step)
    return prefix, values


def build_new_code():
    """The new graph: the tower now ``tower``, a new head; returns the variables."""
    left = v1.placeholder(tf.float32, [None, tf1_code.WIDTH])
    with v1.variable_scope("siamese"):
        distance = tf1_code.siamese(left, left)
        head = v1.get_variable("head/W", [1, 1])
    return {v.name: v for v in v1.global_variables()}, distance, head


def test_report_mode_restores_what_matches_and_says_what_was_left_out(
    graph, tf1_checkpoint
):
    prefix, values = tf1_checkpoint
    variables, _, _ = build_new_code()
    restore = restore_scope(prefix, "siamese", "siamese", rename=RENAME, report=True)
    report = restore.report
    assert report.restored == (
        ("siamese/net/W", "siamese/tower/W"),
        ("siamese/net/b", "siamese/tower/b"),
    )
    assert report.left_out_variables == (
        ("siamese/head/W", "no 'head/W' in checkpoint scope 'siamese'"),
    )
    assert [name for name, _ in report.left_out_checkpoint] == [
        "siamese/net/W/Adagrad",
        "siamese/net/b/Adagrad",
    ]
    assert restore.unmatched == ("siamese/net/W/Adagrad", "siamese/net/b/Adagrad")
    text = str(report)
    assert "siamese/tower/W <- siamese/net/W" in text and "left out 1 variables" in text
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        head_before = sess.run(variables["siamese/head/W:0"])
        sess.run(restore.op)
        w, b, head = sess.run(
            [variables[f"siamese/{n}:0"] for n in ("tower/W", "tower/b", "head/W")]
        )
    np.testing.assert_array_equal(w, values["W"])
    np.testing.assert_array_equal(b, values["b"])
    np.testing.assert_array_equal(head, head_before)


def test_strict_default_raises_and_exclude_leaves_the_head_and_slots_alone(
    graph, tf1_checkpoint
):
    prefix, values = tf1_checkpoint
    variables, _, _ = build_new_code()
    with pytest.raises(ScopeError, match=r"siamese/head/W \(no 'head/W' in checkpoint"):
        restore_scope(prefix, "siamese", "siamese", rename=RENAME)
    with pytest.raises(ScopeError, match=r"siamese/tower/W \(no 'tower/W' in checkpoint"):
        restore_scope(prefix, "siamese", "siamese", exclude=["head/"])
    restore = restore_scope(
        prefix,
        "siamese",
        "siamese",
        include_non_trainable=True,
        rename=RENAME,
        exclude=["head/", "Adagrad"],
    )
    assert dict(restore.report.left_out_variables) == {
        "siamese/head/W": "excluded by 'head/'"
    }
    assert dict(restore.report.left_out_checkpoint) == {
        "siamese/net/W/Adagrad": "excluded by 'Adagrad'",
        "siamese/net/b/Adagrad": "excluded by 'Adagrad'",
    }
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        sess.run(restore.op)
        np.testing.assert_array_equal(sess.run(variables["siamese/tower/W:0"]), values["W"])


def test_restore_misuse_is_a_clear_error(graph, tf1_checkpoint):
    prefix, _ = tf1_checkpoint
    build_new_code()
    with pytest.raises(ZooError, match=r"found \['Adam'\] matching nothing; fix the pat"):
        restore_scope(prefix, "siamese", "siamese", rename=RENAME, exclude=["Adam"])
    with pytest.raises(ZooError, match="expected exclude patterns to be regular expr"):
        restore_scope(prefix, "siamese", "siamese", exclude=["head/("])
    with pytest.raises(
        ScopeError, match=r"found 'net/\w[/\w]*' and 'net/\w[/\w]*' both becoming 'net/b"
    ):
        restore_scope(prefix, "siamese", "siamese", rename={"net/W": "net/b"})
    with pytest.raises(ScopeError, match=r"found \['old'\] starting none"):
        restore_scope(prefix, "siamese", "siamese", rename={"old/": "tower/"})
    swapped = {"net/W": "tower/b", "net/b": "tower/W"}
    with pytest.raises(
        ShapeError, match=r"siamese/tower/W \[4, 3\] float32 vs siamese/net/b"
    ):
        restore_scope(prefix, "siamese", "siamese", rename=swapped, exclude=["head/"])


def test_restore_by_name_into_zoo_share_and_a_zoo_layer(tf1_checkpoint):
    prefix, values = tf1_checkpoint
    model = share(tf1_code.siamese, "restored")  # a scope no other test shares
    left = tf.constant(np.ones((2, tf1_code.WIDTH), np.float32))
    model(left, left)
    report = restore_by_name(
        model.variables, prefix, rename={"siamese/net/": "restored/tower/"}
    )
    assert [name for _, name in report.restored] == ["restored/tower/W", "restored/tower/b"]
    np.testing.assert_array_equal(model.variables[0].numpy(), values["W"])

    layer = ZooLayer(tf1_code.siamese, scope="siamese")
    layer([left, left])
    with pytest.raises(ScopeError, match=r"siamese/tower/W \(no 'siamese/tower/W' in"):
        restore_by_name(layer.tf1_variables, prefix)
    report = restore_by_name(layer.tf1_variables, prefix, report=True)
    assert report.restored == () and len(report.left_out_variables) == 2
    report = restore_by_name(
        layer.tf1_variables, prefix, rename={"siamese/net": "siamese/tower"}
    )
    assert report.restored == (
        ("siamese/net/W", "siamese/tower/W"),
        ("siamese/net/b", "siamese/tower/b"),
    )
    np.testing.assert_array_equal(layer.weights[1].numpy(), values["b"])


def test_a_rename_key_covering_only_excluded_names_says_so(graph, tf1_checkpoint):
    prefix, _ = tf1_checkpoint
    build_new_code()
    with pytest.raises(
        ScopeError,
        match=r"expected every renaming key to start some checkpoint name that exclude= "
        r"keeps, found \['net'\] starting only the excluded \['net/W', 'net/W/Adagrad', "
        r"'net/b', 'net/b/Adagrad'\]; drop the key, or the exclude pattern",
    ):
        restore_scope(prefix, "siamese", "siamese", rename=RENAME, exclude=["net/"])


BATCH = 4
SHAPE = (tf1_code.SIDE, tf1_code.SIDE, tf1_code.CHANNELS)


@pytest.fixture(scope="module")
def root_checkpoint(tmp_path_factory):
    """A TF1 program's checkpoint whose names sit at the root (``conv1/weights``):
    ``cifar_style`` trained two steps with its weight decay; returns (prefix, images,
    the evaluated logits, the variable values)."""
    images = np.random.default_rng(3).random((BATCH, *SHAPE)).astype(np.float32)
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [BATCH, *SHAPE])
        logits = tf1_code.cifar_style(x)
        labels = np.arange(BATCH) % tf1_code.CLASSES
        cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits
        )
        loss = tf.reduce_mean(cross_entropy) + tf.add_n(v1.get_collection("losses"))
        step = v1.train.get_or_create_global_step()
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            for _ in range(2):
                sess.run(train, {x: images})
            evaluated = sess.run(logits, {x: images})
            values = sess.run({v.name.split(":")[0]: v for v in v1.trainable_variables()})
            directory = tmp_path_factory.mktemp("root")
            prefix = v1.train.Saver().save(sess, str(directory / "model.ckpt"), step)
    return prefix, images, evaluated, values


@pytest.mark.parametrize("root", ["", "/"])
def test_restore_scope_takes_a_checkpoint_whose_names_sit_at_the_root(
    graph, root_checkpoint, root
):
    prefix, images, evaluated, values = root_checkpoint
    x = v1.placeholder(tf.float32, [BATCH, *SHAPE])
    with v1.variable_scope("cifar"):
        logits = tf1_code.cifar_style(x)
    restore = restore_scope(prefix, root, "cifar", report=True)
    assert sorted(entry for entry, _ in restore.report.restored) == sorted(values)
    assert restore.report.left_out_checkpoint == (
        ("global_step", "no 'global_step' in 'cifar'"),
    )
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        sess.run(restore_scope(prefix, root, "cifar").op)
        np.testing.assert_array_equal(sess.run(logits, {x: images}), evaluated)


def test_a_root_checkpoint_restores_into_a_zoo_layer_with_the_same_outputs(root_checkpoint):
    prefix, images, evaluated, _ = root_checkpoint
    inputs = keras.Input(SHAPE, batch_size=BATCH)
    layer = ZooLayer(tf1_code.cifar_style)
    model = keras.Model(inputs, layer(inputs))
    report = restore_by_name(layer.tf1_variables, prefix)
    assert len(report.restored) == len(layer.weights) == 10
    np.testing.assert_array_equal(model.predict(images, verbose=0), evaluated)
