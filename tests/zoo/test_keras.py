"""ZooLayer: Keras 3 tracks the weights of a builder or any TF1 function, trains them
(regularizers included), and saves ties and shared towers intact."""

import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf

from layers import ScopeError, ShapeError, ZooError
from tests.zoo import tf1_code
from zoo.sharing.keras import ZooLayer


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def images(rows=32, width=6, seed=0):
    return np.random.default_rng(seed).random((rows, width)).astype("float32")


def autoencoder_model(tied=True):
    layer = ZooLayer("autoencoder", tied=tied, n_hidden=3, scope="ae")
    model = keras.Sequential([keras.Input((6,)), layer])
    model.compile(keras.optimizers.Adagrad(0.1), "binary_crossentropy")
    return model, layer


def weights_by_name(layer):
    return dict(zip(layer.variable_names, layer.weights, strict=True))


def test_weights_tracked_with_tf1_names():
    _, tied = autoencoder_model(tied=True)
    _, untied = autoencoder_model(tied=False)
    assert tied.variable_names == ["ae/encoder/W", "ae/encoder/b", "ae/decoder/b"]
    assert [w.shape for w in tied.trainable_weights] == [(6, 3), (3,), (6,)]
    assert "ae/decoder/W" in untied.variable_names and len(untied.trainable_weights) == 4


def test_output_is_the_builder_math_with_the_layer_weights():
    model, layer = autoencoder_model()
    x = images(rows=4)
    w = weights_by_name(layer)
    W, b, b_dec = (w[n].numpy() for n in ("ae/encoder/W", "ae/encoder/b", "ae/decoder/b"))
    expected = sigmoid(sigmoid(x @ W + b) @ W.T + b_dec)
    np.testing.assert_allclose(model(x), expected, rtol=1e-5)


def test_fit_then_save_load_round_trip_keeps_the_tie(tmp_path):
    model, layer = autoencoder_model()
    x = images(rows=64)
    before = [w.numpy().copy() for w in layer.trainable_weights]
    history = model.fit(x, x, batch_size=16, epochs=3, verbose=0).history["loss"]
    assert history[-1] < history[0]
    for old, new in zip(before, layer.trainable_weights, strict=True):
        assert not np.allclose(old, new.numpy())
    path = str(tmp_path / "ae.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    reloaded = loaded.layers[0]
    assert isinstance(reloaded, ZooLayer) and len(reloaded.trainable_weights) == 3
    np.testing.assert_allclose(loaded(x), model(x), rtol=1e-6)
    w = weights_by_name(reloaded)
    new_W = images(rows=6, width=3, seed=3)
    w["ae/encoder/W"].assign(new_W)
    code = sigmoid(x @ new_W + w["ae/encoder/b"].numpy())
    expected = sigmoid(code @ new_W.T + w["ae/decoder/b"].numpy())
    np.testing.assert_allclose(loaded(x), expected, rtol=1e-5)


def test_misuse_raises():
    with pytest.raises(ZooError, match="Name of model unknown: 'resnet'"):
        ZooLayer("resnet")
    layer = ZooLayer("autoencoder", output="code", n_hidden=3)
    with pytest.raises(ZooError, match="found 'code'; pick one of .*'encoded'"):
        layer(images(rows=2))
    built = ZooLayer("autoencoder", n_hidden=3)
    built(images(rows=2))
    with pytest.raises(
        ShapeError, match=r"W with shape \[6, 3\], found a request for \[5, 3\]"
    ):
        built(images(rows=2, width=5))


def siamese_model(function=tf1_code.siamese, **kwargs):
    left, right = keras.Input((tf1_code.WIDTH,)), keras.Input((tf1_code.WIDTH,))
    layer = ZooLayer(function, **kwargs)
    model = keras.Model([left, right], layer([left, right]))
    model.compile(keras.optimizers.SGD(0.1), "mse")
    return model, layer


def pairs(rows=16, seed=0):
    rng = np.random.default_rng(seed)
    left, right = (rng.random((rows, tf1_code.WIDTH)).astype("float32") for _ in "lr")
    return left, right, rng.random((rows, 1)).astype("float32")


def siamese_numpy(left, right, W, b):
    code = lambda x: np.maximum(x @ W + b, 0)  # noqa: E731
    return ((code(left) - code(right)) ** 2).sum(axis=1, keepdims=True)


def test_any_tf1_function_one_tower_once_with_its_names():
    model, layer = siamese_model()
    assert layer.variable_names == ["tower/W", "tower/b"]
    assert [w.name for w in layer.weights] == ["tower.W", "tower.b"]
    lines = []
    model.summary(print_fn=lambda line, **_: lines.append(line))
    params = tf1_code.WIDTH * tf1_code.CODE + tf1_code.CODE
    assert any(f"Total params: {params}" in line for line in lines)
    left, right, _ = pairs(rows=5)
    W, b = (w.numpy() for w in layer.weights)
    np.testing.assert_allclose(
        model([left, right]), siamese_numpy(left, right, W, b), rtol=1e-5
    )


def test_regularizer_is_the_layers_loss_once_and_fit_adds_it():
    model, layer = siamese_model()
    W = layer.weights[0].numpy()
    assert len(layer.losses) == 1  # W's penalty once, though two towers read W
    np.testing.assert_allclose(layer.losses[0], tf1_code.L2 * (W**2).sum() / 2, rtol=1e-5)
    left, right, target = pairs()
    W, b = (w.numpy() for w in layer.weights)
    mse = ((siamese_numpy(left, right, W, b) - target) ** 2).mean()
    total = model.evaluate([left, right], target, batch_size=16, verbose=0)
    np.testing.assert_allclose(total, mse + tf1_code.L2 * (W**2).sum() / 2, rtol=1e-4)
    history = model.fit([left, right], target, batch_size=8, epochs=4, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert not np.allclose(layer.weights[0].numpy(), W)


def test_registered_function_saves_and_loads(tmp_path):
    model, layer = siamese_model()
    left, right, target = pairs()
    model.fit([left, right], target, epochs=1, verbose=0)
    path = str(tmp_path / "siamese.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    again = loaded.layers[-1]
    assert again.model is tf1_code.siamese and again.variable_names == layer.variable_names
    np.testing.assert_allclose(loaded([left, right]), model([left, right]), rtol=1e-6)
    assert len(again.losses) == 1


def test_unregistered_function_names_the_fix_at_load(tmp_path):
    model, _ = siamese_model(tf1_code.unregistered_siamese)
    path = str(tmp_path / "plain.keras")
    model.save(path)
    with pytest.raises(
        ZooError, match=r"'unregistered_siamese' .*register_keras_serializable"
    ):
        keras.saving.load_model(path)
    loaded = keras.saving.load_model(
        path, custom_objects={"unregistered_siamese": tf1_code.unregistered_siamese}
    )
    assert loaded.layers[-1].variable_names == ["tower/W", "tower/b"]


def test_output_picks_a_field_of_a_result_and_scope_prefixes_the_names():
    left, right, _ = pairs(rows=3)
    layer = ZooLayer(tf1_code.siamese_parts, output="left_code", scope="net")
    code = layer([left, right])
    assert layer.variable_names == ["net/tower/W", "net/tower/b"]
    W, b = (w.numpy() for w in layer.weights)
    np.testing.assert_allclose(code, np.maximum(left @ W + b, 0), rtol=1e-5)
    with pytest.raises(ZooError, match=r"found a dict with fields \['distance', 'left_"):
        ZooLayer(tf1_code.siamese_parts)([left, right])


def test_a_function_that_creates_variables_on_a_second_call_raises():
    calls = itertools.count()

    def grows(x):
        with tf.compat.v1.variable_scope(f"layer{next(calls)}"):
            w = tf.compat.v1.get_variable("W", [6, 2])
        return x @ w

    with pytest.raises(
        ScopeError,
        match=r"expected this call to reuse the variables of the first call, found it "
        r"would create layer1/W",
    ):
        ZooLayer(grows)(images(rows=2))

    def plain_variable(x):
        return x * tf.Variable(2.0, name="scale")

    with pytest.raises(ZooError, match=r"\['scale'\] made another way \(tf.Variable"):
        ZooLayer(plain_variable)(images(rows=2))
    with pytest.raises(ZooError, match="expected model to be a registered name or a f"):
        ZooLayer(42)


def test_tied_conv_autoencoder_by_registered_name_trains_with_one_kernel():
    keras.utils.set_random_seed(0)  # the loss moves little in 3 epochs: seed the start
    layer = ZooLayer("conv_autoencoder", tied=True, filters=2, size=3)
    model = keras.Sequential([keras.Input((16,)), layer])
    model.compile(keras.optimizers.Adagrad(0.5), "binary_crossentropy")
    assert layer.variable_names == [
        "conv_autoencoder/encoder/W",
        "conv_autoencoder/encoder/b",
        "conv_autoencoder/decoder/b",
    ]
    x = images(rows=32, width=16)
    history = model.fit(x, x, batch_size=8, epochs=3, verbose=0).history["loss"]
    assert history[-1] < history[0] and len(layer.trainable_weights) == 3


def test_a_variable_scope_regularizer_becomes_the_weights_loss():
    def scaled(x):
        with tf.compat.v1.variable_scope("net", regularizer=tf.nn.l2_loss):
            w = tf.compat.v1.get_variable("W", [6, 2])
            b = tf.compat.v1.get_variable("b", [2], regularizer=tf.compat.v1.no_regularizer)
        return x @ w + b

    layer = ZooLayer(scaled)
    layer(images(rows=2))
    (loss,) = layer.losses  # W's; b opted out with no_regularizer
    np.testing.assert_allclose(loss, (layer.weights[0].numpy() ** 2).sum() / 2, rtol=1e-5)
