"""layers.tf1: TF 1.15's tf.layers on get_variable, against TensorFlow's legacy layers."""

import operator

import numpy as np
import pytest
import tensorflow as tf

import zoo
from layers import tf1
from layers.errors import EagerError, ScopeError, ShapeError, ZooError
from tests import tf1_programs
from tests.conftest import LEGACY_REFERENCE
from tests.external import tf_layers_tests

v1 = tf.compat.v1


@LEGACY_REFERENCE
@pytest.mark.parametrize("program", sorted(tf1_programs.PROGRAMS))
def test_equal_to_tensorflow_legacy_layers_on_the_same_weights(legacy_reference, program):
    expected = tf1_programs.unflat(legacy_reference, program)
    found = tf1_programs.run(tf1_programs.PROGRAMS[program], tf1, expected["variables"])
    assert sorted(found["variables"]) == sorted(expected["variables"])
    assert sorted(found["outputs"]) == sorted(expected["outputs"])
    for part in ("outputs", "updated"):
        for name, value in expected[part].items():
            np.testing.assert_allclose(found[part][name], value, rtol=1e-5, atol=1e-5)
    assert found["regularization"] == pytest.approx(expected["regularization"], rel=1e-5)


@LEGACY_REFERENCE
@pytest.mark.parametrize("name", tf1_programs.LAYERS)
def test_parameters_are_tensorflow_1_15s(legacy_reference, name):
    expected = list(legacy_reference[f"parameters|{name}|"])
    found = tf1_programs.parameters(getattr(tf1, name))
    assert found[: len(expected)] == expected
    assert found == expected or name == "Flatten"  # TF's takes ``name`` in **kwargs


def names(variables):
    return [v.name.removesuffix(":0") for v in variables]


def test_default_names_are_unique_and_name_is_the_exact_scope(graph):
    x = v1.placeholder(tf.float32, [None, 4])
    tf1.dense(x, 3)
    tf1.dense(x, 2, use_bias=False)
    tf1.dense(x, 2, name="fc")
    with v1.variable_scope("tower"):
        tf1.dense(x, 2)
    assert names(v1.global_variables()) == [
        "dense/kernel", "dense/bias", "dense_1/kernel", "fc/kernel", "fc/bias",
        "tower/dense/kernel", "tower/dense/bias",
    ]  # fmt: skip
    with pytest.raises(ScopeError, match="fc/kernel yet .reuse=False., found it already"):
        tf1.dense(x, 2, name="fc")


def test_reuse_shares_the_variables(graph):
    x = v1.placeholder(tf.float32, [None, 4])
    first = tf1.dense(x, 3, name="fc")
    count = len(v1.global_variables())
    again = tf1.dense(2 * x, 3, name="fc", reuse=True)
    with v1.variable_scope("", reuse=True):
        inherited = tf1.dense(3 * x, 3, name="fc")
    assert len(v1.global_variables()) == count == 2
    kernel = v1.global_variables()[0]
    for output in (first, again, inherited):
        assert tf.gradients(output, kernel)[0] is not None


def test_a_layer_object_shares_its_variables_on_every_call(graph):
    x = v1.placeholder(tf.float32, [None, 4])
    layer = tf1.Dense(3, name="fc")
    y = layer(x)
    z = layer.apply(y[:, :1] * tf.ones([1, 4]))
    other = tf1.Dense(3, name="fc")(x)  # a second object with that name: fc_1
    assert layer.scope_name == "fc" and layer.kernel.op.name == "fc/kernel"
    assert names(layer.weights) == ["fc/kernel", "fc/bias"]
    assert names(v1.global_variables())[2:] == ["fc_1/kernel", "fc_1/bias"]
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        feed = np.ones([2, 4], np.float32)
        kernel, bias, out, again = session.run([layer.kernel, layer.bias, y, z], {x: feed})
        np.testing.assert_allclose(out, feed @ kernel + bias, rtol=1e-6)
        np.testing.assert_allclose(again, out[:, :1] * feed @ kernel + bias, rtol=1e-5)
        assert other.shape.as_list() == [None, 3]


def test_reuse_of_a_layer_that_does_not_exist_says_tensorflows_words_and_the_fix(graph):
    x = v1.placeholder(tf.float32, [None, 4])
    with pytest.raises(ScopeError) as raised:
        tf1.conv2d(tf.reshape(x, [-1, 2, 2, 1]), 3, 2, name="missing", reuse=True)
    message = str(raised.value)
    assert message.startswith("missing: expected variable missing/kernel to exist")
    assert "Variable missing/kernel does not exist, or was not created with " in message
    assert "build this scope once with reuse=False first" in message


def test_batch_norm_updates_join_update_ops_and_move_as_numpy_says(graph):
    x = v1.placeholder(tf.float32, [8, 3])
    training = v1.placeholder_with_default(True, [])
    tf1.batch_normalization(x, momentum=0.5, training=training, name="bn")
    updates = v1.get_collection(v1.GraphKeys.UPDATE_OPS)
    tf1.batch_normalization(x, training=False, name="bn", reuse=True)
    assert len(v1.get_collection(v1.GraphKeys.UPDATE_OPS)) == len(updates) == 2
    assert names(v1.trainable_variables()) == ["bn/gamma", "bn/beta"]
    mean, variance = v1.global_variables()[2:]
    batch = np.random.default_rng(0).standard_normal([8, 3]).astype(np.float32) + 2
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        session.run(updates, {x: batch, training: False})
        np.testing.assert_array_equal(session.run(mean), np.zeros(3))
        session.run(updates, {x: batch})
        moved_mean, moved_variance = session.run([mean, variance])
    np.testing.assert_allclose(moved_mean, 0.5 * batch.mean(0), rtol=1e-5)
    np.testing.assert_allclose(moved_variance, 0.5 + 0.5 * batch.var(0), rtol=1e-5)


def test_regularizers_count_once_per_variable(graph):
    def l2(weight):
        return 0.5 * tf.reduce_sum(weight**2)

    x = v1.placeholder(tf.float32, [None, 4])
    for reuse in (None, True):
        tf1.dense(x, 3, kernel_regularizer=l2, bias_regularizer=l2, name="fc", reuse=reuse)
    losses = v1.losses.get_regularization_losses()
    kernel, bias = v1.global_variables()
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        session.run(bias.assign([1.0, 2.0, 3.0]))
        found, kernel_value = session.run([v1.losses.get_regularization_loss(), kernel])
    assert len(losses) == 2
    assert found == pytest.approx(0.5 * (kernel_value**2).sum() + 7.0, rel=1e-6)


def test_dropout_in_training_zeroes_or_scales_every_element(graph):
    x = tf.ones([50, 40])
    training = v1.placeholder_with_default(False, [])
    dropped = tf1.dropout(x, rate=0.25, training=training, seed=1)
    with v1.Session() as session:
        unchanged, values = session.run(dropped), session.run(dropped, {training: True})
    np.testing.assert_array_equal(unchanged, np.ones([50, 40]))
    assert set(np.unique(values)) == {0.0, np.float32(1 / 0.75)}


def test_eagerly_only_inside_a_sharing_template():
    with pytest.raises(EagerError, match="dense: expected a graph"):
        tf1.dense(tf.ones([2, 4]), 3)
    shared = zoo.share(lambda x: tf1.dense(tf1.dense(x, 5), 1), scope="net")
    first, second = shared(tf.ones([2, 4])), shared(tf.ones([2, 4]))
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    assert sorted(names(shared.variables)) == [
        "net/dense/bias", "net/dense/kernel", "net/dense_1/bias", "net/dense_1/kernel",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda x: tf1.dense(x, 0), "dense: expected units to be an int >= 1, found 0"),
        (lambda x: tf1.conv2d(x, 4, 3, padding="full"), "expected padding to be one of"),
        (lambda x: tf1.conv2d(x, 4, (3, 3, 3)), "expected kernel_size to be an int or 2"),
        (lambda x: tf1.Dense(3, kernel_size=2), "found \\['kernel_size'\\]"),
        (lambda x: tf1.batch_normalization(x, virtual_batch_size=0), "virtual_batch_size"),
        (lambda x: tf1.batch_normalization(x, training=1), "expected training to be"),
        (lambda x: tf1.dropout(x, rate=1.0), "expected rate to be a finite number in"),
        (lambda x: tf1.max_pooling2d(x, 2, 0), "expected strides to be an int >= 1"),
    ],
)
def test_bad_arguments_name_the_layer_and_the_fix(graph, build, message):
    with pytest.raises(ZooError, match=message):
        build(v1.placeholder(tf.float32, [None, 4, 4, 2]))


def test_an_input_without_known_channels_is_refused(graph):
    with pytest.raises(ShapeError, match="conv2d: expected an input of rank 4 with"):
        tf1.conv2d(v1.placeholder(tf.float32, [None, 4, 4, None]), 2, 3)


class Scale(tf1.Layer):
    """A user's own TF1 layer: one variable made in ``build``, read in ``call``."""

    def build(self, input_shape):
        ones = v1.ones_initializer()
        self.scale = self.add_weight("scale", [int(input_shape[-1])], initializer=ones)

    def call(self, inputs):
        return inputs * self.scale


def test_a_users_own_layer_subclass_gets_its_scope_and_variables(graph):
    x = v1.placeholder(tf.float32, [None, 3])
    layer = Scale()
    y, z = layer(x), Scale()(x)
    assert names(v1.global_variables()) == ["scale/scale", "scale_1/scale"]
    assert layer.trainable_variables == [layer.scale] and layer.scope_name == "scale"
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        session.run(layer.scale.assign([1.0, 2.0, 3.0]))
        out, other = session.run([y, z], {x: np.ones([2, 3])})
    np.testing.assert_array_equal(out, [[1, 2, 3], [1, 2, 3]])
    np.testing.assert_array_equal(other, np.ones([2, 3]))


def test_a_refused_eager_call_takes_no_default_name():
    """ZooLayer names a function's variables in a scratch graph, then calls it eagerly:
    an earlier refused eager call must not have moved the next default name."""
    with v1.variable_scope("probe"):
        with pytest.raises(EagerError):
            tf1.dense(tf.ones([2, 4]), 3)
        with v1.variable_scope(None, default_name="dense") as next_default:
            assert next_default.name == "probe/dense"


def test_an_eager_layer_object_makes_its_variables_once_and_uses_them_again():
    layer = tf1.Dense(3, name="fc", kernel_regularizer=lambda w: tf.reduce_sum(w**2))
    x = tf.constant(np.random.default_rng(0).standard_normal([2, 4]), tf.float32)
    first, second = layer(x), layer(2 * x)
    kernel, bias = layer.weights
    assert names(layer.weights) == ["fc/kernel", "fc/bias"] and layer.kernel is kernel
    assert len(layer.weights) == 2 and layer(x[:1]).shape == [1, 3]
    np.testing.assert_allclose(first.numpy(), x.numpy() @ kernel.numpy(), rtol=1e-5)
    np.testing.assert_allclose(second.numpy(), 2 * first.numpy(), rtol=1e-5)
    kernel.assign(tf.ones([4, 3]))  # the loss is the weights' value now, not at building
    assert [loss.numpy() for loss in layer.losses] == [12.0]
    with pytest.raises(EagerError, match="dense: expected a graph"):
        tf1.dense(x, 3)  # a function form would make new variables at every call


def test_a_layer_object_in_a_tf_function_makes_its_variables_once():
    layer = tf1.Conv2D(2, 3, padding="same")
    run = tf.function(lambda x: layer(x))
    assert run(tf.ones([1, 5, 5, 1])).shape == [1, 5, 5, 2]
    made = layer.weights
    for batch in (2, 3):  # a retrace for each new batch size
        assert run(tf.ones([batch, 5, 5, 1])).shape == [batch, 5, 5, 2]
    assert len(layer.weights) == 2 and all(map(operator.is_, layer.weights, made))
    assert names(made) == [f"{layer.scope_name}/kernel", f"{layer.scope_name}/bias"]


def test_unnamed_layer_objects_are_numbered_as_tensorflow_names_them(graph):
    x = v1.placeholder(tf.float32, [None, 4])
    first, second = tf1.Dense(2), tf1.Dense(2)
    first(x), second(x)
    assert [first.name, second.name] == ["dense_1", "dense_2"]
    assert [first.scope_name, second.scope_name] == ["dense", "dense_1"]


def test_training_may_be_a_bool_placeholder_of_unknown_shape(graph):
    training = v1.placeholder(tf.bool)
    rate = v1.placeholder(tf.float32)
    dropped = tf1.Dropout(rate, seed=1)(tf.ones([40, 50]), training=training)
    with v1.Session() as session:
        values = session.run(dropped, {training: True, rate: 0.5})
        unchanged = session.run(dropped, {training: False, rate: 0.5})
        kept = session.run(dropped, {training: True, rate: 0.0})
    assert set(np.unique(values)) == {0.0, 2.0}
    np.testing.assert_array_equal(unchanged, np.ones([40, 50]))
    np.testing.assert_array_equal(kept, np.ones([40, 50]))
    with pytest.raises(ZooError, match="expected training to be True, False or a sc"):
        tf1.dropout(tf.ones([2, 2]), training=v1.placeholder(tf.bool, [2]))


def test_sizes_may_be_a_tensor_shape(graph):
    images = v1.placeholder(tf.float32, [None, 7, 9, 2])
    conv = tf1.Conv2D(4, images.shape[1:3], strides=tf.TensorShape([1, 2]))
    pooled = tf1.max_pooling2d(images, tf.TensorShape([2, 3]), 1)
    assert conv(images).shape.as_list() == [None, 1, 1, 4]
    assert conv.kernel.shape.as_list() == [7, 9, 2, 4]
    assert pooled.shape.as_list() == [None, 6, 7, 2]


LAYER_OBJECTS = {
    "dense": (lambda: tf1.Dense(5), [None, 3, 6]),
    "flatten": (lambda: tf1.Flatten(data_format="channels_first"), [None, 3, 4, 5]),
    "conv1d": (lambda: tf1.Conv1D(4, 3, strides=2, padding="same"), [None, 9, 3]),
    "conv2d": (lambda: tf1.Conv2D(5, (3, 2), dilation_rate=2), [2, 9, 8, 3]),
    "conv3d_first": (
        lambda: tf1.Conv3D(3, 2, data_format="channels_first"), [1, 2, 5, 6, 4]
    ),
    "transposed2d": (lambda: tf1.Conv2DTranspose(4, 3, strides=2), [None, 9, 8, 3]),
    "transposed3d": (
        lambda: tf1.Conv3DTranspose(2, 3, strides=2, padding="same"), [1, 5, 6, 4, 2]
    ),
    "separable1d": (lambda: tf1.SeparableConv1D(3, 2, strides=2), [None, 9, 3]),
    "separable2d": (lambda: tf1.SeparableConv2D(6, 3, depth_multiplier=2), [2, 9, 8, 3]),
    "max3d": (lambda: tf1.MaxPooling3D(2, (1, 2, 2), padding="same"), [1, 5, 6, 4, 2]),
    "average1d": (lambda: tf1.AveragePooling1D(3, 2), [None, 9, 3]),
}


@pytest.mark.parametrize("layer", sorted(LAYER_OBJECTS))
def test_compute_output_shape_is_the_shape_a_call_gives(graph, layer):
    make, shape = LAYER_OBJECTS[layer]
    called = make()(v1.placeholder(tf.float32, shape))
    assert make().compute_output_shape(shape).as_list() == called.shape.as_list()


def test_a_convolution_without_known_channels_says_tensorflows_words(graph):
    images = v1.placeholder(tf.float32, [5, 7, 9, None])
    with pytest.raises(ShapeError) as raised:
        tf1.Conv2D(4, 3)(images)
    assert str(raised.value).startswith(
        "conv2d: expected an input of rank 4 with known channels. The channel dimension "
        "of the inputs should be defined. The input_shape received is (5, 7, 9, None); "
    )


def test_a_layers_input_spec_is_checked_at_each_call(graph):
    layer = Scale()
    layer.input_spec = tf1.InputSpec(ndim=2, axes={-1: 3})
    layer(v1.placeholder(tf.float32, [None, 3]))
    with pytest.raises(ShapeError, match="scale: expected inputs as InputSpec.ndim=2, "):
        layer(v1.placeholder(tf.float32, [None, 2, 3]))
    with pytest.raises(ShapeError, match="found shape \\(None, 4\\); give an input of"):
        layer(v1.placeholder(tf.float32, [None, 4]))


def test_the_keras_surface_tensorflow_1_15s_layers_had(graph):
    def l2(weight):
        return tf.reduce_sum(weight**2)

    def unit(weight):
        return weight / tf.norm(weight)

    conv = tf1.SeparableConv2D(2, 3, depthwise_regularizer=l2, pointwise_constraint=unit)
    conv(v1.placeholder(tf.float32, [None, 5, 5, 1]))
    conv.add_loss(tf.constant(3.0))
    collected = v1.get_collection(v1.GraphKeys.REGULARIZATION_LOSSES)
    assert conv.losses == collected and len(collected) == 2
    assert (conv.depthwise_regularizer, conv.pointwise_constraint) == (l2, unit)
    assert conv.pointwise_kernel.constraint is unit and conv.kernel_size == (3, 3)
    assert (conv.padding, conv.data_format, conv.strides) == ("valid", "channels_last",
                                                              (1, 1))  # fmt: skip


def test_tensorflows_tests_run_with_only_their_imports_rewritten(tmp_path):
    source, target = tmp_path / "tf", tmp_path / "copy"
    source.mkdir(), target.mkdir()
    body = "def testX(self):\n    core_layers.dense  # from tf_keras.legacy_tf_layers\n"
    (source / "core_test.py").write_text(
        "from tf_keras.legacy_tf_layers import core as core_layers\n"
        f"from tf_keras.testing_infra import test_combinations\n{body}"
    )
    assert tf_layers_tests.copy_tests(source, target, reference=False) == ["core_test.py"]
    assert (target / "core_test.py").read_text() == (
        "from layers.tf1 import core as core_layers\n"
        f"from tf_keras.src.testing_infra import test_combinations\n{body}"
    )


def test_get_config_gives_the_constructor_arguments(graph):
    conv = tf1.Conv2D(4, 3, strides=2, padding="same", name="c", trainable=False)
    conv(v1.placeholder(tf.float16, [None, 8, 8, 2]))
    config = conv.get_config()
    given = {key: config[key] for key in ("filters", "kernel_size", "strides", "padding")}
    assert given == {"filters": 4, "kernel_size": (3, 3), "strides": (2, 2),
                     "padding": "same"}  # fmt: skip
    assert (config["name"], config["trainable"], config["dtype"]) == ("c", False, "float16")
    arguments = {p.split("=")[0] for p in tf1_programs.parameters(tf1.Conv2D)}
    assert "activation" in config and set(config) <= arguments | {"dtype"}


def cpu_kernel_takes_channels_first(layer):
    """Whether this machine's CPU kernel of ``layer``'s op takes channels first: oneDNN's
    do (TensorFlow's default where the CPU has AVX-512 VNNI or newer), TensorFlow's own
    refuse it, as they did for TF 1.15's layers ("only supported for NHWC")."""
    with tf.Graph().as_default(), v1.Session() as session:
        if layer is tf1.SeparableConv1D:
            x, kernel = tf.zeros([1, 3, 1, 4]), tf.zeros([1, 2, 3, 1])
            op = tf.nn.depthwise_conv2d(x, kernel, [1] * 4, "VALID", data_format="NCHW")
        else:
            x, kernel = tf.zeros([1, 4, 2, 2, 2]), tf.zeros([2, 2, 2, 3, 4])
            op = tf.nn.conv3d_transpose(
                x, kernel, [1, 3, 3, 3, 3], [1] * 5, "VALID", data_format="NCDHW"
            )
        try:
            session.run(op)
        except (tf.errors.UnimplementedError, tf.errors.InvalidArgumentError):
            return False
    return True


@pytest.mark.parametrize(
    "layer",
    [tf1.SeparableConv1D, tf1.Conv3DTranspose, tf1.Conv2DTranspose, tf1.MaxPooling1D,
     tf1.AveragePooling3D],  # fmt: skip
)
def test_channels_first_computes_what_channels_last_does(graph, layer):
    """The channels-last layers equal TF's (tests/tf1_programs.py); the other format
    equals them on the same weights (TF's CPU kernels take float32 in it, not float16).
    Where TF's layers run it channels last without a GPU (Conv2DTranspose, 1-D
    pooling) or always (3-D pooling), so do ours: those run on every CPU."""
    if layer in (tf1.SeparableConv1D, tf1.Conv3DTranspose) and not (
        cpu_kernel_takes_channels_first(layer)
    ):
        pytest.skip(f"this CPU's kernel of {layer.__name__} takes channels last only")
    rank = layer.rank
    shape = [2, *[5, 6, 4][:rank], 3]
    pooling = "Pooling" in layer.__name__
    given = {"pool_size": 2} if pooling else {"filters": 4, "kernel_size": 2}
    last = layer(**given, strides=2)
    first = layer(**given, strides=2, data_format="channels_first")
    x = tf.constant(np.random.default_rng(1).standard_normal(shape), tf.float32)
    to_first = [0, rank + 1, *range(1, rank + 1)]
    expected, found = last(x), first(tf.transpose(x, to_first))
    assignments = [b.assign(a) for a, b in zip(last.weights, first.weights, strict=True)]
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        session.run(assignments)
        expected, found = session.run([tf.transpose(expected, to_first), found])
    np.testing.assert_allclose(found, expected, rtol=1e-5, atol=1e-6)


def test_eagerly_the_activity_loss_is_the_last_calls():
    layer = tf1.Dense(2, kernel_initializer=v1.ones_initializer(),
                      activity_regularizer=tf.reduce_sum)  # fmt: skip
    for scale in (1.0, 2.0, 3.0):
        layer(tf.fill([4, 3], scale))
    (loss,) = layer.losses
    assert loss.numpy() == pytest.approx(4 * 2 * 9.0 / 4)  # sum of 9s over a batch of 4
