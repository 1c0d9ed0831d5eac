"""A generative adversarial net: one discriminator read at two places, and its ablation.

The generator and the discriminator live in their own scopes. The discriminator
is built on the real images, then again with ``reuse=True`` on the generator's
output, so both connections read the same variables: what it learns about real
images is what the generator is judged by. ``shared=False`` builds the classic
mistake instead, a second discriminator of its own for the fakes, which never
sees a real image. Each player trains only its own variables, taken by scope
(:func:`trainable_under`). Networks and losses only: the update that trains
them (the discriminator's step, then the generator's), the generator's average
and the noise that resumes are :mod:`zoo.training.gan`.

Usage::

    net = gan(x, z, scope="gan")            # gan/generator/*, gan/discriminator/*
    d_variables = trainable_under(*net.discriminator_scopes)
    samples = generator(z_test, scope="gan/generator", reuse=True).images
"""

import dataclasses
import math

import tensorflow as tf

from layers import Conv2D, Conv2DTranspose, Dense
from layers.checks import choice_problem, require
from layers.dense import check_size
from layers.errors import ScopeError, ShapeError
from zoo.constants import DCGAN, MLP_GAN
from zoo.models.parts import builder_scope, check_widths, hidden_stack, input_width

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


def generator(z, scope="generator", reuse=False, hidden=(256,), n_pixels=784):
    """Builds ``z -> ReLU hidden layers -> sigmoid images`` under ``scope``.

    Variables: ``W_hid_i``/``b_hid_i`` per width of ``hidden``, then ``W_out``/``b_out``
    of ``n_pixels`` sigmoid units, the flattened images. ``z`` is the noise
    [batch, noise_dim], noise_dim known statically; ``scope`` and ``reuse``
    (False, True or ``tf.compat.v1.AUTO_REUSE``) as every builder's.

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

    The variables and arguments of :func:`generator`, on images ``x`` [batch,
    n_pixels] (n_pixels known statically) and with one output unit.

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
    side, multiple = math.isqrt(n_pixels), 1 << halvings
    problem = None
    if side * side != n_pixels or side % multiple:
        problem = (
            f"expected square images whose side is a multiple of {multiple} (one "
            f"halving per width), found {n_pixels} pixels"
        )
    fix = "pass fewer widths or images of such a side (28 = 7 * 4 takes two widths)"
    require(owner, problem, fix, ShapeError)
    return side


@dataclasses.dataclass(frozen=True)
class Architecture:
    """A pair of builders :func:`gan` can take, with their default widths."""

    generator: object
    discriminator: object
    generator_hidden: tuple
    discriminator_hidden: tuple


# The names are zoo.constants.GAN_ARCHITECTURES: a script's flags read them there.
ARCHITECTURES = {
    MLP_GAN: Architecture(generator, discriminator, (256,), (256,)),
    DCGAN: Architecture(conv_generator, conv_discriminator, (64, 32), (32, 64)),
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
        require(
            var_scope.name,
            choice_problem(architecture, sorted(ARCHITECTURES), name="architecture"),
            "pass one of those",
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
            d_loss = discriminator_loss(real.logits, fake.logits)
            g_loss = tf.identity(generator_loss(fake.logits), name="g_loss")
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


def discriminator_loss(real_logits, fake_logits):
    """Returns the discriminator's loss: mean cross-entropy of real as 1 plus fake as 0.

    Args:
        real_logits: the discriminator's logits of real images [batch].
        fake_logits: its logits of generated images [batch].
    """
    return tf.add(
        _cross_entropy(real_logits, 1.0), _cross_entropy(fake_logits, 0.0), name="d_loss"
    )


def generator_loss(fake_logits):
    """Returns the generator's non-saturating loss: mean cross-entropy of
    ``fake_logits`` [batch], the discriminator's logits of generated images, as 1."""
    return _cross_entropy(fake_logits, 1.0)


def _leaky_relu(logits):
    return tf.nn.leaky_relu(logits, alpha=LEAKY_SLOPE)


def _cross_entropy(logits, label):
    """Mean sigmoid cross-entropy of ``logits`` against the constant ``label``."""
    labels = tf.fill(tf.shape(logits), label)
    return tf.reduce_mean(
        tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
    )
