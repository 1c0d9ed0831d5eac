"""``tf.keras`` as TF1 code reaches it under install() (:mod:`zoo.compat.keras`):
TF 2.15's Keras 2 (tf_keras), against TF 2.15 itself (the reference venv, one
subprocess): checkpoints both ways, variable names, ``fit`` losses, shared
collections; Keras 3 untouched outside TF1 code; the errors."""

import json
import os
import pathlib
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo.compat
from experiments.bench import canned as canned_bench
from layers.errors import ZooError
from tests.zoo import keras_program as p
from zoo.compat import keras as compat_keras

SCRIPT = pathlib.Path(__file__).with_name("keras_reference.py")
v1 = tf.compat.v1


@pytest.fixture
def installed():
    zoo.compat.uninstall()
    zoo.compat.install()
    yield
    zoo.compat.uninstall()


def keras3_trained():
    """A Keras 3 model's weights after 3 seeded steps of fit (TF2 code, eager)."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)]
    )
    model.compile(optimizer=keras.optimizers.Adam(0.1), loss="mse")
    x = np.random.RandomState(0).rand(24, 4).astype(np.float32)
    model.fit(x, x.sum(1), batch_size=8, epochs=1, shuffle=False, verbose=0)
    return [w.numpy() for w in model.weights]


def test_keras_3_trains_the_same_before_and_after_install_and_tf1_keras_use():
    before = keras3_trained()
    with zoo.compat.installed():
        assert v1.keras.layers.Dense.__module__.startswith("tf_keras.")  # Keras 2 loaded
        assert tf.keras.layers.Dense is keras.layers.Dense  # TF2's tf.keras: Keras 3
        after = keras3_trained()
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


def test_uninstall_puts_back_keras_3s_lazy_loader():
    zoo.compat.uninstall()
    before = v1.keras
    changed = zoo.compat.install()
    assert v1.keras is compat_keras.KERAS
    assert "tensorflow.compat.v1.keras" in changed
    zoo.compat.uninstall()
    assert v1.keras is before
    assert v1.keras.layers.Dense is keras.layers.Dense


def test_no_tf_keras_is_a_zoo_error_naming_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, compat_keras.ENGINE, None)
    with pytest.raises(
        ZooError, match=r"expected tf_keras.*pip install 'scope-zoo\[tf1-keras\]"
    ):
        compat_keras.engine()


def test_keras_2s_argument_names(installed):
    np.testing.assert_array_equal(v1.keras.utils.to_categorical(y=[2, 0], num_classes=3),
                                  [[0, 0, 1], [1, 0, 0]])  # fmt: skip


def test_model_to_estimator_of_a_keras_3_model_names_both_kerases(installed, tmp_path):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile("sgd", "mse")
    with pytest.raises(ZooError, match=r"expected a Keras 2 model.*found a Keras 3 model"):
        v1.keras.estimator.model_to_estimator(model, model_dir=str(tmp_path))


@pytest.mark.parametrize(
    "mix",
    [
        lambda k2: k2.layers.Dense(3)(keras.Input((4,))),
        lambda k2: k2.Sequential([keras.layers.Dense(3)]),
        lambda k2: (lambda i: k2.Model(i, keras.layers.Dense(2)(i)))(keras.Input((4,))),
    ],
    ids=["layer_call", "sequential", "functional"],
)
def test_keras_3_objects_in_tf_keras_name_both_kerases(installed, mix):
    with tf.Graph().as_default():
        with pytest.raises(ZooError, match=r"expected Keras 2 objects.*found a Keras 3"):
            mix(v1.keras)


def test_uninstall_puts_back_tf_keras_methods_and_install_guards_them_again():
    """The guards (private tf_keras.src.engine classes: base_layer, sequential)."""
    from tf_keras.src.engine import base_layer, sequential

    original = base_layer.Layer.__dict__["__call__"], sequential.Sequential.add
    with zoo.compat.installed():
        v1.keras.layers  # noqa: B018  (the first use loads tf_keras and guards it)
        assert base_layer.Layer.__dict__["__call__"] is not original[0]
    assert (base_layer.Layer.__dict__["__call__"], sequential.Sequential.add) == original
    with zoo.compat.installed() as changed:  # tf_keras loaded: guarded at install
        assert f"{base_layer.__name__}.Layer.__call__" in changed


def test_model_to_estimator_of_an_uncompiled_model_says_so(installed, tmp_path):
    with tf.Graph().as_default():
        model = v1.keras.Sequential([v1.keras.layers.Dense(2, input_shape=(4,))])
        with pytest.raises(ZooError, match=r"expected a compiled model.*never compiled"):
            v1.keras.estimator.model_to_estimator(model, model_dir=str(tmp_path))


def test_model_to_estimator_on_another_models_checkpoint_says_so(installed, tmp_path):
    x, y = p.data()
    p.estimator(tmp_path).train(p.input_fn(x, y), steps=1)
    estimator, key = p.keras_estimator(tmp_path)
    with pytest.raises(ZooError, match=r"another model's checkpoint"):
        estimator.train(p.input_fn(x, y, key), steps=1)


def test_session_learning_phase_callbacks_and_h5_savedmodel_round_trips(
    installed, tmp_path
):
    """backend.set_session/get_session, learning_phase, fit's callbacks write their
    files, then the trained model saved as h5 and as SavedModel and loaded in fresh
    graphs predicts the same."""
    x, y = p.data(32)
    with tf.Graph().as_default():
        session = v1.Session()
        v1.keras.backend.set_session(session)
        assert v1.keras.backend.get_session() is session
        assert v1.keras.backend.learning_phase().op.type == "PlaceholderWithDefault"
        model = p.network(input_shape=(p.SIDE, p.SIDE, 1))
        model.compile("adam", "mse")
        callbacks = [
            v1.keras.callbacks.ModelCheckpoint(str(tmp_path / "epoch{epoch}.h5")),
            v1.keras.callbacks.TensorBoard(str(tmp_path / "logs")),
            v1.keras.callbacks.EarlyStopping("loss", patience=1),
        ]
        model.fit(x, np.eye(3)[y], epochs=2, callbacks=callbacks, verbose=0)
        predicted = model.predict(x)
        assert (tmp_path / "epoch2.h5").exists() and list(
            (tmp_path / "logs").rglob("*tfevents*")
        )
        model.save(str(tmp_path / "model.h5"))
        model.save(str(tmp_path / "saved_model"), save_format="tf")
    for path in ("model.h5", "saved_model"):
        with tf.Graph().as_default():
            loaded = v1.keras.models.load_model(str(tmp_path / path))
            np.testing.assert_allclose(loaded.predict(x), predicted, rtol=1e-6, atol=1e-7)


def test_tf_slim_tf_layers_and_keras_layers_share_one_graphs_collections(installed):
    """tf-slim (not in the TF 2.15 venv) joins the collections as TF 2.15's tf.layers
    do; Keras layers' variables are in the same GLOBAL and TRAINABLE collections."""
    import tf_slim as slim

    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 8, 8, 1])
        net = slim.conv2d(x, 4, 3, normalizer_fn=slim.batch_norm, scope="slim_conv",
                          weights_regularizer=slim.l2_regularizer(0.1))  # fmt: skip
        net = v1.keras.layers.Conv2D(4, 3, name="keras_conv")(net)
        net = v1.layers.dense(v1.layers.flatten(net), 3, name="tf_dense")
        names = {key: [item.name for item in v1.get_collection(key)]
                 for key in ("trainable_variables", "variables", "model_variables",
                             "update_ops", "regularization_losses")}  # fmt: skip
    assert names["trainable_variables"] == [
        "slim_conv/weights:0", "slim_conv/BatchNorm/beta:0", "keras_conv/kernel:0",
        "keras_conv/bias:0", "tf_dense/kernel:0", "tf_dense/bias:0",
    ]  # fmt: skip
    assert set(names["trainable_variables"]) < set(names["variables"])
    assert all(name.startswith("slim_conv/") for name in names["model_variables"])
    assert len(names["update_ops"]) == 2  # slim's batch norm: mean and variance
    assert names["regularization_losses"] == [
        "slim_conv/kernel/Regularizer/l2_regularizer:0"
    ]


@pytest.mark.slow
def test_fit_in_graph_mode_learns_mnist(installed, mnist_test_dir):
    """fit with v2 behaviour off, on the real MNIST test split's 8,000 + 2,000."""
    from zoo.data import load_mnist

    images = load_mnist(data_dir=mnist_test_dir).test
    x, y = images.images, images.labels
    with tf.Graph().as_default():
        v1.set_random_seed(0)
        model = v1.keras.Sequential([
            v1.keras.layers.Dense(64, activation="relu", input_shape=(784,)),
            v1.keras.layers.Dense(10, activation="softmax"),
        ])  # fmt: skip
        model.compile(
            v1.train.AdamOptimizer(0.002), "categorical_crossentropy", ["accuracy"]
        )
        model.fit(x[:8000], y[:8000], batch_size=64, epochs=2, verbose=0)
        _, accuracy = model.evaluate(x[8000:], y[8000:], verbose=0)
    assert accuracy >= 0.9


# ---- against TF 2.15 (one reference run, one worker) ----


def run(python, out_dir, *arguments):
    """:mod:`keras_reference` run by ``python`` with ``arguments`` (``--zoo``, the
    other run's directory); returns its report."""
    out_dir.mkdir()
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3",
                   "PYTHONPATH": str(pathlib.Path(__file__).parents[2])}  # fmt: skip
    flags = [a for a in arguments if a == "--zoo"]
    others = [str(a) for a in arguments if a != "--zoo"]
    command = [python, str(SCRIPT), *flags, str(out_dir), *others]
    subprocess.run(command, check=True, capture_output=True, env=environment)
    return json.loads((out_dir / "report.json").read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``(root, ours, reference)``: what ours saw running :mod:`keras_program` in a
    TF1 process (model_dirs under ``root/ours``), and what TF 2.15 saw (its own under
    ``root/tf215``, and predicting from ours')."""
    if not os.path.exists(canned_bench.REFERENCE_PYTHON):
        pytest.skip(f"no TF 2.15 reference venv at {canned_bench.REFERENCE_PYTHON}")
    root = tmp_path_factory.mktemp("tf1_keras")
    ours = run(sys.executable, root / "ours", "--zoo")
    reference = run(canned_bench.REFERENCE_PYTHON, root / "tf215", root / "ours")
    return root, ours, reference


def reference_run(test):
    """Slow, and on the one worker that holds :func:`runs`."""
    return pytest.mark.slow(pytest.mark.xdist_group("tf1_keras_reference")(test))


PROGRAMS = sorted(p.PROGRAMS)


@reference_run
@pytest.mark.parametrize("program", PROGRAMS)
def test_tf_2_15s_checkpoint_predicts_the_same_in_ours(runs, program, installed):
    root, _, reference = runs
    predictions = p.predict(p.PROGRAMS[program](root / "tf215" / program))
    np.testing.assert_allclose(predictions, reference[program], rtol=1e-5, atol=1e-6)


@reference_run
@pytest.mark.parametrize("program", PROGRAMS)
def test_ours_checkpoint_predicts_the_same_in_tf_2_15(runs, program):
    _, ours, reference = runs
    np.testing.assert_allclose(reference["other"][program], ours[program],
                               rtol=1e-5, atol=1e-6)  # fmt: skip


@reference_run
@pytest.mark.parametrize("program", PROGRAMS)
def test_checkpoint_variables_are_tf_2_15s(runs, program):
    _, ours, reference = runs
    assert ours["variables"][program] == reference["variables"][program]
    names = [name for name, _ in ours["variables"][program]]
    assert {"model_fn": "sequential/conv2d/kernel", "model_to_estimator": "conv2d/kernel",
            "model_to_estimator_objects": "layer_with_weights-0/kernel/.ATTRIBUTES/"
            "VARIABLE_VALUE"}[program] in names  # fmt: skip
    assert not any("seed_generator" in name for name in names)


@reference_run
def test_fit_in_graph_mode_loses_as_tf_2_15(runs):
    _, ours, reference = runs
    np.testing.assert_allclose(ours["fit"]["losses"], reference["fit"]["losses"], rtol=1e-5)
    np.testing.assert_allclose(ours["fit"]["evaluate"], reference["fit"]["evaluate"],
                               rtol=1e-5)  # fmt: skip
    assert ours["fit"]["losses"][-1] < ours["fit"]["losses"][0] / 1.5


@reference_run
def test_tf_layers_and_keras_layers_share_collections_as_tf_2_15(runs):
    _, ours, reference = runs
    assert ours["collections"] == reference["collections"]
    assert ours["collections"]["update_ops"]  # tf.layers' batch norm: there
