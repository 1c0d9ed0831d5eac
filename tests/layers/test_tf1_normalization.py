"""layers.tf1's batch norm: TensorFlow's arithmetic in the fused and non-fused paths,
its fused kernel where TF 1.15 takes it in training, two update ops named as TF names
them, renorm, ghost batches, adjustment, float16, a checkpoint trained fused and
restored non-fused (and the reverse)."""

import re

import numpy as np
import pytest
import tensorflow as tf

import zoo
from layers import tf1
from layers.errors import ShapeError, ZooError
from tests import tf1_programs
from tests.conftest import LEGACY_REFERENCE

v1 = tf.compat.v1
BATCH_NORMS = ["batch_norm", "batch_norm_variants", "dcgan"]


@pytest.fixture(scope="module", params=BATCH_NORMS)
def both(request, legacy_reference):
    """A batch-norm program's run by TensorFlow's legacy layers and by ours, from the
    same initial weights: ``(expected, found)``."""
    expected = tf1_programs.unflat(legacy_reference, request.param)
    program = tf1_programs.PROGRAMS[request.param]
    return expected, tf1_programs.run(program, tf1, expected["variables"])


@LEGACY_REFERENCE
def test_moving_statistics_after_several_updates_equal_tensorflows(both):
    expected, found = both
    assert found["trained"].keys() == expected["trained"].keys()
    for name, value in expected["trained"].items():
        np.testing.assert_allclose(found["trained"][name], value, 1e-6, 1e-6, err_msg=name)
    means = {f"{layer}/moving_mean" for layer in updated_layers(expected)}
    means &= set(expected["variables"])  # a layer called twice: its first name scope
    assert means and all(
        not np.array_equal(expected["trained"][n], expected["variables"][n]) for n in means
    )


@LEGACY_REFERENCE
def test_two_update_ops_per_batch_norm_named_as_tensorflows(both):
    expected, found = both
    assert found["update_names"] == expected["update_names"]
    layers = updated_layers(found)
    assert layers and all(layers.count(layer) == 2 for layer in layers)


def updated_layers(results):
    """The layer of each update op in a run's results, in order."""
    names = results["update_names"]
    return [re.split("/AssignMovingAvg|/AssignNewValue|/cond", n)[0] for n in names]


@LEGACY_REFERENCE
@pytest.mark.parametrize("both", ["batch_norm_variants"], indirect=True)
def test_renorm_ghost_batches_adjustment_float16_equal_tensorflows(both):
    expected, found = both
    assert sorted(found["variables"]) == sorted(expected["variables"])
    assert "batch_normalization/renorm_stddev" in found["variables"]
    for part in ("outputs", "updated"):
        for name, value in expected[part].items():
            assert found[part][name].dtype == value.dtype, name
            tolerance = 1e-3 if value.dtype == np.float16 else 1e-6
            np.testing.assert_allclose(found[part][name], value, tolerance, tolerance)


def small_model(images, fused, training):
    """A convolution and a batch norm (``fused`` or not), as TF's own test builds."""
    h = tf1.conv2d(images, 2, 3, use_bias=False, kernel_initializer=v1.ones_initializer())
    return tf1.batch_normalization(h, fused=fused, training=training)


def trained_checkpoint(path, fused):
    """Trains the small model three steps (loss and updates), saves it to ``path``."""
    rng = np.random.default_rng(0)
    with tf.Graph().as_default():
        images = v1.placeholder(tf.float32, [2, 4, 5, 3])
        loss = tf.reduce_sum(tf.abs(small_model(images, fused, True)))
        with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
            step = v1.train.GradientDescentOptimizer(0.01).minimize(loss)
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            for _ in range(3):
                session.run(step, {images: rng.uniform(size=[2, 4, 5, 3])})
            return v1.train.Saver().save(session, str(path))


def restored_outputs(path, fused, batch):
    """The small model restored from ``path``: evaluation and training outputs."""
    with tf.Graph().as_default():
        images = v1.placeholder(tf.float32, [2, 4, 5, 3])
        training = v1.placeholder(tf.bool)
        output = small_model(images, fused, training)
        with v1.Session() as session:
            v1.train.Saver().restore(session, path)
            feeds = [{images: batch, training: mode} for mode in (False, True)]
            return [session.run(output, feed) for feed in feeds]


@pytest.mark.parametrize("saved_fused", [True, False])
def test_a_checkpoint_trained_fused_gives_the_same_outputs_restored_non_fused(
    tmp_path, saved_fused
):
    path = trained_checkpoint(tmp_path / "model", saved_fused)
    batch = np.random.default_rng(1).uniform(size=[2, 4, 5, 3])
    as_saved = restored_outputs(path, saved_fused, batch)
    other = restored_outputs(path, not saved_fused, batch)
    for same, restored in zip(as_saved, other, strict=True):
        np.testing.assert_allclose(restored, same, rtol=1e-6, atol=1e-6)
    assert np.abs(as_saved[0] - as_saved[1]).max() > 0.01  # moving statistics moved


@pytest.mark.parametrize("switched", [True, False], ids=["bool_tensor", "python_bool"])
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("bessel", [True, False])
def test_the_moving_variance_moves_as_tensorflows_paths_move_it(
    graph, fused, bessel, switched
):
    """Fused, toward the unbiased batch variance (TF's kernel), unless TF's own switch
    ``_bessels_correction_test_only`` is off; not fused, toward the biased one. The
    same whether ``training`` is a bool tensor or True (the kernel itself, fused)."""
    x = v1.placeholder(tf.float32, [3, 2, 2, 4])
    training = v1.placeholder(tf.bool) if switched else True  # of unknown shape, as TF's
    layer = tf1.BatchNormalization(momentum=0.75, fused=fused)
    layer._bessels_correction_test_only = bessel
    output = layer(x, training=training)
    assert layer.fused == fused and len(layer.updates) == 2
    batch = np.random.default_rng(2).normal(3.0, 2.0, [3, 2, 2, 4]).astype(np.float32)
    feed = {x: batch}
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        if switched:
            session.run(layer.updates, {x: batch, training: False})  # nothing moves
            np.testing.assert_array_equal(session.run(layer.moving_variance), np.ones(4))
            feed[training] = True
        normalized, _ = session.run([output, layer.updates], feed)
        mean, variance = session.run([layer.moving_mean, layer.moving_variance])
    biased = batch.var((0, 1, 2))
    toward = biased * 12 / 11 if fused and bessel else biased
    np.testing.assert_allclose(mean, 0.25 * batch.mean((0, 1, 2)), rtol=1e-5)
    np.testing.assert_allclose(variance, 0.75 + 0.25 * toward, rtol=1e-5)
    expected = (batch - batch.mean((0, 1, 2))) / np.sqrt(biased + 1e-3)
    np.testing.assert_allclose(normalized, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "arguments, training, kernel",
    [
        ({}, True, True),
        ({"axis": 1}, "constant True", True),  # NCHW
        ({"fused": False}, True, False),
        ({"renorm": True}, True, False),
        ({}, "bool tensor", False),
        ({}, False, False),
    ],
)
def test_the_fused_kernel_trains_where_tensorflows_would_without_a_cond(
    graph, arguments, training, kernel
):
    """TF's ``FusedBatchNormV3`` forward and backward, no ``tf.cond``, where TF 1.15
    takes it and ``training`` is known True; elsewhere ``tf.nn.moments`` and
    ``tf.nn.batch_normalization`` (evaluation: the same ops for a bool and a tensor
    ``training``, so the paths of a model agree bit for bit)."""
    forms = {"constant True": tf.constant(True), "bool tensor": v1.placeholder(tf.bool)}
    training = forms.get(training, training)
    x = v1.placeholder(tf.float32, [3, 4, 4, 2])
    output = tf1.batch_normalization(x, training=training, **arguments)
    tf.gradients(tf.reduce_sum(output), x)
    types = {op.type for op in graph.get_operations()}
    fused = {"FusedBatchNormV3", "FusedBatchNormGradV3"}
    assert (types & fused) == (fused if kernel else set())
    if kernel:
        assert not types & {"Switch", "Merge", "If", "StatelessIf", "Mean"}


def test_the_update_ops_are_tensorflows_names(graph):
    x = v1.placeholder(tf.float32, [4, 3])
    tf1.batch_normalization(x, training=True, name="bn")
    tf1.batch_normalization(x, training=v1.placeholder(tf.bool), name="switched")
    tf1.batch_normalization(x, training=False, name="frozen")
    names = [op.name for op in v1.get_collection(v1.GraphKeys.UPDATE_OPS)]
    assert [n.split("/")[:2] for n in names] == [
        ["bn", "AssignMovingAvg"], ["bn", "AssignMovingAvg_1"],
        ["switched", "cond_2"], ["switched", "cond_3"],
    ]  # fmt: skip


def test_float16_inputs_keep_float32_parameters_and_follow_the_float32_output(graph):
    x = v1.placeholder(tf.float32, [4, 3, 3, 2])
    half = tf1.BatchNormalization(axis=1)
    single = tf1.BatchNormalization(axis=1)
    outputs = half(tf.cast(x, tf.float16), training=True), single(x, training=True)
    assert half.fused and outputs[0].dtype == tf.float16
    assert {v.dtype.base_dtype for v in half.variables} == {tf.float32}
    batch = np.random.default_rng(3).normal(size=[4, 3, 3, 2])
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        found, expected = session.run(outputs, {x: batch})
    np.testing.assert_allclose(found.astype(np.float32), expected, atol=1e-2)


def test_eagerly_in_a_sharing_template_the_kernel_moves_the_statistics():
    """TensorFlow 2 execution: the fused kernel's exponential average, as TF's layer."""
    batch = np.random.default_rng(4).normal(1.0, 2.0, [4, 3, 3, 2]).astype(np.float32)
    shared = zoo.share(lambda x: tf1.batch_normalization(x, momentum=0.5, training=True),
                       scope="net")  # fmt: skip
    shared(batch)
    mean, variance = (v.numpy() for v in shared.variables[2:])
    np.testing.assert_allclose(mean, 0.5 * batch.mean((0, 1, 2)), rtol=1e-5)
    unbiased = batch.var((0, 1, 2)) * 36 / 35
    np.testing.assert_allclose(variance, 0.5 + 0.5 * unbiased, rtol=1e-5)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"axis": [1, 4]}, r"expected 0 <= axis < inputs.rank \(with inputs.rank=4\)"),
        ({"axis": [-5, 1]}, "expected 0 <= .*TensorFlow: Invalid value for `axis`"),
        ({"axis": [1, 2, 1]}, r"expected each axis once \(TensorFlow: Duplicate axis\)"),
        ({"axis": "last"}, "expected axis to be an int or a list of ints, found 'last'"),
        ({"virtual_batch_size": -1}, "expected virtual_batch_size to be an int >= 1"),
        ({"virtual_batch_size": 2, "axis": 0}, "expected an axis other than 0 with"),
        ({"virtual_batch_size": 2, "adjustment": tf.shape}, "expected no adjustment"),
        ({"renorm": True, "renorm_clipping": {"max": 3}}, "expected renorm_clipping keys"),
        ({"momentum": 1.5}, "expected momentum to be"),
    ],
)
def test_bad_arguments_name_the_layer_and_the_fix(graph, arguments, message):
    with pytest.raises(ZooError, match=f"^batch_normalization: {message}"):
        tf1.batch_normalization(v1.placeholder(tf.float32, [6, 5, 4, 3]), **arguments)


def test_an_unknown_feature_dimension_is_refused_in_tensorflows_words(graph):
    with pytest.raises(ShapeError, match="Input has undefined `axis` dimension"):
        tf1.batch_normalization(v1.placeholder(tf.float32, [None, 4, None]))
