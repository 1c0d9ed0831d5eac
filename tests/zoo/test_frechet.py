"""The Frechet distance against closed forms and an independent numpy route."""

import numpy as np
import pytest

from layers import ShapeError
from zoo.frechet import FeatureStatistics, feature_statistics, frechet_distance


def gaussian(mean, covariance):
    mean = np.asarray(mean, np.float64)
    return FeatureStatistics(mean=mean, covariance=np.asarray(covariance), count=100)


def random_covariance(rng, d):
    a = rng.standard_normal((d, d))
    return a @ a.T / d + 0.1 * np.eye(d)


def reference(a, b):
    """d^2 through the eigenvalues of the (non-symmetric) product S_a S_b."""
    eigenvalues = np.linalg.eigvals(a.covariance @ b.covariance)
    trace_root = np.sqrt(np.clip(eigenvalues.real, 0, None)).sum()
    shift = np.sum((a.mean - b.mean) ** 2)
    return shift + np.trace(a.covariance) + np.trace(b.covariance) - 2 * trace_root


def test_identical_distributions_are_at_distance_zero():
    rng = np.random.default_rng(0)
    stats = gaussian(rng.standard_normal(6), random_covariance(rng, 6))
    assert frechet_distance(stats, stats) == pytest.approx(0.0, abs=1e-9)


def test_two_samples_of_one_gaussian_are_close_and_shift_adds_its_square():
    rng = np.random.default_rng(1)
    covariance = random_covariance(rng, 4)
    draw = rng.multivariate_normal(np.zeros(4), covariance, size=(2, 20000))
    a, b = feature_statistics(draw[0]), feature_statistics(draw[1])
    assert frechet_distance(a, b) < 0.01
    shift = np.array([3.0, 0.0, -4.0, 0.0])  # |shift|^2 = 25
    moved = feature_statistics(draw[1] + shift)
    assert frechet_distance(a, moved) == pytest.approx(25.0, abs=0.2)
    exact = gaussian(a.mean + shift, a.covariance)
    assert frechet_distance(a, exact) == pytest.approx(25.0, rel=1e-9)


def test_diagonal_covariances_match_the_closed_form():
    a = gaussian([0.0, 1.0, 2.0], np.diag([1.0, 4.0, 9.0]))
    b = gaussian([1.0, 1.0, 0.0], np.diag([4.0, 1.0, 0.0]))
    expected = (1 + 0 + 4) + (1 - 2) ** 2 + (2 - 1) ** 2 + (3 - 0) ** 2
    assert frechet_distance(a, b) == pytest.approx(expected, rel=1e-9)


def test_full_covariances_match_the_eigenvalues_of_the_product():
    rng = np.random.default_rng(2)
    for d in (1, 3, 10):
        a = gaussian(rng.standard_normal(d), random_covariance(rng, d))
        b = gaussian(rng.standard_normal(d), random_covariance(rng, d))
        assert frechet_distance(a, b) == pytest.approx(reference(a, b), rel=1e-8)
        assert frechet_distance(a, b) == pytest.approx(frechet_distance(b, a), rel=1e-8)


def test_feature_statistics_match_numpy():
    features = np.random.default_rng(3).random((50, 3))
    stats = feature_statistics(features)
    np.testing.assert_allclose(stats.mean, features.mean(0))
    np.testing.assert_allclose(stats.covariance, np.cov(features.T))
    assert stats.count == 50
    assert feature_statistics(features[:, :1]).covariance.shape == (1, 1)


def test_errors_name_the_function_and_what_was_found():
    with pytest.raises(ShapeError, match=r"feature_statistics: expected features \[n, d\]"):
        feature_statistics(np.zeros((1, 3)))
    with pytest.raises(ShapeError, match="found shape \\(5,\\)"):
        feature_statistics(np.zeros(5))
    with pytest.raises(ShapeError, match="frechet_distance: expected statistics of one"):
        frechet_distance(gaussian([0.0], [[1.0]]), gaussian([0.0, 0.0], np.eye(2)))
