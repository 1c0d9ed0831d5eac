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

A full run times the row in three parts, each in a process of its own
(:data:`PARTS`, ``--part``; :func:`experiments.bench.speed.in_processes` merges
them): ``rnn``, the GRU's float32 contenders; ``rnn_bf16``, its bfloat16 contenders
with its float32 ``ours_xla``/``ours_no_xla`` timed again in their rounds (what
``ratio_fp32`` divides by, kept in the ``bf16`` entry as ``fp32``); ``siamese``,
all of the siamese's. The GRU's 14 contenders alive at once held 2.2 GB (each
compiled one 95-235 MiB), each of its two groups 1.7-1.8 (docs/benchmark.md).
Without ``--part`` (rows timed in one process, as the smoke test times them) each
model's contenders run in one group, as before, and ``ratio_fp32`` divides by the
row's own ``ours_best``.

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
FLOAT32, BFLOAT16 = "float32", "bfloat16"
# --part: {part: (model, the precisions of the contenders timed together)}
PARTS = {
    "rnn": ("rnn", (FLOAT32,)),
    "rnn_bf16": ("rnn", (BFLOAT16,)),
    "siamese": ("siamese", (FLOAT32, BFLOAT16)),
}


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


def groups(part, quick):
    """Returns ``[(Model, precisions)]``: the contenders timed together, model by model.

    Args:
        part: a name of :data:`PARTS`, or None: every model, all its contenders at once.
        quick: ``--quick``'s tiny models.
    """
    every = models(quick)
    if part is None:
        return [(model, (FLOAT32, BFLOAT16)) for model in every.values()]
    name, precisions = PARTS[part]
    return [(every[name], precisions)]


def contenders(model, train, args, precisions=(FLOAT32, BFLOAT16)):
    """Returns ``({name: run(steps)}, {reference: the names it is the fastest of})``.

    Our float32 loops are always among them; ``precisions`` says whether the other
    float32 contenders are (Keras, the compute limit), and the bfloat16 ones
    (:func:`experiments.bench.precision.contenders`). ``--quick`` leaves out the
    compiled contenders (their compiles take most of a smoke run's time).
    """
    compiled = (False,) if args.quick else (False, True)
    runs = {f"ours_{xla_suffix(xla)}": ours(model, train, args, xla) for xla in compiled}
    if FLOAT32 in precisions:
        for suffix, settings in model.keras_settings.items():
            for xla in compiled:
                name = "keras_spe" + ("_xla" if xla else "") + suffix
                runs[name] = keras_fit(model, train, args, xla, **settings)
        for xla in compiled:
            runs[f"compute_limit_{xla_suffix(xla)}"] = ours(model, train, args, xla, True)
    if BFLOAT16 in precisions:
        keras_fits = {
            suffix: functools.partial(keras_fit, model, train, args, **settings)
            for suffix, settings in model.keras_settings.items()
        }
        ours_in = functools.partial(ours, model, train, args)
        runs.update(bf16.contenders(ours_in, keras_fits, args.quick))
    best_of = {
        reference: [name for name in runs if name.startswith(prefix)]
        for reference, prefix in (
            ("ours_best", "ours_"),
            ("keras_best", "keras_spe"),
            ("compute_limit", "compute_limit_"),
        )
    }
    best_of.update(bf16.best_of(runs))
    return runs, {reference: names for reference, names in best_of.items() if names}


def xla_suffix(xla):
    """Returns the name suffix of a contender compiled (``xla``) or not (``no_xla``)."""
    return "xla" if xla else "no_xla"


def bench(train, args, timed, ratios):
    """Times :func:`groups`; returns ``{model: results}`` shaped as the MLP's
    (``--part``: the keys of what it timed, :func:`model_results`).

    Args:
        train: the training :class:`zoo.data.DataSet`.
        args: the bench's flags (``--steps``, ``--rounds``, ``--warmup``,
            ``--steps-per-run``, ``--seed``, threads, ``--part``).
        timed: :func:`experiments.bench.speed.timed`.
        ratios: :func:`experiments.bench.speed.ratios`.
    """
    results = {}
    for model, precisions in groups(args.part, args.quick):
        kinds = " and ".join(precisions)
        print(f"{model.name} shared, {kinds} (batch {model.sizes.batch})...", flush=True)
        steps = max(args.rounds, int(args.steps * model.steps_fraction))
        best, timing = timed(*contenders(model, train, args, precisions), steps, args)
        results[model.name] = model_results(model, best, timing, ratios, precisions)
        print(table_line(model.name, results[model.name]), flush=True)
    return results


def model_results(model, best, timing, ratios, precisions):
    """Returns a model's results from the ``best, timing`` of contenders timed together.

    Args:
        model: the :class:`Model`.
        best, timing: :func:`experiments.bench.speed.timed`'s.
        ratios: :func:`experiments.bench.speed.ratios`.
        precisions: those of the contenders (:func:`contenders`).

    Returns:
        Both precisions: the MLP's shape. Float32 alone: all but the ``bf16`` entries.
        Bfloat16 alone: only those, the variant's with ``fp32``, the tables of the float32
        loops of the same rounds (``ratio_fp32`` divides by their ``ours_best``).
    """
    mixed = None
    if BFLOAT16 in precisions:
        best, timing, mixed = bf16.split(best, timing)
    if FLOAT32 not in precisions:
        variant = {"bf16": {**mixed, "fp32": {**best, **timing}}}
        return {"bf16": bf16.worst([variant]), "variants": {"shared": variant}}
    variant = {**best, **timing, **ratios(timing)}
    entry = {"batch_size": model.sizes.batch, **{key: variant[key] for key in RATIOS}}
    if mixed is not None:
        variant["bf16"] = mixed
        entry["bf16"] = bf16.worst([variant])
    return {**entry, "variants": {"shared": variant}}


def table_line(name, entry):
    """Returns one line of a model's results: each contender's best steps/s, then its
    ratios (bfloat16 alone: those of its ``bf16`` entry)."""
    variant = entry["variants"]["shared"]
    if "steps_per_s" not in variant:
        name, variant, keys = f"{name} {bf16.POLICY}", variant["bf16"], bf16.RATIOS
    else:
        keys = RATIOS
    speeds = ", ".join(f"{k} {v:.1f}" for k, v in variant["steps_per_s"].items())
    ratios = ", ".join(f"{key} {variant[key]:.2f}" for key in keys)
    return f"{name}, best steps/s: {speeds}; {ratios}"
