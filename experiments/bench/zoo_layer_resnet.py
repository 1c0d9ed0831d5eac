"""The ZooLayer ResNet row of the speed bench: ``fit`` vs the same net in graph mode.

A small TF-Slim ResNet v1 (tf-slim 1.1.0 as released, after ``zoo.compat.install()``:
the root block and one bottleneck unit in each of two blocks, slim's batch norm and
weight decay; the net of docs/migrating.md's section 5) on one batch of the bench's
28x28 images held in memory, momentum SGD, timed in interleaved rounds in one
process (:func:`experiments.bench.speed.timed`). Two like-for-like pairs:

* one step per call: ``graph``, the TF1 program built in a ``tf.Graph`` with its
  ``UPDATE_OPS``, one ``session.run`` per step; ``zoo_layer``, the same function
  in ``zoo.ZooLayer`` in a Keras 3 model, ``fit`` with ``steps_per_execution=1``
  (the moving statistics and the weight decay come through the layer) on a
  ``tf.data`` pipeline of the held batch without a prefetch thread (:func:`held`);
* K steps per call (K = ``--steps-per-run``): ``graph_loop``, the same net and loss
  in :func:`zoo.training.repeat_step`'s ``tf.while_loop``, K steps per
  ``session.run``; ``zoo_layer_spe``, the same ``fit`` with
  ``steps_per_execution=K``, Keras' own loop at its best.

``ratio`` is ``zoo_layer / graph`` in steps/s, ``ratio_loop`` ``zoo_layer_spe /
graph_loop`` (goal: at least 0.9); ``cpu_ratio`` and ``cpu_ratio_loop`` the same from
CPU time per step. Neither side is compiled with XLA (Keras leaves it off on a CPU).
Run in ``make bench`` (:data:`speed.OWN_BENCHES`).
"""

import dataclasses

import keras
import numpy as np
import tensorflow as tf

import zoo.compat
from experiments.bench.contenders import repeat_callable
from zoo.sharing.keras import ZooLayer, variable_specs
from zoo.sharing.share import checkpoint_name
from zoo.training.steps import repeat_step

v1 = tf.compat.v1
SIDE, CLASSES, LEARNING_RATE, MOMENTUM = 28, 10, 0.01, 0.9
# ratio key suffix -> (ZooLayer contender, graph-mode contender) of the same steps per call
PAIRS = {"": ("zoo_layer", "graph"), "_loop": ("zoo_layer_spe", "graph_loop")}


@keras.saving.register_keras_serializable(package="bench")
def slim_resnet(images, training):
    """The small TF-Slim ResNet's logits on flat 28x28 images."""
    import tf_slim as slim  # noqa: PLC0415  (after zoo.compat.install())
    from tf_slim.nets import resnet_v1  # noqa: PLC0415

    blocks = [
        resnet_v1.resnet_v1_block("block1", base_depth=8, num_units=1, stride=2),
        resnet_v1.resnet_v1_block("block2", base_depth=16, num_units=1, stride=1),
    ]
    with slim.arg_scope(resnet_v1.resnet_arg_scope()):
        logits, _ = resnet_v1.resnet_v1(
            tf.reshape(images, [-1, SIDE, SIDE, 1]), blocks, num_classes=CLASSES,
            is_training=training, scope="resnet_small",
        )  # fmt: skip
    return tf.squeeze(logits, [1, 2])


def graph_run(images, labels):
    """``run(steps)`` of the TF1 program: one run per step (``session.make_callable``)."""
    graph = tf.Graph()
    with graph.as_default():
        logits = slim_resnet(tf.constant(images), True)
        loss = v1.losses.sparse_softmax_cross_entropy(tf.constant(labels), logits)
        loss += v1.losses.get_regularization_loss()
        with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
            train = v1.train.MomentumOptimizer(LEARNING_RATE, MOMENTUM).minimize(loss)
    return session_run(graph, train, 1)


def graph_loop_run(images, labels, steps_per_run):
    """``run(steps)`` of the same net and loss in :func:`zoo.training.repeat_step`'s loop.

    ``steps_per_run`` steps in one ``session.run`` (a ``tf.while_loop`` on the
    held batch), each with its own batch-norm updates. The weight decay is
    computed from each step's weights: the regularization collection holds the
    first call's terms, read once before the loop.
    """
    regularizers = {
        spec.name: spec.regularizers
        for spec in variable_specs(
            "graph_loop", slim_resnet, [images.shape], None, training=True
        )[0]
    }

    def loss_fn(images, labels):
        logits = slim_resnet(images, True)
        weights = {checkpoint_name(v): v for v in v1.global_variables()}
        decay = [r(weights[name]) for name, rs in regularizers.items() for r in rs]
        cross_entropy = v1.losses.sparse_softmax_cross_entropy(labels, logits)
        return cross_entropy + tf.add_n(decay)

    graph = tf.Graph()
    with graph.as_default():
        step = repeat_step(
            loss_fn,
            v1.train.MomentumOptimizer(LEARNING_RATE, MOMENTUM),
            HeldBatch(tf.constant(images), tf.constant(labels), steps_per_run),
            steps_per_run,
        )
    return session_run(graph, step.train_op, steps_per_run)


@dataclasses.dataclass(frozen=True)
class HeldBatch:
    """One batch drawn again by every step: what ``repeat_step`` reads of GraphBatches."""

    images: tf.Tensor
    labels: tf.Tensor
    window: int

    def draw(self):
        return self.images, self.labels


def session_run(graph, train, steps_per_run):
    """``run(steps)`` running ``train`` (``steps_per_run`` steps) in a new session."""
    with graph.as_default():
        init = v1.global_variables_initializer()
    graph.finalize()
    session = v1.Session(graph=graph)
    session.run(init)
    return repeat_callable(session.make_callable(train), steps_per_run)


def keras_run(images, labels, steps_per_execution):
    """``run(steps)`` of the ZooLayer model: ``fit`` for ``steps`` steps,
    ``steps_per_execution`` of them per call of Keras' compiled function."""
    inputs = keras.Input((SIDE * SIDE,), batch_size=len(images))
    model = keras.Model(inputs, ZooLayer(slim_resnet)(inputs))
    model.compile(
        keras.optimizers.SGD(LEARNING_RATE, momentum=MOMENTUM),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        steps_per_execution=steps_per_execution,
    )
    batches = held(tf.data.Dataset.from_tensors((images, labels)).repeat())

    def run(steps):
        if steps:  # fit with steps_per_epoch=0 would run the endless dataset
            model.fit(batches, epochs=1, steps_per_epoch=steps, verbose=0)

    return run


def held(dataset):
    """``dataset`` read in the caller's thread: no injected prefetch, no autotuning.

    The graph side's batch is a constant; this one costs as little. tf.data's
    default prefetch thread hands each batch over from another thread, which on
    the loaded 2-core VM cut ``fit``'s best rounds by 10-44 % at an equal CPU
    time (docs/benchmark.md).
    """
    options = tf.data.Options()
    options.experimental_optimization.inject_prefetch = False
    options.autotune.enabled = False
    return dataset.with_options(options)


def bench(train, args, timed, ratios):
    """Times the four contenders; returns ``{"zoo_layer_resnet": {...}}`` for the JSON.

    Args:
        train: the training :class:`zoo.data.DataSet` (its first batch is used).
        args: the speed bench's flags (``--batch-size``, ``--steps``, ``--rounds``,
            ``--warmup``, ``--steps-per-run``).
        timed: :func:`experiments.bench.speed.timed`.
        ratios: unused (this row's ratio is its own).
    """
    del ratios
    images = np.asarray(train.images[: args.batch_size], np.float32)
    labels = np.asarray(train.labels[: args.batch_size]).argmax(1).astype(np.int64)
    k = args.steps_per_run
    print("zoo_layer_resnet...", flush=True)
    with zoo.compat.installed():
        runs = {
            "graph": graph_run(images, labels),
            "zoo_layer": keras_run(images, labels, 1),
            "graph_loop": graph_loop_run(images, labels, k),
            "zoo_layer_spe": keras_run(images, labels, k),
        }
        steps = max(args.rounds, args.steps // 4)  # a ResNet step is slower than the MLP's
        _, timing = timed(runs, {}, steps, args)
    speeds, cpu = timing["steps_per_s"], timing["cpu_ms_per_step"]
    result = {"batch_size": args.batch_size, "steps_per_run": k, **timing}
    for suffix, (ours, graph) in PAIRS.items():
        result["ratio" + suffix] = speeds[ours] / speeds[graph]
        result["cpu_ratio" + suffix] = cpu[graph] / cpu[ours]
    print(
        f"zoo_layer_resnet: ratio {result['ratio']:.2f} (one step per call), "
        f"{result['ratio_loop']:.2f} ({k} per call)",
        flush=True,
    )
    return {"zoo_layer_resnet": result}
