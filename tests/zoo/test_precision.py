"""Precision policies by scope: float32 variables read in bfloat16 or float16."""

import gc
import pathlib
import re
import weakref

import keras
import numpy as np
import pytest
import tensorflow as tf

from layers import BatchNorm, ReadOut, tf1
from layers.errors import ScopeError, ZooError
from tests import tf1_programs
from tests.zoo import tf1_code
from zoo import (
    ZooLayer,
    autoencoder,
    copy_scope,
    frozen_copy,
    mlp_classifier,
    precision,
    repeat_step,
    share,
)
from zoo.data import DataSet
from zoo.data.batches import GraphBatches
from zoo.parallel import towers
from zoo.training.loss_scale import LossScaleOptimizer

v1 = tf.compat.v1


def product_dtypes(graph):
    """The dtypes of every MatMul's inputs in ``graph``."""
    return {
        t.dtype for op in graph.get_operations() if op.type == "MatMul" for t in op.inputs
    }


def test_variables_stay_float32_and_products_run_bfloat16(graph):
    x = v1.placeholder(tf.float32, [None, 784])
    with precision.policy("mixed_bfloat16") as chosen:
        ae = autoencoder(x, scope="ae")
    assert chosen.compute_dtype == tf.bfloat16
    assert [(v.name, v.dtype) for v in v1.global_variables()] == [
        ("ae/encoder/W:0", tf.float32),
        ("ae/encoder/b:0", tf.float32),
        ("ae/decoder/b:0", tf.float32),
    ]
    assert ae.encoded.dtype == tf.bfloat16 and ae.decoded.dtype == tf.bfloat16
    assert ae.loss.dtype == tf.float32
    assert product_dtypes(graph) == {tf.bfloat16}
    gradients = tf.gradients(ae.loss, v1.trainable_variables())
    assert [g.dtype for g in gradients] == [tf.float32] * 3


def test_float32_policy_and_no_policy_build_the_same_graph():
    def ops(policy_name):
        with tf.Graph().as_default() as g:
            x = v1.placeholder(tf.float32, [None, 20])
            y = v1.placeholder(tf.float32, [None, 10])
            if policy_name is None:
                mlp_classifier(x, y, scope="mlp", hidden=(8,))
            else:
                with precision.policy(policy_name):
                    mlp_classifier(x, y, scope="mlp", hidden=(8,))
        return [(op.name, op.type) for op in g.get_operations()]

    assert ops("float32") == ops(None)
    assert "Cast" in {kind for _, kind in ops("mixed_bfloat16")}


def test_reuse_reads_the_same_float32_variable(graph):
    x = v1.placeholder(tf.float32, [None, 784])
    with precision.policy("mixed_bfloat16"):
        first = autoencoder(x, scope="ae")
        count = len(v1.global_variables())
        again = autoencoder(x, scope="ae", reuse=True)
    assert len(v1.global_variables()) == count == 3
    with tf.compat.v1.Session() as session:
        session.run(v1.global_variables_initializer())
        feed = {x: np.random.default_rng(0).random((4, 784), np.float32)}
        a, b = session.run([first.encoded, again.encoded], feed)
    np.testing.assert_array_equal(a.astype(np.float32), b.astype(np.float32))


def casts_of(graph, variable):
    """The Cast ops that read ``variable`` (through its ReadVariableOp)."""
    return [
        op
        for op in graph.get_operations()
        if op.type == "Cast"
        and op.inputs[0].op.type == "ReadVariableOp"
        and op.inputs[0].op.inputs[0] is variable.handle
    ]


def test_a_tied_weight_read_twice_is_cast_once_per_step(graph):
    x = v1.placeholder(tf.float32, [None, 784])
    with precision.policy("mixed_bfloat16"):
        ae = autoencoder(x, tied=True, scope="ae")
    (weight,) = [v for v in v1.global_variables() if v.name == "ae/encoder/W:0"]
    assert len(casts_of(graph, weight)) == 1
    (gradient,) = tf.gradients(ae.loss, [weight])
    assert gradient.dtype == tf.float32
    # Both products' gradients meet in bfloat16, then one cast back to float32.
    assert gradient.op.type == "Cast" and gradient.op.inputs[0].dtype == tf.bfloat16


def test_a_long_lived_getter_keeps_no_graph_alive():
    # A template's getter outlives the graphs it reads in (tf.function traces).
    getter = precision._getter(precision.get_policy("mixed_bfloat16"))  # noqa: SLF001
    graphs = []
    for _ in range(2):
        with tf.Graph().as_default() as built, v1.variable_scope("s", custom_getter=getter):
            first = v1.get_variable("w", [3])
            with v1.variable_scope(v1.get_variable_scope(), reuse=True):
                again = v1.get_variable("w", [3])
            assert again is first  # the cache's answer: the same cast read
        graphs.append(weakref.ref(built))
    del built, first, again
    gc.collect()
    assert [ref() for ref in graphs] == [None, None]


def test_a_read_in_another_context_is_cast_anew(graph):
    with precision.policy("mixed_bfloat16"):
        with v1.variable_scope("s"):
            first = v1.get_variable("w", [3], initializer=v1.ones_initializer())
        (variable,) = v1.global_variables()
        assign = variable.assign_add([1.0, 1.0, 1.0])
        with tf.control_dependencies([assign]), v1.variable_scope("s", reuse=True):
            after = v1.get_variable("w", [3])
        with v1.variable_scope("s", reuse=True):
            again = v1.get_variable("w", [3])

        inside = []

        def body(i, total):
            with v1.variable_scope("s", reuse=True):
                inside.append(v1.get_variable("w", [3]))
            return i + 1, total + tf.cast(inside[-1], tf.float32)

        looped = tf.while_loop(lambda i, _: i < 2, body, (0, tf.zeros([3])))[1]
    assert again is first and after is not first
    assert len(casts_of(graph, variable)) == 2  # first, after the assign
    # The loop body reads anew in its own graph, not the outer cast captured.
    assert inside[0].op.type == "Cast" and inside[0].graph is not graph
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        np.testing.assert_array_equal(session.run(after).astype(np.float32), [2, 2, 2])
        np.testing.assert_array_equal(session.run(looped), [4, 4, 4])


def test_weight_decay_reads_the_float32_variable(graph):
    x = v1.placeholder(tf.float32, [None, 20])
    y = v1.placeholder(tf.float32, [None, 10])
    with precision.policy("mixed_bfloat16"):
        mlp_classifier(x, y, scope="mlp", hidden=(8,), l2=0.01)
    (weight,) = [v for v in v1.global_variables() if v.name == "mlp/W_hid_1:0"]
    l2_inputs = [op.inputs[0] for op in graph.get_operations() if op.type == "L2Loss"]
    assert l2_inputs and {t.dtype for t in l2_inputs} == {tf.float32}
    assert not [t for t in l2_inputs if t.op.type == "Cast"]
    penalty = graph.get_tensor_by_name("mlp/regularization_loss:0")  # the builder's own
    (decay,) = tf.gradients(penalty, [weight])
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        found, stored = session.run([decay, weight])
    # 0.01 * W exactly as float32 computes it: no bfloat16 rounding on the way.
    np.testing.assert_array_equal(found, np.float32(0.01) * stored)


def test_float32_graph_restores_a_mixed_checkpoint(tmp_path):
    data = np.random.default_rng(1).random((8, 784), np.float32)
    path = str(tmp_path / "model.ckpt")
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 784])
        with precision.policy("mixed_bfloat16"):
            ae = autoencoder(x, scope="ae")
        train = v1.train.AdagradOptimizer(0.1).minimize(ae.loss)
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            for _ in range(3):
                session.run(train, {x: data})
            trained = session.run(v1.trainable_variables())
            v1.train.Saver(v1.trainable_variables()).save(session, path)
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 784])
        autoencoder(x, scope="ae")
        with v1.Session() as session:
            v1.train.Saver(v1.trainable_variables()).restore(session, path)
            restored = session.run(v1.trainable_variables())
    for a, b in zip(trained, restored, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_nested_float32_policy_keeps_a_head_in_float32(graph):
    x = v1.placeholder(tf.float32, [None, 784])
    with precision.policy("mixed_bfloat16"):
        ae = autoencoder(x, scope="ae")
        with precision.policy("float32"), v1.variable_scope("head"):
            head = ReadOut(ae.encoded, 625, 10)
        assert precision.current_policy().name == "mixed_bfloat16"
    assert head.logits.dtype == tf.float32 and head.w.dtype == tf.float32
    assert isinstance(head.w, tf.Variable)  # read as it is, no cast
    assert ae.decoder.logits.dtype == tf.bfloat16


def test_mixed_float16_computes_in_float16(graph):
    x = v1.placeholder(tf.float32, [None, 20])
    y = v1.placeholder(tf.float32, [None, 10])
    with precision.policy("mixed_float16"):
        model = mlp_classifier(x, y, scope="mlp", hidden=(8,))
    assert model.logits.dtype == tf.float16
    assert model.y_pred.dtype == tf.float32 and model.loss.dtype == tf.float32


def test_batch_norm_statistics_stay_float32(graph):
    x = v1.placeholder(tf.float32, [None, 6])
    with precision.policy("mixed_bfloat16"), v1.variable_scope("net"):
        h = ReadOut(x, 6, 6, activation=tf.identity).output
        bn = BatchNorm(h, True)
    assert h.dtype == tf.bfloat16 and bn.output.dtype == tf.bfloat16
    assert bn.mean.dtype == tf.float32 and bn.variance.dtype == tf.float32
    assert isinstance(bn.moving_mean, tf.Variable)  # not cast: the update assigns it
    assert bn.moving_mean.dtype == tf.float32
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        data = np.random.default_rng(2).normal(3.0, 2.0, (64, 6)).astype(np.float32)
        mean, h_value = session.run([bn.mean, h], {x: data})
    np.testing.assert_allclose(mean, h_value.astype(np.float32).mean(0), rtol=1e-5)


def test_user_tf1_code_under_a_policy(graph):
    left = v1.placeholder(tf.float32, [None, tf1_code.WIDTH])
    right = v1.placeholder(tf.float32, [None, tf1_code.WIDTH])
    with precision.policy("mixed_bfloat16"):
        distance = tf1_code.siamese(
            precision.cast_to_compute(left), precision.cast_to_compute(right)
        )
    assert distance.dtype == tf.bfloat16
    assert [(v.name, v.dtype) for v in v1.global_variables()] == [
        ("tower/W:0", tf.float32),
        ("tower/b:0", tf.float32),
    ]
    (penalty,) = v1.get_collection(v1.GraphKeys.REGULARIZATION_LOSSES)
    assert penalty.dtype == tf.float32  # TensorFlow hands the variable itself


def test_tf_layers_cast_their_inputs_and_keep_batch_norm_and_decay_float32(graph):
    """tf.compat.v1.layers code (layers.tf1) under a policy: float32 inputs cast on
    entry, batch-norm statistics from float32, regularizers on the float32 kernels."""
    images = v1.placeholder(tf.float32, [8, 6, 6, 3])

    def decay(weight):
        return 0.1 * tf.reduce_sum(tf.square(weight))

    with precision.policy("mixed_bfloat16"):
        features = tf1.conv2d(images, 4, 3, kernel_regularizer=decay)
        normalized = tf1.batch_normalization(features, momentum=0.0, training=True)
        logits = tf1.dense(tf1.flatten(normalized), 3, kernel_regularizer=decay)
    convolution = next(op for op in graph.get_operations() if op.type == "Conv2D")
    assert convolution.inputs[0].dtype == tf.bfloat16 == features.dtype == logits.dtype
    assert normalized.dtype == tf.bfloat16 and product_dtypes(graph) == {tf.bfloat16}
    penalties = v1.get_collection(v1.GraphKeys.REGULARIZATION_LOSSES)
    assert [p.dtype for p in penalties] == [tf.float32, tf.float32]
    (moving_mean,) = [v for v in v1.global_variables() if "moving_mean" in v.name]
    kernels = [v for v in v1.trainable_variables() if v.name.endswith("kernel:0")]
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        feed = {images: np.random.default_rng(4).normal(1.0, 2.0, (8, 6, 6, 3))}
        values, *_ = session.run(
            [features, v1.get_collection(v1.GraphKeys.UPDATE_OPS)], feed
        )
        moved, penalty_values, kernel_values = session.run(
            [moving_mean, penalties, kernels]
        )
    # momentum 0: the moving mean is the batch mean, taken in float32 of the bf16 values
    np.testing.assert_allclose(moved, values.astype(np.float32).mean((0, 1, 2)), rtol=1e-5)
    expected = [0.1 * np.square(k).sum() for k in kernel_values]
    np.testing.assert_allclose(penalty_values, expected, rtol=1e-6)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
@pytest.mark.parametrize("name", sorted(tf1_programs.PROGRAMS))
def test_tf1_programs_in_mixed_precision_follow_their_float32_run(name, policy):
    """Every tf.compat.v1.layers program of tests/tf1_programs.py (dense, convolutions,
    pooling, batch norm, a DCGAN), built under a policy on the float32 run's weights:
    outputs, moved statistics and penalties within the compute dtype's rounding."""
    program = tf1_programs.PROGRAMS[name]

    def under_the_policy(layers_namespace):
        with precision.policy(policy):
            return program(layers_namespace)

    expected = tf1_programs.run(program, tf1)
    found = tf1_programs.run(under_the_policy, tf1, expected["variables"])
    assert {v.dtype for v in found["variables"].values()} <= {np.dtype("float32")}
    # weight penalties exact, activity penalties of bfloat16 outputs within rounding
    np.testing.assert_allclose(found["regularization"], expected["regularization"], 0.01)
    for part in ("outputs", "updated"):
        assert found[part].keys() == expected[part].keys()
        for key, value in expected[part].items():
            value = np.asarray(value, np.float32)
            scale = max(np.abs(value).max(), 1.0)
            got = np.asarray(found[part][key], np.float32)
            np.testing.assert_allclose(got, value, atol=0.03 * scale, err_msg=key)


def test_integer_boolean_and_untrained_variables_are_never_cast(graph):
    with precision.policy("mixed_float16"):
        count = v1.get_variable("count", [], tf.int64, v1.zeros_initializer())
        flag = v1.get_variable("flag", [], tf.bool, v1.zeros_initializer())
        moving = v1.get_variable("moving", [3], trainable=False)
        weight = v1.get_variable("weight", [3])
    assert all(isinstance(v, tf.Variable) for v in (count, flag, moving))
    assert (count.dtype, flag.dtype, moving.dtype) == (tf.int64, tf.bool, tf.float32)
    assert weight.dtype == tf.float16 and not isinstance(weight, tf.Variable)


def test_a_request_for_the_compute_dtype_makes_a_float32_variable(graph):
    with precision.policy("mixed_bfloat16"):
        read = v1.get_variable("w", [2], tf.bfloat16)
    (variable,) = v1.global_variables()
    assert variable.dtype == tf.float32 and read.dtype == tf.bfloat16


def test_unknown_policy_lists_the_three():
    with pytest.raises(
        ZooError,
        match=r"precision.policy: expected the policy to be one of float32, "
        r"mixed_bfloat16, mixed_float16, found 'bf16'; pick one of the three",
    ):
        with precision.policy("bf16"):
            pass


def test_reuse_of_a_variable_in_another_dtype_names_it(graph):
    with v1.variable_scope("old"):
        v1.get_variable("W", [2], tf.float16)
    with precision.policy("mixed_bfloat16"), v1.variable_scope("old", reuse=True):
        with pytest.raises(
            ScopeError,
            match=r"precision.policy\('mixed_bfloat16'\): expected variable old/W stored "
            r"in float32 .*found float16; build that scope",
        ):
            v1.get_variable("W", [2])


# float16 loss scaling ------------------------------------------------------------

RNG = np.random.default_rng(0)
X = RNG.normal(size=(1024, 32)).astype(np.float32)
Y = (X @ RNG.normal(size=(32, 16)) + RNG.normal(size=(1024, 16))).astype(np.float32)
TINY = 1e-7  # the loss's weight: its gradients in float16 lie below 6e-8, float16's least


def tiny_regression_loss(policy_name):
    """A linear regression whose loss is weighted so small that float16 loses its
    gradients: ``TINY * mean((x W + b - y)^2)``, the layer under the policy."""

    def loss_fn(x, y):
        with precision.policy(policy_name):
            prediction = ReadOut(x, 32, 16, scope="linear", activation=tf.identity).logits
        return TINY * tf.reduce_mean(tf.square(tf.cast(prediction, tf.float32) - y))

    return loss_fn


def train_regression(policy_name, scaled, steps_per_run, jit, runs=50):
    """Trains the tiny regression with Adam in ``runs`` runs of ``steps_per_run``
    steps; returns the last step's loss and the final loss scale (or None)."""
    with tf.Graph().as_default():
        v1.set_random_seed(0)
        batches = GraphBatches(DataSet(X, Y), 64)
        optimizer = v1.train.AdamOptimizer(0.05, epsilon=1e-14)
        if scaled:
            optimizer = LossScaleOptimizer(optimizer, growth_steps=50)
        step = repeat_step(
            tiny_regression_loss(policy_name), optimizer, batches, steps_per_run,
            jit_compile=jit,
        )  # fmt: skip
        fetch = optimizer.loss_scale if scaled else None
        losses, scale = run_repeated(step, batches, runs, fetch)
    return losses[-1], scale


def run_repeated(step, batches, runs, fetch_after=None):
    """Runs ``runs`` runs of a :class:`RepeatedStep` in a new session of the default
    graph; returns the last run's losses and ``fetch_after``'s value (or None)."""
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        batches.initialize(session)
        for _ in range(runs):
            feed = batches.next_feed(session, step.steps_per_run)
            _, losses = session.run([step.train_op, step.losses], feed)
        return losses, session.run(fetch_after) if fetch_after is not None else None


@pytest.mark.parametrize("steps_per_run, jit", [(1, False), (8, False), (8, True)])
def test_float16_underflows_without_scaling_and_trains_with_it(steps_per_run, jit):
    runs = 400 // steps_per_run
    reference, _ = train_regression("float32", False, steps_per_run, jit, runs)
    unscaled, _ = train_regression("mixed_float16", False, steps_per_run, jit, runs)
    scaled, scale = train_regression("mixed_float16", True, steps_per_run, jit, runs)
    assert unscaled > 10 * reference  # the gradients underflowed: it barely trained
    assert abs(scaled - reference) <= 0.02 * reference
    assert scale > 2.0**15  # it grew after 50 finite steps at a time


def test_non_finite_gradients_skip_the_update_and_halve_the_scale(graph):
    x = v1.placeholder(tf.float32, [None, 32])
    y = v1.placeholder(tf.float32, [None, 16])
    optimizer = LossScaleOptimizer(v1.train.AdamOptimizer(0.05), initial_scale=2.0**40)
    loss = tiny_regression_loss("mixed_float16")(x, y) / TINY  # float16 overflows
    train = optimizer.minimize(loss)
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        before = session.run(v1.trainable_variables())
        session.run(train, {x: X[:64], y: Y[:64]})
        after = session.run(v1.trainable_variables())
        scale, finite_steps = session.run([optimizer.loss_scale, optimizer.finite_steps])
        first_moment = optimizer.get_slot(v1.trainable_variables()[0], "m")
        assert not session.run(first_moment).any()  # Adam's slot did not move either
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)
    assert scale == 2.0**39 and finite_steps == 0


def test_the_scale_grows_after_growth_steps_finite_steps(graph):
    x = v1.placeholder(tf.float32, [None, 32])
    y = v1.placeholder(tf.float32, [None, 16])
    optimizer = LossScaleOptimizer(v1.train.AdamOptimizer(0.05), 4.0, growth_steps=3)
    train = optimizer.minimize(tiny_regression_loss("mixed_float16")(x, y))
    scales = []
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        for _ in range(7):
            session.run(train, {x: X[:64], y: Y[:64]})
            scales.append(session.run(optimizer.loss_scale))
    assert scales == [4.0, 4.0, 8.0, 8.0, 8.0, 16.0, 16.0]


def test_a_schedule_reads_the_global_step_of_the_step_it_drives():
    """The step count moves after the update (as TF's optimizers move it), so a
    learning rate of the global step uses the step's own count, every time."""
    rates = set()
    for _ in range(40):  # unordered, 180 of 200 sessions read the incremented count
        with tf.Graph().as_default():
            step = v1.train.get_or_create_global_step()
            weight = v1.get_variable("w", initializer=0.0)
            rate = tf.cast(step, tf.float32) + 1.0  # 1.0 at step 0
            optimizer = LossScaleOptimizer(v1.train.GradientDescentOptimizer(rate))
            train = optimizer.minimize(weight, global_step=step)  # gradient 1
            with v1.Session() as session:
                session.run(v1.global_variables_initializer())
                session.run(train)
                rates.add(-session.run(weight))
                assert session.run(step) == 1
    assert rates == {1.0}


def test_the_scale_is_checkpointed_state(graph):
    x = v1.placeholder(tf.float32, [None, 32])
    y = v1.placeholder(tf.float32, [None, 16])
    first, second = (LossScaleOptimizer(v1.train.AdamOptimizer(0.05)) for _ in range(2))
    loss = tiny_regression_loss("mixed_float16")(x, y)
    first.minimize(loss)
    second.minimize(loss)
    names = {v.name for v in v1.global_variables()}
    assert {"loss_scale/scale:0", "loss_scale/finite_steps:0"} <= names
    assert {"loss_scale_1/scale:0", "loss_scale_1/finite_steps:0"} <= names  # apart
    assert not {v.name for v in v1.trainable_variables()} & {"loss_scale/scale:0"}


def test_loss_scale_optimizer_checks_its_arguments():
    with pytest.raises(ZooError, match=r"LossScaleOptimizer: expected a tf.compat.v1"):
        LossScaleOptimizer("adam")
    with pytest.raises(
        ZooError, match=r"LossScaleOptimizer: expected the initial scale to be a finite "
        r"number >= 1, found 0.5; pass e.g. initial_scale=2.0\*\*15",
    ):  # fmt: skip
        LossScaleOptimizer(v1.train.AdamOptimizer(0.05), initial_scale=0.5)
    with pytest.raises(ZooError, match=r"expected the steps before the scale grows to be"):
        LossScaleOptimizer(v1.train.AdamOptimizer(0.05), growth_steps=0)


# Everywhere the zoo trains -------------------------------------------------------

_LATENT = np.random.default_rng(3).normal(size=(256, 4)) @ np.random.default_rng(4).normal(
    size=(4, 784)
)
IMAGES = (_LATENT > 0).astype(np.float32)  # binary images of four factors: learnable
NO_LABELS = np.zeros((256, 10), np.float32)


def autoencoder_loss_after(policy_name, steps_per_run, jit, runs=10):
    """The last loss of ``runs`` runs of an autoencoder's repeat_step (Adagrad 0.5)."""
    with tf.Graph().as_default():
        v1.set_random_seed(0)
        batches = GraphBatches(DataSet(IMAGES, NO_LABELS), 32)

        def loss_fn(images, labels):
            with precision.policy(policy_name):
                return autoencoder(
                    images, scope="ae", reuse=v1.AUTO_REUSE, n_hidden=64
                ).loss

        step = repeat_step(
            loss_fn, v1.train.AdagradOptimizer(0.5), batches, steps_per_run, jit_compile=jit
        )
        assert {v.dtype for v in v1.global_variables()} == {tf.float32}
        losses, _ = run_repeated(step, batches, runs)
    return losses[-1]


@pytest.mark.parametrize("jit", [False, True], ids=["no_xla", "xla"])
def test_repeat_step_trains_in_bfloat16_to_float32s_loss(jit):
    float32 = autoencoder_loss_after("float32", 4, jit)
    bfloat16 = autoencoder_loss_after("mixed_bfloat16", 4, jit)
    first = autoencoder_loss_after("float32", 4, jit, runs=1)
    assert float32 < 0.97 * first  # it trained
    assert abs(bfloat16 - float32) <= 0.01 * float32


def bn_classifier(dtypes):
    """A towers model: dense -> batch norm -> ReLU -> read-out, under mixed_bfloat16;
    appends the batch norm's statistics' and output's dtypes to ``dtypes``."""

    def model(images, labels):
        with precision.policy("mixed_bfloat16"):
            h = ReadOut(images, 16, 8, scope="dense", activation=tf.identity).output
            bn = BatchNorm(h, True)
            readout = ReadOut(tf.nn.relu(bn.output), 8, 3, scope="readout")
        dtypes.append((bn.mean.dtype, bn.variance.dtype, bn.output.dtype))
        return tf.reduce_mean(
            tf.nn.softmax_cross_entropy_with_logits(
                labels=labels, logits=tf.cast(readout.logits, tf.float32)
            )
        )

    return model


def test_sync_towers_under_bfloat16_keep_the_moments_float32():
    rng = np.random.default_rng(4)
    images = rng.normal(1.0, 2.0, (64, 16)).astype(np.float32)
    labels = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 64)]
    trained, dtypes = [], []
    for n in (1, 2):
        with tf.Graph().as_default():
            v1.set_random_seed(1)
            x, y = tf.constant(images), tf.constant(labels)
            loss, _ = towers.data_parallel(
                bn_classifier(dtypes), n, scope="net", batch_norm="sync"
            )(x, y)
            train = v1.train.GradientDescentOptimizer(0.5).minimize(loss)
            assert {v.dtype for v in v1.global_variables()} == {tf.float32}
            with v1.Session(config=towers.session_config(n)) as session:
                session.run(v1.global_variables_initializer())
                for _ in range(3):
                    session.run(train)
                trained.append(session.run({v.op.name: v for v in v1.global_variables()}))
    assert set(dtypes) == {(tf.float32, tf.float32, tf.bfloat16)}
    one, two = trained
    assert "net/bn/moving_mean" in one
    for name, value in one.items():  # bfloat16 products: equal to its round-off
        np.testing.assert_allclose(two[name], value, atol=2e-2, rtol=2e-2)


def test_share_and_tf_function_under_a_policy():
    model = share(autoencoder, "ae", n_hidden=32)
    images = tf.constant(IMAGES[:32])

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            with precision.policy("mixed_bfloat16"):
                result = model(images)
        gradients = tape.gradient(result.loss, model.trainable_variables)
        for variable, gradient in zip(model.trainable_variables, gradients, strict=True):
            variable.assign_sub(20.0 * gradient)
        return result.loss, result.encoded

    first, encoded = step()
    for _ in range(20):
        last, _ = step()
    assert encoded.dtype == tf.bfloat16 and first.dtype == tf.float32
    assert [v.dtype for v in model.variables] == [tf.float32] * 3
    assert len(model.variables) == 3  # one set, shared by every trace and call
    assert float(last) < 0.9 * float(first)


def test_zoo_layer_follows_the_keras_dtype_policy():
    layer = ZooLayer("autoencoder", output="decoded", dtype="mixed_bfloat16")
    assert layer(IMAGES[:4]).dtype == tf.bfloat16
    assert [w.dtype for w in layer.weights] == ["float32"] * 3
    normalized = ZooLayer(tf1_code.normalized_pair, dtype="mixed_bfloat16")
    inputs = keras.Input((tf1_code.WIDTH,))
    model = keras.Model(inputs, normalized(inputs)[0])
    model.compile("sgd", "mse")
    data = np.random.default_rng(5).normal(2.0, 3.0, (64, tf1_code.WIDTH))
    model.fit(data, np.zeros_like(data), batch_size=64, epochs=1, verbose=0)
    moving_mean = normalized.non_trainable_weights[0]
    assert moving_mean.dtype == "float32"  # not autocast: fit moved it
    np.testing.assert_allclose(moving_mean.numpy(), 0.01 * data.mean(0), rtol=0.05)


def tf_layers_classifier(images, training):
    """TF1 code whose variables take their inputs' dtype (tf.layers' default)."""
    decay = tf1.dense(images, 8, kernel_regularizer=lambda w: 0.1 * tf.nn.l2_loss(w))
    normalized = tf1.batch_normalization(decay, momentum=0.0, training=training)
    return tf1.dense(tf.nn.relu(normalized), 3)


def test_zoo_layer_under_a_mixed_policy_stores_tf_layers_variables_in_float32():
    layer = ZooLayer(tf_layers_classifier, dtype="mixed_bfloat16")
    inputs = keras.Input((6,))
    model = keras.Model(inputs, layer(inputs))
    assert {w.dtype for w in layer.weights} == {"float32"}  # not the inputs' bfloat16
    assert [w.dtype for w in layer.tf1_variables.values()] == [tf.float32] * 8
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    data = np.random.default_rng(7).normal(1.0, 2.0, (32, 6)).astype(np.float32)
    history = model.fit(data, np.arange(32) % 3, batch_size=32, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert [loss.dtype for loss in layer.losses] == [tf.float32]
    kernel = layer.tf1_variables["dense/kernel"].numpy()
    np.testing.assert_allclose(layer.losses[0], 0.05 * np.square(kernel).sum(), rtol=1e-5)


def test_a_state_copy_moves_float32_variables_built_under_a_policy(graph):
    x = v1.placeholder(tf.float32, [None, 784])
    with precision.policy("mixed_bfloat16"):
        autoencoder(x, scope="online", n_hidden=16)
    autoencoder(x, scope="target", n_hidden=16)
    copy = copy_scope("online", "target")
    assert len(copy.pairs) == 3
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        session.run(copy.op)
        online, target = (
            session.run(v1.trainable_variables(scope)) for scope in ("online", "target")
        )
    for a, b in zip(online, target, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_frozen_copy_computes_in_the_policy_like_its_source(graph):
    x = v1.placeholder(tf.float32, [None, 784])
    y = v1.placeholder(tf.float32, [None, 10])
    with precision.policy("mixed_bfloat16"):
        current = mlp_classifier(x, y, scope="current", hidden=(16,))
        past = frozen_copy(
            lambda scope: mlp_classifier(x, y, scope=scope, hidden=(16,)), "current", "past"
        )
    assert product_dtypes(graph) == {tf.bfloat16}  # both networks' products
    assert {v.dtype.base_dtype for v in v1.global_variables()} == {tf.float32}
    assert v1.trainable_variables("past") == []
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        session.run(past.sync_op)
        images = np.random.default_rng(3).random((8, 784), dtype=np.float32)
        now, copied = session.run([current.logits, past.output.logits], {x: images})
    np.testing.assert_array_equal(copied, now)  # the same products, bit for bit


def test_dropout_with_a_keep_probability_tensor_runs_under_a_policy(graph):
    x = v1.placeholder(tf.float32, [None, 784])
    y = v1.placeholder(tf.float32, [None, 10])
    keep_prob = v1.placeholder_with_default(0.5, [])  # a sweep's HParams input
    with precision.policy("mixed_bfloat16"):
        model = mlp_classifier(x, y, hidden=(16,), keep_prob=keep_prob)
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        images = np.random.default_rng(4).random((8, 784), dtype=np.float32)
        loss = session.run(model.loss, {x: images, y: np.eye(10)[:8]})
    assert np.isfinite(loss) and model.loss.dtype == tf.float32


def fake_cpuinfo(path, flags):
    """Writes a /proc/cpuinfo of one processor with ``flags`` at ``path``."""
    path.write_text(f"processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f {flags}\n\n")
    return str(path)


def test_the_bfloat16_cpu_flags_are_read_from_cpuinfo(tmp_path):
    assert precision.cpu_bf16_flags(fake_cpuinfo(tmp_path / "none", "")) == []
    both = fake_cpuinfo(tmp_path / "both", "amx_bf16 avx512_bf16")
    assert precision.cpu_bf16_flags(both) == ["avx512_bf16", "amx_bf16"]
    assert precision.cpu_bf16_flags(str(tmp_path / "missing")) == []


def test_emulated_says_which_policies_this_machine_emulates(tmp_path):
    without = fake_cpuinfo(tmp_path / "without", "")
    with_bf16 = fake_cpuinfo(tmp_path / "with", "avx512_bf16")
    gpu = bool(tf.config.list_physical_devices("GPU"))
    bfloat16 = precision.emulated("mixed_bfloat16", without)
    assert (
        (bfloat16 is None)
        if gpu
        else bfloat16.startswith(
            "mixed_bfloat16 without a GPU on a CPU without avx512_bf16 or amx_bf16: "
            "TensorFlow emulates"
        )
    )
    assert precision.emulated("mixed_bfloat16", with_bf16) is None
    assert precision.emulated("float32", without) is None
    float16 = precision.emulated("mixed_float16", with_bf16)
    assert (float16 is None) if gpu else "TensorFlow emulates them" in float16
    with pytest.raises(ZooError, match=r"expected the policy to be one of float32, "):
        precision.emulated("bf16")


def test_the_page_runs_and_its_claims_hold():
    """docs/precision.md's Python blocks run as written, with their asserts."""
    page = pathlib.Path(__file__).resolve().parents[2] / "docs" / "precision.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
    assert len(blocks) == 2
    namespace = {"__name__": "precision_doc"}
    exec(compile("\n".join(blocks), "<docs/precision.md>", "exec"), namespace)  # noqa: S102
    assert namespace["scale"] > 2.0**15  # it grew: every step was finite
