"""TF 1.15's ``tf.contrib.factorization.KMeans``: the k-means graph, on the
clustering kernels TensorFlow 2.21 still carries (``tf.raw_ops.NearestNeighbors``,
``KmeansPlusPlusInitialization``, ``KMC2ChainInitialization``).

TF 1.15's class, arguments and defaults; ``training_graph()`` returns its 6-tuple
``(all_scores, cluster_idx, scores, cluster_centers_initialized, init_op,
training_op)``; its variables are TF 1.15's: ``clusters`` (of unknown shape until
``init_op`` fills it), ``initialized`` (a bool) and, with ``use_mini_batch``, the
cluster counts. Full-batch steps move each center to the mean of its points (an
empty cluster's center becomes 0, as TF 1.15's); mini-batch steps move it by
``(sum(points) - k * center) / (count + k)``.

Usage::

    kmeans = tf.contrib.factorization.KMeans(points, 5, "kmeans_plus_plus")
    (all_scores, cluster_idx, scores, initialized, init_op,
     train_op) = kmeans.training_graph()
    sess.run(tf.global_variables_initializer()); sess.run(init_op)
    for _ in range(10):
        sess.run(train_op)
"""

import tensorflow as tf

from layers.errors import ZooError

__all__ = ["COSINE_DISTANCE", "KMC2_INIT", "KMEANS_PLUS_PLUS_INIT", "KMeans",
           "RANDOM_INIT", "SQUARED_EUCLIDEAN_DISTANCE"]  # fmt: skip

SQUARED_EUCLIDEAN_DISTANCE = "squared_euclidean"
COSINE_DISTANCE = "cosine"
RANDOM_INIT = "random"
KMEANS_PLUS_PLUS_INIT = "kmeans_plus_plus"
KMC2_INIT = "kmc2"
CLUSTERS_VAR_NAME = "clusters"

v1 = tf.compat.v1


def _normalize(values):
    return tf.math.l2_normalize(values, axis=1)


class KMeans:
    """TF 1.15's graph of k-means clustering.

    Args:
        inputs: a ``[n, d]`` float tensor, or a list of them (shards).
        num_clusters: an int or scalar tensor; ignored when ``initial_clusters``
            is a tensor or array (its rows are the centers).
        initial_clusters: ``"random"`` (points drawn from the data),
            ``"kmeans_plus_plus"``, ``"kmc2"``, a function ``(inputs,
            num_remaining) -> centers``, or the centers themselves.
        distance_metric: ``"squared_euclidean"`` or ``"cosine"``.
        use_mini_batch: mini-batch k-means (else full batch).
        mini_batch_steps_per_iteration: 1 (TF 1.15's larger values, which
            copy the centers every N steps, are not provided).
        random_seed: the seed of the initializations, or None; as in TF's
            clustering_ops, the seed used is ``tf.compat.v1.get_seed(random_seed)[0]``.
        kmeans_plus_plus_num_retries: extra points drawn per sampled center.
        kmc2_chain_length: points per k-MC2 Markov chain.

    Raises:
        ZooError: an unknown initialization or metric (TF 1.15's words: a
            ``ValueError``), or ``mini_batch_steps_per_iteration`` other than 1.
    """

    def __init__(self, inputs, num_clusters, initial_clusters=RANDOM_INIT,
                 distance_metric=SQUARED_EUCLIDEAN_DISTANCE, use_mini_batch=False,
                 mini_batch_steps_per_iteration=1, random_seed=0,
                 kmeans_plus_plus_num_retries=2, kmc2_chain_length=200):  # fmt: skip
        inits = (RANDOM_INIT, KMEANS_PLUS_PLUS_INIT, KMC2_INIT)
        if isinstance(initial_clusters, str) and initial_clusters not in inits:
            raise ZooError(
                f"KMeans: Unsupported initialization algorithm '{initial_clusters}'; "
                f"use one of {', '.join(inits)}, a function or the centers"
            )
        metrics = (SQUARED_EUCLIDEAN_DISTANCE, COSINE_DISTANCE)
        if distance_metric not in metrics:
            raise ZooError(
                f"KMeans: Unsupported distance metric '{distance_metric}'; use one of "
                f"{', '.join(metrics)}"
            )
        if mini_batch_steps_per_iteration != 1:
            raise ZooError(
                f"KMeans: expected mini_batch_steps_per_iteration=1, found "
                f"{mini_batch_steps_per_iteration!r}, which zoo.compat does not provide; "
                "pass 1 (centers updated every step)"
            )
        self._inputs = inputs if isinstance(inputs, list) else [inputs]
        self._num_clusters = num_clusters
        self._initial_clusters = initial_clusters
        self._distance_metric = distance_metric
        self._use_mini_batch = use_mini_batch
        self._seed = v1.get_seed(random_seed)[0]
        self._kmeans_plus_plus_num_retries = kmeans_plus_plus_num_retries
        self._kmc2_chain_length = kmc2_chain_length

    @property
    def _cosine(self):
        return self._distance_metric == COSINE_DISTANCE

    def _clusters_l2_normalized(self):
        """Whether the stored centers are kept of unit norm (cosine, full batch)."""
        return self._cosine and not self._use_mini_batch

    def _distances(self, inputs, clusters):
        """Each input's distance to each center: ``[n, num_clusters]`` per shard."""
        if self._cosine:  # inputs and clusters of unit norm
            return [1 - tf.matmul(inp, clusters, transpose_b=True) for inp in inputs]
        squared = tf.transpose(tf.reduce_sum(tf.square(clusters), 1, keepdims=True))
        return [tf.reduce_sum(tf.square(inp), 1, keepdims=True)
                - 2 * tf.matmul(inp, clusters, transpose_b=True) + squared
                for inp in inputs]  # fmt: skip

    def _infer_graph(self, inputs, clusters):
        """``(all_scores, scores, cluster_idx)``, each a tuple of one per shard."""
        all_scores = self._distances(inputs, clusters)
        if self._cosine and not self._clusters_l2_normalized():
            clusters = _normalize(clusters)
        output = []
        for inp, score in zip(inputs, all_scores, strict=True):
            indices, distances = tf.raw_ops.NearestNeighbors(
                points=inp, centers=clusters, k=tf.constant(1, tf.int64))
            if self._cosine:  # the squared distance of unit vectors, halved
                distances *= 0.5
            output.append((score, tf.squeeze(distances, [-1]), tf.squeeze(indices, [-1])))
        return tuple(zip(*output, strict=True))

    def training_graph(self):
        """The k-means training graph.

        Returns:
            ``(all_scores, cluster_idx, scores, cluster_centers_initialized,
            init_op, training_op)``: per shard, the distances to every center,
            the nearest center's index and distance; the bool variable set once
            every center is chosen; the op that chooses them (run until
            ``cluster_centers_initialized``; once for the built-in methods when
            the data has at least ``num_clusters`` points); one step of training.

        Raises:
            ZooError: k-means++ or k-MC2 without a seed (neither ``random_seed`` nor
                the graph's): their kernels take one (TF raised a ValueError).
        """
        seeded = (KMEANS_PLUS_PLUS_INIT, KMC2_INIT)
        if self._seed is None and isinstance(self._initial_clusters, str) and (
                self._initial_clusters in seeded):  # fmt: skip
            raise ZooError(
                f"KMeans: expected a seed for {self._initial_clusters}, found none (no "
                "random_seed, no graph seed); pass random_seed=... (the Estimator's "
                "seed=..., or RunConfig(tf_random_seed=...))"
            )
        if isinstance(self._initial_clusters, str) or callable(self._initial_clusters):
            initial_clusters = self._initial_clusters
            num_clusters = tf.convert_to_tensor(self._num_clusters)
        else:
            initial_clusters = tf.convert_to_tensor(self._initial_clusters)
            num_clusters = tf.shape(initial_clusters)[0]
        centers = v1.Variable(tf.constant([], tf.float32), name=CLUSTERS_VAR_NAME,
                              validate_shape=False, shape=tf.TensorShape(None))
        initialized = v1.Variable(False, dtype=tf.bool, name="initialized")
        counts = (v1.Variable(tf.ones([num_clusters], tf.int64))
                  if self._use_mini_batch else None)  # fmt: skip
        init_op = _Initializer(self, num_clusters, initial_clusters, centers,
                               initialized).op()  # fmt: skip
        inputs, clusters = self._inputs, centers
        if self._cosine:
            inputs = [_normalize(inp) for inp in inputs]
            if not self._clusters_l2_normalized():
                clusters = _normalize(clusters)
        all_scores, scores, cluster_idx = self._infer_graph(inputs, clusters)
        if self._use_mini_batch:
            training_op = self._mini_batch_training_op(inputs, cluster_idx, centers, counts)
        else:
            training_op = self._full_batch_training_op(inputs, num_clusters, cluster_idx,
                                                       centers)  # fmt: skip
        return all_scores, cluster_idx, scores, initialized, init_op, training_op

    def _full_batch_training_op(self, inputs, num_clusters, cluster_idx_list, centers):
        """Every center to the mean of its points."""
        sums = [tf.math.unsorted_segment_sum(inp, idx, num_clusters)
                for inp, idx in zip(inputs, cluster_idx_list, strict=True)]  # fmt: skip
        counts = [tf.math.unsorted_segment_sum(tf.ones([tf.shape(inp)[0], 1]), idx,
                                               num_clusters)
                  for inp, idx in zip(inputs, cluster_idx_list, strict=True)]  # fmt: skip
        epsilon = tf.constant(1e-6, inputs[0].dtype)
        new_centers = tf.add_n(sums) / (tf.cast(tf.add_n(counts), sums[0].dtype) + epsilon)
        if self._clusters_l2_normalized():
            new_centers = _normalize(new_centers)
        return v1.assign(centers, new_centers, validate_shape=False)

    def _mini_batch_training_op(self, inputs, cluster_idx_list, centers, total_counts):
        """Each center moved by ``(sum(points) - k * center) / (count + k)``."""
        updates = []
        for inp, cluster_idx in zip(inputs, cluster_idx_list, strict=True):
            unique_ids, unique_idx = tf.unique(tf.reshape(cluster_idx, [-1]))
            num_unique = tf.size(unique_ids)
            old_counts = tf.gather(total_counts, unique_ids)
            old_centers = tf.gather(centers, unique_ids)
            count_updates = tf.math.unsorted_segment_sum(
                tf.ones_like(unique_idx, dtype=total_counts.dtype), unique_idx, num_unique)
            center_updates = tf.math.unsorted_segment_sum(inp, unique_idx, num_unique)
            center_updates -= tf.cast(count_updates, inp.dtype)[:, None] * old_centers
            center_updates *= tf.math.reciprocal(
                tf.cast(old_counts + count_updates, inp.dtype))[:, None]
            with tf.control_dependencies([center_updates]):  # the old values read first
                updates += [
                    v1.scatter_add(total_counts, unique_ids, count_updates),
                    v1.scatter_add(centers, unique_ids, center_updates),
                ]
        return tf.group(*updates)


class _Initializer:
    """TF 1.15's ``_InitializeClustersOpFactory``: the op that fills the centers."""

    def __init__(self, kmeans, num_clusters, initial_clusters, centers, initialized):
        self._kmeans, self._initial_clusters = kmeans, initial_clusters
        self._inputs = kmeans._inputs
        self._num_clusters = tf.cast(num_clusters, tf.int32)
        self._centers, self._initialized = centers, initialized
        self._num_selected = tf.shape(centers)[0]
        self._num_remaining = self._num_clusters - self._num_selected
        self._num_data = tf.add_n([tf.shape(inp)[0] for inp in self._inputs])
        self._seed = kmeans._seed

    def op(self):
        """The op: choose the remaining centers, or check they are all chosen."""
        return tf.cond(
            tf.equal(self._num_remaining, 0),
            lambda: tf.group(v1.assert_equal(self._initialized, True)),
            self._initialize)

    def _initialize(self):
        with tf.control_dependencies([v1.assert_positive(self._num_remaining)]):
            if self._initial_clusters == KMC2_INIT:
                remaining = self._kmc2_multiple_centers()
            else:
                remaining = self._add_new_centers()
            return tf.cond(tf.equal(remaining, 0),
                           lambda: tf.group(v1.assign(self._initialized, True)),
                           tf.no_op)  # fmt: skip

    def _random(self):
        indices = v1.random_uniform(
            tf.reshape(self._num_remaining, [-1]), minval=0,
            maxval=tf.cast(self._num_data, tf.int64), seed=self._seed,
            dtype=tf.int64)  # fmt: skip
        return tf.gather(tf.concat(self._inputs, 0), indices)

    def _kmeans_plus_plus(self):
        points = self._inputs[0]  # the first shard only, as TF 1.15
        if self._kmeans._cosine:
            points = _normalize(points)
        return tf.raw_ops.KmeansPlusPlusInitialization(
            points=points, num_to_sample=tf.cast(self._num_remaining, tf.int64),
            seed=tf.constant(self._seed, tf.int64),
            num_retries_per_sample=tf.constant(
                self._kmeans._kmeans_plus_plus_num_retries, tf.int64))  # fmt: skip

    def _choose_initial_centers(self):
        init = self._initial_clusters
        if init == RANDOM_INIT:  # the whole data when it has too few points
            return tf.cond(self._num_data <= self._num_remaining,
                           lambda: tf.concat(self._inputs, 0), self._random)  # fmt: skip
        if init == KMEANS_PLUS_PLUS_INIT:
            enough = v1.assert_greater_equal(self._num_data, self._num_remaining)
            with tf.control_dependencies([enough]):
                return self._kmeans_plus_plus()
        if callable(init):
            return init(self._inputs, self._num_remaining)
        with tf.control_dependencies([v1.assert_equal(self._num_remaining,
                                                      tf.shape(init)[0])]):  # fmt: skip
            return tf.identity(init)

    def _assign_centers(self, centers):
        """Stores ``centers`` and returns the number still to choose."""
        assigned = v1.assign(self._centers, centers, validate_shape=False)
        return self._num_clusters - tf.shape(assigned)[0]

    def _add_new_centers(self):
        new_centers = tf.cast(self._choose_initial_centers(), tf.float32)
        if self._kmeans._cosine:
            new_centers = _normalize(new_centers)
        every = tf.cond(tf.equal(self._num_selected, 0), lambda: new_centers,
                        lambda: tf.concat([self._centers, new_centers], 0))  # fmt: skip
        return self._assign_centers(every)

    def _kmc2_multiple_centers(self):
        """Adds one center per ``kmc2_chain_length`` points of the first shard (at
        least one), each by a k-MC2 Markov chain; the first center is the first
        point (the data is assumed shuffled), as TF 1.15."""
        shard, chain = self._inputs[0], self._kmeans._kmc2_chain_length
        max_to_sample = tf.cast(tf.shape(shard)[0] / chain, tf.int32)
        num_to_sample = tf.maximum(tf.minimum(self._num_remaining, max_to_sample), 1)

        def body(i, _):
            def first_point():
                center = tf.reshape(shard[0], [1, -1])
                return _normalize(center) if self._kmeans._cosine else center

            def chain_point():
                subset = shard[i * chain:(i + 1) * chain]
                _, distances = tf.raw_ops.NearestNeighbors(
                    points=subset, centers=self._centers, k=tf.constant(1, tf.int64))
                index = tf.raw_ops.KMC2ChainInitialization(
                    distances=tf.squeeze(distances),
                    seed=tf.constant(self._seed, tf.int64))
                center = tf.reshape(subset[index], [1, -1])
                if self._kmeans._cosine:
                    center = _normalize(center)
                return tf.concat([self._centers, center], 0)

            with tf.control_dependencies([_]):  # after the last step's assignment
                chosen = tf.shape(self._centers)[0]
            centers = tf.cond(tf.equal(chosen, 0), first_point, chain_point)
            return i + 1, self._assign_centers(centers)

        _, remaining = tf.while_loop(lambda i, _: i < num_to_sample, body, [0, 0])
        return remaining
