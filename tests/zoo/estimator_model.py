"""A custom-model_fn Estimator program in TF 1.15's idioms, written for the tests; it
imports only TensorFlow and numpy, so TF 2.15's Estimator runs it too (the
reference venv, :mod:`tests.zoo.estimator_reference`)."""

import numpy as np
import tensorflow as tf

v1 = tf.compat.v1
N_FEATURES, N_CLASSES = 4, 3


def data(n=48, seed=0):
    """``(x [n, 4] float32, y [n] int32)``, classes from the first two features."""
    x = np.random.RandomState(seed).randn(n, N_FEATURES).astype(np.float32)
    return x, ((x[:, 0] > 0).astype(np.int32) + (x[:, 1] > 0)).astype(np.int32)


def model_fn(features, labels, mode, params):
    """A two-layer classifier on ``features["x"]``: predictions, accuracy, SGD."""
    hidden = v1.layers.dense(features["x"], params.get("hidden", 8), tf.nn.relu)
    logits = v1.layers.dense(hidden, N_CLASSES, name="logits")
    predictions = {
        "class_ids": tf.argmax(logits, 1),
        "probabilities": tf.nn.softmax(logits),
        "logits": logits,
    }
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(
            mode,
            predictions=predictions,
            export_outputs={
                "predict": tf.estimator.export.PredictOutput(predictions),
            },
        )
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    optimizer = v1.train.GradientDescentOptimizer(params.get("learning_rate", 0.3))
    train_op = optimizer.minimize(loss, v1.train.get_global_step())
    metrics = {"accuracy": v1.metrics.accuracy(labels, predictions["class_ids"])}
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=train_op, eval_metric_ops=metrics
    )


def input_fn(x, y=None, batch_size=16, repeat=True):
    """An input_fn of a Dataset of ``({"x": x}, y)`` batches."""

    def fn():
        dataset = tf.data.Dataset.from_tensor_slices(
            ({"x": x},) if y is None else ({"x": x}, y)
        )
        if y is None:
            dataset = dataset.map(lambda features: features)
        return (dataset.repeat() if repeat else dataset).batch(batch_size)

    return fn


def serving_input_receiver_fn():
    """Serving: a float placeholder ``x`` [None, 4]."""
    x = v1.placeholder(tf.float32, [None, N_FEATURES], name="x")
    return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})
