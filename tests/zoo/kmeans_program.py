"""``tf.estimator.experimental.KMeans`` as TF 1.x programs use it, run by TensorFlow
2.15's estimator (``python kmeans_program.py OUT.json``, the reference venv) and by
ours after install() (:func:`run`): the k-means tutorial's loop (``limit_epochs``
input, ``train`` five times, ``cluster_centers()``, ``predict_cluster_index``),
cosine k-means of dict features from a Dataset, and a stop at ``relative_tolerance``.
Full-batch steps with given centers: TF 2.15's mini-batch steps read the cluster
counts unordered against their update, so its results differ from run to run.
"""

import json
import sys

import numpy as np
import tensorflow.compat.v1 as tf

N_CLUSTERS = 5


def points():
    """``[200, 2]`` points in [0, 1000)."""
    return np.random.RandomState(0).uniform(0, 1000, [200, 2]).astype(np.float32)


def _tutorial(estimators, model_dir):
    data = points()

    def input_fn():
        return tf.train.limit_epochs(tf.convert_to_tensor(data), num_epochs=1)

    kmeans = estimators.experimental.KMeans(
        N_CLUSTERS, model_dir, initial_clusters=data[:N_CLUSTERS], use_mini_batch=False)
    centers = []
    for _ in range(5):
        kmeans.train(input_fn)
        centers.append(kmeans.cluster_centers().tolist())
    return {
        "centers": centers,
        "cluster_index": [int(i) for i in kmeans.predict_cluster_index(input_fn)],
        "score": float(kmeans.score(input_fn)),
        "transform": [d.tolist() for d in kmeans.transform(input_fn)],
        "global_step": int(kmeans.get_variable_value("global_step")),
    }


def _cosine_dict(estimators, model_dir):
    data = points() - 500  # about the origin: the directions differ

    def input_fn(repeat):
        def make():
            columns = {"b": data[:, 1:], "a": data[:, :1]}  # sorted: a, b
            dataset = tf.data.Dataset.from_tensor_slices(columns)
            return dataset.batch(50).repeat() if repeat else dataset.batch(50)

        return make

    kmeans = estimators.experimental.KMeans(
        3, model_dir, initial_clusters=data[:3], use_mini_batch=False,
        distance_metric=estimators.experimental.KMeans.COSINE_DISTANCE)  # fmt: skip
    kmeans.train(input_fn(True), steps=6)
    return {
        "centers": kmeans.cluster_centers().tolist(),
        "cluster_index": [int(i) for i in kmeans.predict_cluster_index(input_fn(False))],
        "score": float(kmeans.score(input_fn(True))),
        "transform": [d.tolist() for d in kmeans.transform(input_fn(False))],
    }


def _tolerance(estimators, model_dir):
    data = points()
    kmeans = estimators.experimental.KMeans(
        N_CLUSTERS, model_dir, initial_clusters=data[-N_CLUSTERS:], use_mini_batch=False,
        relative_tolerance=1e-3)  # fmt: skip
    kmeans.train(lambda: tf.data.Dataset.from_tensors(data).repeat(), steps=100)
    return {"global_step": int(kmeans.get_variable_value("global_step")),
            "centers": kmeans.cluster_centers().tolist()}  # fmt: skip


CASES = {"tutorial": _tutorial, "cosine_dict": _cosine_dict, "tolerance": _tolerance}


def run(estimators, workdir):
    """Each case's record, its model_dir under ``workdir``.

    Args:
        estimators: ``tf.compat.v1.estimator`` of the side that runs.
        workdir: a directory.

    Returns:
        ``{case: {name: value}}``.
    """
    tf.logging.set_verbosity(tf.logging.ERROR)
    return {name: case(estimators, f"{workdir}/{name}") for name, case in CASES.items()}


if __name__ == "__main__":
    tf.disable_v2_behavior()
    out = sys.argv[1]
    json.dump(run(tf.estimator, out.rsplit("/", 1)[0]), open(out, "w"))
