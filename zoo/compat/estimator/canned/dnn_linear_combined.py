"""``DNNLinearCombinedClassifier``, ``DNNLinearCombinedRegressor`` and
``DNNLinearCombinedEstimator`` (of any head): wide & deep,
the sum of a linear model's and a DNN's logits, each trained by its own optimizer.

TF 1.15's variables under ``linear/`` and ``dnn/`` (as
:mod:`~zoo.compat.estimator.canned.linear` and
:mod:`~zoo.compat.estimator.canned.dnn` make them).

Usage::

    model = tf.compat.v1.estimator.DNNLinearCombinedClassifier(
        linear_feature_columns=[occupation, age_x_occupation],
        dnn_feature_columns=[age, embedding_column(occupation, 8)],
        dnn_hidden_units=[100, 50])
"""

import tensorflow as tf

from layers.errors import ZooError
from zoo.compat.estimator.canned import optimizers
from zoo.compat.estimator.canned.dnn import (
    add_layer_summary,
    check_features,
    dnn_logit_fn_builder,
    partitioners,
)
from zoo.compat.estimator.canned.head import (
    Reduction,
    RegressionHead,
    binary_or_multi_class_head,
    check_head,
)
from zoo.compat.estimator.canned.linear import (
    default_learning_rate,
    linear_logit_fn_builder,
)
from zoo.compat.estimator.estimator import Estimator
from zoo.compat.estimator.mode_keys import ModeKeys

v1 = tf.compat.v1
DNN_LEARNING_RATE = 0.001
LINEAR_LEARNING_RATE = 0.005


def _optimizer(optimizer, learning_rate, v2):
    """The optimizer of one part; SyncReplicasOptimizer refused as TF 1.15 did.

    Raises:
        ZooError: a SyncReplicasOptimizer.
    """
    optimizer = optimizers.get_optimizer_instance(optimizer, learning_rate, v2)
    if isinstance(optimizer, v1.train.SyncReplicasOptimizer):
        raise ZooError(
            "DNNLinearCombined: expected an optimizer per part, found a "
            "SyncReplicasOptimizer (it cannot be one of two); use DNN or Linear "
            "estimators with it"
        )
    return optimizer


def _combined_model_fn(head, linear_feature_columns, linear_optimizer, dnn_feature_columns,
                       dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
                       input_layer_partitioner, batch_norm, linear_sparse_combiner,
                       v2):  # fmt: skip
    """The model_fn of a wide & deep estimator with this head and these settings."""
    linear_feature_columns = tuple(linear_feature_columns or ())
    dnn_feature_columns = tuple(dnn_feature_columns or ())
    if not linear_feature_columns and not dnn_feature_columns:
        raise ZooError(
            "DNNLinearCombined: expected linear_feature_columns or dnn_feature_columns, "
            "found neither; pass at least one"
        )
    if dnn_feature_columns and not dnn_hidden_units:
        raise ZooError(
            f"DNNLinearCombined: expected dnn_hidden_units with dnn_feature_columns, "
            f"found {dnn_hidden_units!r}; pass e.g. dnn_hidden_units=[100, 50]"
        )

    def model_fn(features, labels, mode, config):
        check_features(features, "DNNLinearCombined")
        partitioner, input_partitioner = partitioners(config, partitioned=not v2)
        input_partitioner = input_layer_partitioner or input_partitioner
        values = tuple(features.values())
        parts = []  # (logits, optimizer, scope)
        if dnn_feature_columns:
            opt = _optimizer(dnn_optimizer, DNN_LEARNING_RATE, v2)
            with v1.variable_scope("dnn", values=values, partitioner=partitioner) as scope:
                logit_fn = dnn_logit_fn_builder(
                    head.logits_dimension, dnn_hidden_units, dnn_feature_columns,
                    dnn_activation_fn, dnn_dropout, input_partitioner, batch_norm,
                )  # fmt: skip
                parts.append((logit_fn(features, mode), opt, scope.name))
        if linear_feature_columns:
            rate = default_learning_rate(linear_feature_columns, LINEAR_LEARNING_RATE)
            opt = _optimizer(linear_optimizer, rate, v2)
            with v1.variable_scope(
                "linear", values=values, partitioner=input_partitioner
            ) as scope:
                logits = linear_logit_fn_builder(
                    head.logits_dimension, linear_feature_columns, linear_sparse_combiner
                )(features)
                add_layer_summary(logits, scope.name)
                parts.append((logits, opt, scope.name))
        logits = parts[0][0] if len(parts) == 1 else parts[0][0] + parts[1][0]

        def train_op_fn(loss):
            trainable = v1.GraphKeys.TRAINABLE_VARIABLES
            steps = [
                opt.minimize(loss, var_list=v1.get_collection(trainable, scope=scope))
                for _, opt, scope in parts
            ]
            with tf.control_dependencies([tf.group(*steps)]):
                return v1.assign_add(v1.train.get_global_step(), 1).op

        return head.create_estimator_spec(
            features, mode, logits, labels=labels,
            train_op_fn=train_op_fn if mode == ModeKeys.TRAIN else None,
        )  # fmt: skip

    return model_fn


class DNNLinearCombinedClassifier(Estimator):
    """TF 1.15's ``tf.estimator.DNNLinearCombinedClassifier`` (wide & deep).

    Args:
        model_dir, config, warm_start_from: as :class:`Estimator`'s.
        linear_feature_columns: the linear part's columns.
        linear_optimizer: its optimizer (a name: learning rate
            ``min(0.005, 1 / sqrt(number of columns))``; default FTRL).
        dnn_feature_columns: the DNN's dense columns.
        dnn_optimizer: its optimizer (a name: learning rate 0.001; default Adagrad).
        dnn_hidden_units, dnn_activation_fn, dnn_dropout, batch_norm,
        input_layer_partitioner: the DNN's, as
            :class:`~zoo.compat.estimator.canned.dnn.DNNClassifier`'s.
        n_classes, weight_column, label_vocabulary, loss_reduction: as
            DNNClassifier's.
        linear_sparse_combiner: the linear part's ``sparse_combiner``.

    Raises:
        ZooError: neither part has columns; DNN columns without hidden units.
    """

    _v2 = False

    def __init__(self, model_dir=None, linear_feature_columns=None,
                 linear_optimizer="Ftrl", dnn_feature_columns=None,
                 dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=tf.nn.relu, dnn_dropout=None, n_classes=2,
                 weight_column=None, label_vocabulary=None,
                 input_layer_partitioner=None, config=None, warm_start_from=None,
                 loss_reduction=Reduction.SUM, batch_norm=False,
                 linear_sparse_combiner="sum"):  # fmt: skip
        head = binary_or_multi_class_head(
            n_classes, weight_column, label_vocabulary, loss_reduction
        )
        model_fn = _combined_model_fn(
            head, linear_feature_columns, linear_optimizer, dnn_feature_columns,
            dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
            input_layer_partitioner, batch_norm, linear_sparse_combiner, self._v2,
        )  # fmt: skip
        super().__init__(model_fn, model_dir, config, warm_start_from=warm_start_from)


class DNNLinearCombinedRegressor(Estimator):
    """TF 1.15's ``tf.estimator.DNNLinearCombinedRegressor``: mean squared error on
    ``label_dimension`` outputs; the other arguments as
    :class:`DNNLinearCombinedClassifier`'s."""

    _v2 = False

    def __init__(self, model_dir=None, linear_feature_columns=None,
                 linear_optimizer="Ftrl", dnn_feature_columns=None,
                 dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=tf.nn.relu, dnn_dropout=None, label_dimension=1,
                 weight_column=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=Reduction.SUM, batch_norm=False,
                 linear_sparse_combiner="sum"):  # fmt: skip
        head = RegressionHead(label_dimension, weight_column, loss_reduction)
        model_fn = _combined_model_fn(
            head, linear_feature_columns, linear_optimizer, dnn_feature_columns,
            dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
            input_layer_partitioner, batch_norm, linear_sparse_combiner, self._v2,
        )  # fmt: skip
        super().__init__(model_fn, model_dir, config, warm_start_from=warm_start_from)


class DNNLinearCombinedClassifierV2(DNNLinearCombinedClassifier):
    """TF 2.x's ``tf.estimator.DNNLinearCombinedClassifier``: no partitioner, loss
    averaged over the batch, named optimizers with their Keras settings."""

    _v2 = True

    def __init__(self, model_dir=None, linear_feature_columns=None,
                 linear_optimizer="Ftrl", dnn_feature_columns=None,
                 dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=tf.nn.relu, dnn_dropout=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, config=None,
                 warm_start_from=None, loss_reduction=Reduction.SUM_OVER_BATCH_SIZE,
                 batch_norm=False, linear_sparse_combiner="sum"):  # fmt: skip
        super().__init__(
            model_dir, linear_feature_columns, linear_optimizer, dnn_feature_columns,
            dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout, n_classes,
            weight_column, label_vocabulary, None, config, warm_start_from,
            loss_reduction, batch_norm, linear_sparse_combiner,
        )  # fmt: skip


class DNNLinearCombinedRegressorV2(DNNLinearCombinedRegressor):
    """TF 2.x's ``tf.estimator.DNNLinearCombinedRegressor``, v2 as
    :class:`DNNLinearCombinedClassifierV2`."""

    _v2 = True

    def __init__(self, model_dir=None, linear_feature_columns=None,
                 linear_optimizer="Ftrl", dnn_feature_columns=None,
                 dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=tf.nn.relu, dnn_dropout=None, label_dimension=1,
                 weight_column=None, config=None, warm_start_from=None,
                 loss_reduction=Reduction.SUM_OVER_BATCH_SIZE, batch_norm=False,
                 linear_sparse_combiner="sum"):  # fmt: skip
        super().__init__(
            model_dir, linear_feature_columns, linear_optimizer, dnn_feature_columns,
            dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
            label_dimension, weight_column, None, config, warm_start_from,
            loss_reduction, batch_norm, linear_sparse_combiner,
        )  # fmt: skip


class DNNLinearCombinedEstimator(Estimator):
    """TF 1.15's ``tf.compat.v1.estimator.DNNLinearCombinedEstimator``
    (``tf.contrib.estimator``'s): wide & deep on a head of the program's choosing;
    the other arguments as :class:`DNNLinearCombinedClassifier`'s.

    Raises:
        ZooError: head is not a head; as DNNLinearCombinedClassifier.
    """

    def __init__(self, head, model_dir=None, linear_feature_columns=None,
                 linear_optimizer="Ftrl", dnn_feature_columns=None,
                 dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
                 input_layer_partitioner=None, config=None, batch_norm=False,
                 linear_sparse_combiner="sum"):  # fmt: skip
        check_head(head, "DNNLinearCombinedEstimator")
        model_fn = _combined_model_fn(
            head, linear_feature_columns, linear_optimizer, dnn_feature_columns,
            dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
            input_layer_partitioner, batch_norm, linear_sparse_combiner, v2=False,
        )  # fmt: skip
        super().__init__(model_fn, model_dir, config)
