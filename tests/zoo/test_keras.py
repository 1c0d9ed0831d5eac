"""ZooLayer: Keras 3 tracks the builder's weights, trains them, and saves ties intact."""

import keras
import numpy as np
import pytest

from layers import ShapeError, ZooError
from zoo.keras import ZooLayer


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
