"""``BaselineClassifier``, ``BaselineRegressor`` and ``BaselineEstimator`` (of any
head): one learned bias per output, whatever the features (the prior of the labels);
TF 1.15's ``baseline/bias``.

Usage::

    baseline = tf.compat.v1.estimator.BaselineClassifier(n_classes=3)
    baseline.train(input_fn, steps=100)
"""

import tensorflow as tf

from zoo.compat.estimator.canned import optimizers
from zoo.compat.estimator.canned.head import (
    Reduction,
    RegressionHead,
    binary_or_multi_class_head,
    check_head,
)
from zoo.compat.estimator.estimator import Estimator

v1 = tf.compat.v1
LEARNING_RATE = 0.3  # of a named optimizer


def _batch_size_and_checks(features, weight_key):
    """The batch size (of the first feature) and checks that all features agree."""
    sizes = [v1.shape(feature)[0] for key, feature in features.items() if key != weight_key]
    return sizes[0], [v1.assert_equal(sizes[0], size) for size in sizes[1:]]


def _baseline_model_fn(head, optimizer, weight_column, v2):
    """The model_fn of a baseline estimator with this head."""
    weight_key = getattr(weight_column, "key", weight_column)

    def model_fn(features, labels, mode, config):
        del config  # the same on every machine
        batch_size, checks = _batch_size_and_checks(features, weight_key)
        with tf.control_dependencies(checks), v1.variable_scope("baseline"):
            units = head.logits_dimension
            bias = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
            logits = bias * tf.ones([batch_size, units])

        def train_op_fn(loss):
            opt = optimizers.get_optimizer_instance(optimizer, LEARNING_RATE, v2)
            return opt.minimize(loss, global_step=v1.train.get_global_step())

        return head.create_estimator_spec(
            features, mode, logits, labels=labels, train_op_fn=train_op_fn
        )

    return model_fn


class BaselineClassifier(Estimator):
    """TF 1.15's ``tf.estimator.BaselineClassifier``: logits that are one bias per
    class, learned from the labels.

    Args:
        model_dir, config: as :class:`Estimator`'s.
        n_classes, weight_column, label_vocabulary, loss_reduction: as
            :class:`~zoo.compat.estimator.canned.dnn.DNNClassifier`'s.
        optimizer: a name (learning rate 0.3), an optimizer or a callable
            returning one.

    Raises:
        ZooError: n_classes, label_vocabulary or loss_reduction of the wrong kind.
    """

    _v2 = False

    def __init__(self, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Ftrl", config=None,
                 loss_reduction=Reduction.SUM):  # fmt: skip
        head = binary_or_multi_class_head(
            n_classes, weight_column, label_vocabulary, loss_reduction
        )
        model_fn = _baseline_model_fn(head, optimizer, weight_column, self._v2)
        super().__init__(model_fn, model_dir, config)


class BaselineRegressor(Estimator):
    """TF 1.15's ``tf.estimator.BaselineRegressor``: the mean of the labels
    (``label_dimension`` of them); the arguments as :class:`BaselineClassifier`'s."""

    _v2 = False

    def __init__(self, model_dir=None, label_dimension=1, weight_column=None,
                 optimizer="Ftrl", config=None, loss_reduction=Reduction.SUM):  # fmt: skip
        head = RegressionHead(label_dimension, weight_column, loss_reduction)
        model_fn = _baseline_model_fn(head, optimizer, weight_column, self._v2)
        super().__init__(model_fn, model_dir, config)


class BaselineClassifierV2(BaselineClassifier):
    """TF 2.x's ``tf.estimator.BaselineClassifier``: loss averaged over the batch,
    a named optimizer with its Keras settings."""

    _v2 = True

    def __init__(self, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Ftrl", config=None,
                 loss_reduction=Reduction.SUM_OVER_BATCH_SIZE):  # fmt: skip
        super().__init__(
            model_dir, n_classes, weight_column, label_vocabulary, optimizer, config,
            loss_reduction,
        )  # fmt: skip


class BaselineRegressorV2(BaselineRegressor):
    """TF 2.x's ``tf.estimator.BaselineRegressor``, v2 as :class:`BaselineClassifierV2`."""

    _v2 = True

    def __init__(self, model_dir=None, label_dimension=1, weight_column=None,
                 optimizer="Ftrl", config=None,
                 loss_reduction=Reduction.SUM_OVER_BATCH_SIZE):  # fmt: skip
        super().__init__(
            model_dir, label_dimension, weight_column, optimizer, config, loss_reduction
        )


class BaselineEstimator(Estimator):
    """TF 1.15's ``tf.compat.v1.estimator.BaselineEstimator``: one learned bias per
    logit of a head of the program's choosing (``tf.contrib.estimator``'s heads).

    Args:
        head: the head.
        model_dir, config: as :class:`Estimator`'s.
        optimizer: as :class:`BaselineClassifier`'s.

    Raises:
        ZooError: head is not a head.
    """

    def __init__(self, head, model_dir=None, optimizer="Ftrl", config=None):
        check_head(head, "BaselineEstimator")
        model_fn = _baseline_model_fn(head, optimizer, None, v2=False)
        super().__init__(model_fn, model_dir, config)
