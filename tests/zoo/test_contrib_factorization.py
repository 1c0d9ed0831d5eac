"""tf.contrib.factorization.KMeans under install(): TF 1.15's training_graph() tuple
and variables on TensorFlow's clustering kernels, Lloyd's steps against NumPy,
mini-batch steps, each initialization; and what is not provided."""

import numpy as np
import pytest
import tensorflow as tf

import zoo.compat
from layers.errors import ZooError
from tests.zoo.test_compat import uninstalled  # noqa: F401  (autouse: nothing installed)
from zoo.compat.contrib import ContribError

v1 = tf.compat.v1
CENTERS = np.array([[0.0, 0.0], [5.0, 5.0], [-5.0, 5.0]], np.float32)


@pytest.fixture
def points():
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.5, (90, 2))
    return (CENTERS[rng.integers(0, 3, 90)] + noise).astype(np.float32)


def lloyd_step(data, centers):
    """NumPy's k-means step: nearest centers, then each to its points' mean."""
    nearest = ((data[:, None] - centers[None]) ** 2).sum(-1).argmin(1)
    sums = np.stack([data[nearest == k].sum(0) for k in range(len(centers))])
    counts = np.bincount(nearest, minlength=len(centers))[:, None]
    return nearest, sums / (counts + 1e-6)


def run(kmeans, steps):
    """(variables' names, centers after init, [(idx, centers) per step], initialized)."""
    all_scores, idx, scores, initialized, init_op, train_op = kmeans.training_graph()
    names = sorted(v.op.name for v in v1.global_variables())
    clusters = next(v for v in v1.global_variables() if v.op.name == "clusters")
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        sess.run(init_op)
        start = sess.run(clusters)
        trace = []
        for _ in range(steps):
            assignment, _ = sess.run([idx[0], train_op])
            trace.append((assignment, sess.run(clusters)))
        return names, start, trace, sess.run(initialized), sess.run(all_scores[0])


def test_full_batch_steps_are_lloyds_steps(points):
    zoo.compat.install()
    with tf.Graph().as_default():
        kmeans = tf.contrib.factorization.KMeans(tf.constant(points), 3,
                                                 initial_clusters="kmeans_plus_plus")
        names, centers, trace, initialized, all_scores = run(kmeans, 3)
    assert names == ["clusters", "initialized"] and initialized
    assert centers.shape == (3, 2)
    assert all(any(np.allclose(c, p) for p in points) for c in centers)  # data points
    for assignment, found in trace:
        expected_idx, centers = lloyd_step(points, centers)
        np.testing.assert_array_equal(assignment, expected_idx)
        np.testing.assert_allclose(found, centers, rtol=1e-5, atol=1e-5)
    distances = ((points[:, None] - trace[-2][1][None]) ** 2).sum(-1)
    np.testing.assert_allclose(all_scores, distances, rtol=1e-4, atol=1e-4)
    assert sorted(np.round(trace[-1][1]).tolist()) == sorted(CENTERS.tolist())


@pytest.mark.parametrize("init", ["random", "kmc2"])
def test_other_initializations_pick_data_points(points, init):
    zoo.compat.install()
    with tf.Graph().as_default():
        kmeans = tf.contrib.factorization.KMeans(tf.constant(points), 3, init,
                                                 kmc2_chain_length=20)  # fmt: skip
        _, centers, _, initialized, _ = run(kmeans, 1)
    assert centers.shape == (3, 2) and initialized
    assert all(any(np.allclose(c, p) for p in points) for c in centers)


def test_mini_batch_and_given_centers(points):
    zoo.compat.install()
    with tf.Graph().as_default():
        start = CENTERS + 0.5
        kmeans = tf.contrib.factorization.KMeans(tf.constant(points), 3, start,
                                                 use_mini_batch=True)  # fmt: skip
        names, centers, trace, _, _ = run(kmeans, 1)
    assert names == ["Variable", "clusters", "initialized"]  # the counts: TF 1.15's name
    np.testing.assert_allclose(centers, start)
    nearest, _ = lloyd_step(points, start)
    counts = np.bincount(nearest, minlength=3)
    means = np.stack([points[nearest == k].mean(0) for k in range(3)])
    # x += (sum - k x) / (1 + k): counts start at 1
    expected = start + (counts[:, None] * (means - start)) / (1 + counts[:, None])
    np.testing.assert_allclose(trace[0][1], expected, rtol=1e-5, atol=1e-5)


def test_cosine_centers_have_unit_norm(points):
    zoo.compat.install()
    with tf.Graph().as_default():
        kmeans = tf.contrib.factorization.KMeans(tf.constant(points + 10), 2,
                                                 distance_metric="cosine")
        _, _, trace, _, _ = run(kmeans, 2)
    np.testing.assert_allclose(np.linalg.norm(trace[-1][1], axis=1), 1, rtol=1e-5)


def test_bad_arguments_and_what_is_not_provided(points):
    zoo.compat.install()
    factorization = tf.contrib.factorization
    with pytest.raises(ZooError, match="KMeans: Unsupported initialization algorithm "
                       "'kmeans'; use one of random, kmeans_plus_plus, kmc2"):
        factorization.KMeans(points, 3, "kmeans")
    with pytest.raises(ZooError, match="Unsupported distance metric 'l1'"):
        factorization.KMeans(points, 3, distance_metric="l1")
    with pytest.raises(ContribError, match="tf.contrib.factorization.GMM: .*which it "
                       "does not provide; use sklearn.mixture.GaussianMixture"):
        factorization.GMM  # noqa: B018
    from tensorflow.contrib.factorization.python.ops import clustering_ops

    assert clustering_ops.KMeans is factorization.KMeans
    with tf.Graph().as_default():
        too_many = factorization.KMeans(tf.constant(points[:2]), 3, "kmeans_plus_plus")
        *_, init_op, _ = too_many.training_graph()
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError):  # as TF 1.15
                sess.run(init_op)
