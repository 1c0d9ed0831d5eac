"""The Frechet distance between two sets of features, each summarised as a Gaussian.

``d^2 = |mu_1 - mu_2|^2 + Tr(S_1 + S_2 - 2 (S_1 S_2)^(1/2))`` (Dowson and Landau
1982), the formula of the FID (Heusel et al. 2017). Which features it is taken
in decides its name: in the Inception-v3 pool features it is the FID; the zoo
takes it in the hidden layer of a classifier it trains itself, and calls it the
Frechet classifier distance (FCD). Numpy only: the trace of the matrix square
root is the sum of the square roots of the eigenvalues of the symmetric
``S_1^(1/2) S_2 S_1^(1/2)``, which has the eigenvalues of ``S_1 S_2``.

Usage::

    real = feature_statistics(features_of_test_images)
    fake = feature_statistics(features_of_samples)
    distance = frechet_distance(real, fake)
"""

import dataclasses

import numpy as np

from layers.errors import ShapeError


@dataclasses.dataclass(frozen=True)
class FeatureStatistics:
    """Mean [d] and covariance [d, d] (float64) of ``count`` feature vectors."""

    mean: np.ndarray
    covariance: np.ndarray
    count: int


def feature_statistics(features):
    """Returns the :class:`FeatureStatistics` of features [n, d], n >= 2.

    Raises:
        ShapeError: ``features`` is not [n, d] with at least two rows.
    """
    features = np.asarray(features, dtype=np.float64)
    if features.ndim != 2 or len(features) < 2:
        raise ShapeError(
            f"feature_statistics: expected features [n, d] with n >= 2, found shape "
            f"{features.shape}; pass one feature vector per row, two rows or more"
        )
    return FeatureStatistics(
        mean=features.mean(axis=0),
        covariance=np.cov(features, rowvar=False).reshape(features.shape[1], -1),
        count=len(features),
    )


def frechet_distance(a, b):
    """Returns the squared Frechet distance between two Gaussians (a float >= 0).

    Args:
        a: :class:`FeatureStatistics`.
        b: :class:`FeatureStatistics` of the same dimension.

    Raises:
        ShapeError: the dimensions differ.
    """
    if a.mean.shape != b.mean.shape:
        raise ShapeError(
            f"frechet_distance: expected statistics of one dimension, found "
            f"{a.mean.shape[0]} and {b.mean.shape[0]}; take both in the same features"
        )
    root_a = _psd_sqrt(a.covariance)
    product = root_a @ b.covariance @ root_a
    cross = np.linalg.eigvalsh((product + product.T) / 2)
    trace_root = np.sqrt(np.clip(cross, 0.0, None)).sum()
    shift = np.sum((a.mean - b.mean) ** 2)
    distance = shift + np.trace(a.covariance) + np.trace(b.covariance) - 2 * trace_root
    return float(max(distance, 0.0))


def _psd_sqrt(matrix):
    """The symmetric square root of a symmetric positive semi-definite matrix."""
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2)
    return (vectors * np.sqrt(np.clip(values, 0.0, None))) @ vectors.T
