"""The ZooLayer ResNet row of the speed bench: ``fit`` vs the same net in graph mode.

A small TF-Slim ResNet v1 (tf-slim 1.1.0 as released, after ``zoo.compat.install()``:
the root block and one bottleneck unit in each of two blocks, slim's batch norm and
weight decay; the net of docs/migrating.md's section 5) on one batch of the bench's
28x28 images held in memory, timed in interleaved rounds in one process
(:func:`experiments.bench.speed.timed`), one optimizer step per call on both sides:

* ``graph``: the TF1 program, built in a ``tf.Graph`` with its ``UPDATE_OPS`` and a
  momentum optimizer, one ``session.run`` per step;
* ``zoo_layer``: the same function in ``zoo.ZooLayer`` in a Keras 3 model, ``fit``
  with ``steps_per_execution=1`` (the moving statistics and the weight decay come
  through the layer).

``ratio`` is ``zoo_layer / graph`` in steps/s (goal: at least 0.9), ``cpu_ratio`` the
same from CPU time per step. Run in ``make bench`` (:data:`speed.OWN_BENCHES`).
"""

import keras
import numpy as np
import tensorflow as tf

import zoo.compat
from zoo.sharing.keras import ZooLayer

v1 = tf.compat.v1
SIDE, CLASSES, LEARNING_RATE, MOMENTUM = 28, 10, 0.01, 0.9


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
    """``run(steps)`` of the TF1 program: one ``session.run`` per step."""
    graph = tf.Graph()
    with graph.as_default():
        logits = slim_resnet(tf.constant(images), True)
        loss = v1.losses.sparse_softmax_cross_entropy(tf.constant(labels), logits)
        loss += v1.losses.get_regularization_loss()
        with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
            train = v1.train.MomentumOptimizer(LEARNING_RATE, MOMENTUM).minimize(loss)
        session = v1.Session(graph=graph)
        session.run(v1.global_variables_initializer())
    graph.finalize()

    def run(steps):
        for _ in range(steps):
            session.run(train)

    return run


def keras_run(images, labels):
    """``run(steps)`` of the ZooLayer model: ``fit`` for ``steps`` steps."""
    inputs = keras.Input((SIDE * SIDE,), batch_size=len(images))
    model = keras.Model(inputs, ZooLayer(slim_resnet)(inputs))
    model.compile(
        keras.optimizers.SGD(LEARNING_RATE, momentum=MOMENTUM),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        steps_per_execution=1,
    )
    batches = tf.data.Dataset.from_tensors((images, labels)).repeat()

    def run(steps):
        if steps:  # fit with steps_per_epoch=0 would run the endless dataset
            model.fit(batches, epochs=1, steps_per_epoch=steps, verbose=0)

    return run


def bench(train, args, timed, ratios):
    """Times both contenders; returns ``{"zoo_layer_resnet": {...}}`` for the JSON.

    Args:
        train: the training :class:`zoo.data.DataSet` (its first batch is used).
        args: the speed bench's flags (``--batch-size``, ``--steps``, ``--rounds``).
        timed: :func:`experiments.bench.speed.timed`.
        ratios: unused (this row's ratio is its own).
    """
    del ratios
    images = np.asarray(train.images[: args.batch_size], np.float32)
    labels = np.asarray(train.labels[: args.batch_size]).argmax(1).astype(np.int64)
    print("zoo_layer_resnet...", flush=True)
    with zoo.compat.installed():
        runs = {"graph": graph_run(images, labels), "zoo_layer": keras_run(images, labels)}
        steps = max(args.rounds, args.steps // 4)  # a ResNet step is slower than the MLP's
        _, timing = timed(runs, {}, steps, args)
    speeds, cpu = timing["steps_per_s"], timing["cpu_ms_per_step"]
    result = {
        "batch_size": args.batch_size,
        **timing,
        "ratio": speeds["zoo_layer"] / speeds["graph"],
        "cpu_ratio": cpu["graph"] / cpu["zoo_layer"],
    }
    print(f"zoo_layer_resnet: ratio {result['ratio']:.2f}", flush=True)
    return {"zoo_layer_resnet": result}
