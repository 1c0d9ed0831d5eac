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


class Params:
    """Hyperparameters as an object of the program's own (TF 1.15 deep-copied any
    params); ``get`` as the model_fn reads a dict."""

    def __init__(self, hidden=8, learning_rate=0.3):
        self.hidden, self.learning_rate = hidden, learning_rate

    def get(self, key, default=None):
        return getattr(self, key, default)


class _CountRuns(v1.train.SessionRunHook):
    """Counts ``before_run`` calls; notes ``GraphKeys.LOSSES`` as ``begin`` sees it."""

    def begin(self):
        self.runs = 0
        self.losses = [t.name for t in v1.get_collection(v1.GraphKeys.LOSSES)]

    def before_run(self, run_context):
        self.runs += 1


class _CountLogs(v1.train.LoggingTensorHook):
    """A LoggingTensorHook that counts the runs it logs."""

    logged = 0

    def after_run(self, run_context, run_values):
        self.logged += bool(self._should_trigger)
        super().after_run(run_context, run_values)


def tail_report(root):
    """What TF 1.15's Estimator behaviours that issue 50 names look like in this
    TensorFlow (TF 2.15's Estimator, or ours after install()): TPUEstimator on CPU
    hook by hook, params objects, GraphKeys.LOSSES, add_metrics with an
    early-stopping hook in train_and_evaluate, InMemoryEvaluatorHook.

    Returns:
        A JSON-able dict.
    """
    import os

    x, y = data()
    report = {}

    # TPUEstimator(use_tpu=False), iterations_per_loop=4: what hooks see of 13 steps.
    def tpu_model_fn(features, labels, mode, params):
        spec = model_fn(features, labels, mode, {"hidden": 8})
        return v1.estimator.tpu.TPUEstimatorSpec(mode, loss=spec.loss,
                                                 train_op=spec.train_op)  # fmt: skip

    tpu = v1.estimator.tpu
    config = tpu.RunConfig(model_dir=os.path.join(root, "tpu"), log_step_count_steps=8,
                           tpu_config=tpu.TPUConfig(iterations_per_loop=4))  # fmt: skip
    estimator = tpu.TPUEstimator(tpu_model_fn, config=config, use_tpu=False,
                                 train_batch_size=16)  # fmt: skip
    counter, logger = _CountRuns(), _CountLogs({"step": "global_step"}, every_n_iter=1)
    estimator.train(lambda params: input_fn(x, y, params["batch_size"])(), steps=13,
                    hooks=[counter, logger])  # fmt: skip
    steps_of = {}  # the summaries in model_dir, each with the steps it was written at
    for step, values in _eval_values(estimator.model_dir).items():
        for tag in values:
            steps_of.setdefault(tag, []).append(step)
    report["tpu"] = {
        "runs": counter.runs, "logged": logger.logged,
        "step": int(estimator.get_variable_value("global_step")),
        "summaries": {tag: sorted(steps) for tag, steps in steps_of.items()},
    }  # fmt: skip

    # params of the program's own class: a deep copy per call; the loss in LOSSES.
    seen = []

    def params_model_fn(features, labels, mode, params):
        seen.append([type(params).__name__, params is original, params.hidden])
        params.hidden = 99  # the next call gets a fresh copy
        return model_fn(features, labels, mode, Params())

    original = Params()
    estimator = tf.estimator.Estimator(params_model_fn, os.path.join(root, "params"),
                                       params=original)  # fmt: skip
    counter = _CountRuns()
    estimator.train(input_fn(x, y), steps=3, hooks=[counter])
    estimator.evaluate(input_fn(x, y, repeat=False))
    report["params"] = {"calls": seen, "type": type(estimator.params).__name__,
                        "copied": estimator.params is not original,
                        "losses": counter.losses}  # fmt: skip

    # add_metrics, and an early-stopping hook on the added metric (constant: it
    # never decreases), evaluated after each checkpoint by train_and_evaluate.
    def label_mean(labels):
        return {"label_mean": v1.metrics.mean(tf.cast(labels, tf.float32))}

    config = tf.estimator.RunConfig(model_dir=os.path.join(root, "early"),
                                    save_checkpoints_steps=5)  # fmt: skip
    estimator = tf.estimator.add_metrics(
        tf.estimator.Estimator(model_fn, config=config, params={"hidden": 8}), label_mean
    )
    hook = tf.estimator.experimental.stop_if_no_decrease_hook(
        estimator, "label_mean", 10, run_every_secs=None, run_every_steps=1
    )
    tf.estimator.train_and_evaluate(
        estimator,
        tf.estimator.TrainSpec(input_fn(x, y), max_steps=100, hooks=[hook]),
        tf.estimator.EvalSpec(input_fn(x, y, repeat=False), steps=None, throttle_secs=0),
    )
    report["early"] = {
        "step": int(estimator.get_variable_value("global_step")),
        "stop": bool(estimator.get_variable_value("signal_early_stopping/STOP")),
        "eval_steps": _eval_steps(estimator.eval_dir()),
        "label_mean": float(y.mean()),
    }

    # InMemoryEvaluatorHook every 4 runs of 10: evaluations without checkpoints.
    estimator = tf.estimator.Estimator(model_fn, os.path.join(root, "memory"),
                                       params={"hidden": 8})  # fmt: skip
    evaluator = tf.estimator.experimental.InMemoryEvaluatorHook(
        estimator, input_fn(x, y, repeat=False), name="memory", every_n_iter=4
    )
    estimator.train(input_fn(x, y), steps=10, hooks=[evaluator])
    last = estimator.evaluate(input_fn(x, y, repeat=False))
    steps = _eval_steps(estimator.eval_dir("memory"))
    in_memory = _eval_values(estimator.eval_dir("memory"))[steps[-1]]
    gap = abs(in_memory["accuracy"] - float(last["accuracy"]))
    report["memory"] = {"eval_steps": steps, "last_accuracy_gap": gap}
    return report


def _eval_values(eval_dir):
    """Step -> {tag: value} of the event files in ``eval_dir`` (read directly, so
    neither side's reader is taken on trust)."""
    import glob

    values = {}
    for path in glob.glob(f"{eval_dir}/events.out.tfevents.*"):
        for event in v1.train.summary_iterator(path):
            for value in event.summary.value:
                values.setdefault(event.step, {})[value.tag] = value.simple_value
    return values


def _eval_steps(eval_dir):
    return sorted(_eval_values(eval_dir))
