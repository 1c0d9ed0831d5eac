"""ZooLayer: Keras 3 tracks the weights of a builder or any TF1 function, trains them
(regularizers included), and saves ties and shared towers intact."""

import itertools
import os
import pathlib
import subprocess
import sys
import threading

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo.compat
from layers import ScopeError, ShapeError, ZooError
from tests.zoo import tf1_code
from zoo.sharing.keras import ZooLayer, tf1_shapes
from zoo.sharing.share import checkpoint_name, restore_by_name, share


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
        ShapeError,
        match=r"W with shape \[6, 3\], as built for inputs \[\[2, 6\]\], found a "
        r"request for \[5, 3\] on inputs \[\[2, 5\]\]",
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
        with tf.compat.v1.variable_scope("net"):
            return x * tf.Variable(2.0, name="scale")

    with pytest.raises(
        ZooError,
        match=r"found net/scale \(shape \[\]\) made another way \(tf.Variable, a Keras "
        r"layer\); create each with get_variable, e.g. tf.compat.v1.get_variable\('scale', "
        r"\[\], initializer=...\)",
    ):
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


v1 = tf.compat.v1
SHAPE = (tf1_code.SIDE, tf1_code.SIDE, tf1_code.CHANNELS)
BN_NAMES = ["conv/W", "bn/gamma", "bn/beta", "head/W", "head/b"]  # trainable, made in order
MOVING = ["bn/moving_mean", "bn/moving_variance"]


def conv_images(rows=8, seed=0):
    return np.random.default_rng(seed).random((rows, *SHAPE)).astype("float32")


def classes(rows):
    return np.arange(rows) % tf1_code.CLASSES


def graph_output(function, x, values, **kwargs):
    """``function`` built in a graph on ``x``'s shape, its variables set to ``values``."""
    with tf.Graph().as_default():
        inputs = v1.placeholder(tf.float32, x.shape)
        output = function(inputs, **kwargs)
        with v1.Session() as session:
            for variable in v1.global_variables():
                variable.load(values[checkpoint_name(variable)], session)
            return session.run(output, {inputs: x})


def test_a_batch_norm_nets_graph_checkpoint_restores_by_name_into_the_layer(tmp_path):
    x = conv_images(16)
    with tf.Graph().as_default():
        images = v1.placeholder(tf.float32, [None, *SHAPE])
        training = v1.placeholder_with_default(False, [])
        logits = tf1_code.conv_bn_classifier(images, training)
        cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=classes(16), logits=logits
        )
        loss = tf.reduce_mean(cross_entropy)
        with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
            train = v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        graph_names = [checkpoint_name(v) for v in v1.global_variables()]
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            for _ in range(3):
                session.run(train, {images: x, training: True})
            expected = session.run(logits, {images: x})
            prefix = v1.train.Saver().save(session, str(tmp_path / "tf1.ckpt"))
    layer = ZooLayer(tf1_code.conv_bn_classifier)
    model = keras.Sequential([keras.Input(SHAPE), layer])
    assert layer.variable_names == BN_NAMES + MOVING  # Keras lists trainable ones first
    assert sorted(layer.variable_names) == sorted(graph_names)
    for name, weight in zip(layer.variable_names, layer.weights, strict=True):
        assert weight.name == name.replace("/", ".")
        assert layer.tf1_variables[name] is weight.value
    assert len(restore_by_name(layer.tf1_variables, prefix).restored) == 7
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, rtol=1e-6, atol=1e-7)


def test_fit_moves_the_moving_statistics_predict_does_not_and_keras_files_keep_them(
    tmp_path,
):
    keras.utils.set_random_seed(0)
    layer = ZooLayer(tf1_code.conv_bn_classifier)
    model = keras.Sequential([keras.Input(SHAPE), layer])
    model.compile(
        keras.optimizers.SGD(0.1),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    x = conv_images(32)

    def moving():
        return [layer.tf1_variables[name].numpy().copy() for name in MOVING]

    start = moving()
    model.predict(x, verbose=0)
    assert all(map(np.array_equal, moving(), start))
    history = model.fit(x, classes(32), batch_size=8, epochs=3, verbose=0).history["loss"]
    assert history[-1] < history[0]
    fitted = moving()
    assert not any(map(np.allclose, fitted, start))
    predicted = model.predict(x, verbose=0)
    assert all(map(np.array_equal, moving(), fitted))
    np.testing.assert_allclose(
        predicted,
        graph_output(
            tf1_code.conv_bn_classifier,
            x,
            {n: w.numpy() for n, w in layer.tf1_variables.items()},
            training=False,
        ),
        rtol=1e-5,
        atol=1e-6,
    )
    path = str(tmp_path / "bn.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    again = loaded.layers[0]
    assert again.variable_names == layer.variable_names
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), predicted)
    np.testing.assert_array_equal(again.tf1_variables[MOVING[1]].numpy(), fitted[1])


def test_a_static_batch_reaches_the_function_and_its_losses_collection_counts():
    inputs = keras.Input(SHAPE, batch_size=4)
    layer = ZooLayer(tf1_code.cifar_style)
    model = keras.Model(inputs, layer(inputs))
    blocks = ("conv1", "conv2", "local3", "local4", "softmax_linear")
    kinds = ("weights", "biases")
    assert layer.variable_names == [f"{b}/{k}" for b in blocks for k in kinds]
    assert layer.tf1_variables["local3/weights"].shape == (2 * 2 * tf1_code.FILTERS, 16)
    x, labels = conv_images(8), classes(8)
    values = {name: weight.numpy() for name, weight in layer.tf1_variables.items()}
    np.testing.assert_allclose(
        model(x[:4]), graph_output(tf1_code.cifar_style, x[:4], values), rtol=1e-5
    )
    decay = [
        tf1_code.WEIGHT_DECAY * (values[f"{block}/weights"] ** 2).sum() / 2
        for block in ("local3", "local4")
    ]
    np.testing.assert_allclose(layer.losses, decay, rtol=1e-5)  # once per call
    model.compile(
        keras.optimizers.SGD(0.05),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    logits = model.predict(x, batch_size=4, verbose=0).astype(np.float64)
    log_softmax = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    cross_entropy = -log_softmax[np.arange(8), labels].mean()
    total = model.evaluate(x, labels, batch_size=4, verbose=0)
    np.testing.assert_allclose(total, cross_entropy + sum(decay), rtol=1e-5)
    history = model.fit(x, labels, batch_size=4, epochs=5, verbose=0).history["loss"]
    assert history[-1] < history[0]
    fitted = {name: weight.numpy() for name, weight in layer.tf1_variables.items()}
    decay = [
        tf1_code.WEIGHT_DECAY * (fitted[f"{block}/weights"] ** 2).sum() / 2
        for block in ("local3", "local4")
    ]  # values of the weights fit left, not the tensors of fit's traced step
    assert not np.allclose(fitted["local3/weights"], values["local3/weights"])
    np.testing.assert_allclose(layer.losses, decay, rtol=1e-5)
    np.testing.assert_allclose(model.losses, decay, rtol=1e-5)


def test_a_collection_loss_an_input_reaches_stays_the_calls_own():
    def penalized(x):
        w = tf1_code.decayed_weight("W", [tf1_code.WIDTH, 2], 0.5, tf1_code.WEIGHT_DECAY)
        h = tf.matmul(x, w)
        v1.add_to_collection("losses", tf.reduce_mean(h**2))  # an activity penalty
        return h

    layer = ZooLayer(penalized)
    for rows in (2, 3):
        x = images(rows=rows, width=tf1_code.WIDTH, seed=rows)
        layer(x)
        W = layer.weights[0].numpy()
        decay = tf1_code.WEIGHT_DECAY * (W**2).sum() / 2
        activity = ((x @ W) ** 2).mean()  # this call's, once
        np.testing.assert_allclose(sorted(layer.losses), sorted([decay, activity]), 1e-5)


def test_a_function_keeps_its_own_default_scope_unless_scope_is_given():
    x = images(rows=2, width=tf1_code.WIDTH)
    own, given = ZooLayer(tf1_code.scoped_net), ZooLayer(tf1_code.scoped_net, scope="b")
    own(x), given(x)
    assert own.variable_names == ["my_net/W"] and given.variable_names == ["b/W"]


def test_tf1_layer_regularizers_count_once_per_variable_in_graph_share_and_keras():
    x = images(rows=4, width=tf1_code.WIDTH)
    layer = ZooLayer(tf1_code.tf_layers_net)
    layer(x)
    layer(x)  # another call, no other loss
    values = {name: weight.numpy() for name, weight in layer.tf1_variables.items()}
    penalized = ["extra/scale", "hidden/kernel", "out/kernel"]  # by name
    expected = [tf1_code.L2 * (values[name] ** 2).sum() / 2 for name in penalized]
    np.testing.assert_allclose(sorted(layer.losses), sorted(expected), rtol=1e-5)

    eager = share(tf1_code.tf_layers_net, "regularized")  # a scope no other test shares
    eager(x)
    eager(x)
    for variable in eager.variables:
        variable.assign(values[checkpoint_name(variable).removeprefix("regularized/")])
    np.testing.assert_allclose(eager.regularization_losses, expected, rtol=1e-5)

    with tf.Graph().as_default():
        graph = share(tf1_code.tf_layers_net, "regularized")
        inputs = v1.placeholder(tf.float32, [None, tf1_code.WIDTH])
        for tower in ("tower_0", "tower_1"):  # a TF1 layer names its loss tower_0/...
            with tf.name_scope(tower):
                graph(inputs)
        losses = [tf.convert_to_tensor(loss) for loss in graph.regularization_losses]
        with v1.Session() as session:
            for variable in graph.variables:
                name = checkpoint_name(variable).removeprefix("regularized/")
                variable.load(values[name], session)
            graph_values = session.run(losses)
    np.testing.assert_allclose(sorted(graph_values), sorted(expected), rtol=1e-5)


def test_tf1_membership_tests_of_variables_run_under_compat_and_leave_equality_alone():
    seen = []  # per call of the function: in a tf.Graph, is == element-wise

    def collected_pair(x):
        in_graph = not (tf.executing_eagerly() or tf.inside_function())
        same = tf.constant([1.0, 2.0]) == tf.constant([1.0, 2.0])
        seen.append((in_graph, tf.is_tensor(same)))
        return tf1_code.collected_pair(x)

    x = images(rows=2, width=tf1_code.WIDTH)
    with pytest.raises(ValueError, match="truth value of an array"):
        share(collected_pair, "collected_raw")(x)  # TensorFlow 2's ==, not installed
    with zoo.compat.installed():
        eager = share(collected_pair, "collected_eager")
        traced = tf.function(share(collected_pair, "collected_traced"))
        layer = ZooLayer(collected_pair)
        model = keras.Sequential([keras.Input((tf1_code.WIDTH,)), layer])
        outputs = [eager(x), eager(x), traced(x), layer(x), model.predict(x, verbose=0)]
    for output in outputs:
        np.testing.assert_allclose(output, 6 * x, rtol=1e-6)
    # TensorFlow 2's == throughout (identity in the tf.Graph where ZooLayer finds its
    # variables, as TensorFlow 2 has it there)
    assert set(seen) == {(True, False), (False, True)}


VOCAB, CONTEXT, EMBED, HEADS = 12, 8, 16, 2


def dynamic_shape(x):
    """The static sizes of ``x``, the dynamic size where a static one is unknown."""
    static, dynamic = x.shape.as_list(), tf.shape(x)
    return [dynamic[i] if size is None else size for i, size in enumerate(static)]


def layer_norm(x, scope, epsilon=1e-5):
    """Layer norm written out, its gain and bias from get_variable."""
    with v1.variable_scope(scope):
        width = x.shape[-1].value  # TF1's Dimension
        gain = v1.get_variable("g", [width], initializer=v1.ones_initializer())
        shift = v1.get_variable("b", [width], initializer=v1.zeros_initializer())
        mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
        return (x - mean) * tf.math.rsqrt(variance + epsilon) * gain + shift


def projection(x, scope, width_out):
    """A position-wise dense layer: ``[..., width] -> [..., width_out]``."""
    with v1.variable_scope(scope):
        *outer, width = dynamic_shape(x)
        w = v1.get_variable(
            "w", [width, width_out], initializer=v1.random_normal_initializer(0, 0.1)
        )
        b = v1.get_variable("b", [width_out], initializer=v1.zeros_initializer())
        flat = tf.matmul(tf.reshape(x, [-1, width]), w) + b
        return tf.reshape(flat, outer + [width_out])


def causal_attention(x, scope):
    """Multi-head self-attention, each position reading itself and those before."""
    with v1.variable_scope(scope):
        batch, length, width = dynamic_shape(x)
        head = x.shape[-1].value // HEADS

        def heads(t):  # [batch, length, width] -> [batch, heads, length, head]
            return tf.transpose(tf.reshape(t, [batch, length, HEADS, head]), [0, 2, 1, 3])

        query, key, value = map(heads, tf.split(projection(x, "qkv", 3 * width), 3, 2))
        scores = tf.matmul(query, key, transpose_b=True) * head**-0.5
        before = tf.range(length)[:, None] >= tf.range(length)[None, :]
        scores = tf.where(before, scores, tf.fill(tf.shape(scores), -1e9))
        mixed = tf.matmul(tf.nn.softmax(scores), value)
        merged = tf.reshape(tf.transpose(mixed, [0, 2, 1, 3]), [batch, length, width])
        return projection(merged, "out", width)


@keras.saving.register_keras_serializable(package="tests")
def gpt(ids):
    """A GPT-2-style language model in TF1 idioms: token ids ``[batch, length]`` to
    next-token logits ``[batch, length, VOCAB]``, the read-out tied to the embedding."""
    with v1.variable_scope("model"):
        wte = v1.get_variable(
            "wte", [VOCAB, EMBED], initializer=v1.random_normal_initializer(0, 0.1)
        )
        wpe = v1.get_variable(
            "wpe", [CONTEXT, EMBED], initializer=v1.random_normal_initializer(0, 0.01)
        )
        positions = tf.range(tf.shape(ids)[1])
        h = tf.gather(wte, ids) + tf.gather(wpe, positions)
        with v1.variable_scope("h0"):
            h += causal_attention(layer_norm(h, "ln_1"), "attn")
            hidden = tf.nn.gelu(projection(layer_norm(h, "ln_2"), "fc", 4 * EMBED))
            h += projection(hidden, "proj", EMBED)
        h = layer_norm(h, "ln_f")
        logits = tf.matmul(tf.reshape(h, [-1, EMBED]), wte, transpose_b=True)
        return tf.reshape(logits, dynamic_shape(ids) + [VOCAB])


def counting_sequences(rows, seed=0):
    """Sequences that count modulo VOCAB by a stride of 1, 2 or 3 from a random start:
    after two tokens the next is certain. Returns ``(ids, next ids)``."""
    rng = np.random.default_rng(seed)
    start = rng.integers(0, VOCAB, (rows, 1))
    stride = rng.integers(1, 4, (rows, 1))
    counted = (start + stride * np.arange(CONTEXT + 1)) % VOCAB
    return counted[:, :-1].astype(np.int32), counted[:, 1:]


def test_a_gpt2_style_function_takes_token_ids_and_trains_with_fit(tmp_path):
    v2_shapes = tf.TensorShape([1])[0]
    keras.utils.set_random_seed(0)
    ids = keras.Input((CONTEXT,), dtype="int32")
    layer = ZooLayer(gpt)
    model = keras.Model(ids, layer(ids))
    assert isinstance(v2_shapes, int) and isinstance(tf.TensorShape([1])[0], int)
    assert layer.variable_names[:2] == ["model/wte", "model/wpe"]
    assert len(layer.variable_names) == 2 + 2 * 3 + 2 * 4  # 3 norms, 4 projections
    model.compile(
        keras.optimizers.Adam(0.01),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    x, y = counting_sequences(128)
    history = model.fit(x, y, batch_size=16, epochs=12, verbose=0).history["loss"]
    # from about ln(12) = 2.5 to 0.17 on a 2-core VM; the first token's stride is
    # unknown: the floor is ln(3) / 8 = 0.14
    assert history[0] > 1.5 and history[-1] < 0.25
    assert isinstance(tf.TensorShape([1])[0], int)  # the process's behaviour is back
    model.save(tmp_path / "gpt.keras")  # loading builds on int32 ids again
    loaded = keras.saving.load_model(tmp_path / "gpt.keras")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_tf1_shapes_restores_the_process_behaviour_it_found_in_every_thread():
    def dimension_type():
        return type(tf.TensorShape([1])[0])

    seen = []

    def build():
        for _ in range(50):
            with tf1_shapes():
                seen.append(dimension_type())

    threads = [threading.Thread(target=build) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(seen) == {v1.Dimension} and dimension_type() is int
    v1.disable_v2_tensorshape()  # a TF1 process stays TF1
    try:
        with tf1_shapes():
            pass
        assert dimension_type() is v1.Dimension
    finally:
        v1.enable_v2_tensorshape()


@pytest.mark.slow  # a subprocess that starts TensorFlow
def test_eager_execution_turned_off_is_refused_at_construction_with_the_fix():
    """In a subprocess: the switches are process-wide."""
    program = (
        "import tensorflow as tf\n"
        "from zoo.sharing.keras import ZooLayer\n"
        "for switch in ('disable_eager_execution', 'disable_v2_behavior'):\n"
        "    getattr(tf.compat.v1, switch)()\n"
        "    try:\n"
        "        ZooLayer(abs, name='net')\n"
        "    except ValueError as error:\n"
        "        print(type(error).__name__, error)\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        check=True,
        cwd=pathlib.Path(__file__).resolve().parents[2],
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    ).stdout.splitlines()
    fix = (
        "ran in this process (a module upgraded by tf_upgrade_v2 calls "
        "disable_v2_behavior() at import); the switch is process-wide: import that "
        "module in another process (run its tests in a subprocess) or drop the call"
    )
    assert found == [
        f"ZooError net: expected eager execution, as Keras 3 needs, found it off: "
        f"{call} {fix}"
        for call in (
            "tf.compat.v1.disable_eager_execution() (or a tf.Graph().as_default() block)",
            "tf.compat.v1.disable_v2_behavior()",
        )
    ]


def test_default_names_do_not_depend_on_earlier_eager_layers():
    """Reads TensorFlow's private graph collection ("__varscope",) (its counts of
    default names): an unnamed eager tf.layers object made before must not shift the
    names the layer's call asks for (it asked for dense_1/kernel [6, 8])."""
    from layers import tf1

    def net(x):
        return tf1.dense(tf1.dense(x, 8), 3)

    tf1.Dense(2)(tf.ones([1, 6]))  # takes the default name "dense" eagerly
    inputs = keras.Input((6,))
    layer = ZooLayer(net)
    model = keras.Model(inputs, layer(inputs))
    assert model(np.ones([2, 6], np.float32)).shape == (2, 3)
    assert sorted(layer.variable_names) == [
        "dense/bias", "dense/kernel", "dense_1/bias", "dense_1/kernel",
    ]

