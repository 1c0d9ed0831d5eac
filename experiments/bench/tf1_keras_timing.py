"""The timed program of ``experiments.bench.tf1_keras``: a ``tf.keras`` MLP
(784-256-256-10, Adam, batch 100) trained by a TF1 program, with ``fit`` in graph
mode and as a Keras model inside an Estimator ``model_fn``, and the same MLP on
``get_variable`` in a plain session loop fed numpy batches. It imports only numpy
and TensorFlow, so TensorFlow 2.15 runs it as it is; ``--zoo`` runs it under
``zoo.compat.install()`` (TensorFlow 2.21, tf_keras):

    python experiments/bench/tf1_keras_timing.py [--zoo] STEPS   # rates as JSON
"""

import json
import sys
import tempfile
import time

import numpy as np
import tensorflow.compat.v1 as tf

if "--zoo" in sys.argv:  # first, as a TF1 program's upgrade lines: before any tf.keras
    import zoo.compat

    zoo.compat.install()

WIDTH, HIDDEN, CLASSES, BATCH, BATCHES, WARMUP = 784, 256, 10, 100, 20, 20


def network():
    return tf.keras.Sequential([
        tf.keras.layers.Dense(HIDDEN, activation="relu", input_shape=(WIDTH,)),
        tf.keras.layers.Dense(HIDDEN, activation="relu"),
        tf.keras.layers.Dense(CLASSES),
    ])  # fmt: skip


def data():
    rng = np.random.RandomState(0)
    x = rng.rand(BATCH * BATCHES, WIDTH).astype(np.float32)
    return x, rng.randint(0, CLASSES, len(x)).astype(np.int32)


def rates(ends, timed):
    """Steps per second (wall, and per second of the process's CPU time) over the
    last ``timed`` of the ``(wall, cpu)`` step ends."""
    (wall, cpu), (wall_start, cpu_start) = ends[-1], ends[-1 - timed]
    return {"steps_per_second": timed / (wall - wall_start),
            "steps_per_cpu_second": timed / (cpu - cpu_start)}  # fmt: skip


def now():
    return time.perf_counter(), time.process_time()


class _Batches(tf.keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.ends = []

    def on_train_batch_end(self, batch, logs=None):
        self.ends.append(now())


def fit(steps):
    """``fit`` on numpy arrays in a graph: WARMUP + ``steps`` batches."""
    x, y = data()
    with tf.Graph().as_default():
        model = network()
        loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        model.compile(tf.keras.optimizers.Adam(0.001), loss)
        clock = _Batches()
        epochs = -(-(WARMUP + steps) // BATCHES)
        model.fit(x, y, batch_size=BATCH, epochs=epochs, callbacks=[clock], verbose=0)
        return rates(clock.ends, len(clock.ends) - WARMUP)


def session_loop(steps):
    """``session.run([train, loss], feed_dict)`` of the MLP on ``get_variable`` and
    ``tf.matmul``, as TF1 tutorials train: WARMUP + ``steps`` steps."""
    x, y = data()
    with tf.Graph().as_default():
        images = tf.placeholder(tf.float32, [None, WIDTH])
        labels = tf.placeholder(tf.int32, [None])
        hidden = images
        for i, width in enumerate([HIDDEN, HIDDEN, CLASSES]):
            weights = tf.get_variable(f"w{i}", [hidden.shape[1], width])
            bias = tf.get_variable(f"b{i}", [width], initializer=tf.zeros_initializer())
            hidden = tf.matmul(hidden, weights) + bias
            hidden = tf.nn.relu(hidden) if width == HIDDEN else hidden
        loss = tf.losses.sparse_softmax_cross_entropy(labels, hidden)
        train = tf.train.AdamOptimizer(0.001).minimize(loss)
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            ends = []
            for step in range(WARMUP + steps):
                batch = slice(step % BATCHES * BATCH, (step % BATCHES + 1) * BATCH)
                session.run([train, loss], {images: x[batch], labels: y[batch]})
                ends.append(now())
            return rates(ends, steps)


class _Runs(tf.train.SessionRunHook):
    def __init__(self):
        self.ends = []

    def after_run(self, run_context, run_values):
        self.ends.append(now())


def model_fn(features, labels, mode):
    logits = network()(features["x"])
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.train.AdamOptimizer(0.001).minimize(loss, tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def estimator(steps):
    """``Estimator.train`` of :func:`model_fn`: WARMUP + ``steps`` steps."""
    x, y = data()

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(BATCH)

    config = tf.estimator.RunConfig(save_checkpoints_secs=3600, log_step_count_steps=None)
    model = tf.estimator.Estimator(model_fn, tempfile.mkdtemp(), config)
    clock = _Runs()
    model.train(input_fn, hooks=[clock], steps=WARMUP + steps)
    return rates(clock.ends, steps)


if __name__ == "__main__":  # a timed program, not an experiment: no main()
    tf.disable_v2_behavior()
    tf.logging.set_verbosity(tf.logging.ERROR)
    steps = int(sys.argv[-1])
    print(json.dumps({"fit": fit(steps), "estimator": estimator(steps),
                      "session": session_loop(steps)}))  # fmt: skip
