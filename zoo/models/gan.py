"""A generative adversarial net: one discriminator read at two places, and its ablation.

The generator and the discriminator live in their own scopes. The discriminator
is built on the real images, then again with ``reuse=True`` on the generator's
output, so both connections read the same variables: what it learns about real
images is what the generator is judged by. ``shared=False`` builds the classic
mistake instead, a second discriminator of its own for the fakes, which never
sees a real image. Each player trains only its own variables: the optimizers'
``var_list`` are taken by scope (:func:`trainable_under`).

Usage::

    z = resumable_noise(64, noise_dim=64)   # noise/draws counts the draws
    net = gan(x, z, scope="gan")            # gan/generator/*, gan/discriminator/*
    adam = lambda: tf.compat.v1.train.AdamOptimizer(2e-4, beta1=0.5)
    training = gan_training(x, z, adam(), adam(), scope="gan2")
    session.run(training.train_op)          # D's update, then G's against the new D
    samples = generator(z_test, scope="gan2/generator", reuse=True).images
"""

import dataclasses
import math

import tensorflow as tf

from layers import Conv2D, Conv2DTranspose, Dense
from layers.dense import check_size
from layers.errors import ScopeError, ShapeError, ZooError
from layers.variables import at_least_float32, get_variable
from zoo.models.parts import (
    builder_scope,
    check_widths,
    hidden_stack,
    input_width,
    next_draw,
    stateless_seed,
)

LEAKY_SLOPE = 0.2
KERNEL = 5  # side of the DCGAN's convolution filters
PIXEL_NORM_EPSILON = 1e-8
_GLOROT = tf.compat.v1.glorot_uniform_initializer


@dataclasses.dataclass(frozen=True)
class Generator:
    """What :func:`generator` builds.

    Attributes:
        images: generated images in (0, 1) [batch, n_pixels].
        logits: the images before the sigmoid.
        layers: the hidden layers then the output layer.
        scope_name: the full variable scope.
    """

    images: tf.Tensor
    logits: tf.Tensor
    layers: tuple
    scope_name: str


@dataclasses.dataclass(frozen=True)
class Discriminator:
    """What :func:`discriminator` builds.

    Attributes:
        logits: the score of each image being real [batch].
        probability: ``sigmoid(logits)`` [batch].
        layers: the hidden layers then the output layer.
        scope_name: the full variable scope.
    """

    logits: tf.Tensor
    probability: tf.Tensor
    layers: tuple
    scope_name: str


@dataclasses.dataclass(frozen=True)
class GAN:
    """What :func:`gan` builds.

    Attributes:
        generator: the :class:`Generator` on the noise.
        real: the :class:`Discriminator` on the real images.
        fake: the :class:`Discriminator` on the generated images: the same
            variables as ``real`` (shared), or a second set (unshared).
        d_loss: discriminator loss, mean cross-entropy of real as 1 plus fake as 0.
        g_loss: generator loss, mean cross-entropy of fake as 1 (non-saturating).
        shared: whether ``fake`` reuses ``real``'s variables.
        scope_name: the full variable scope.
        judge_fakes: ``judge_fakes(images)`` builds ``fake``'s discriminator
            again on ``images`` (``reuse=True``, nothing new) and returns its
            :class:`Discriminator`.
    """

    generator: Generator
    real: Discriminator
    fake: Discriminator
    d_loss: tf.Tensor
    g_loss: tf.Tensor
    shared: bool
    scope_name: str
    judge_fakes: object

    @property
    def discriminator_scopes(self):
        """The discriminators' full scopes: one when shared, two when not."""
        return tuple(dict.fromkeys((self.real.scope_name, self.fake.scope_name)))


@dataclasses.dataclass(frozen=True)
class GanTraining:
    """What :func:`gan_training` builds.

    Attributes:
        model: the :class:`GAN` whose losses are those before the step.
        train_op: one step: the discriminator update, then the generator update
            computed against the updated discriminator.
        d_step: the discriminator update alone.
        discriminator_variables: the discriminator optimizer's ``var_list``.
        generator_variables: the generator optimizer's ``var_list``.
    """

    model: GAN
    train_op: tf.Operation
    d_step: tf.Operation
    discriminator_variables: tuple
    generator_variables: tuple


def generator(z, scope="generator", reuse=False, hidden=(256,), n_pixels=784):
    """Builds ``z -> ReLU hidden layers -> sigmoid images`` under ``scope``.

    Variables are ``W_hid_i``/``b_hid_i`` per hidden layer and ``W_out``/``b_out``.

    Args:
        z: noise [batch, noise_dim], noise_dim known statically.
        scope: variable scope of the generator.
        reuse: False, True or ``tf.compat.v1.AUTO_REUSE``.
        hidden: widths of the hidden layers.
        n_pixels: width of the generated (flattened) images.

    Returns:
        :class:`Generator`.

    Raises:
        ShapeError: a width that is not a positive int, or ``z`` not [batch, n]
            with n known (before any variable is made).
        ScopeError, EagerError: as :func:`zoo.autoencoder`.
    """
    with builder_scope(scope, reuse) as var_scope:
        check_size(var_scope.name, n_pixels=n_pixels)
        width = input_width(var_scope.name, z, "noise z")
        hidden_layers, h, width = hidden_stack(z, width, hidden, tf.nn.relu)
        out = Dense(h, width, n_pixels, names=("W_out", "b_out"), activation=tf.sigmoid)
    return Generator(
        images=out.output,
        logits=out.logits,
        layers=(*hidden_layers, out),
        scope_name=var_scope.name,
    )


def discriminator(x, scope="discriminator", reuse=False, hidden=(256,)):
    """Builds ``x -> leaky-ReLU hidden layers -> one logit`` under ``scope``.

    Variables are ``W_hid_i``/``b_hid_i`` per hidden layer and ``W_out``/``b_out``.

    Args:
        x: images [batch, n_pixels], n_pixels known statically.
        scope: variable scope of the discriminator.
        reuse: False, True or ``tf.compat.v1.AUTO_REUSE``.
        hidden: widths of the hidden layers.

    Returns:
        :class:`Discriminator`.

    Raises:
        ShapeError, ScopeError, EagerError: as :func:`generator`.
    """
    with builder_scope(scope, reuse) as var_scope:
        width = input_width(var_scope.name, x, "images x")
        hidden_layers, h, width = hidden_stack(x, width, hidden, _leaky_relu)
        return _score(h, width, hidden_layers, var_scope.name)


def _score(h, width, hidden_layers, scope_name, w_init=None):
    """Returns the :class:`Discriminator` of ``W_out``/``b_out`` on ``h`` [batch, width]."""
    out = Dense(h, width, 1, names=("W_out", "b_out"), activation=tf.sigmoid, w_init=w_init)
    logits = tf.squeeze(out.logits, axis=1, name="logits")
    return Discriminator(
        logits=logits,
        probability=tf.sigmoid(logits),
        layers=(*hidden_layers, out),
        scope_name=scope_name,
    )


def conv_generator(z, scope="generator", reuse=False, hidden=(64, 32), n_pixels=784):
    """Builds a DCGAN generator: ``z`` -> feature maps, each twice the side of the last.

    ``z`` is projected to a ``[side / 2**k, side / 2**k, hidden[0]]`` map (ReLU),
    each further width doubles the side with a 5x5 :class:`layers.Conv2DTranspose`
    of stride 2 (ReLU), and the last doubling is a nearest-neighbour resize and a
    5x5 :class:`layers.Conv2D` to one sigmoid channel: ``hidden=(64, 32)`` makes
    7x7x64 -> 14x14x32 -> 28x28x1. Each hidden map is normalized per pixel,
    ``h / sqrt(mean over channels of h**2 + 1e-8)`` (Karras et al. 2018), in place
    of the DCGAN's batch norm: no state, no dependence on the batch. The resize
    before the last convolution keeps the stride-2 transposed convolution's
    checkerboard out of the pixels (Odena et al. 2016). Variables
    ``W_project``/``b_project``, ``W_up_i``/``b_up_i``, ``W_out``/``b_out``;
    Glorot-uniform weights, zero biases (Keras's defaults).

    Args:
        z: noise [batch, noise_dim], noise_dim known statically.
        scope: variable scope of the generator.
        reuse: False, True or ``tf.compat.v1.AUTO_REUSE``.
        hidden: channels of the feature maps, from the coarsest (k = len(hidden)).
        n_pixels: width of the generated square images, flattened; its side must
            be a multiple of ``2**len(hidden)``.

    Returns:
        :class:`Generator` whose images are flattened [batch, n_pixels].

    Raises:
        ShapeError: a width that is not a positive int, no width, a side that
            ``2**len(hidden)`` does not divide, or ``z`` not [batch, n] with n
            known (before any variable is made).
        ScopeError, EagerError: as :func:`zoo.autoencoder`.
    """
    with builder_scope(scope, reuse) as var_scope:
        hidden = check_widths(var_scope.name, hidden)
        side = _square_side(var_scope.name, n_pixels, len(hidden))
        width = input_width(var_scope.name, z, "noise z")
        start = side >> len(hidden)
        project = Dense(
            z,
            width,
            start * start * hidden[0],
            names=("W_project", "b_project"),
            activation=tf.nn.relu,
            w_init=_GLOROT(),
        )
        h = pixel_norm(tf.reshape(project.output, [-1, start, start, hidden[0]]))
        built = [project]
        for i, n_in in enumerate(hidden[:-1], start=1):
            up = Conv2DTranspose(
                h,
                KERNEL,
                n_in,
                hidden[i],
                names=(f"W_up_{i}", f"b_up_{i}"),
                w_init=_GLOROT(),
                b_init=tf.compat.v1.zeros_initializer(),
                stride=2,
            )
            built.append(up)
            h = pixel_norm(up.output)
        resized = tf.image.resize(h, [side, side], "nearest")
        out = Conv2D(
            resized,
            KERNEL,
            hidden[-1],
            1,
            names=("W_out", "b_out"),
            activation=tf.sigmoid,
            w_init=_GLOROT(),
            b_init=tf.compat.v1.zeros_initializer(),
        )
        built.append(out)
    return Generator(
        images=tf.reshape(out.output, [-1, n_pixels], name="images"),
        logits=tf.reshape(out.logits, [-1, n_pixels], name="logits"),
        layers=tuple(built),
        scope_name=var_scope.name,
    )


def pixel_norm(maps):
    """Returns ``maps`` [batch, height, width, channels], each pixel's channels
    divided by their root mean square (plus 1e-8): the generator's normalization."""
    mean_square = tf.reduce_mean(tf.square(maps), axis=-1, keepdims=True)
    return maps * tf.math.rsqrt(mean_square + PIXEL_NORM_EPSILON)


def conv_discriminator(x, scope="discriminator", reuse=False, hidden=(32, 64)):
    """Builds a DCGAN discriminator: stride-2 5x5 convolutions, leaky ReLU, one logit.

    Each width is a 5x5 :class:`layers.Conv2D` of stride 2 (leaky ReLU, slope
    0.2), then a dense layer reads the flattened map: ``hidden=(32, 64)`` makes
    28x28x1 -> 14x14x32 -> 7x7x64 -> 1. Variables ``W_conv_i``/``b_conv_i``
    and ``W_out``/``b_out``; Glorot-uniform weights, zero biases.

    Args:
        x: square single-channel images flattened to [batch, side * side], the
            width known statically.
        scope: variable scope of the discriminator.
        reuse: False, True or ``tf.compat.v1.AUTO_REUSE``.
        hidden: channels of the convolutions.

    Returns:
        :class:`Discriminator`.

    Raises:
        ShapeError: a width that is not a positive int, or ``x`` not [batch,
            side * side] with the width known (before any variable is made).
        ScopeError, EagerError: as :func:`generator`.
    """
    with builder_scope(scope, reuse) as var_scope:
        hidden = check_widths(var_scope.name, hidden)
        n_pixels = input_width(var_scope.name, x, "images x")
        side = _square_side(var_scope.name, n_pixels, 0)
        h, channels, built = tf.reshape(x, [-1, side, side, 1]), 1, []
        for i, n_out in enumerate(hidden, start=1):
            conv = Conv2D(
                h,
                KERNEL,
                channels,
                n_out,
                names=(f"W_conv_{i}", f"b_conv_{i}"),
                activation=_leaky_relu,
                w_init=_GLOROT(),
                b_init=tf.compat.v1.zeros_initializer(),
                stride=2,
            )
            built.append(conv)
            h, channels = conv.output, n_out
        n_flat = math.prod(h.shape[1:])
        flat = tf.reshape(h, [-1, n_flat])
        return _score(flat, n_flat, built, var_scope.name, w_init=_GLOROT())


def _square_side(owner, n_pixels, halvings):
    """Returns the side of square images of ``n_pixels``, a multiple of 2**halvings.

    Raises:
        ShapeError: ``n_pixels`` is not a square, or its side is not such a multiple.
    """
    check_size(owner, n_pixels=n_pixels)
    side = math.isqrt(n_pixels)
    if side * side != n_pixels or side % (1 << halvings):
        raise ShapeError(
            f"{owner}: expected square images whose side is a multiple of "
            f"{1 << halvings} (one halving per width), found {n_pixels} pixels; pass "
            "fewer widths or images of such a side (28 = 7 * 4 takes two widths)"
        )
    return side


@dataclasses.dataclass(frozen=True)
class Architecture:
    """A pair of builders :func:`gan` can take, with their default widths."""

    generator: object
    discriminator: object
    generator_hidden: tuple
    discriminator_hidden: tuple


ARCHITECTURES = {
    "mlp": Architecture(generator, discriminator, (256,), (256,)),
    "dcgan": Architecture(conv_generator, conv_discriminator, (64, 32), (32, 64)),
}


def gan(
    x,
    z,
    scope="gan",
    reuse=False,
    shared=True,
    generator_hidden=None,
    discriminator_hidden=None,
    architecture="mlp",
):
    """Builds a generator and the discriminator of real and generated images.

    Scopes: ``<scope>/generator`` and ``<scope>/discriminator``; unshared, the
    generated images go to a second discriminator ``<scope>/discriminator_fake``.

    Args:
        x: real images [batch, n_pixels], n_pixels known statically.
        z: noise [batch, noise_dim], noise_dim known statically.
        scope: variable scope of the model.
        reuse: False, True or ``tf.compat.v1.AUTO_REUSE``.
        shared: the discriminator of the generated images reuses the one of the
            real images (True), or has variables of its own (False, the ablation).
        generator_hidden: widths of the generator's hidden layers (channels of
            its feature maps for ``"dcgan"``); None: the architecture's default.
        discriminator_hidden: likewise for the discriminator.
        architecture: ``"mlp"`` (:func:`generator`, :func:`discriminator`) or
            ``"dcgan"`` (:func:`conv_generator`, :func:`conv_discriminator`).

    Returns:
        :class:`GAN`.

    Raises:
        ShapeError: a width that is not a positive int, or ``x`` or ``z`` not
            [batch, n] with n known (before any variable is made).
        ZooError: an unknown architecture.
        ScopeError, EagerError: as :func:`zoo.autoencoder`.
    """
    with builder_scope(scope, reuse) as var_scope:
        if architecture not in ARCHITECTURES:
            raise ZooError(
                f"{var_scope.name}: expected architecture in {sorted(ARCHITECTURES)}, "
                f"found {architecture!r}; pass one of those"
            )
        chosen = ARCHITECTURES[architecture]
        # Both stacks checked before the generator's variables are made.
        generator_hidden = check_widths(
            var_scope.name,
            chosen.generator_hidden if generator_hidden is None else generator_hidden,
            "generator_hidden",
        )
        discriminator_hidden = check_widths(
            var_scope.name,
            chosen.discriminator_hidden
            if discriminator_hidden is None
            else discriminator_hidden,
            "discriminator_hidden",
        )
        n_pixels = input_width(var_scope.name, x, "real images x")
        input_width(var_scope.name, z, "noise z")
        fake_images = chosen.generator(z, hidden=generator_hidden, n_pixels=n_pixels)
        real = chosen.discriminator(x, hidden=discriminator_hidden)
        fake_scope = "discriminator" if shared else "discriminator_fake"
        fake = chosen.discriminator(
            fake_images.images,
            scope=fake_scope,
            reuse=True if shared else reuse,
            hidden=discriminator_hidden,
        )

        def judge_fakes(images):
            with tf.compat.v1.variable_scope(
                var_scope, reuse=True, auxiliary_name_scope=False
            ):
                return chosen.discriminator(
                    images, scope=fake_scope, reuse=True, hidden=discriminator_hidden
                )

        with tf.name_scope("losses"):
            d_loss = tf.add(
                _cross_entropy(real.logits, 1.0),
                _cross_entropy(fake.logits, 0.0),
                name="d_loss",
            )
            g_loss = tf.identity(_cross_entropy(fake.logits, 1.0), name="g_loss")
    return GAN(
        generator=fake_images,
        real=real,
        fake=fake,
        d_loss=d_loss,
        g_loss=g_loss,
        shared=shared,
        scope_name=var_scope.name,
        judge_fakes=judge_fakes,
    )


def gan_training(x, z, d_optimizer, g_optimizer, scope="gan", **gan_kwargs):
    """Builds :func:`gan` and one op that updates the discriminator, then the generator.

    The discriminator's optimizer gets the variables under the discriminator
    scope(s) as ``var_list``, the generator's those under the generator scope.
    The generator's gradient comes from a second build of the fakes'
    discriminator (``GAN.judge_fakes``, ``reuse=True``, nothing new) made under
    a control dependency on the discriminator's update, so it reads the updated
    discriminator: the alternating scheme of Goodfellow et al. (2014), one
    ``session.run`` per step. It judges the generated images of the
    discriminator's step: the discriminator's update leaves the generator as it
    was, so its forward pass is computed once per step, not twice.

    Args:
        x: real images [batch, n_pixels].
        z: noise [batch, noise_dim]; a tensor evaluated once per run, so both
            updates see the same draw.
        d_optimizer: a ``tf.compat.v1.train.Optimizer`` for the discriminator.
        g_optimizer: a ``tf.compat.v1.train.Optimizer`` for the generator.
        scope: variable scope of the model; must be new.
        **gan_kwargs: ``shared``, ``generator_hidden``, ``discriminator_hidden``,
            ``architecture``.

    Returns:
        :class:`GanTraining`.

    Raises:
        As :func:`gan`.
    """
    model = gan(x, z, scope=scope, **gan_kwargs)
    d_variables = trainable_under(*model.discriminator_scopes)
    g_variables = trainable_under(model.generator.scope_name)
    d_step = d_optimizer.minimize(model.d_loss, var_list=d_variables, name="d_step")
    with tf.control_dependencies([d_step]):
        judged = model.judge_fakes(model.generator.images)
        g_loss = _cross_entropy(judged.logits, 1.0)
        g_step = g_optimizer.minimize(g_loss, var_list=g_variables, name="g_step")
    return GanTraining(
        model=model,
        train_op=g_step,
        d_step=d_step,
        discriminator_variables=tuple(d_variables),
        generator_variables=tuple(g_variables),
    )


def gan_update(
    batch_size,
    noise_dim,
    d_optimizer,
    g_optimizer,
    scope="gan",
    average_decay=None,
    **gan_kwargs,
):
    """Returns a GAN step for :func:`zoo.training.repeat_updates`: K steps per run.

    ``update_fn(images, labels)`` draws the step's noise
    (:func:`resumable_noise`, ``noise/draws`` counts the steps) and builds
    :func:`gan_training` on it: the discriminator's update, then the
    generator's against the updated discriminator. It returns ``(train_op,
    d_loss, {"g_loss", "d_real", "d_fake"})``, the losses and mean
    discriminator outputs before the step's updates. Both optimizers make
    their slots on the first call; the loop's calls reuse everything::

        update_fn = gan_update(64, 64, adam(), adam(), architecture="dcgan")
        step = training.repeat_updates(update_fn, batches, 32)
        training.train_loop(session, step, None, batches, 6000, 64)

    With ``average_decay``, each step then moves an exponential moving average
    of the generator's variables, ``a := a - (1 - decay) (a - w)``, kept under
    ``<scope>/generator_average`` with the generator's names (not trained,
    checkpointed), starting at the generator's initial values; build the
    generator there with ``reuse=True`` to sample from the average (Yazici et
    al. 2019: averaging damps the oscillation of GAN training).

    Args:
        batch_size: rows of noise, the batches' batch size.
        noise_dim: width of the noise.
        d_optimizer: the discriminator's ``tf.compat.v1.train.Optimizer``.
        g_optimizer: the generator's.
        scope: variable scope of the model.
        average_decay: None, or the decay in [0, 1) of the generator's average.
        **gan_kwargs: as :func:`gan_training`.

    Returns:
        ``update_fn(images, labels) -> (op, scalar, dict of scalars)``; its
        builds raise as :func:`gan_training` and :func:`resumable_noise`.
    """

    def update_fn(images, labels):
        del labels  # a GAN learns from the images alone
        z = resumable_noise(batch_size, noise_dim)
        step = gan_training(images, z, d_optimizer, g_optimizer, scope=scope, **gan_kwargs)
        model, train_op = step.model, step.train_op
        if average_decay is not None:
            with tf.compat.v1.variable_scope(scope):
                train_op = _average(step.generator_variables, train_op, average_decay)
        metrics = {
            "g_loss": model.g_loss,
            "d_real": tf.reduce_mean(model.real.probability),
            "d_fake": tf.reduce_mean(model.fake.probability),
        }
        return train_op, model.d_loss, metrics

    return update_fn


def _average(variables, after, decay):
    """Returns an op moving ``generator_average/<name>`` toward each generator
    variable after ``after``; made (from the initial values) on the first call."""
    updates = []
    with tf.compat.v1.variable_scope("generator_average"):
        for variable in variables:
            name = variable.op.name.rsplit("/", 1)[-1]
            average = get_variable(
                "generator_average",
                name,
                variable.shape.as_list(),
                # An initial value of its own: a checkpoint restores each variable
                # by feeding its initializer's value input, which must not be the
                # generator variable's own.
                lambda *args, v=variable, **kwargs: tf.identity(v.initial_value),
                trainable=False,
            )
            with tf.control_dependencies([after]):
                updates.append(average.assign_sub((1.0 - decay) * (average - variable)))
    return tf.group(updates, name="generator_average_step")


def trainable_under(*scope_names):
    """Returns the default graph's trainable variables under any of the full scopes.

    ``tf.compat.v1.get_collection(TRAINABLE_VARIABLES, scope="gan/discriminator")``
    matches name prefixes, so it also returns ``gan/discriminator_fake/...``;
    here a scope matches only whole path components.

    Args:
        *scope_names: full scope names (``"gan/generator"``).

    Returns:
        A list of variables in creation order.

    Raises:
        ScopeError: a scope holds no trainable variable (graph mode only: eager
            execution keeps no collection).
    """
    variables = tf.compat.v1.trainable_variables()
    for name in scope_names:
        if not any(v.name.startswith(f"{name}/") for v in variables):
            raise ScopeError(
                f"{name}: expected trainable variables under {name}, found none; build "
                "the model first, and pass the full scope name (model.scope_name)"
            )
    prefixes = tuple(f"{name}/" for name in scope_names)
    return [v for v in variables if v.name.startswith(prefixes)]


def resumable_noise(batch_size, noise_dim, scope="noise", reuse=False):
    """Standard normal noise [batch_size, noise_dim], a new draw on every run.

    The draw is stateless, a function of the graph seed and ``<scope>/draws``
    (a non-trainable counter each run increments once), so a run restored from
    a checkpoint, which holds the counter, draws the same noise.

    Args:
        batch_size: rows of noise.
        noise_dim: columns of noise.
        scope: variable scope of the counter.
        reuse: False, True or ``tf.compat.v1.AUTO_REUSE``.

    Returns:
        A float32 tensor [batch_size, noise_dim].

    Raises:
        ShapeError: a size that is not a positive int (before any variable).
        ScopeError, EagerError: as :func:`zoo.autoencoder`.
    """
    with builder_scope(scope, reuse) as var_scope:
        check_size(var_scope.name, batch_size=batch_size, noise_dim=noise_dim)
        seed = stateless_seed(next_draw(var_scope.name, "draws"))
        return tf.random.stateless_normal([batch_size, noise_dim], seed, name="z")


def _leaky_relu(logits):
    return tf.nn.leaky_relu(logits, alpha=LEAKY_SLOPE)


def _cross_entropy(logits, label):
    """Mean sigmoid cross-entropy of ``logits`` against the constant ``label``, in
    float32 whatever the logits' dtype (a precision policy's)."""
    logits = at_least_float32(logits)
    labels = tf.fill(tf.shape(logits), label)
    return tf.reduce_mean(
        tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
    )
