"""The GAN builders: variable names, one discriminator read twice, the unshared ablation,
var_list training by scope, resumable noise, eager sharing, Keras and inspect, errors."""

import pathlib
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo
from layers import EagerError, ScopeError, ShapeError, ZooError
from zoo import training
from zoo.constants import GAN_ARCHITECTURES
from zoo.data import DataSet
from zoo.data.batches import GraphBatches
from zoo.models.gan import (
    ARCHITECTURES,
    conv_generator,
    discriminator,
    gan,
    generator,
    trainable_under,
)
from zoo.sharing.inspect import inspect_model
from zoo.sharing.keras import ZooLayer
from zoo.sharing.share import share
from zoo.training.gan import gan_training, gan_update, resumable_noise

v1 = tf.compat.v1
SMALL = {"generator_hidden": (8,), "discriminator_hidden": (6,)}
LAYER_NAMES = ("W_hid_1", "b_hid_1", "W_out", "b_out")


def names():
    return sorted(v.name for v in v1.trainable_variables())


def scope_names(scope):
    return sorted(f"{scope}/{name}:0" for name in LAYER_NAMES)


def inputs(n_pixels=16, noise_dim=4):
    return (
        v1.placeholder(tf.float32, [None, n_pixels], name="x"),
        v1.placeholder(tf.float32, [None, noise_dim], name="z"),
    )


def values(rows=5, n_pixels=16, noise_dim=4, seed=0):
    rng = np.random.default_rng(seed)
    return (
        rng.random((rows, n_pixels)).astype(np.float32),
        rng.standard_normal((rows, noise_dim)).astype(np.float32),
    )


def log_sigmoid(t):
    return -np.logaddexp(0.0, -t)


def test_shared_gan_has_one_generator_and_one_discriminator(graph):
    x, z = inputs()
    net = gan(x, z, scope="gan", **SMALL)
    both = scope_names("gan/discriminator") + scope_names("gan/generator")
    assert names() == sorted(both)
    shapes = {v.op.name: v.shape.as_list() for v in v1.trainable_variables()}
    assert shapes["gan/generator/W_hid_1"] == [4, 8]
    assert shapes["gan/generator/W_out"] == [8, 16]
    assert shapes["gan/discriminator/W_hid_1"] == [16, 6]
    assert shapes["gan/discriminator/W_out"] == [6, 1]
    assert net.shared and net.discriminator_scopes == ("gan/discriminator",)
    for real_layer, fake_layer in zip(net.real.layers, net.fake.layers, strict=True):
        assert real_layer.w is fake_layer.w and real_layer.b is fake_layer.b
    assert net.generator.images.shape.as_list() == [None, 16]
    assert net.real.logits.shape.as_list() == [None]


def test_inspect_shows_each_discriminator_weight_read_twice(graph):
    rows, _ = inspect_model("gan", **SMALL)
    readers = {row.name: len(row.readers) for row in rows}
    assert readers == {
        **{f"gan/discriminator/{n}": 2 for n in LAYER_NAMES},
        **{f"gan/generator/{n}": 1 for n in LAYER_NAMES},
    }
    unshared, _ = inspect_model("gan", shared=False, **SMALL)
    assert len(unshared) == 12 and all(len(row.readers) == 1 for row in unshared)


def test_reuse_creates_nothing_and_returns_the_same_variables(graph):
    x, z = inputs()
    first = gan(x, z, scope="gan", **SMALL)
    before = v1.global_variables()
    again = gan(x, z, scope="gan", reuse=True, **SMALL)
    assert v1.global_variables() == before
    pairs = zip(first.generator.layers, again.generator.layers, strict=True)
    assert all(a.w is b.w for a, b in pairs)
    assert again.real.layers[0].w is first.real.layers[0].w
    sampler = generator(z, scope="gan/generator", reuse=True, hidden=(8,), n_pixels=16)
    assert v1.global_variables() == before
    assert sampler.layers[-1].w is first.generator.layers[-1].w


def test_unshared_ablation_has_a_second_discriminator_of_its_own(graph):
    x, z = inputs()
    net = gan(x, z, scope="gan", shared=False, **SMALL)
    assert names() == sorted(
        scope_names("gan/discriminator")
        + scope_names("gan/discriminator_fake")
        + scope_names("gan/generator")
    )
    assert net.discriminator_scopes == ("gan/discriminator", "gan/discriminator_fake")
    real_ids = {id(p) for layer in net.real.layers for p in layer.params}
    fake_ids = {id(p) for layer in net.fake.layers for p in layer.params}
    assert len(real_ids) == len(fake_ids) == 4 and not real_ids & fake_ids


@pytest.mark.parametrize("shared", [True, False])
def test_fake_scores_are_the_real_discriminator_exactly_when_shared(graph, shared):
    """D(real) fed the generated images gives D(fake) only if the variables are one."""
    v1.set_random_seed(0)
    x, z = inputs()
    net = gan(x, z, scope="gan", shared=shared, **SMALL)
    _, zv = values()
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        images, fake_logits = session.run([net.generator.images, net.fake.logits], {z: zv})
        as_real = session.run(net.real.logits, {x: images})
    assert np.allclose(as_real, fake_logits, rtol=1e-6) == shared


def test_losses_match_numpy(graph):
    x, z = inputs()
    net = gan(x, z, scope="gan", **SMALL)
    xv, zv = values()
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        real, fake, d_loss, g_loss = session.run(
            [net.real.logits, net.fake.logits, net.d_loss, net.g_loss], {x: xv, z: zv}
        )
    expected_d = -np.mean(log_sigmoid(real)) - np.mean(log_sigmoid(-fake))
    np.testing.assert_allclose(d_loss, expected_d, rtol=1e-5)
    np.testing.assert_allclose(g_loss, -np.mean(log_sigmoid(fake)), rtol=1e-5)


def test_trainable_under_matches_whole_scope_components(graph):
    x, z = inputs()
    gan(x, z, scope="gan", shared=False, **SMALL)
    prefix_match = v1.get_collection(v1.GraphKeys.TRAINABLE_VARIABLES, "gan/discriminator")
    assert len(prefix_match) == 8  # TensorFlow's prefix match takes both discriminators
    assert [v.op.name for v in trainable_under("gan/discriminator")] == [
        f"gan/discriminator/{n}" for n in LAYER_NAMES
    ]
    assert len(trainable_under("gan/discriminator", "gan/generator")) == 8
    with pytest.raises(ScopeError, match="gan/disc: expected trainable variables under"):
        trainable_under("gan/disc")


@pytest.mark.parametrize("shared", [True, False])
def test_each_optimizer_moves_only_its_own_variables(graph, shared):
    """One train_op: D steps first; G steps against the updated D and leaves D alone."""
    v1.set_random_seed(1)
    x, z = inputs()
    lr = 0.5
    steps = gan_training(
        x,
        z,
        v1.train.GradientDescentOptimizer(lr),
        v1.train.GradientDescentOptimizer(lr),
        scope="gan",
        shared=shared,
        **SMALL,
    )
    d_vars, g_vars = list(steps.discriminator_variables), list(steps.generator_variables)
    scopes = ["gan/discriminator"] + ([] if shared else ["gan/discriminator_fake"])
    assert [v.op.name for v in d_vars] == [f"{s}/{n}" for s in scopes for n in LAYER_NAMES]
    assert [v.op.name for v in g_vars] == [f"gan/generator/{n}" for n in LAYER_NAMES]
    g_gradients = tf.gradients(steps.model.g_loss, g_vars)
    feed = dict(zip((x, z), values(), strict=True))
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        start_d, start_g = session.run((d_vars, g_vars))
        session.run(steps.d_step, feed)  # the discriminator's update alone
        d_after, g_after_d = session.run((d_vars, g_vars))
        gradients = session.run(g_gradients, feed)  # against the updated D
        for variable, value in zip(d_vars + g_vars, start_d + start_g, strict=True):
            variable.load(value, session)
        session.run(steps.train_op, feed)  # D's update, then G's
        d_both, g_both = session.run((d_vars, g_vars))

    for before, now in zip(start_g, g_after_d, strict=True):
        np.testing.assert_array_equal(now, before)  # D's optimizer leaves G alone
    assert all((now != before).any() for now, before in zip(d_after, start_d, strict=True))
    for d_only, now in zip(d_after, d_both, strict=True):
        np.testing.assert_array_equal(now, d_only)  # G's optimizer leaves D alone
    for before, gradient, now in zip(start_g, gradients, g_both, strict=True):
        np.testing.assert_allclose(now, before - lr * gradient, rtol=1e-5, atol=1e-7)
    assert all((now != before).any() for now, before in zip(g_both, start_g, strict=True))


def test_noise_follows_the_checkpointed_counter(graph):
    v1.set_random_seed(3)
    z = resumable_noise(2000, 8)
    (draws,) = v1.global_variables()
    assert draws.op.name == "noise/draws" and v1.trainable_variables() == []
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        first = [session.run(z) for _ in range(3)]
    with v1.Session() as resumed:  # a new session, counter as a checkpoint holds it
        draws.load(1, resumed)
        again = [resumed.run(z) for _ in range(2)]
    np.testing.assert_array_equal(again, first[1:])
    assert not np.array_equal(first[0], first[1])
    assert abs(first[0].mean()) < 0.05 and abs(first[0].std() - 1) < 0.05


def test_eager_share_creates_the_variables_once_with_graph_names():
    model = share(gan, "eager_gan", **SMALL)
    xv, zv = values()
    first = model(tf.constant(xv), tf.constant(zv))
    again = model(tf.constant(xv[:2]), tf.constant(zv[:2]))
    assert sorted(v.name for v in model.variables) == sorted(
        scope_names("eager_gan/discriminator") + scope_names("eager_gan/generator")
    )
    assert again.fake.layers[0].w is first.real.layers[0].w
    np.testing.assert_allclose(again.generator.images, first.generator.images[:2], 1e-6)


def test_generator_as_a_keras_layer():
    layer = ZooLayer("gan_generator", output="images", hidden=(8,), scope="g")
    model = keras.Sequential([keras.Input((4,)), layer])
    images = np.asarray(model(values()[1]))
    assert layer.variable_names == [f"g/{name}" for name in LAYER_NAMES]
    assert images.shape == (5, 784) and ((images > 0) & (images < 1)).all()


def test_registered_for_inspect_and_keras():
    assert zoo.MODELS["gan"] is gan
    assert zoo.MODELS["gan_generator"] is generator
    assert zoo.MODELS["gan_discriminator"] is discriminator


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (
            {"generator_hidden": (8, 0)},
            ShapeError,
            r"gan: expected generator_hidden\[1\] to be an int >= 1, found 0",
        ),
        (
            {"discriminator_hidden": 6},
            ShapeError,
            r"gan: expected discriminator_hidden to be a sequence of positive ints, "
            r"found 6; pass e\.g\. discriminator_hidden=\(256,\)",
        ),
        ({"reuse": True}, ScopeError, r"gan/generator/W_hid_1 to exist \(reuse=True\)"),
    ],
)
def test_bad_arguments_name_the_scope_before_any_variable(graph, kwargs, error, message):
    x, z = inputs()
    with pytest.raises(error, match=message):
        gan(x, z, scope="gan", **{**SMALL, **kwargs})
    assert v1.global_variables() == []


def test_inputs_without_static_width_are_refused(graph):
    x, z = inputs()
    unknown = v1.placeholder(tf.float32, [None, None])
    with pytest.raises(ShapeError, match=r"gan: expected real images x of shape"):
        gan(unknown, z, scope="gan")
    with pytest.raises(ShapeError, match=r"gan: expected noise z of shape"):
        gan(x, unknown, scope="gan")
    with pytest.raises(ShapeError, match=r"g: expected n_pixels to be an int >= 1"):
        generator(z, scope="g", n_pixels=0)
    with pytest.raises(ShapeError, match=r"noise: expected noise_dim to be an int >= 1"):
        resumable_noise(4, 0)
    assert v1.global_variables() == []


def test_builders_called_eagerly_raise():
    with pytest.raises(EagerError, match=r"gan: expected a graph .*zoo.share"):
        gan(tf.zeros([2, 16]), tf.zeros([2, 4]), scope="gan")


# The DCGAN: tiny widths on 16-pixel (4x4) images, so two halvings start at 1x1.
DCGAN = {
    "architecture": "dcgan",
    "generator_hidden": (6, 3),
    "discriminator_hidden": (3, 6),
}
GENERATOR_NAMES = ("W_project", "b_project", "W_up_1", "b_up_1", "W_out", "b_out")
DISCRIMINATOR_NAMES = ("W_conv_1", "b_conv_1", "W_conv_2", "b_conv_2", "W_out", "b_out")


def test_dcgan_variables_and_one_discriminator_read_twice(graph):
    x, z = inputs()
    net = gan(x, z, scope="gan", **DCGAN)
    shapes = {v.op.name: v.shape.as_list() for v in v1.trainable_variables()}
    assert shapes == {
        "gan/generator/W_project": [4, 6],  # z -> 1x1x6
        "gan/generator/b_project": [6],
        "gan/generator/W_up_1": [5, 5, 3, 6],  # -> 2x2x3
        "gan/generator/b_up_1": [3],
        "gan/generator/W_out": [5, 5, 3, 1],  # resized to 4x4x3 -> 4x4x1
        "gan/generator/b_out": [1],
        "gan/discriminator/W_conv_1": [5, 5, 1, 3],  # 4x4x1 -> 2x2x3
        "gan/discriminator/b_conv_1": [3],
        "gan/discriminator/W_conv_2": [5, 5, 3, 6],  # -> 1x1x6
        "gan/discriminator/b_conv_2": [6],
        "gan/discriminator/W_out": [6, 1],
        "gan/discriminator/b_out": [1],
    }
    for real_layer, fake_layer in zip(net.real.layers, net.fake.layers, strict=True):
        assert real_layer.w is fake_layer.w and real_layer.b is fake_layer.b
    assert net.generator.images.shape.as_list() == [None, 16]
    rows, _ = inspect_model("gan", **DCGAN)  # 784 pixels: 7x7 -> 14x14 -> 28x28
    readers = {row.name: len(row.readers) for row in rows}
    assert readers == {
        **{f"gan/discriminator/{n}": 2 for n in DISCRIMINATOR_NAMES},
        **{f"gan/generator/{n}": 1 for n in GENERATOR_NAMES},
    }
    unshared, _ = inspect_model("gan", shared=False, **DCGAN)
    assert len(unshared) == 18 and all(len(row.readers) == 1 for row in unshared)


def test_dcgan_generator_images_and_discriminator_scores_match_numpy(graph):
    """The transposed convolutions make [batch, 16] images in (0, 1) and the judge
    of the fakes reads the same variables as the judge of the real images."""
    x, z = inputs()
    net = gan(x, z, scope="gan", **DCGAN)
    again = net.judge_fakes(x)
    xv, zv = values()
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        images, real, judged = session.run(
            [net.generator.images, net.real.logits, again.logits], {x: xv, z: zv}
        )
    assert images.shape == (5, 16) and ((images > 0) & (images < 1)).all()
    np.testing.assert_allclose(judged, real, rtol=1e-6)
    assert again.layers[0].w is net.real.layers[0].w


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"architecture": "vae"}, "gan: expected architecture to be one of dcgan, mlp"),
        (
            {**DCGAN, "generator_hidden": (6, 3, 2)},
            r"gan/generator: expected square images whose side is a multiple of 8",
        ),
    ],
)
def test_bad_architecture_or_widths_fail_before_any_variable(graph, kwargs, message):
    x, z = inputs()
    with pytest.raises(ZooError, match=message):
        gan(x, z, scope="gan", **kwargs)
    assert v1.global_variables() == []


def test_the_architectures_are_the_names_the_flags_offer():
    assert sorted(ARCHITECTURES) == sorted(GAN_ARCHITECTURES)


@pytest.mark.parametrize("decay", [1.0, -0.1, True, "0.9"])
def test_an_average_decay_outside_0_1_fails_before_any_build(graph, decay):
    adam = v1.train.AdamOptimizer
    with pytest.raises(ZooError, match="gan_update: expected average_decay to be a "):
        gan_update(8, 4, adam(0.1), adam(0.1), average_decay=decay)
    assert v1.global_variables() == []


LEARNING_RATE = 0.01


def train_gan(steps_per_run, runs):
    """Trains the tiny DCGAN ``runs`` times ``steps_per_run`` steps; returns the
    variables and the logged (d_loss, g_loss, d_real, d_fake) of every step."""
    rng = np.random.default_rng(2)
    labels = np.eye(10, dtype=np.float32)[np.arange(40) % 10]
    data = DataSet(rng.random((40, 16), dtype=np.float32), labels, seed=1)
    with tf.Graph().as_default():
        v1.set_random_seed(0)
        batches = GraphBatches(data, 8, window=8)
        adam = lambda: v1.train.AdamOptimizer(LEARNING_RATE, beta1=0.5)  # noqa: E731
        update_fn = gan_update(8, 4, adam(), adam(), **DCGAN)
        step = training.repeat_updates(update_fn, batches, steps_per_run)
        init = v1.global_variables_initializer()
        with v1.Session() as session:
            session.run(init)
            batches.initialize(session)
            logged, _ = training.train_loop(
                session, step, None, batches, runs * steps_per_run, 8, log_every=1
            )
            variables = session.run(v1.global_variables())
    names = ("g_loss", "d_real", "d_fake")
    return variables, [(loss, *(m[name] for name in names)) for _, loss, m in logged]


def test_k_gan_steps_in_one_run_equal_k_runs_of_one_step():
    """D's update then G's, both Adams, the noise counter: 3 steps per run twice
    give the numbers of 6 runs of one step."""
    one_variables, one_logged = train_gan(1, 6)
    looped_variables, looped_logged = train_gan(3, 2)
    assert len(one_logged) == len(looped_logged) == 6
    np.testing.assert_allclose(looped_logged, one_logged, rtol=1e-5, atol=1e-6)
    # The loop's body is optimized as a graph of its own: float sums in another order,
    # which Adam's m / sqrt(v) magnifies where a gradient is near 0 (6.5e-6 seen on a
    # CPU without oneDNN); a missed or doubled step moves weights by ~LEARNING_RATE
    assert len(one_variables) == len(looped_variables)
    for one, looped in zip(one_variables, looped_variables, strict=True):
        np.testing.assert_allclose(looped, one, rtol=1e-5, atol=1e-2 * LEARNING_RATE)
    draws = [v for v in looped_variables if np.ndim(v) == 0 and v == 6]
    assert draws  # noise/draws counted every step


def test_generator_average_follows_the_generator_after_each_step(graph):
    """a := a - (1 - decay) (a - w) after G's update, from G's initial values; the
    generator built on the average reads it, names as the generator's."""
    v1.set_random_seed(4)
    x, _ = inputs()
    sgd = v1.train.GradientDescentOptimizer
    update_fn = gan_update(5, 4, sgd(0.5), sgd(0.5), average_decay=0.9, **DCGAN)
    train_op, _, _ = update_fn(x, None)
    average = conv_generator(
        v1.placeholder(tf.float32, [None, 4]), "gan/generator_average", True, (6, 3), 16
    )
    g_vars = trainable_under("gan/generator")
    a_vars = [v for v in v1.global_variables() if "generator_average" in v.name]
    assert [v.op.name for v in a_vars] == [
        f"gan/generator_average/{n}" for n in GENERATOR_NAMES
    ]
    assert not set(a_vars) & set(v1.trainable_variables())
    # A checkpoint restores a variable by feeding its initializer's value input:
    # the average's must not be the generator's (the one would get the other's value).
    for a, w in zip(a_vars, g_vars, strict=True):
        assert a.initializer.inputs[1] is not w.initializer.inputs[1]
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        start = session.run(a_vars)
        np.testing.assert_array_equal(start[0], session.run(g_vars[0]))
        session.run(train_op, {x: values()[0]})
        moved, after = session.run((a_vars, g_vars))
    for a0, a1, w in zip(start, moved, after, strict=True):
        np.testing.assert_allclose(a1, 0.9 * a0 + 0.1 * w, rtol=1e-5, atol=1e-7)
    assert average.layers[0].w is a_vars[0]


def test_the_docs_example_trains_and_samples_from_the_average():
    """docs/gan.md's first python block runs as written (two runs of 32 steps)."""
    doc = pathlib.Path(__file__).resolve().parents[2] / "docs" / "gan.md"
    code = re.search(r"```python\n(.*?)```", doc.read_text(), flags=re.S).group(1)
    scope = {}
    exec(compile(code, str(doc), "exec"), scope)  # noqa: S102
    assert scope["images"].shape == (16, 784)
    assert ((scope["images"] > 0) & (scope["images"] < 1)).all()
