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

:func:`train_feature_classifier` trains that classifier (TensorFlow, imported
then) and keeps its session open to measure samples::

    classifier = train_feature_classifier(data, steps=3000, seed=0)
    real = classifier.statistics(data.test.images)
    fcd = classifier.distance(real, samples)        # samples [n, 784] in [0, 1]
    classifier.close()
"""

import dataclasses

import numpy as np

from layers.errors import ShapeError

CLASSIFIER_HIDDEN = (256, 128)
CLASSIFIER_LEARNING_RATE = 1e-3
CLASSIFIER_BATCH = 128


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


@dataclasses.dataclass(frozen=True)
class FeatureClassifier:
    """A trained classifier whose last hidden layer is the FCD's feature space.

    Its session stays open until :meth:`close`.

    Attributes:
        session: the classifier's ``tf.compat.v1.Session``.
        images: the placeholder of images [n, n_pixels] it reads.
        features: its last hidden layer on ``images``.
        logits: its class scores on ``images``.
        summary: what it is and how well it does: ``hidden``, ``steps``,
            ``batch_size``, ``learning_rate``, ``test_accuracy``,
            ``steps_per_second``.
    """

    session: object
    images: object
    features: object
    logits: object
    summary: dict

    def statistics(self, images):
        """Returns the :class:`FeatureStatistics` of images [n, n_pixels]."""
        return feature_statistics(self.session.run(self.features, {self.images: images}))

    def class_fractions(self, images):
        """Returns the fraction of images [n, n_pixels] it puts in each class, a list
        of floats, one per class (those it puts none in included): mode coverage."""
        logits = self.session.run(self.logits, {self.images: images})
        counts = np.bincount(np.argmax(logits, axis=1), minlength=logits.shape[1])
        return (counts / max(1, counts.sum())).tolist()

    def distance(self, reference, images):
        """Returns the FCD between ``reference`` statistics and images [n, n_pixels]."""
        return frechet_distance(reference, self.statistics(images))

    def close(self):
        self.session.close()


def train_feature_classifier(data, steps, seed, checkpointer=None, log_every=1000):
    """Trains the FCD's MLP classifier on ``data.train`` from its first batch.

    ReLU layers of ``CLASSIFIER_HIDDEN`` units, no weight decay, Adam at
    ``CLASSIFIER_LEARNING_RATE``, batches of ``CLASSIFIER_BATCH`` drawn in the
    graph (:func:`zoo.training.train_loop`).

    Args:
        data: the :class:`zoo.data.DataSets`; its test split gives the accuracy.
        steps: training steps.
        seed: the graph seed.
        checkpointer: the run's :class:`zoo.training.Checkpointer`, or None.
        log_every: steps between logged losses.

    Returns:
        :class:`FeatureClassifier`, its session open.
    """
    import tensorflow as tf

    from zoo import training
    from zoo.data.batches import GraphBatches
    from zoo.models import mlp_classifier

    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(seed)
        batches = GraphBatches(data.train, CLASSIFIER_BATCH)
        kwargs = {"scope": "fcd_classifier", "hidden": CLASSIFIER_HIDDEN}
        model = mlp_classifier(batches.images, batches.labels, l2=0.0, **kwargs)
        adam = tf.compat.v1.train.AdamOptimizer(CLASSIFIER_LEARNING_RATE)
        train_op = adam.minimize(model.loss)
        n_pixels, n_classes = data.test.images.shape[1], data.test.labels.shape[1]
        images = tf.compat.v1.placeholder(tf.float32, [None, n_pixels], name="images")
        labels = tf.compat.v1.placeholder(tf.float32, [None, n_classes], name="labels")
        evaluation = mlp_classifier(images, labels, reuse=True, **kwargs)
        init = tf.compat.v1.global_variables_initializer()
    graph.finalize()
    data.train.restore({"epoch": 0, "position": 0})
    session = tf.compat.v1.Session(graph=graph)
    session.run(init)
    batches.initialize(session)
    _, steps_per_second = training.train_loop(
        session,
        train_op,
        model.loss,
        batches,
        steps,
        CLASSIFIER_BATCH,
        log_every=log_every,
        desc="classifier",
        checkpointer=checkpointer,
    )
    test = {images: data.test.images, labels: data.test.labels}
    summary = {
        "hidden": list(CLASSIFIER_HIDDEN),
        "steps": steps,
        "batch_size": CLASSIFIER_BATCH,
        "learning_rate": CLASSIFIER_LEARNING_RATE,
        "test_accuracy": float(session.run(evaluation.accuracy, test)),
        "steps_per_second": steps_per_second,
    }
    features = evaluation.layers[-2].output
    return FeatureClassifier(session, images, features, evaluation.logits, summary)


def _psd_sqrt(matrix):
    """The symmetric square root of a symmetric positive semi-definite matrix."""
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2)
    return (vectors * np.sqrt(np.clip(values, 0.0, None))) @ vectors.T
