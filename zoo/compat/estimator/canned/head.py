"""The canned estimators' heads: from logits to predictions, loss, metrics and train op.

TF 1.15's ``canned/head.py`` heads, with its op names (``head/weighted_loss/Sum``,
``head/predictions/probabilities``), predict keys, metric keys and export
signatures (``serving_default``, ``classification``, ``regression``, ``predict``).

Usage::

    head = binary_or_multi_class_head(n_classes=3)
    spec = head.create_estimator_spec(features, mode, logits, labels, optimizer=opt)
"""

import collections

import tensorflow as tf

from layers.errors import ZooError
from zoo.compat.estimator.canned.metric_keys import MetricKeys
from zoo.compat.estimator.canned.prediction_keys import PredictionKeys
from zoo.compat.estimator.export.export_output import (
    ClassificationOutput,
    PredictOutput,
    RegressionOutput,
)
from zoo.compat.estimator.mode_keys import ModeKeys
from zoo.compat.estimator.model_fn import DEFAULT_SERVING_KEY, EstimatorSpec

v1 = tf.compat.v1
Reduction = v1.losses.Reduction
CLASSIFY_SERVING_KEY, REGRESS_SERVING_KEY, PREDICT_SERVING_KEY = (
    "classification", "regression", "predict",
)  # fmt: skip

LossSpec = collections.namedtuple(
    "LossSpec", ["training_loss", "unreduced_loss", "weights", "processed_labels"]
)


def _summary_key(head_name, key):
    return f"{key}/{head_name}" if head_name else key


class _Head:
    """What the three heads share: the spec of each mode from the logits.

    A subclass gives ``logits_dimension``, ``_predictions`` (logits -> the
    predictions, export outputs and the tensors its metrics read), ``_labels``
    (labels as its loss takes them), ``_unweighted_loss`` and ``_eval_metric_ops``.

    Args:
        weight_column: None, a feature key or a numeric column: each example's
            loss weight.
        loss_reduction: a ``tf.compat.v1.losses.Reduction`` other than NONE.
        name: None, or a name suffixed to the metric keys and summaries.
    """

    _per_logit_weights = False

    def __init__(self, weight_column=None, loss_reduction=Reduction.SUM, name=None):
        if loss_reduction not in Reduction.all() or loss_reduction == Reduction.NONE:
            raise ZooError(
                f"head: expected loss_reduction one of {Reduction.all()[1:]}, found "
                f"{loss_reduction!r}; pass e.g. tf.compat.v1.losses.Reduction.SUM"
            )
        self._weight_column = weight_column
        self._loss_reduction = loss_reduction
        self._name = name

    @property
    def name(self):
        """The head's name (None for the canned estimators' single head)."""
        return self._name

    def create_loss(self, features, mode, logits, labels):
        """The loss of ``logits`` against ``labels``.

        Returns:
            A :data:`LossSpec`: the reduced loss, the per-example loss, the
            weights and the labels as the loss read them.
        """
        del mode  # the same in every mode
        logits = tf.convert_to_tensor(logits)
        labels = self._labels(_dense_labels(labels, logits, self._labels_dimension))
        unweighted_loss = self._unweighted_loss(labels, logits)
        weights = _weights(features, self._weight_column, logits, self._per_logit_weights)
        training_loss = v1.losses.compute_weighted_loss(
            unweighted_loss, weights=weights, reduction=self._loss_reduction
        )
        return LossSpec(training_loss, unweighted_loss, weights, labels)

    @property
    def _labels_dimension(self):
        return 1

    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None,
                              train_op_fn=None, regularization_losses=None):  # fmt: skip
        """The :class:`EstimatorSpec` of ``mode`` for these logits.

        Args:
            features: the input_fn's feature dict (weights are read from it).
            mode: a :class:`ModeKeys` value.
            logits: ``[batch, logits_dimension]``.
            labels: the input_fn's labels (TRAIN and EVAL).
            optimizer: minimizes the loss in TRAIN; or else
            train_op_fn: ``loss -> train_op``.
            regularization_losses: scalars added to the training loss.

        Returns:
            An :class:`EstimatorSpec`.

        Raises:
            ZooError: in TRAIN, both or neither of optimizer and train_op_fn;
                labels of another shape or dtype.
        """
        with v1.name_scope(self._name, "head"):
            logits, predictions, export_outputs, metric_inputs = self._predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(
                    ModeKeys.PREDICT, predictions=predictions, export_outputs=export_outputs
                )
            loss_spec = self.create_loss(features, mode, logits, labels)
            regularization_loss = (
                tf.math.add_n(regularization_losses) if regularization_losses else None
            )
            loss = loss_spec.training_loss
            if regularization_loss is not None:
                loss = tf.math.add_n([loss, regularization_loss])
            if mode == ModeKeys.TRAIN:
                train_op = _train_op(loss, optimizer, train_op_fn)
                mean_loss = None
                if self._loss_reduction == Reduction.SUM:
                    example_weight_sum = tf.reduce_sum(
                        loss_spec.weights * tf.ones_like(loss_spec.unreduced_loss)
                    )
                    mean_loss = loss_spec.training_loss / example_weight_sum
        if mode == ModeKeys.EVAL:
            return EstimatorSpec(
                ModeKeys.EVAL,
                predictions=predictions,
                loss=loss,
                eval_metric_ops={
                    _summary_key(self._name, key): metric
                    for key, metric in self._eval_metric_ops(
                        loss_spec, regularization_loss, **metric_inputs
                    ).items()
                },
            )
        with v1.name_scope(""):
            summaries = (
                (MetricKeys.LOSS, loss),
                (MetricKeys.LOSS_MEAN, mean_loss),
                (MetricKeys.LOSS_REGULARIZATION, regularization_loss),
            )
            for key, value in summaries:
                if value is not None:
                    v1.summary.scalar(_summary_key(self._name, key), value)
        return EstimatorSpec(
            ModeKeys.TRAIN, predictions=predictions, loss=loss, train_op=train_op
        )

    def _loss_metrics(self, loss_spec, regularization_loss, name=True):
        """``average_loss`` and ``regularization_loss`` (when there is one)."""
        keys = MetricKeys
        metrics = {
            keys.LOSS_MEAN: v1.metrics.mean(
                loss_spec.unreduced_loss,
                weights=loss_spec.weights,
                name=keys.LOSS_MEAN if name else None,
            )
        }
        if regularization_loss is not None:
            metrics[keys.LOSS_REGULARIZATION] = v1.metrics.mean(
                regularization_loss, name=keys.LOSS_REGULARIZATION
            )
        return metrics


class _ClassHead(_Head):
    """A classifier's head: ``classes`` from ``label_vocabulary`` or the class ids."""

    def __init__(self, n_classes, weight_column=None, label_vocabulary=None,
                 loss_reduction=Reduction.SUM, name=None):  # fmt: skip
        super().__init__(weight_column, loss_reduction, name)
        if label_vocabulary is not None:
            if not isinstance(label_vocabulary, (list, tuple)):
                raise ZooError(
                    f"head: expected label_vocabulary a list or tuple of strings, found "
                    f"{type(label_vocabulary).__name__}; pass e.g. ['no', 'yes']"
                )
            if len(label_vocabulary) != n_classes:
                raise ZooError(
                    f"head: expected label_vocabulary of n_classes={n_classes} strings, "
                    f"found {len(label_vocabulary)}; give one string per class"
                )
        self._n_classes = n_classes
        self._label_vocabulary = label_vocabulary

    def _class_predictions(self, logits, class_ids, probabilities):
        """The predictions every classifier makes: ``logits``, ``probabilities``,
        ``class_ids``, ``classes`` and (``[batch, n_classes]``) ``all_class_ids``,
        ``all_classes``."""
        batch = tf.shape(logits)[0]
        all_class_ids = tf.tile(tf.expand_dims(tf.range(self._n_classes), 0), [batch, 1])
        all_classes = self._all_classes(logits)
        if self._label_vocabulary:
            names = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.range(self._n_classes, dtype=tf.int64),
                    tf.constant(self._label_vocabulary),
                ),
                default_value="UNK",
                name="class_string_lookup",
            )
            classes = names.lookup(class_ids)
        else:
            classes = tf.strings.as_string(class_ids, name="str_classes")
        keys = PredictionKeys
        return {
            keys.LOGITS: logits,
            keys.PROBABILITIES: probabilities,
            keys.CLASS_IDS: class_ids,
            keys.CLASSES: classes,
            keys.ALL_CLASS_IDS: all_class_ids,
            keys.ALL_CLASSES: all_classes,
        }

    def _all_classes(self, logits):
        """The class names, ``[batch, n_classes]`` strings."""
        names = (
            tf.constant(self._label_vocabulary)
            if self._label_vocabulary
            else tf.strings.as_string(tf.range(self._n_classes))
        )
        return tf.tile(tf.expand_dims(names, 0), [tf.shape(logits)[0], 1])

    def _class_ids(self, labels):
        """Labels as class ids in ``[0, n_classes)`` (looked up in the vocabulary)."""
        if self._label_vocabulary is None:
            if not labels.dtype.is_integer:
                raise ZooError(
                    f"head: expected integer class ids as labels, found dtype "
                    f"{labels.dtype.name}; pass label_vocabulary for string labels"
                )
            return labels
        if labels.dtype != tf.string:
            raise ZooError(
                f"head: expected string labels (there is a label_vocabulary), found "
                f"dtype {labels.dtype.name}; leave label_vocabulary out for class ids"
            )
        ids = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(self._label_vocabulary),
                tf.range(self._n_classes, dtype=tf.int64),
            ),
            default_value=-1,
            name="class_id_lookup",
        )
        return ids.lookup(labels)

    def _classification_outputs(self, probabilities, predictions):
        classification = ClassificationOutput(
            scores=probabilities, classes=self._all_classes(probabilities)
        )
        return {
            DEFAULT_SERVING_KEY: classification,
            CLASSIFY_SERVING_KEY: classification,
            PREDICT_SERVING_KEY: PredictOutput(predictions),
        }


class BinaryLogisticHead(_ClassHead):
    """Two classes, one logit, sigmoid cross entropy (TF 1.15's
    ``_BinaryLogisticHeadWithSigmoidCrossEntropyLoss``)."""

    logits_dimension = 1

    def __init__(self, weight_column=None, label_vocabulary=None,
                 loss_reduction=Reduction.SUM, name=None):  # fmt: skip
        super().__init__(2, weight_column, label_vocabulary, loss_reduction, name)

    def _predictions(self, logits):
        keys = PredictionKeys
        with v1.name_scope(None, "predictions", (logits,)):
            logits = _logits_of_dimension(logits, 1)
            logistic = tf.sigmoid(logits, name=keys.LOGISTIC)
            two_class_logits = tf.concat(
                (tf.zeros_like(logits), logits), axis=-1, name="two_class_logits"
            )
            probabilities = tf.nn.softmax(two_class_logits, name=keys.PROBABILITIES)
            class_ids = tf.expand_dims(
                tf.argmax(two_class_logits, axis=-1, name=keys.CLASS_IDS), axis=-1
            )
            predictions = self._class_predictions(logits, class_ids, probabilities)
            predictions[keys.LOGISTIC] = logistic
        export_outputs = self._classification_outputs(probabilities, predictions)
        export_outputs[REGRESS_SERVING_KEY] = RegressionOutput(value=logistic)
        metric_inputs = {"logistic": logistic, "class_ids": class_ids}
        return logits, predictions, export_outputs, metric_inputs

    def _labels(self, labels):
        if self._label_vocabulary is not None:
            labels = self._class_ids(labels)
        return _in_range(tf.cast(labels, tf.float32), 2)

    def _unweighted_loss(self, labels, logits):
        return tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)

    def _eval_metric_ops(self, loss_spec, regularization_loss, logistic, class_ids):
        keys = MetricKeys
        labels, weights = loss_spec.processed_labels, loss_spec.weights
        with v1.name_scope(None, "metrics"):
            labels_mean = _mean(labels, weights, keys.LABEL_MEAN, "labels_mean")
            metrics = self._loss_metrics(loss_spec, regularization_loss)
            for key, metric in (
                (keys.ACCURACY, v1.metrics.accuracy),
                (keys.PRECISION, v1.metrics.precision),
                (keys.RECALL, v1.metrics.recall),
            ):
                metrics[key] = metric(labels, class_ids, weights=weights, name=key)
            metrics[keys.PREDICTION_MEAN] = _mean(
                logistic, weights, keys.PREDICTION_MEAN, "predictions_mean"
            )
            metrics[keys.LABEL_MEAN] = labels_mean
            metrics[keys.ACCURACY_BASELINE] = _accuracy_baseline(labels_mean)
            for key, curve in ((keys.AUC, "ROC"), (keys.AUC_PR, "PR")):
                metrics[key] = _auc(labels, logistic, weights, curve, key)
        return metrics


class MultiClassHead(_ClassHead):
    """``n_classes`` > 2 logits, softmax cross entropy (TF 1.15's
    ``_MultiClassHeadWithSoftmaxCrossEntropyLoss``)."""

    @property
    def logits_dimension(self):
        """The number of classes."""
        return self._n_classes

    def _predictions(self, logits):
        keys = PredictionKeys
        logits = _logits_of_dimension(logits, self._n_classes)
        with v1.name_scope(None, "predictions", (logits,)):
            class_ids = tf.expand_dims(
                tf.argmax(logits, axis=-1, name=keys.CLASS_IDS), axis=-1
            )
            probabilities = tf.nn.softmax(logits, name=keys.PROBABILITIES)
            predictions = self._class_predictions(logits, class_ids, probabilities)
        export_outputs = self._classification_outputs(probabilities, predictions)
        return logits, predictions, export_outputs, {"class_ids": class_ids}

    def _labels(self, labels):
        return _in_range(self._class_ids(labels), self._n_classes)

    def _unweighted_loss(self, labels, logits):
        loss = v1.losses.sparse_softmax_cross_entropy(
            labels=labels, logits=logits, reduction=Reduction.NONE
        )
        return tf.expand_dims(loss, axis=-1)

    def _eval_metric_ops(self, loss_spec, regularization_loss, class_ids):
        keys = MetricKeys
        with v1.name_scope(None, "metrics"):
            metrics = self._loss_metrics(loss_spec, regularization_loss)
            metrics[keys.ACCURACY] = v1.metrics.accuracy(
                loss_spec.processed_labels,
                class_ids,
                weights=loss_spec.weights,
                name=keys.ACCURACY,
            )
        return metrics


class MultiLabelHead(_ClassHead):
    """Any of ``n_classes`` (> 1) classes per example: sigmoid cross entropy
    averaged over the classes (TF 1.15's ``tf.contrib.estimator`` ``_MultiLabelHead``).
    Labels are multi-hot ``[batch, n_classes]`` or a ``SparseTensor`` of class ids
    (of class names, with ``label_vocabulary``); predictions ``logits`` and
    ``probabilities``; metrics ``average_loss``, ``auc``, ``auc_precision_recall``.

    Raises:
        ZooError: n_classes not an int above 1.
    """

    def __init__(self, n_classes, weight_column=None, label_vocabulary=None,
                 loss_reduction=Reduction.SUM, name=None):  # fmt: skip
        if not isinstance(n_classes, int) or n_classes < 2:
            raise ZooError(
                f"multi_label_head: expected n_classes an int > 1, found {n_classes!r}; "
                "use binary_classification_head for one class"
            )
        super().__init__(n_classes, weight_column, label_vocabulary, loss_reduction, name)

    @property
    def logits_dimension(self):
        """The number of classes."""
        return self._n_classes

    @property
    def _labels_dimension(self):
        return self._n_classes

    def create_loss(self, features, mode, logits, labels):
        """As :meth:`_Head.create_loss`, a ``SparseTensor`` of class ids (or
        names) turned multi-hot first."""
        if isinstance(labels, tf.SparseTensor):
            ids = tf.SparseTensor(labels.indices, self._class_ids(labels.values),
                                  labels.dense_shape)  # fmt: skip
            labels = tf.sparse.to_indicator(ids, self._n_classes)
        return super().create_loss(features, mode, logits, labels)

    def _predictions(self, logits):
        keys = PredictionKeys
        logits = _logits_of_dimension(logits, self._n_classes)
        with v1.name_scope(None, "predictions", (logits,)):
            probabilities = tf.sigmoid(logits, name=keys.PROBABILITIES)
            predictions = {keys.LOGITS: logits, keys.PROBABILITIES: probabilities}
        export_outputs = self._classification_outputs(probabilities, predictions)
        return logits, predictions, export_outputs, {"probabilities": probabilities}

    def _labels(self, labels):
        return _in_range(tf.cast(labels, tf.int64), 2)

    def _unweighted_loss(self, labels, logits):
        loss = v1.losses.sigmoid_cross_entropy(labels, logits, reduction=Reduction.NONE)
        return tf.reduce_mean(loss, axis=-1, keepdims=True)

    def _eval_metric_ops(self, loss_spec, regularization_loss, probabilities):
        keys = MetricKeys
        labels, weights = loss_spec.processed_labels, loss_spec.weights
        with v1.name_scope(None, "metrics"):
            metrics = self._loss_metrics(loss_spec, regularization_loss)
            metrics[keys.AUC] = _auc(labels, probabilities, weights, "ROC", keys.AUC)
            metrics[keys.AUC_PR] = _auc(labels, probabilities, weights, "PR", keys.AUC_PR)
        return metrics


class RegressionHead(_Head):
    """``label_dimension`` outputs, mean squared error (TF 1.15's
    ``_RegressionHeadWithMeanSquaredErrorLoss``).

    Raises:
        ZooError: label_dimension is not a positive int.
    """

    _per_logit_weights = True

    def __init__(self, label_dimension=1, weight_column=None,
                 loss_reduction=Reduction.SUM, name=None):  # fmt: skip
        super().__init__(weight_column, loss_reduction, name)
        if not isinstance(label_dimension, int) or label_dimension < 1:
            raise ZooError(
                f"head: expected label_dimension a positive int, found "
                f"{label_dimension!r}; pass the number of values per label"
            )
        self.logits_dimension = label_dimension

    @property
    def _labels_dimension(self):
        return self.logits_dimension

    def _predictions(self, logits):
        logits = _logits_of_dimension(logits, self.logits_dimension)
        predictions = {PredictionKeys.PREDICTIONS: logits}
        regression = RegressionOutput(value=logits)
        export_outputs = {
            DEFAULT_SERVING_KEY: regression,
            REGRESS_SERVING_KEY: regression,
            PREDICT_SERVING_KEY: PredictOutput(predictions),
        }
        return logits, predictions, export_outputs, {"predicted_value": logits}

    def _labels(self, labels):
        return tf.cast(labels, tf.float32)

    def _unweighted_loss(self, labels, logits):
        return v1.losses.mean_squared_error(
            labels=labels, predictions=logits, reduction=Reduction.NONE
        )

    def _eval_metric_ops(self, loss_spec, regularization_loss, predicted_value):
        keys = MetricKeys
        weights = loss_spec.weights
        metrics = self._loss_metrics(loss_spec, regularization_loss, name=False)
        metrics[keys.PREDICTION_MEAN] = _mean(
            predicted_value, weights, keys.PREDICTION_MEAN, "predictions_mean"
        )
        metrics[keys.LABEL_MEAN] = v1.metrics.mean(
            loss_spec.processed_labels, weights=weights
        )
        return metrics


def binary_or_multi_class_head(n_classes, weight_column=None, label_vocabulary=None,
                               loss_reduction=Reduction.SUM):  # fmt: skip
    """The classifiers' head: binary logistic for 2 classes, else multi-class
    (TF 1.15's ``_binary_logistic_or_multi_class_head``).

    Raises:
        ZooError: n_classes is not an int above 1.
    """
    if not isinstance(n_classes, int) or n_classes < 2:
        raise ZooError(
            f"head: expected n_classes an int > 1, found {n_classes!r}; pass the "
            "number of classes (2 for a binary classifier)"
        )
    if n_classes == 2:
        return BinaryLogisticHead(weight_column, label_vocabulary, loss_reduction)
    return MultiClassHead(n_classes, weight_column, label_vocabulary, loss_reduction)


def check_head(head, owner):
    """Raises unless ``head`` has ``logits_dimension`` and ``create_estimator_spec``.

    Raises:
        ZooError: naming ``owner`` and what was found.
    """
    if not (hasattr(head, "logits_dimension") and hasattr(head, "create_estimator_spec")):
        raise ZooError(
            f"{owner}: expected a head (tf.contrib.estimator.regression_head(), "
            f"multi_class_head(...), ...), found {head!r}; pass one of them"
        )


def _train_op(loss, optimizer, train_op_fn):
    """The training step, grouped with ``UPDATE_OPS`` (batch norm's statistics)."""
    if (optimizer is None) == (train_op_fn is None):
        raise ZooError(
            "head: expected one of optimizer and train_op_fn, found "
            f"{'both' if optimizer else 'neither'}; pass one"
        )
    if optimizer is not None:
        train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
    else:
        train_op = train_op_fn(loss)
    update_ops = v1.get_collection(v1.GraphKeys.UPDATE_OPS)
    return tf.group(train_op, *update_ops) if update_ops else train_op


def _dense_labels(labels, logits, dimension):
    """Labels as ``[batch, dimension]`` (``[batch]`` gains its last axis), checked.

    Raises:
        ZooError: no labels, sparse labels, or a static last dimension other
            than ``dimension``.
    """
    if labels is None:
        raise ZooError(
            "head: expected labels from the input_fn in TRAIN and EVAL, found None; "
            "return (features, labels) from the input_fn"
        )
    with v1.name_scope(None, "labels", (labels, logits)) as scope:
        labels = v1.convert_to_tensor_or_sparse_tensor(labels)
        if isinstance(labels, tf.SparseTensor):
            raise ZooError(
                f"head: expected dense labels [batch, {dimension}], found a "
                "SparseTensor; turn them dense with tf.sparse.to_dense in the input_fn"
            )
        if labels.shape.rank is not None and labels.shape.rank == logits.shape.rank - 1:
            labels = tf.expand_dims(labels, -1)
        if labels.shape.rank is not None and labels.shape[-1] not in (None, dimension):
            raise ZooError(
                f"head: expected labels of shape [batch, {dimension}], found "
                f"{labels.shape}; check n_classes or label_dimension and the labels"
            )
        expected = tf.concat([tf.shape(logits)[:-1], [dimension]], axis=0)
        check = v1.assert_equal(
            expected,
            tf.shape(labels),
            message=f"labels shape must be [D0, D1, ... DN, {dimension}]",
        )
        with tf.control_dependencies([check]):
            return tf.identity(labels, name=scope)


def numeric_weight_column(weight_column, owner):
    """``weight_column`` as a numeric column: a feature key becomes
    ``numeric_column(key)``, as TF 1.15's canned code made it.

    Args:
        weight_column: a feature key or a numeric column.
        owner: who asks, for the error.

    Returns:
        A numeric feature column.

    Raises:
        ZooError: a column of another kind.
    """
    if isinstance(weight_column, str):
        weight_column = tf.feature_column.numeric_column(weight_column, shape=(1,))
    if not hasattr(weight_column, "normalizer_fn"):
        raise ZooError(
            f"{owner}: expected weight_column a feature key or a numeric column, found "
            f"{weight_column!r}; pass e.g. 'weight' or numeric_column('weight')"
        )
    return weight_column


def _weights(features, weight_column, logits, per_logit):
    """Each example's weight, ``[batch, 1]`` (or ``[batch, logits]`` if per_logit),
    read from ``features`` through a numeric column; 1. without a weight column.

    Raises:
        ZooError: a weight column of another kind.
    """
    if weight_column is None:
        return 1.0
    weight_column = numeric_weight_column(weight_column, "head")
    with v1.name_scope(None, "weights", (logits,)) as scope:
        weights = v1.feature_column.input_layer(features, [weight_column])
        logits_shape = tf.shape(logits)
        one_per_example = tf.concat([logits_shape[:-1], [1]], axis=0)
        fits = tf.reduce_all(tf.equal(tf.shape(weights), one_per_example))
        if per_logit:
            fits = tf.logical_or(fits, tf.reduce_all(tf.equal(tf.shape(weights),
                                                              logits_shape)))  # fmt: skip
        check = tf.debugging.Assert(
            fits, ["weights shape must be [batch, 1]", tf.shape(weights)]
        )
        with tf.control_dependencies([check]):
            return tf.identity(weights, name=scope)


def _logits_of_dimension(logits, dimension):
    """``logits`` as float32, checked to be ``[..., dimension]``.

    Raises:
        ZooError: a static last dimension other than ``dimension``.
    """
    with v1.name_scope(None, "logits", (logits,)):
        logits = tf.cast(logits, tf.float32)
        if logits.shape.rank is not None and logits.shape[-1] not in (None, dimension):
            raise ZooError(
                f"head: expected logits of shape [batch, {dimension}], found "
                f"{logits.shape}; give the model logits_dimension={dimension} outputs"
            )
        return logits


def _in_range(labels, n_classes):
    """``labels``, checked at run time to lie in ``[0, n_classes)``."""
    with v1.name_scope(None, "assert_range", (labels,)):
        checks = (
            v1.assert_less_equal(
                labels,
                tf.cast(n_classes - 1, labels.dtype),
                message="Labels must <= n_classes - 1",
            ),
            v1.assert_non_negative(labels, message="Labels must >= 0"),
        )
        with tf.control_dependencies(checks):
            return tf.identity(labels)


def _mean(values, weights, name, default_name):
    """The weighted mean metric of ``values`` as float32."""
    with v1.name_scope(name, default_name, (values, weights)) as scope:
        values = tf.cast(values, tf.float32)
        return v1.metrics.mean(values, weights=_broadcast(weights, values), name=scope)


def _broadcast(weights, values):
    return None if weights is None else tf.broadcast_to(weights, tf.shape(values))


def _accuracy_baseline(labels_mean):
    """The accuracy of always predicting the likelier class: max(mean, 1 - mean)."""
    with v1.name_scope(None, "accuracy_baseline", labels_mean):
        value, update_op = labels_mean
        return (
            tf.maximum(value, 1.0 - value, name="value"),
            tf.maximum(update_op, 1 - update_op, name="update_op"),
        )


def _auc(labels, predictions, weights, curve, name):
    with v1.name_scope(name, "auc", (predictions, labels, weights)) as scope:
        predictions = tf.cast(predictions, tf.float32)
        return v1.metrics.auc(
            labels=labels,
            predictions=predictions,
            weights=_broadcast(weights, predictions),
            curve=curve,
            name=scope,
        )
