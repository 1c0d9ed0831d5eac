"""Speed of the GRU classifier and the siamese twins against Keras 3 and their own limit.

:mod:`experiments.bench.speed` calls :func:`bench` for each model of
:func:`models`, on the same training images and flags as the autoencoder and
the MLP; the result has their shape (``batch_size``, the ``ratio_*`` of the
model, ``variants.shared`` with every contender's speeds). The models are
those of the experiments at their default sizes, trained with Adam (0.001):

* ``rnn``: :func:`zoo.models.rnn.rnn_classifier`, a GRU of 128 units reading
  28 rows of 28 pixels, one cell read at every step, softmax read-out,
  cross-entropy summed over the batch of 128;
* ``siamese``: :func:`zoo.models.siamese.siamese`, one 784-256-32 tower
  applied to both images of the pairs :func:`partners_in_batch` makes from a
  batch of 128, contrastive loss (margin 1).

Contenders, each ``run(steps)``, timed in interleaved rounds by
:func:`experiments.bench.speed.timed`:

* ``ours_xla``, ``ours_no_xla``: the experiment's loop, ``--steps-per-run``
  steps per ``session.run`` (:func:`zoo.training.repeat_step`) over
  :class:`zoo.data.batches.GraphBatches`, compiled with XLA or not (both
  experiments take ``--xla``/``--no-xla``); ``ours_best`` is the faster of the two,
  as ``keras_best`` is Keras's fastest setting (``--quick``: the uncompiled
  contenders only);
* ``keras_spe[_xla][_unroll]``: the same model in Keras 3 (``model.fit`` on a
  ``tf.data`` pipeline) with ``steps_per_execution=--steps-per-run``, without
  and with ``jit_compile``; the RNN is ``keras.layers.GRU(reset_after=False)``
  (the GRU our cell computes, the reset gate applied to the state before its
  product, as ``tf.compat.v1.nn.rnn_cell.GRUCell``) with ``unroll`` off and
  on; the siamese is one ``keras.Sequential`` tower called on both inputs of a
  functional model, its pairs made in the ``tf.data`` pipeline;
  ``keras_best`` is the fastest of them;
* ``compute_limit_xla``, ``compute_limit_no_xla``: our K-step loop on one batch
  held in memory, compiled or not (no input at all); ``compute_limit`` is the
  faster: the model's own limit on this machine, as for the MLP;
* the bfloat16 contenders of every row (:mod:`experiments.bench.precision`),
  reported in ``variants.shared.bf16``.

This module imports TensorFlow and Keras: the benchmark imports it after its
flags are parsed.
"""

import dataclasses
import functools

import keras
import tensorflow as tf

from experiments.bench import precision as bf16
from experiments.bench.contenders import (
    FixedBatch,
    eager_batches,
    repeat_callable,
    session_config,
)
from zoo import training
from zoo.data.batches import GraphBatches
from zoo.models import rnn_classifier
from zoo.models.siamese import partners_in_batch, siamese
from zoo.training import precision

LEARNING_RATE = 1e-3  # Adam's, as both experiments
MARGIN = 1.0
RATIOS = {"ratio_keras_best": "keras_best", "ratio_compute_limit": "compute_limit"}


@dataclasses.dataclass(frozen=True)
class Sizes:
    """The models' sizes: the experiments' defaults, or tiny ones (:data:`QUICK_SIZES`)."""

    batch: int = 128
    rnn_hidden: int = 128
    rows: int = 28
    tower_hidden: int = 256
    embedding: int = 32


QUICK_SIZES = Sizes(batch=32, rnn_hidden=8, rows=4, tower_hidden=16, embedding=4)


@dataclasses.dataclass(frozen=True)
class Model:
    """A model to time.

    Attributes:
        name: ``"rnn"`` or ``"siamese"``.
        sizes: its :class:`Sizes`.
        keras_settings: ``{name suffix: keras model kwargs}``, the Keras settings
            besides ``jit_compile`` (the RNN's ``unroll``).
        steps_fraction: share of ``--steps`` timed (the RNN's step is ~10x the MLP's).
    """

    name: str
    sizes: Sizes
    keras_settings: dict
    steps_fraction: float


def models(quick=False):
    """Returns ``{name: Model}``, at the experiments' sizes or, ``quick``, tiny ones."""
    sizes = QUICK_SIZES if quick else Sizes()
    unroll = {"": {"unroll": False}, "_unroll": {"unroll": True}}
    return {
        "rnn": Model("rnn", sizes, unroll, 0.25),
        "siamese": Model("siamese", sizes, {"": {}}, 1.0),
    }


# --------------------------------------------------------------------------- ours


def our_loss(model, images, labels):
    """Builds the zoo model on one batch and returns its loss (as the experiment does)."""
    sizes = model.sizes
    if model.name == "rnn":
        return rnn_classifier(
            images, labels, scope="rnn", n_hidden=sizes.rnn_hidden, n_steps=sizes.rows
        ).loss
    partner, same = partners_in_batch(tf.argmax(labels, 1))
    return siamese(
        images,
        tf.gather(images, partner),
        same,
        scope="siamese",
        hidden=(sizes.tower_hidden,),
        embedding_size=sizes.embedding,
        margin=MARGIN,
    ).loss


def ours(model, train, args, xla, fixed=False, policy="float32"):
    """Returns ``run(steps)`` for our K-step loop.

    Args:
        model: the :class:`Model`.
        train: the training :class:`zoo.data.DataSet` (copied: every contender
            starts at the same batch).
        args: the flags (session config, seed, ``--steps-per-run``).
        xla: compile the loop with XLA.
        fixed: one batch held in memory instead of :class:`GraphBatches`
            (the compute limit).
        policy: the precision policy the step is built under
            (:func:`zoo.training.precision.policy`).
    """
    batches = dataclasses.replace(train, epoch=0, position=0)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(args.seed)
        source = (FixedBatch if fixed else GraphBatches)(batches, model.sizes.batch)
        with precision.policy(policy):
            step = training.repeat_step(
                lambda images, labels: our_loss(model, images, labels),
                tf.compat.v1.train.AdamOptimizer(LEARNING_RATE),
                source,
                args.steps_per_run,
                jit_compile=xla,
            )
        init = tf.compat.v1.global_variables_initializer()
    graph.finalize()
    session = tf.compat.v1.Session(graph=graph, config=session_config(args))
    session.run(init)
    if fixed:
        return repeat_callable(session.make_callable(step.train_op), args.steps_per_run)
    source.initialize(session)

    def run(steps):
        training.train_loop(session, step, None, source, steps, model.sizes.batch)

    return run


# --------------------------------------------------------------------------- Keras 3


def keras_model(model, n_in, n_classes, unroll=False):
    """Returns ``(uncompiled Keras 3 model, loss)`` of ``model``."""
    sizes = model.sizes
    if model.name == "rnn":
        net = keras.Sequential(
            [
                keras.Input((n_in,)),
                keras.layers.Reshape((sizes.rows, n_in // sizes.rows)),
                keras.layers.GRU(sizes.rnn_hidden, reset_after=False, unroll=unroll),
                keras.layers.Dense(n_classes),
            ]
        )
        return net, keras.losses.CategoricalCrossentropy(from_logits=True, reduction="sum")
    tower = keras.Sequential(
        [
            keras.Input((n_in,)),
            keras.layers.Dense(sizes.tower_hidden, "relu"),
            keras.layers.Dense(sizes.embedding),
        ]
    )
    x1, x2 = keras.Input((n_in,)), keras.Input((n_in,))
    squared = keras.ops.sum(keras.ops.square(tower(x1) - tower(x2)), axis=1)
    distance = keras.ops.sqrt(squared + 1e-12)
    return keras.Model([x1, x2], distance), contrastive_loss


def contrastive_loss(same, distance):
    """Keras loss: Hadsell, Chopra and LeCun's contrastive loss, per pair."""
    apart = keras.ops.square(keras.ops.relu(MARGIN - distance))
    return 0.5 * (same * keras.ops.square(distance) + (1.0 - same) * apart)


def keras_fit(model, train, args, jit_compile, **settings):
    """Returns ``run(steps)`` calling ``model.fit`` at ``steps_per_execution=K``.

    Args:
        model, train, args: as :func:`ours`.
        jit_compile: Keras's ``compile(jit_compile=...)``.
        settings: more :func:`keras_model` arguments (the RNN's ``unroll``).
    """
    keras.utils.set_random_seed(args.seed)
    net, loss = keras_model(model, train.images.shape[1], train.labels.shape[1], **settings)
    net.compile(
        optimizer=keras.optimizers.Adam(LEARNING_RATE),
        loss=loss,
        steps_per_execution=args.steps_per_run,
        jit_compile=jit_compile,
    )
    dataset = eager_batches(train, model.sizes.batch, args.seed)
    if model.name == "siamese":

        @tf.autograph.experimental.do_not_convert
        def pairs(images, labels):
            partner, same = partners_in_batch(tf.argmax(labels, 1))
            return (images, tf.gather(images, partner)), same

        dataset = dataset.map(pairs)

    def run(steps):
        net.fit(dataset, epochs=1, steps_per_epoch=steps, shuffle=False, verbose=0)

    return run


# --------------------------------------------------------------------------- timing


def contenders(model, train, args):
    """Returns ``({name: run(steps)}, {reference: the names it is the fastest of})``.

    The bfloat16 contenders (:func:`experiments.bench.precision.contenders`) are
    among them. ``--quick`` leaves out the compiled contenders (their compiles take
    most of a smoke run's time).
    """
    compiled = (False,) if args.quick else (False, True)
    runs = {f"ours_{xla_suffix(xla)}": ours(model, train, args, xla) for xla in compiled}
    for suffix, settings in model.keras_settings.items():
        for xla in compiled:
            name = "keras_spe" + ("_xla" if xla else "") + suffix
            runs[name] = keras_fit(model, train, args, xla, **settings)
    for xla in compiled:
        runs[f"compute_limit_{xla_suffix(xla)}"] = ours(model, train, args, xla, True)
    keras_fits = {
        suffix: functools.partial(keras_fit, model, train, args, **settings)
        for suffix, settings in model.keras_settings.items()
    }
    runs.update(
        bf16.contenders(functools.partial(ours, model, train, args), keras_fits, args.quick)
    )
    best_of = {
        reference: [name for name in runs if name.startswith(prefix)]
        for reference, prefix in (
            ("ours_best", "ours_"),
            ("keras_best", "keras_spe"),
            ("compute_limit", "compute_limit_"),
        )
    }
    return runs, {**best_of, **bf16.best_of(runs)}


def xla_suffix(xla):
    """Returns the name suffix of a contender compiled (``xla``) or not (``no_xla``)."""
    return "xla" if xla else "no_xla"


def bench(train, args, timed, ratios):
    """Times :func:`models`; returns ``{model: results}`` shaped as the MLP's.

    Args:
        train: the training :class:`zoo.data.DataSet`.
        args: the bench's flags (``--steps``, ``--rounds``, ``--warmup``,
            ``--steps-per-run``, ``--seed``, threads).
        timed: :func:`experiments.bench.speed.timed`.
        ratios: :func:`experiments.bench.speed.ratios`.
    """
    results = {}
    for model in models(args.quick).values():
        print(f"{model.name} shared (batch {model.sizes.batch})...", flush=True)
        steps = max(args.rounds, int(args.steps * model.steps_fraction))
        best, timing = timed(*contenders(model, train, args), steps, args)
        best, timing, mixed = bf16.split(best, timing)
        variant = {**best, **timing, **ratios(timing), "bf16": mixed}
        results[model.name] = {
            "batch_size": model.sizes.batch,
            **{key: variant[key] for key in RATIOS},
            "bf16": bf16.worst([variant]),
            "variants": {"shared": variant},
        }
        print(table_line(model.name, variant), flush=True)
    return results


def table_line(name, variant):
    """Returns one line: each contender's best steps/s, then the two ratios."""
    speeds = ", ".join(f"{k} {v:.1f}" for k, v in variant["steps_per_s"].items())
    ratios = ", ".join(f"{key} {variant[key]:.2f}" for key in RATIOS)
    return f"{name}, best steps/s: {speeds}; {ratios}"
