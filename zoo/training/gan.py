"""Training a GAN: the discriminator's update, then the generator's, K per run.

:func:`gan_training` builds :func:`zoo.models.gan.gan` and one op that updates
the discriminator, then the generator against the updated discriminator;
:func:`gan_update` is that step for :func:`zoo.training.repeat_updates` (K steps
per ``session.run``), with the step's noise (:func:`resumable_noise`, which a
restored checkpoint draws again) and an optional moving average of the
generator to sample from.

Usage::

    z = resumable_noise(64, noise_dim=64)   # noise/draws counts the draws
    adam = lambda: tf.compat.v1.train.AdamOptimizer(2e-4, beta1=0.5)
    training = gan_training(x, z, adam(), adam(), scope="gan")
    session.run(training.train_op)          # D's update, then G's against the new D
    samples = generator(z_test, scope="gan/generator", reuse=True).images
"""

import dataclasses

import tensorflow as tf

from layers.checks import number_problem, require
from layers.dense import check_size
from layers.variables import get_variable
from zoo.models.gan import GAN, gan, generator_loss, trainable_under
from zoo.models.parts import builder_scope, next_draw, stateless_seed


@dataclasses.dataclass(frozen=True)
class GanTraining:
    """What :func:`gan_training` builds.

    Attributes:
        model: the :class:`zoo.models.gan.GAN` whose losses are those before the step.
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


def gan_training(x, z, d_optimizer, g_optimizer, scope="gan", **gan_kwargs):
    """Builds :func:`zoo.models.gan.gan` and one op that updates the discriminator,
    then the generator.

    The discriminator's optimizer gets the variables under the discriminator
    scope(s) as ``var_list``, the generator's those under the generator scope
    (:func:`zoo.models.gan.trainable_under`). The generator's gradient comes
    from a second build of the fakes' discriminator (``GAN.judge_fakes``,
    ``reuse=True``, nothing new) made under a control dependency on the
    discriminator's update, so it reads the updated discriminator: the
    alternating scheme of Goodfellow et al. (2014), one ``session.run`` per
    step. It judges the generated images of the discriminator's step: the
    discriminator's update leaves the generator as it was, so its forward pass
    is computed once per step, not twice.

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
        As :func:`zoo.models.gan.gan`.
    """
    model = gan(x, z, scope=scope, **gan_kwargs)
    d_variables = trainable_under(*model.discriminator_scopes)
    g_variables = trainable_under(model.generator.scope_name)
    d_step = d_optimizer.minimize(model.d_loss, var_list=d_variables, name="d_step")
    with tf.control_dependencies([d_step]):
        judged = model.judge_fakes(model.generator.images)
        g_loss = generator_loss(judged.logits)
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

    Raises:
        ZooError: ``average_decay`` is neither None nor a number in [0, 1).
    """
    if average_decay is not None:
        require(
            "gan_update",
            number_problem(average_decay, 0, 1, high_open=True, name="average_decay"),
            "pass e.g. 0.999, or None to sample from the generator itself",
        )

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
