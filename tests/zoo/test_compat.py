"""zoo.compat: unmodified TF1 code (tf.compat.v1.layers, tf-slim 1.1.0) on Keras 3."""

import importlib.util
import os
import re
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework import ops

import zoo
import zoo.compat
from layers import tf1
from layers.errors import ScopeError, ZooError
from tests import tf1_programs
from tests.conftest import LEGACY_REFERENCE

v1 = tf.compat.v1


@pytest.fixture(autouse=True)
def uninstalled():
    """Each test starts and ends with nothing installed."""
    zoo.compat.uninstall()
    yield
    zoo.compat.uninstall()


def current():
    """``{name: value}`` of every attribute or entry install() may change, as it is
    now."""
    return {change.name: change.current() for change in zoo.compat.changes()}


def same(now, before):
    return now.keys() == before.keys() and all(now[k] is before[k] for k in now)


def test_install_changes_what_is_missing_once_and_uninstall_puts_it_back():
    before = current()
    changed = zoo.compat.install()
    assert zoo.compat.install() == []
    assert {
        "tensorflow.compat.v1.layers", "tensorflow._api.v2.compat.v1.layers",
        "tensorflow.python.layers.normalization", "tensorflow.python.framework.ops.Tensor",
        "tensorflow.python.ops.control_flow_ops.cond",
        "tensorflow.python.framework.ops.Graph.get_collection",
        "tensorflow.python.client.session.BaseSession.run",
        "tensorflow.python.util.numpy_compat.np_asarray",
    } <= set(changed)  # fmt: skip
    now = current()
    assert now["tensorflow.compat.v1.layers"] is tf1 and ops.Tensor is tf.Tensor
    assert now["tensorflow.python.layers.normalization"] is tf1
    assert type(v1.get_collection("any")) is zoo.compat.Collection
    assert zoo.compat.uninstall() == changed[::-1]
    assert same(current(), before)
    assert not hasattr(ops, "Tensor")
    assert type(v1.get_collection("any")) is list
    assert zoo.compat.uninstall() == []


@pytest.mark.parametrize("function_mode", [False, True], ids=["eager", "tf_function"])
def test_collections_test_tensors_and_variables_by_identity(function_mode):
    variable = tf.Variable([1.0, 2.0])

    def membership():
        tensor, scalar = tf.constant([1.0, 2.0]), tf.constant(1.0)
        collection = zoo.compat.Collection([tensor, scalar, "name", 3])
        return [
            tensor in collection, tf.constant([1.0, 2.0]) not in collection,
            tf.constant(1.0) not in collection, variable not in collection,
            variable in zoo.compat.Collection([tensor, variable]),
            "name" in collection, 3 in collection, "other" not in collection,
        ]  # fmt: skip

    assert all(tf.function(membership)() if function_mode else membership())
    assert tf.is_tensor(tf.constant([1.0]) == tf.constant([1.0]))  # == as it was


def test_uninstall_without_install_does_nothing():
    before = current()
    assert zoo.compat.uninstall() == []
    assert same(current(), before)


def test_installed_for_a_block_only():
    before = current()
    with zoo.compat.installed() as changed:
        assert "tensorflow.compat.v1.layers" in changed
        with zoo.compat.installed() as again:  # installed already: stays so
            assert again == []
        assert v1.layers is tf1
    assert same(current(), before)


@pytest.mark.parametrize("version", ["2.22.0", "2.15.1", "3.0.0rc1"])
def test_refuses_a_tensorflow_outside_the_tested_range(monkeypatch, version):
    before = current()
    monkeypatch.setattr(tf, "__version__", version)
    expected = f"expected TensorFlow 2.16 to 2.21 .*found {version}"
    with pytest.raises(ZooError, match=expected):
        zoo.compat.install()
    assert same(current(), before)


def test_importing_layers_and_zoo_changes_nothing():
    code = (
        "import sys, zoo, zoo.compat, layers\n"
        "assert 'tensorflow' not in sys.modules\n"
        "import tensorflow as tf\n"
        "assert tf.executing_eagerly()\n"
        "assert 'tensorflow_datasets' not in sys.modules\n"
        "from tensorflow.python.framework import ops\n"
        "assert not hasattr(ops, 'Tensor')\n"
        "try:\n"
        "    tf.compat.v1.layers.dense\n"
        "except AttributeError as err:\n"
        "    print(err)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tf1_programs.REPO, env=env,
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "`dense` is not available with Keras 3." in done.stdout


def test_tf_compat_v1_layers_resolves_to_layers_tf1():
    import tensorflow.compat.v1 as tf_v1

    zoo.compat.install()
    assert tf_v1.layers.dense is tf1.dense
    assert tf.compat.v1.layers.BatchNormalization is tf1.BatchNormalization


def test_reuse_of_a_layer_that_does_not_exist_says_tensorflows_words(graph):
    zoo.compat.install()
    x = v1.placeholder(tf.float32, [None, 4])
    with pytest.raises(ScopeError) as raised:
        v1.layers.dense(x, 3, name="head", reuse=True)
    message = str(raised.value)
    assert "Variable head/kernel does not exist, or was not created with" in message
    assert "build this scope once with reuse=False first" in message


@pytest.mark.skipif(importlib.util.find_spec("tf_slim") is None, reason="needs tf-slim")
@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_tf_slim_under_a_precision_policy_regularizes_each_float32_weight_once(
    graph, policy
):
    """tf-slim's conv2d and fully_connected are TensorFlow's legacy Keras layers: under
    a policy their weights_regularizer gets the float32 variable, once, reuse or not."""
    import tf_slim as slim

    from zoo import precision

    zoo.compat.install()
    images = v1.placeholder(tf.float32, [4, 8, 8, 3])

    def net(reuse):
        layers = [slim.conv2d, slim.fully_connected]
        with slim.arg_scope(layers, weights_regularizer=slim.l2_regularizer(0.1)):
            h = slim.conv2d(images_in, 4, 3, scope="conv", reuse=reuse)
            h = slim.batch_norm(h, is_training=True, scope="bn", reuse=reuse)
            return slim.fully_connected(slim.flatten(h), 3, scope="fc", reuse=reuse)

    with precision.policy(policy):
        images_in = precision.cast_to_compute(images)
        logits, again = net(None), net(True)
    compute = precision.get_policy(policy).compute_dtype
    assert logits.dtype == again.dtype == compute
    assert {v.dtype for v in v1.global_variables()} == {tf.float32}
    penalties = v1.get_collection(v1.GraphKeys.REGULARIZATION_LOSSES)
    assert [p.dtype for p in penalties] == [tf.float32, tf.float32]  # not once per call
    v1.losses.softmax_cross_entropy(
        tf.one_hot([0, 1, 2, 0], 3), tf.cast(logits, tf.float32)
    )
    train = v1.train.GradientDescentOptimizer(0.1).minimize(v1.losses.get_total_loss())
    weights = [v for v in v1.trainable_variables() if v.name.endswith("weights:0")]
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        penalty_values, weight_values = session.run([penalties, weights])
        session.run(train, {images: np.random.default_rng(6).uniform(size=[4, 8, 8, 3])})
    expected = [0.1 * np.square(w).sum() / 2 for w in weight_values]
    np.testing.assert_allclose(penalty_values, expected, rtol=1e-6)


@pytest.mark.skipif(importlib.util.find_spec("tf_slim") is None, reason="needs tf-slim")
def test_slim_batch_norm_default_path_equals_its_fused_kernel(graph):
    import tf_slim as slim

    zoo.compat.install()
    x = tf.constant(np.random.default_rng(1).standard_normal([4, 6, 6, 3]), tf.float32)
    training = v1.placeholder_with_default(True, [])
    through_layer = slim.batch_norm(x, scale=True, is_training=training, scope="layer")
    fused = slim.batch_norm(
        x, scale=True, is_training=training, updates_collections=None, scope="fused"
    )
    layer_variables = sorted(v1.global_variables(scope="layer"), key=lambda v: v.name)
    fused_variables = sorted(v1.global_variables(scope="fused"), key=lambda v: v.name)
    assert [v.name[5:] for v in layer_variables] == [v.name[5:] for v in fused_variables]
    assert len(layer_variables) == 4  # beta, gamma, moving_mean, moving_variance
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        for variable in layer_variables + fused_variables:
            session.run(variable.assign(tf.fill(variable.shape, 0.5)))
        expected = session.run(fused)
        found = session.run(through_layer)
        session.run(v1.get_collection(v1.GraphKeys.UPDATE_OPS))
        np.testing.assert_allclose(found, expected, rtol=1e-5, atol=1e-5)
        moved, expected_moved = session.run([layer_variables, fused_variables])
    assert not np.allclose(moved[2], 0.5)  # the moving mean moved
    np.testing.assert_allclose(moved, expected_moved, rtol=1e-5)


DISCRIMINATOR = [
    "discriminator/conv2d/kernel", "discriminator/conv2d/bias",
    "discriminator/conv2d_1/kernel", "discriminator/batch_normalization/gamma",
    "discriminator/batch_normalization/beta",
    "discriminator/batch_normalization/moving_mean",
    "discriminator/batch_normalization/moving_variance",
    "discriminator/dense/kernel", "discriminator/dense/bias",
]  # fmt: skip


def test_dcgan_with_tf_layers_has_tf1_names_and_shares_its_discriminator(graph):
    zoo.compat.install()
    real = v1.placeholder(tf.float32, [4, 16, 16, 3])
    fake = tf1_programs.generator(v1.layers, v1.placeholder(tf.float32, [4, 8, 8, 2]))
    on_real = tf1_programs.discriminator(v1.layers, real)
    built = [v.name.removesuffix(":0") for v in v1.global_variables("discriminator")]
    on_fake = tf1_programs.discriminator(v1.layers, fake, reuse=True)
    assert built == DISCRIMINATOR
    assert len(v1.global_variables("discriminator")) == len(DISCRIMINATOR)
    assert len(v1.get_collection(v1.GraphKeys.UPDATE_OPS)) == 6  # G, twice D: 2 each
    trained = v1.trainable_variables("discriminator")
    for logits in (on_real, on_fake):
        assert all(g is not None for g in tf.gradients(logits, trained))


@LEGACY_REFERENCE
def test_dcgan_with_tf_layers_equals_tensorflows_legacy_layers(legacy_reference):
    zoo.compat.install()
    expected = tf1_programs.unflat(legacy_reference, "dcgan")
    found = tf1_programs.run(tf1_programs.dcgan, v1.layers, expected["variables"])
    assert sorted(found["variables"]) == sorted(expected["variables"])
    for part in ("outputs", "updated"):
        for name, value in expected[part].items():
            np.testing.assert_allclose(found[part][name], value, rtol=1e-5, atol=1e-5)


@keras.saving.register_keras_serializable(package="tests")
def critic(images, training):
    """The DCGAN discriminator as a Keras layer's function (``training`` from Keras)."""
    return tf1_programs.discriminator(v1.layers, images, training=training)


def test_dcgan_discriminator_trains_as_a_keras_3_layer_and_keeps_its_weights(tmp_path):
    zoo.compat.install()
    keras.utils.set_random_seed(0)
    layer = zoo.ZooLayer(critic)
    inputs = keras.Input((16, 16, 3), batch_size=8)
    model = keras.Model(inputs, layer(inputs))
    assert sorted(layer.variable_names) == sorted(DISCRIMINATOR)
    rng = np.random.default_rng(0)
    images = rng.standard_normal([64, 16, 16, 3]).astype(np.float32)
    images[:32] += 1.0
    labels = np.repeat([1.0, 0.0], 32).astype(np.float32)[:, None]
    model.compile(keras.optimizers.Adam(1e-3), keras.losses.BinaryCrossentropy(True))
    history = model.fit(images, labels, batch_size=8, epochs=3, verbose=0).history["loss"]
    assert history[-1] < 0.5 * history[0]
    model.save(tmp_path / "critic.keras")
    loaded = keras.saving.load_model(tmp_path / "critic.keras")
    np.testing.assert_array_equal(loaded.predict(images[:8]), model.predict(images[:8]))


@LEGACY_REFERENCE
def test_tensorflows_shim_loses_weights_in_keras_files(legacy_reference):
    """The docs' table: track_tf1_style_variables under tf_keras, saved as .keras."""
    report = tf1_programs.shim_report(legacy_reference)
    assert report["weights"][0] == report["weights"][1] == 8
    assert report["restored"] == {"keras": 2, "h5": 8}
    assert report["difference"]["keras"] > 0.1 and report["difference"]["h5"] == 0.0


def doc_blocks():
    """docs/tf1-layers.md's python blocks, in order."""
    page = (tf1_programs.REPO / "docs" / "tf1-layers.md").read_text()
    return re.findall(r"```python\n(.*?)```", page, flags=re.S)


@pytest.mark.skipif(importlib.util.find_spec("tf_slim") is None, reason="needs tf-slim")
def test_the_page_runs_as_written():
    namespace = {"__name__": "tf1_layers_doc"}
    exec(compile("\n".join(doc_blocks()), "<docs/tf1-layers.md>", "exec"), namespace)  # noqa: S102
    assert len(doc_blocks()) == 2 and namespace["changed"]


@keras.saving.register_keras_serializable(package="tests")
def regularized(x):
    """Two ``tf.layers.dense`` with L2 penalties on both kernels and the last bias."""
    l2 = tf1_programs.l2_regularizer
    h = v1.layers.dense(x, 6, activation=tf.nn.relu, kernel_regularizer=l2)
    return v1.layers.dense(h, 2, kernel_regularizer=l2, bias_regularizer=l2)


def test_tf_layers_regularizers_count_once_in_a_graph_and_in_zoo_layer():
    zoo.compat.install()
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 4])
        for reuse in (None, True):
            with v1.variable_scope("net", reuse=reuse):
                regularized(x)
        in_graph = len(v1.losses.get_regularization_losses())
    layer = zoo.ZooLayer(regularized)
    keras.Model(inputs := keras.Input((4,)), layer(inputs))
    penalized = ("dense/kernel", "dense_1/kernel", "dense_1/bias")
    by_name = dict(zip(layer.variable_names, layer.weights, strict=True))
    expected = sum(0.01 * 0.5 * np.sum(by_name[n].numpy() ** 2) for n in penalized)
    assert in_graph == len(layer.losses) == 3
    assert float(sum(layer.losses)) == pytest.approx(expected, rel=1e-5)
