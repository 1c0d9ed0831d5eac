"""Each canned estimator trained from one checkpoint on the same data, as a TF 1.x
program writes it: run by TensorFlow 2.15's own estimators (``reference``) and by
ours (``ours``), which continue from the checkpoint the reference wrote.

    python canned_program.py reference WORKDIR   # (TF 2.15 + tensorflow-estimator)

writes WORKDIR/<case>/start (the checkpoint after STEPS steps) and
WORKDIR/reference.json; :func:`run` with ``ours`` copies each start, trains STEPS
more steps, and returns the same record: checkpoint names, evaluation, predictions.
"""

import json
import pathlib
import shutil
import sys

import numpy as np
import tensorflow.compat.v1 as tf

STEPS, BATCH, EXAMPLES = 3, 8, 24
fc = tf.feature_column


def _columns():
    x = fc.numeric_column("x", shape=(2,))
    y = fc.numeric_column("y")
    c = fc.categorical_column_with_vocabulary_list("c", ["a", "b", "d"])
    h = fc.categorical_column_with_hash_bucket("h", 7)
    crossed = fc.crossed_column([c, fc.bucketized_column(y, [-0.5, 0.5])], 5)
    return x, y, c, h, crossed


def cases(estimators):
    """Case name -> (estimator factory of model_dir, kind of labels)."""
    x, y, c, h, crossed = _columns()
    embedded = fc.embedding_column(c, 2)
    return {
        "dnn_classifier": (lambda d: estimators.DNNClassifier(
            [5, 3], [x, embedded, fc.indicator_column(h)], d, n_classes=3,
            weight_column="w", label_vocabulary=["p", "q", "r"], optimizer="Adam",
            batch_norm=True), "names"),
        "dnn_regressor": (lambda d: estimators.DNNRegressor(
            [4], [x, y, fc.indicator_column(c)], d, label_dimension=2,
            activation_fn=tf.nn.tanh,
            optimizer=lambda: tf.train.RMSPropOptimizer(0.01)), "values"),
        "linear_classifier": (lambda d: estimators.LinearClassifier(
            [x, c, h, crossed], d, weight_column="w"), "binary"),
        "linear_regressor": (lambda d: estimators.LinearRegressor(
            [x, fc.bucketized_column(y, [0.0])], d, label_dimension=2,
            optimizer="SGD"), "values"),
        "combined_classifier": (lambda d: estimators.DNNLinearCombinedClassifier(
            d, linear_feature_columns=[c, crossed], dnn_feature_columns=[x, embedded],
            dnn_hidden_units=[4, 3]), "binary"),
        "combined_regressor": (lambda d: estimators.DNNLinearCombinedRegressor(
            d, linear_feature_columns=[x, h], dnn_feature_columns=[y],
            dnn_hidden_units=[3], dnn_optimizer="SGD", label_dimension=2), "values"),
        "baseline_classifier": (lambda d: estimators.BaselineClassifier(
            d, n_classes=3, weight_column="w"), "ids"),
        "baseline_regressor": (lambda d: estimators.BaselineRegressor(
            d, label_dimension=2, optimizer="Adagrad"), "values"),
    }  # fmt: skip


def _data(kind):
    rng = np.random.RandomState(7)
    x = rng.randn(EXAMPLES, 2).astype(np.float32)
    y = rng.randn(EXAMPLES, 1).astype(np.float32)
    features = {
        "x": x,
        "y": y,
        "c": rng.choice(["a", "b", "d", "z"], (EXAMPLES, 1)),
        "h": rng.choice(["u", "v", "w", "q"], (EXAMPLES, 1)),
        "w": rng.uniform(0.5, 2.0, (EXAMPLES, 1)).astype(np.float32),
    }
    ids = np.digitize(x[:, :1] + y, [-0.5, 0.5])
    labels = {
        "binary": (ids > 0).astype(np.int64),
        "ids": ids.astype(np.int32),
        "names": np.array(["p", "q", "r"])[ids],
        "values": np.concatenate([x[:, :1] - y, 2 * y], axis=1),
    }[kind]
    return features, labels


def _input_fn(kind, repeat):
    def input_fn():
        dataset = tf.data.Dataset.from_tensor_slices(_data(kind)).batch(BATCH)
        return dataset.repeat() if repeat else dataset

    return input_fn


# Tensors programs fetch from hooks (census wide_deep logs the first two), looked up
# under each scope a canned head is built in.
FETCHED = [
    f"{scope}head/{name}:0"
    for scope in ("", "dnn/", "linear/")
    for name in ("weighted_loss/Sum", "truediv", "predictions/probabilities",
                 "predictions/logistic", "predictions/class_ids")
]  # fmt: skip


class _Fetchable(tf.train.SessionRunHook):
    """Records which of FETCHED the training graph holds."""

    def begin(self):
        graph = tf.get_default_graph()
        self.names = [name for name in FETCHED if _holds(graph, name)]


def _holds(graph, name):
    try:
        graph.get_tensor_by_name(name)
    except KeyError:
        return False
    return True


def _plain(value):
    value = np.asarray(value)
    return value.astype(str).tolist() if value.dtype.kind in "SUO" else value.tolist()


def run(estimators, workdir, side):
    """Trains, evaluates and predicts with every case; ``reference`` also writes
    the start checkpoints, ``ours`` continues from them.

    Returns:
        case -> {"names", "fetchable", "evaluation", "predictions"}.
    """
    workdir, record = pathlib.Path(workdir), {}
    for case, (make, kind) in cases(estimators).items():
        model_dir = workdir / case / side
        if side == "reference":
            make(str(model_dir)).train(_input_fn(kind, True), steps=STEPS)
            shutil.copytree(model_dir, workdir / case / "start")
        else:
            shutil.copytree(workdir / case / "start", model_dir)
        estimator, fetchable = make(str(model_dir)), _Fetchable()
        estimator.train(_input_fn(kind, True), hooks=[fetchable], steps=STEPS)
        evaluation = estimator.evaluate(_input_fn(kind, False))
        predictions = list(estimator.predict(_input_fn(kind, False)))
        record[case] = {
            "names": estimator.get_variable_names(),
            "fetchable": fetchable.names,
            "evaluation": {key: _plain(value) for key, value in evaluation.items()},
            "predictions": {
                key: [_plain(p[key]) for p in predictions] for key in predictions[0]
            },
        }
    return record


if __name__ == "__main__":
    tf.logging.set_verbosity(tf.logging.ERROR)
    result = run(tf.estimator, sys.argv[2], sys.argv[1])
    pathlib.Path(sys.argv[2], f"{sys.argv[1]}.json").write_text(json.dumps(result))
