"""``DNNClassifier`` and ``DNNRegressor``: fully connected networks on feature columns.

TF 1.15's variables (``dnn/input_from_feature_columns/input_layer/...``,
``dnn/hiddenlayer_0/kernel``, ``dnn/hiddenlayer_0/batchnorm_0/gamma``,
``dnn/logits/bias``), made with ``tf.compat.v1.feature_column.input_layer`` and
:mod:`layers.tf1` under ``tf.compat.v1.variable_scope``.

Usage::

    classifier = tf.compat.v1.estimator.DNNClassifier(
        hidden_units=[64, 32], feature_columns=columns, n_classes=3)
    classifier.train(input_fn, steps=1000)
"""

import tensorflow as tf

from layers import tf1
from layers.errors import ZooError
from zoo.compat.estimator.canned import optimizers
from zoo.compat.estimator.canned.head import (
    Reduction,
    RegressionHead,
    binary_or_multi_class_head,
    check_head,
)
from zoo.compat.estimator.estimator import Estimator
from zoo.compat.estimator.mode_keys import ModeKeys

v1 = tf.compat.v1
LEARNING_RATE = 0.05  # of a named optimizer in the v1 classes


def dnn_logit_fn_builder(units, hidden_units, feature_columns, activation_fn, dropout,
                         input_layer_partitioner, batch_norm):  # fmt: skip
    """TF 1.15's ``tf.estimator.experimental.dnn_logit_fn_builder``.

    Args:
        units: the number of logits.
        hidden_units: the widths of the hidden layers, e.g. ``[64, 32]``.
        feature_columns: the dense columns of the input layer.
        activation_fn: the hidden layers' activation.
        dropout: None, or the probability of dropping a hidden unit in training.
        input_layer_partitioner: the input layer's variables' partitioner.
        batch_norm: batch normalization after each hidden layer.

    Returns:
        ``logit_fn(features, mode)``: ``[batch, units]`` logits, made in the
        current variable scope.

    Raises:
        ZooError: units is not an int.
    """
    if not isinstance(units, int):
        raise ZooError(
            f"dnn: expected units an int, found {type(units).__name__}; pass the "
            "head's logits_dimension"
        )

    def dnn_logit_fn(features, mode):
        training = mode == ModeKeys.TRAIN
        with v1.variable_scope(
            "input_from_feature_columns",
            values=tuple(features.values()),
            partitioner=input_layer_partitioner,
        ):
            net = v1.feature_column.input_layer(features, feature_columns)
        for index, width in enumerate(hidden_units):
            with v1.variable_scope(f"hiddenlayer_{index}", values=(net,)) as scope:
                dense = tf1.Dense(width, activation_fn, kernel_initializer=_glorot(),
                                  _scope=scope)  # fmt: skip
                net = dense(net)
                if dropout is not None and training:
                    net = tf1.Dropout(rate=dropout)(net, training=True)
                if batch_norm:
                    normalize = tf1.BatchNormalization(
                        momentum=0.999, name=f"batchnorm_{index}"
                    )
                    net = normalize(net, training=training)
            add_layer_summary(net, scope.name)
        with v1.variable_scope("logits", values=(net,)) as scope:
            logits = tf1.Dense(units, kernel_initializer=_glorot(), _scope=scope)(net)
        add_layer_summary(logits, scope.name)
        return logits

    return dnn_logit_fn


def _glorot():
    return v1.glorot_uniform_initializer()


def add_layer_summary(value, tag):
    """The fraction of zeros and the histogram of a layer's output, as TF 1.15's."""
    v1.summary.scalar(f"{tag}/fraction_of_zero_values", tf.math.zero_fraction(value))
    v1.summary.histogram(f"{tag}/activation", value)


def check_features(features, owner):
    """Raises unless ``features`` is a dict, as the canned estimators read them.

    Raises:
        ZooError: features of another kind.
    """
    if not isinstance(features, dict):
        raise ZooError(
            f"{owner}: expected the input_fn's features as a dict of tensors, found "
            f"{type(features).__name__}; return ({{'name': tensor, ...}}, labels)"
        )


def partitioners(config, partitioned):
    """TF 1.15's partitioners of the model's and the input layer's variables.

    Args:
        config: the RunConfig (its ``num_ps_replicas``).
        partitioned: False (the v2 classes): no partitioner.

    Returns:
        ``(model, input_layer)`` partitioners.
    """
    if not partitioned:
        return None, None
    replicas = config.num_ps_replicas if config else 0
    return (
        v1.min_max_variable_partitioner(max_partitions=replicas),
        v1.min_max_variable_partitioner(max_partitions=replicas, min_slice_size=64 << 20),
    )


def _dnn_model_fn(head, hidden_units, feature_columns, optimizer, activation_fn, dropout,
                  input_layer_partitioner, batch_norm, v2):  # fmt: skip
    """The model_fn of a DNN estimator with this head and these settings."""
    learning_rate = None if v2 else LEARNING_RATE
    feature_columns = tuple(feature_columns or ())

    def model_fn(features, labels, mode, config):
        check_features(features, "DNN estimator")
        partitioner, input_partitioner = partitioners(config, partitioned=not v2)
        with v1.variable_scope(
            "dnn", values=tuple(features.values()), partitioner=partitioner
        ):
            logit_fn = dnn_logit_fn_builder(
                head.logits_dimension, hidden_units, feature_columns, activation_fn,
                dropout, input_layer_partitioner or input_partitioner, batch_norm,
            )  # fmt: skip
            logits = logit_fn(features, mode)
            opt = None
            if mode == ModeKeys.TRAIN:
                opt = optimizers.get_optimizer_instance(
                    optimizer, learning_rate, keras_defaults=v2
                )
            return head.create_estimator_spec(
                features, mode, logits, labels=labels, optimizer=opt
            )

    return model_fn


class DNNClassifier(Estimator):
    """TF 1.15's ``tf.estimator.DNNClassifier`` (``tf.compat.v1.estimator``'s).

    Args:
        hidden_units: the hidden layers' widths, e.g. ``[64, 32]``.
        feature_columns: dense feature columns (embedding, indicator, numeric).
        model_dir, config, warm_start_from: as :class:`Estimator`'s.
        n_classes: the number of classes (2: a binary logistic head).
        weight_column: None, a feature key or a numeric column of example weights.
        label_vocabulary: None (labels are class ids), or the class names
            (labels are strings).
        optimizer: a name (``'Adagrad'``, ``'Adam'``, ``'Ftrl'``, ``'RMSProp'``,
            ``'SGD'``; learning rate 0.05), a ``tf.compat.v1.train.Optimizer``
            or a callable returning one.
        activation_fn: the hidden layers' activation.
        dropout: None, or the probability of dropping a hidden unit in training.
        input_layer_partitioner: the input layer's partitioner.
        loss_reduction: how the examples' losses are summed (default SUM).
        batch_norm: batch normalization after each hidden layer.

    Raises:
        ZooError: n_classes, label_vocabulary or loss_reduction of the wrong kind.
    """

    _v2 = False

    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, optimizer="Adagrad",
                 activation_fn=tf.nn.relu, dropout=None, input_layer_partitioner=None,
                 config=None, warm_start_from=None, loss_reduction=Reduction.SUM,
                 batch_norm=False):  # fmt: skip
        head = binary_or_multi_class_head(
            n_classes, weight_column, label_vocabulary, loss_reduction
        )
        model_fn = _dnn_model_fn(
            head, hidden_units, feature_columns, optimizer, activation_fn, dropout,
            input_layer_partitioner, batch_norm, self._v2,
        )  # fmt: skip
        super().__init__(model_fn, model_dir, config, warm_start_from=warm_start_from)


class DNNRegressor(Estimator):
    """TF 1.15's ``tf.estimator.DNNRegressor``: mean squared error on
    ``label_dimension`` outputs; the other arguments as :class:`DNNClassifier`'s."""

    _v2 = False

    def __init__(self, hidden_units, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Adagrad", activation_fn=tf.nn.relu,
                 dropout=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=Reduction.SUM,
                 batch_norm=False):  # fmt: skip
        head = RegressionHead(label_dimension, weight_column, loss_reduction)
        model_fn = _dnn_model_fn(
            head, hidden_units, feature_columns, optimizer, activation_fn, dropout,
            input_layer_partitioner, batch_norm, self._v2,
        )  # fmt: skip
        super().__init__(model_fn, model_dir, config, warm_start_from=warm_start_from)


class DNNClassifierV2(DNNClassifier):
    """TF 2.x's ``tf.estimator.DNNClassifier``: no partitioner, loss averaged over
    the batch, a named optimizer with its Keras defaults (Adagrad: 0.001)."""

    _v2 = True

    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, optimizer="Adagrad",
                 activation_fn=tf.nn.relu, dropout=None, config=None,
                 warm_start_from=None, loss_reduction=Reduction.SUM_OVER_BATCH_SIZE,
                 batch_norm=False):  # fmt: skip
        super().__init__(
            hidden_units, feature_columns, model_dir, n_classes, weight_column,
            label_vocabulary, optimizer, activation_fn, dropout, None, config,
            warm_start_from, loss_reduction, batch_norm,
        )  # fmt: skip


class DNNRegressorV2(DNNRegressor):
    """TF 2.x's ``tf.estimator.DNNRegressor``, v2 as :class:`DNNClassifierV2`."""

    _v2 = True

    def __init__(self, hidden_units, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Adagrad", activation_fn=tf.nn.relu,
                 dropout=None, config=None, warm_start_from=None,
                 loss_reduction=Reduction.SUM_OVER_BATCH_SIZE,
                 batch_norm=False):  # fmt: skip
        super().__init__(
            hidden_units, feature_columns, model_dir, label_dimension, weight_column,
            optimizer, activation_fn, dropout, None, config, warm_start_from,
            loss_reduction, batch_norm,
        )  # fmt: skip


class DNNEstimator(Estimator):
    """TF 1.15's ``tf.compat.v1.estimator.DNNEstimator`` (``tf.contrib.estimator``'s):
    a DNN with a head of the program's choosing (``tf.contrib.estimator``'s heads,
    ``multi_head`` among them); the other arguments as :class:`DNNClassifier`'s.

    Raises:
        ZooError: head is not a head.
    """

    _v2 = False

    def __init__(self, head, hidden_units, feature_columns, model_dir=None,
                 optimizer="Adagrad", activation_fn=tf.nn.relu, dropout=None,
                 input_layer_partitioner=None, config=None, warm_start_from=None,
                 batch_norm=False):  # fmt: skip
        check_head(head, "DNNEstimator")
        model_fn = _dnn_model_fn(
            head, hidden_units, feature_columns, optimizer, activation_fn, dropout,
            input_layer_partitioner, batch_norm, self._v2,
        )  # fmt: skip
        super().__init__(model_fn, model_dir, config, warm_start_from=warm_start_from)
