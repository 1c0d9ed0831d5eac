"""TF 1.15's ``tf.estimator.experimental.KMeans`` (``tf.contrib.factorization``'s
``KMeansClustering``): k-means as an Estimator, on
:class:`zoo.compat.contrib.factorization.KMeans`'s graph.

Each training step is one k-means step on the batch (mini-batch by default, as
TF's); a hook fills the centers when the session starts, as TF's did. Predictions
are ``cluster_index`` and ``all_distances``; the evaluation's ``score`` is the mean
over batches of the summed distance of each point to its center.

Usage (TF's k-means tutorial)::

    def input_fn():
        return tf.train.limit_epochs(tf.convert_to_tensor(points), num_epochs=1)

    kmeans = tf.estimator.experimental.KMeans(num_clusters=5, use_mini_batch=False)
    for _ in range(10):
        kmeans.train(input_fn)
    centers = kmeans.cluster_centers()
    indices = list(kmeans.predict_cluster_index(input_fn))
"""

import numpy as np
import tensorflow as tf

from layers.errors import ZooError
from zoo.compat.contrib import factorization
from zoo.compat.estimator.estimator import Estimator
from zoo.compat.estimator.export.export_output import PredictOutput
from zoo.compat.estimator.model_fn import DEFAULT_SERVING_KEY, EstimatorSpec

v1 = tf.compat.v1


class _InitializeClustersHook(v1.train.SessionRunHook):
    """Runs the centers' init op until every center is chosen, when the session
    starts (TF's, on one machine: the chief)."""

    def __init__(self, init_op, initialized):
        self._init_op, self._initialized = init_op, initialized

    def after_create_session(self, session, coord):
        del coord
        while not session.run(self._initialized):
            session.run(self._init_op)


class _LossRelativeChangeHook(v1.train.SessionRunHook):
    """Stops training once the loss changes by less than ``tolerance`` relative to
    ``1 + |previous loss|`` (TF's)."""

    def __init__(self, loss, tolerance):
        self._loss, self._tolerance, self._previous = loss, tolerance, None

    def before_run(self, run_context):
        del run_context
        return v1.train.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        loss = run_values.results
        if self._previous:
            change = abs(loss - self._previous) / (1 + abs(self._previous))
            if change < self._tolerance:
                run_context.request_stop()
        self._previous = loss


def _points(features, feature_columns):
    """The ``[n, d]`` points: the features as they are, or a dict's through
    ``feature_columns`` (None: its values side by side, sorted by key)."""
    if not isinstance(features, dict):
        return features
    if feature_columns:
        return v1.feature_column.input_layer(features, feature_columns)
    return tf.concat([features[key] for key in sorted(features)], axis=1)


class KMeansClustering(Estimator):
    """TF's k-means Estimator (``tf.estimator.experimental.KMeans``).

    Args:
        num_clusters: the number of centers (ignored when ``initial_clusters``
            gives them).
        model_dir, config: as :class:`Estimator`'s.
        initial_clusters: ``"random"``, ``"kmeans_plus_plus"``, a function
            ``(inputs, num_remaining) -> centers``, or the centers (an array).
        distance_metric: ``"squared_euclidean"`` or ``"cosine"``.
        seed: the initializations' seed, or None (the graph's).
        use_mini_batch: mini-batch steps (TF's default), else each step moves every
            center to the mean of its points in the batch.
        mini_batch_steps_per_iteration: 1 (larger values are not provided).
        kmeans_plus_plus_num_retries: extra points drawn per k-means++ center.
        relative_tolerance: None, or stop training once the loss changes by less.
        feature_columns: the columns of dict features (None: every feature).

    Raises:
        ZooError: an initialization or distance TF refused (its words), or
            ``mini_batch_steps_per_iteration`` other than 1.
    """

    SQUARED_EUCLIDEAN_DISTANCE = factorization.SQUARED_EUCLIDEAN_DISTANCE
    COSINE_DISTANCE = factorization.COSINE_DISTANCE
    RANDOM_INIT = factorization.RANDOM_INIT
    KMEANS_PLUS_PLUS_INIT = factorization.KMEANS_PLUS_PLUS_INIT
    SCORE = "score"
    CLUSTER_INDEX = "cluster_index"
    ALL_DISTANCES = "all_distances"
    CLUSTER_CENTERS_VAR_NAME = factorization.CLUSTERS_VAR_NAME

    def __init__(self, num_clusters, model_dir=None, initial_clusters=RANDOM_INIT,
                 distance_metric=SQUARED_EUCLIDEAN_DISTANCE, seed=None,
                 use_mini_batch=True, mini_batch_steps_per_iteration=1,
                 kmeans_plus_plus_num_retries=2, relative_tolerance=None, config=None,
                 feature_columns=None):  # fmt: skip
        inits = (self.RANDOM_INIT, self.KMEANS_PLUS_PLUS_INIT)  # the graph's, but kmc2
        if isinstance(initial_clusters, str) and initial_clusters not in inits:
            raise ZooError(
                f"KMeans: Unsupported initialization algorithm '{initial_clusters}'; use "
                f"one of {', '.join(inits)}, a function or the centers"
            )

        def graph(points):
            return factorization.KMeans(
                points, num_clusters, initial_clusters, distance_metric, use_mini_batch,
                mini_batch_steps_per_iteration, seed, kmeans_plus_plus_num_retries)

        graph([])  # no points: checks the arguments now, as TF's constructor did
        self._distance_metric = distance_metric

        def model_fn(features, mode):
            (all_distances, cluster_index, losses, initialized, init_op,
             training_op) = graph(_points(features, feature_columns)).training_graph()
            loss = tf.reduce_sum(losses)
            v1.summary.scalar("loss/raw", loss)
            step = v1.assign_add(v1.train.get_global_step(), 1)
            with tf.control_dependencies([training_op, step]):
                train_op = tf.identity(loss)
            hooks = [_InitializeClustersHook(init_op, initialized)]
            if relative_tolerance is not None:
                hooks.append(_LossRelativeChangeHook(loss, relative_tolerance))
            return EstimatorSpec(
                mode,
                predictions={self.ALL_DISTANCES: all_distances[0],
                             self.CLUSTER_INDEX: cluster_index[0]},
                loss=loss, train_op=train_op,
                eval_metric_ops={self.SCORE: v1.metrics.mean(loss)},
                training_hooks=hooks,
                export_outputs={
                    self.ALL_DISTANCES: PredictOutput(all_distances[0]),
                    self.CLUSTER_INDEX: PredictOutput(cluster_index[0]),
                    DEFAULT_SERVING_KEY: PredictOutput(cluster_index[0]),
                },
            )  # fmt: skip

        super().__init__(model_fn, model_dir, config)

    def _predict_one_key(self, input_fn, key):
        for prediction in self.predict(input_fn, predict_keys=[key]):
            yield prediction[key]

    def predict_cluster_index(self, input_fn):
        """Yields each point's nearest center's index."""
        yield from self._predict_one_key(input_fn, self.CLUSTER_INDEX)

    def score(self, input_fn):
        """The summed distance of one batch's points to their nearest centers
        (squared, for the squared Euclidean distance)."""
        return self.evaluate(input_fn, steps=1)[self.SCORE]

    def transform(self, input_fn):
        """Yields each point's distance to every center (Euclidean, not squared,
        for the squared Euclidean distance)."""
        for distances in self._predict_one_key(input_fn, self.ALL_DISTANCES):
            if self._distance_metric == self.SQUARED_EUCLIDEAN_DISTANCE:
                yield np.sqrt(distances)
            else:
                yield distances

    def cluster_centers(self):
        """The centers, ``[num_clusters, d]``, of the latest checkpoint."""
        return self.get_variable_value(self.CLUSTER_CENTERS_VAR_NAME)
