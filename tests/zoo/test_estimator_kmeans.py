"""tf.estimator.experimental.KMeans (tf.contrib.factorization.KMeansClustering) on
our Estimator and factorization.KMeans' graph: TF 2.15's numbers on the programs of
tests/zoo/kmeans_program.py (slow: a reference subprocess), Lloyd's steps against
NumPy, and its errors."""

import json
import os
import subprocess

import numpy as np
import pytest
import tensorflow as tf

from experiments.bench import canned as canned_bench
from layers.errors import ZooError
from tests.zoo import kmeans_program
from tests.zoo.test_contrib_factorization import lloyd_step
from tests.zoo.test_estimator import installed  # noqa: F401  (install() for the module)

REFERENCE_PYTHON = canned_bench.REFERENCE_PYTHON
v1 = tf.compat.v1


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """``(TF 2.15's, ours)``: each case's record of kmeans_program."""
    if not os.path.exists(REFERENCE_PYTHON):
        pytest.skip(f"no TF 2.15 reference venv at {REFERENCE_PYTHON} (make reference)")
    workdir = tmp_path_factory.mktemp("kmeans")
    out = workdir / "reference" / "reference.json"
    out.parent.mkdir()
    subprocess.run([REFERENCE_PYTHON, kmeans_program.__file__, str(out)], check=True,
                   capture_output=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    reference = json.loads(out.read_text())
    return reference, kmeans_program.run(v1.estimator, workdir / "ours")


@pytest.mark.slow
@pytest.mark.xdist_group("kmeans_reference")
@pytest.mark.parametrize("case", sorted(kmeans_program.CASES))
def test_kmeans_equals_tensorflow_2_15s(records, case):
    reference, ours = (side[case] for side in records)
    assert ours.keys() == reference.keys()
    for key in ("centers", "score", "transform"):
        if key in ours:
            np.testing.assert_allclose(ours[key], reference[key], rtol=1e-5, err_msg=key)
    for key in ("cluster_index", "global_step"):
        if key in ours:
            assert ours[key] == reference[key], key


def input_fn(data, repeat=False):
    """All ``data`` as one batch, once or repeated."""
    return lambda: tf.data.Dataset.from_tensors(data).repeat(None if repeat else 1)


def test_full_batch_steps_are_lloyds_and_the_outputs_read_them(tmp_path):
    data = kmeans_program.points()
    initial = data[:4]
    kmeans = tf.contrib.factorization.KMeansClustering(
        4, str(tmp_path), initial_clusters=initial, use_mini_batch=False)  # fmt: skip
    assert kmeans.train(input_fn(data, repeat=True), steps=3) is kmeans
    centers = initial
    for _ in range(3):
        _, centers = lloyd_step(data, centers)
    np.testing.assert_allclose(kmeans.cluster_centers(), centers, rtol=1e-5)
    nearest, _ = lloyd_step(data, centers)
    assert list(kmeans.predict_cluster_index(input_fn(data))) == list(nearest)
    distances = np.sqrt(((data[:, None] - centers[None]) ** 2).sum(-1))
    transform = np.array(list(kmeans.transform(input_fn(data))))
    np.testing.assert_allclose(transform, distances, rtol=1e-3, atol=1e-2)
    score = kmeans.score(input_fn(data))
    assert score == pytest.approx((distances.min(1) ** 2).sum(), rel=1e-4)
    assert v1.estimator.experimental.KMeans is tf.contrib.factorization.KMeansClustering


def test_kmeans_refuses_what_tf_refused():
    with pytest.raises(ZooError, match="^KMeans: Unsupported initialization algorithm "
                                       "'kmc2'; use one of random, kmeans_plus_plus"):
        v1.estimator.experimental.KMeans(3, initial_clusters="kmc2")
    with pytest.raises(ZooError, match="^KMeans: Unsupported distance metric 'l1'"):
        v1.estimator.experimental.KMeans(3, distance_metric="l1")
    with pytest.raises(ZooError, match="mini_batch_steps_per_iteration=1, found 2"):
        v1.estimator.experimental.KMeans(3, mini_batch_steps_per_iteration=2)
    # TF 2.15: "Tried to convert 'seed' to a tensor and failed. Error: None values ..."
    unseeded = v1.estimator.experimental.KMeans(3, initial_clusters="kmeans_plus_plus")
    with pytest.raises(ZooError, match=r"^KMeans: expected a seed for kmeans_plus_plus, "
                                       r"found none \(no random_seed, no graph seed\)"):
        unseeded.train(input_fn(kmeans_program.points(), repeat=True), steps=1)
    seeded = v1.estimator.experimental.KMeans(3, initial_clusters="kmeans_plus_plus",
                                              config=tf.estimator.RunConfig(tf_random_seed=1))
    seeded.train(input_fn(kmeans_program.points(), repeat=True), steps=1)
    assert seeded.cluster_centers().shape == (3, 2)
