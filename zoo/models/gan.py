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

import tensorflow as tf

from layers import Dense
from layers.dense import check_size
from layers.errors import ScopeError
from zoo.models.parts import (
    builder_scope,
    check_widths,
    hidden_stack,
    input_width,
    next_draw,
    stateless_seed,
)

LEAKY_SLOPE = 0.2


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
    """

    generator: Generator
    real: Discriminator
    fake: Discriminator
    d_loss: tf.Tensor
    g_loss: tf.Tensor
    shared: bool
    scope_name: str

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
        out = Dense(h, width, 1, names=("W_out", "b_out"), activation=tf.sigmoid)
        logits = tf.squeeze(out.logits, axis=1, name="logits")
    return Discriminator(
        logits=logits,
        probability=tf.sigmoid(logits),
        layers=(*hidden_layers, out),
        scope_name=var_scope.name,
    )


def gan(
    x,
    z,
    scope="gan",
    reuse=False,
    shared=True,
    generator_hidden=(256,),
    discriminator_hidden=(256,),
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
        generator_hidden: widths of the generator's hidden layers.
        discriminator_hidden: widths of the discriminator's hidden layers.

    Returns:
        :class:`GAN`.

    Raises:
        ShapeError: a width that is not a positive int, or ``x`` or ``z`` not
            [batch, n] with n known (before any variable is made).
        ScopeError, EagerError: as :func:`zoo.autoencoder`.
    """
    with builder_scope(scope, reuse) as var_scope:
        # Both stacks checked before the generator's variables are made.
        generator_hidden = check_widths(
            var_scope.name, generator_hidden, "generator_hidden"
        )
        discriminator_hidden = check_widths(
            var_scope.name, discriminator_hidden, "discriminator_hidden"
        )
        n_pixels = input_width(var_scope.name, x, "real images x")
        input_width(var_scope.name, z, "noise z")
        fake_images = generator(z, hidden=generator_hidden, n_pixels=n_pixels)
        real = discriminator(x, hidden=discriminator_hidden)
        fake = discriminator(
            fake_images.images,
            scope="discriminator" if shared else "discriminator_fake",
            reuse=True if shared else reuse,
            hidden=discriminator_hidden,
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
    )


def gan_training(x, z, d_optimizer, g_optimizer, scope="gan", **gan_kwargs):
    """Builds :func:`gan` and one op that updates the discriminator, then the generator.

    The discriminator's optimizer gets the variables under the discriminator
    scope(s) as ``var_list``, the generator's those under the generator scope.
    The generator's gradient comes from a second build (``reuse=True``, nothing
    new) made under a control dependency on the discriminator's update, so it
    reads the updated discriminator: the alternating scheme of Goodfellow et al.
    (2014), one ``session.run`` per step.

    Args:
        x: real images [batch, n_pixels].
        z: noise [batch, noise_dim]; a tensor evaluated once per run, so both
            updates see the same draw.
        d_optimizer: a ``tf.compat.v1.train.Optimizer`` for the discriminator.
        g_optimizer: a ``tf.compat.v1.train.Optimizer`` for the generator.
        scope: variable scope of the model; must be new.
        **gan_kwargs: ``shared``, ``generator_hidden``, ``discriminator_hidden``.

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
        after = gan(x, z, scope=scope, reuse=True, **gan_kwargs)
        g_step = g_optimizer.minimize(after.g_loss, var_list=g_variables, name="g_step")
    return GanTraining(
        model=model,
        train_op=g_step,
        d_step=d_step,
        discriminator_variables=tuple(d_variables),
        generator_variables=tuple(g_variables),
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
    """Mean sigmoid cross-entropy of ``logits`` against the constant ``label``."""
    labels = tf.fill(tf.shape(logits), label)
    return tf.reduce_mean(
        tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
    )
