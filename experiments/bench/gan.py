"""The GAN's contenders for :mod:`experiments.bench.speed`: one step is D's update then G's.

The model is the GAN experiment's default (``python -m experiments.gan``): the
DCGAN of :func:`zoo.models.gan.gan` (generator 64 -> 7x7x64 -> 14x14x32 ->
resized to 28x28x32 -> 28x28x1, pixel norm after the hidden maps;
discriminator 28x28x1 -> 14x14x32 -> 7x7x64 -> 1; 5x5 filters), batch 64, Adam
2e-4 (beta1 0.5) for each player, the non-saturating losses, noise of 64 normal
numbers drawn once per step for both updates. The experiment's moving average
of the generator is left out of every contender (it is not in the Keras
example). The contenders are those
of :mod:`experiments.bench.contenders`, built for this step:

* ``ours``: :func:`zoo.training.repeat_updates` of :func:`zoo.training.gan.gan_update`,
  ``--steps-per-run`` GAN steps per ``session.run``, uncompiled (the experiment's
  default, see ``compute_limit_no_xla``), over
  :class:`zoo.data.batches.GraphBatches`; ``ours_one_step``, ``ours_feed_dict``,
  ``ours_graph_input`` as for the other models;
* ``keras``, ``keras_spe``, ``keras_spe_xla``: a ``keras.Model`` whose own
  ``train_step`` does D's update then G's (as the Keras DCGAN example), the same
  layers, sizes, initializers, losses and optimizers, ``model.fit`` at Keras's
  defaults, then at ``steps_per_execution=--steps-per-run`` without and with
  ``jit_compile``;
* ``tf_function``, ``tf_function_loop``: that ``train_step`` called from a
  hand-written ``tf.function``, one step per call, or ``--steps-per-run`` steps in
  a ``tf.while_loop`` inside one call (uncompiled: see ``ours``);
* ``compute_limit_no_xla``: our K-step loop on one batch held in memory. There
  is no ``compute_limit_xla``: XLA compiles our step to 0.7 steps/s on this CPU,
  30-50 times slower than TensorFlow's kernels (docs/gan.md).

There is no ``limit`` (the products alone): :func:`contenders.needed_matmuls`
lists matrix products, and most of this step is convolutions.

This module imports TensorFlow and Keras: the benchmark imports it after its
flags are parsed.
"""

import functools

import keras
import tensorflow as tf

from experiments.bench import contenders as common
from experiments.bench import precision as bf16
from zoo import training
from zoo.data import N_PIXELS
from zoo.models.gan import KERNEL, LEAKY_SLOPE, PIXEL_NORM_EPSILON
from zoo.training.gan import gan_update

NOISE_DIM = 64  # the GAN experiment's defaults (experiments/gan.py)
HIDDEN = 32
GENERATOR_HIDDEN = (2 * HIDDEN, HIDDEN)
DISCRIMINATOR_HIDDEN = (HIDDEN, 2 * HIDDEN)
LEARNING_RATE = 2e-4
BETA1 = 0.5


def update_fn(batch_size):
    """Returns our GAN step's ``update_fn`` (:func:`zoo.training.gan.gan_update`)."""
    return gan_update(
        batch_size,
        NOISE_DIM,
        tf.compat.v1.train.AdamOptimizer(LEARNING_RATE, beta1=BETA1),
        tf.compat.v1.train.AdamOptimizer(LEARNING_RATE, beta1=BETA1),
        scope="gan",
        architecture="dcgan",
        generator_hidden=GENERATOR_HIDDEN,
        discriminator_hidden=DISCRIMINATOR_HIDDEN,
    )


def zoo_gan_step(case):
    """Returns ``(looped, fed)`` of our GAN step (see :func:`common.zoo_step`)."""

    def looped(batches, steps_per_run, xla):
        return training.repeat_updates(
            update_fn(case.batch_size), batches, steps_per_run, jit_compile=xla
        )

    def fed(x, y):
        train_op, d_loss, _ = update_fn(case.batch_size)(x, y)
        return train_op, d_loss

    return looped, fed


# --------------------------------------------------------------------------- Keras


def keras_pixel_norm():
    """Returns a Keras layer of :func:`zoo.models.gan.pixel_norm`."""

    def norm(maps):
        mean_square = keras.ops.mean(keras.ops.square(maps), axis=-1, keepdims=True)
        return maps * keras.ops.rsqrt(mean_square + PIXEL_NORM_EPSILON)

    return keras.layers.Lambda(norm)


def keras_players():
    """Returns the Keras 3 generator and discriminator of our DCGAN (same sizes).

    Keras's defaults are ours: Glorot-uniform kernels, zero biases.
    """
    side = 28 // 4
    generator = keras.Sequential(
        [
            keras.Input((NOISE_DIM,)),
            keras.layers.Dense(side * side * GENERATOR_HIDDEN[0], "relu"),
            keras.layers.Reshape((side, side, GENERATOR_HIDDEN[0])),
            keras_pixel_norm(),
            keras.layers.Conv2DTranspose(
                GENERATOR_HIDDEN[1], KERNEL, 2, "same", activation="relu"
            ),
            keras_pixel_norm(),
            keras.layers.UpSampling2D(2, interpolation="nearest"),
            keras.layers.Conv2D(1, KERNEL, padding="same", activation="sigmoid"),
            keras.layers.Reshape((N_PIXELS,)),
        ]
    )
    layers = [keras.Input((N_PIXELS,)), keras.layers.Reshape((28, 28, 1))]
    for width in DISCRIMINATOR_HIDDEN:
        layers += [
            keras.layers.Conv2D(width, KERNEL, 2, "same"),
            keras.layers.LeakyReLU(negative_slope=LEAKY_SLOPE),
        ]
    layers += [keras.layers.Flatten(), keras.layers.Dense(1)]
    return generator, keras.Sequential(layers)


class KerasGAN(keras.Model):
    """A GAN whose ``train_step`` updates D, then G against the updated D.

    As the Keras DCGAN example, with our losses: D's is the cross-entropy of
    the real images as 1 plus the generated ones as 0, G's the generated ones
    as 1; one noise draw serves both updates, as ours.
    """

    def __init__(self, seed):
        super().__init__()
        self.generator, self.discriminator = keras_players()
        self.noise_seed = keras.random.SeedGenerator(seed)
        self.bce = keras.losses.BinaryCrossentropy(from_logits=True)

    def compile(self, **kwargs):
        super().compile(**kwargs)
        self.d_optimizer = keras.optimizers.Adam(LEARNING_RATE, beta_1=BETA1)
        self.g_optimizer = keras.optimizers.Adam(LEARNING_RATE, beta_1=BETA1)

    def train_step(self, data):
        real, _ = data
        z = keras.random.normal((keras.ops.shape(real)[0], NOISE_DIM), seed=self.noise_seed)
        with tf.GradientTape() as tape:
            real_logits = self.discriminator(real)
            fake_logits = self.discriminator(self.generator(z))
            d_loss = self.bce(keras.ops.ones_like(real_logits), real_logits) + self.bce(
                keras.ops.zeros_like(fake_logits), fake_logits
            )
        d_vars = self.discriminator.trainable_weights
        self.d_optimizer.apply_gradients(
            zip(tape.gradient(d_loss, d_vars), d_vars, strict=True)
        )
        with tf.GradientTape() as tape:
            fake_logits = self.discriminator(self.generator(z))
            g_loss = self.bce(keras.ops.ones_like(fake_logits), fake_logits)
        g_vars = self.generator.trainable_weights
        self.g_optimizer.apply_gradients(
            zip(tape.gradient(g_loss, g_vars), g_vars, strict=True)
        )
        return {"d_loss": d_loss, "g_loss": g_loss}


def keras_gan(args, steps_per_execution=1, jit_compile="auto"):
    """Returns the compiled :class:`KerasGAN`, its optimizers built."""
    keras.utils.set_random_seed(args.seed)
    model = KerasGAN(args.seed)
    model.compile(steps_per_execution=steps_per_execution, jit_compile=jit_compile)
    model.d_optimizer.build(model.discriminator.trainable_weights)
    model.g_optimizer.build(model.generator.trainable_weights)
    return model


def keras_fit(case, train, args, steps_per_execution=1, jit_compile="auto"):
    """Returns ``run(steps)`` calling the Keras GAN's ``fit`` for ``steps`` steps."""
    model = keras_gan(args, steps_per_execution, jit_compile)
    dataset = common.eager_batches(train, case.batch_size, args.seed)

    def run(steps):
        model.fit(dataset, epochs=1, steps_per_epoch=steps, shuffle=False, verbose=0)

    return run


def tf_function(case, train, args, steps_per_call=1):
    """Returns ``run(steps)``: the Keras GAN's ``train_step`` in our own ``tf.function``.

    Args:
        case, train, args: as :func:`common.ours`.
        steps_per_call: GAN steps per call (a ``tf.while_loop`` when above 1).
    """
    model = keras_gan(args)

    @tf.function(autograph=False)
    def steps_in_one_call(iterator):
        if steps_per_call == 1:
            model.train_step(iterator.get_next())
            return None

        def body(i):
            losses = model.train_step(iterator.get_next())
            with tf.control_dependencies(list(losses.values())):
                return i + 1

        return tf.while_loop(lambda i: i < steps_per_call, body, [tf.constant(0)])

    iterator = iter(common.eager_batches(train, case.batch_size, args.seed))
    return common.repeat_callable(lambda: steps_in_one_call(iterator), steps_per_call)


def contenders(case, train, args):
    """Returns ``{name: run(steps)}`` for the GAN ``case``, bfloat16's too."""
    k, step = args.steps_per_run, zoo_gan_step(case)
    runs = {
        "ours": common.ours(case, train, args, steps_per_run=k, step=step),
        "ours_one_step": common.ours(case, train, args, step=step),
        "ours_feed_dict": common.ours(case, train, args, source="feed", step=step),
        "ours_graph_input": common.ours(case, train, args, source="fixed", step=step),
        "keras": keras_fit(case, train, args),
        "keras_spe": keras_fit(case, train, args, k, jit_compile=False),
        "keras_spe_xla": keras_fit(case, train, args, k, jit_compile=True),
        "tf_function": tf_function(case, train, args),
        "tf_function_loop": tf_function(case, train, args, steps_per_call=k),
        "compute_limit_no_xla": common.ours(
            case, train, args, "fixed", steps_per_run=k, step=step
        ),
    }
    runs.update(
        bf16.contenders(
            functools.partial(common.ours, case, train, args, steps_per_run=k, step=step),
            {"": functools.partial(keras_fit, case, train, args, k)},
            args.quick,
            ours_compiled=False,
        )
    )
    return runs
