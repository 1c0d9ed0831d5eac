"""``LinearClassifier`` and ``LinearRegressor``: a weighted sum of feature columns.

TF 1.15's variables (``linear/linear_model/<column>/weights``,
``linear/linear_model/bias_weights``), made with
``tf.compat.v1.feature_column.linear_model``.

Usage::

    classifier = tf.compat.v1.estimator.LinearClassifier(
        feature_columns=[age, occupation, age_x_occupation])
    classifier.train(input_fn, steps=1000)
"""

import math

import tensorflow as tf

from zoo.compat.estimator.canned import optimizers
from zoo.compat.estimator.canned.dnn import check_features, partitioners
from zoo.compat.estimator.canned.head import (
    Reduction,
    RegressionHead,
    binary_or_multi_class_head,
    check_head,
)
from zoo.compat.estimator.estimator import Estimator
from zoo.compat.estimator.mode_keys import ModeKeys

v1 = tf.compat.v1
LEARNING_RATE = 0.2  # of a named optimizer


def linear_logit_fn_builder(units, feature_columns, sparse_combiner="sum"):
    """TF 1.15's ``tf.estimator.experimental.linear_logit_fn_builder``.

    Args:
        units: the number of logits.
        feature_columns: dense and categorical columns.
        sparse_combiner: how a multivalent categorical column's weights are
            combined: ``'sum'``, ``'mean'`` or ``'sqrtn'``.

    Returns:
        ``logit_fn(features)``: ``[batch, units]`` logits, with the summaries
        ``bias`` and ``fraction_of_zero_weights``.
    """

    def linear_logit_fn(features):
        variables = {}
        logits = v1.feature_column.linear_model(
            features, feature_columns, units=units, sparse_combiner=sparse_combiner,
            cols_to_vars=variables,
        )  # fmt: skip
        bias = variables.pop("bias")
        if units > 1:
            v1.summary.histogram("bias", bias)
        else:
            v1.summary.scalar("bias", bias[0][0])
        weights = [part for parts in variables.values() for part in parts]
        v1.summary.scalar("fraction_of_zero_weights", _fraction_of_zero(weights))
        return logits

    return linear_logit_fn


def _fraction_of_zero(variables):
    """The fraction of zeros among all elements of ``variables``."""
    with v1.name_scope("zero_fraction"):
        sizes = [tf.cast(tf.size(variable), tf.float32) for variable in variables]
        pairs = zip(variables, sizes, strict=True)
        zeros = [tf.math.zero_fraction(variable) * size for variable, size in pairs]
        return tf.identity(tf.add_n(zeros) / tf.add_n(sizes), name="zero_fraction_or_nan")


def default_learning_rate(feature_columns, rate):
    """``rate``, lowered to ``1 / sqrt(number of columns)`` for many columns."""
    return min(rate, 1.0 / math.sqrt(len(feature_columns)))


def _linear_model_fn(head, feature_columns, optimizer, partitioner, sparse_combiner, v2):
    """The model_fn of a linear estimator with this head and these settings."""
    feature_columns = tuple(feature_columns or ())

    def model_fn(features, labels, mode, config):
        check_features(features, "linear estimator")
        _, default_partitioner = partitioners(config, partitioned=not v2)
        with v1.variable_scope(
            "linear",
            values=tuple(features.values()),
            partitioner=partitioner or default_partitioner,
        ):
            logits = linear_logit_fn_builder(
                head.logits_dimension, feature_columns, sparse_combiner
            )(features)
            opt = None
            if mode == ModeKeys.TRAIN:
                opt = optimizers.get_optimizer_instance(
                    optimizer
                    or v1.train.FtrlOptimizer(
                        default_learning_rate(feature_columns, LEARNING_RATE)
                    ),
                    LEARNING_RATE,
                    keras_defaults=v2,
                )
            return head.create_estimator_spec(
                features, mode, logits, labels=labels, optimizer=opt
            )

    return model_fn


class LinearClassifier(Estimator):
    """TF 1.15's ``tf.estimator.LinearClassifier`` (``tf.compat.v1.estimator``'s).

    Args:
        feature_columns: dense and categorical columns (crossed, bucketized...).
        model_dir, config, warm_start_from: as :class:`Estimator`'s.
        n_classes, weight_column, label_vocabulary, loss_reduction: as
            :class:`~zoo.compat.estimator.canned.dnn.DNNClassifier`'s.
        optimizer: a name (learning rate 0.2), an optimizer or a callable
            returning one (default: FTRL).
        partitioner: the variables' partitioner.
        sparse_combiner: ``'sum'``, ``'mean'`` or ``'sqrtn'``.

    Raises:
        ZooError: n_classes, label_vocabulary or loss_reduction of the wrong kind.
    """

    _v2 = False

    def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Ftrl", config=None, partitioner=None,
                 warm_start_from=None, loss_reduction=Reduction.SUM,
                 sparse_combiner="sum"):  # fmt: skip
        head = binary_or_multi_class_head(
            n_classes, weight_column, label_vocabulary, loss_reduction
        )
        model_fn = _linear_model_fn(
            head, feature_columns, optimizer, partitioner, sparse_combiner, self._v2
        )
        super().__init__(model_fn, model_dir, config, warm_start_from=warm_start_from)


class LinearRegressor(Estimator):
    """TF 1.15's ``tf.estimator.LinearRegressor``: mean squared error on
    ``label_dimension`` outputs; the other arguments as :class:`LinearClassifier`'s."""

    _v2 = False

    def __init__(self, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Ftrl", config=None, partitioner=None,
                 warm_start_from=None, loss_reduction=Reduction.SUM,
                 sparse_combiner="sum"):  # fmt: skip
        head = RegressionHead(label_dimension, weight_column, loss_reduction)
        model_fn = _linear_model_fn(
            head, feature_columns, optimizer, partitioner, sparse_combiner, self._v2
        )
        super().__init__(model_fn, model_dir, config, warm_start_from=warm_start_from)


class LinearClassifierV2(LinearClassifier):
    """TF 2.x's ``tf.estimator.LinearClassifier``: no partitioner, loss averaged
    over the batch, a named optimizer with its Keras settings."""

    _v2 = True

    def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Ftrl", config=None,
                 warm_start_from=None, loss_reduction=Reduction.SUM_OVER_BATCH_SIZE,
                 sparse_combiner="sum"):  # fmt: skip
        super().__init__(
            feature_columns, model_dir, n_classes, weight_column, label_vocabulary,
            optimizer, config, None, warm_start_from, loss_reduction, sparse_combiner,
        )  # fmt: skip


class LinearRegressorV2(LinearRegressor):
    """TF 2.x's ``tf.estimator.LinearRegressor``, v2 as :class:`LinearClassifierV2`."""

    _v2 = True

    def __init__(self, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Ftrl", config=None, warm_start_from=None,
                 loss_reduction=Reduction.SUM_OVER_BATCH_SIZE,
                 sparse_combiner="sum"):  # fmt: skip
        super().__init__(
            feature_columns, model_dir, label_dimension, weight_column, optimizer,
            config, None, warm_start_from, loss_reduction, sparse_combiner,
        )  # fmt: skip


class LinearEstimator(Estimator):
    """TF 1.15's ``tf.compat.v1.estimator.LinearEstimator``
    (``tf.contrib.estimator``'s): a linear model with a head of the program's
    choosing; the other arguments as :class:`LinearClassifier`'s.

    Raises:
        ZooError: head is not a head.
    """

    _v2 = False

    def __init__(self, head, feature_columns, model_dir=None, optimizer="Ftrl",
                 config=None, partitioner=None, sparse_combiner="sum",
                 warm_start_from=None):  # fmt: skip
        check_head(head, "LinearEstimator")
        model_fn = _linear_model_fn(
            head, feature_columns, optimizer, partitioner, sparse_combiner, self._v2
        )
        super().__init__(model_fn, model_dir, config, warm_start_from=warm_start_from)
