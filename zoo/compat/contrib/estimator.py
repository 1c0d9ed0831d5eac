"""TF 1.15's ``tf.contrib.estimator`` names that are not also in ``tf.estimator``:
``forward_features``, ``clip_gradients_by_norm``, the heads of its own defaults
(loss averaged over the batch: ``multi_label_head`` among them) and ``multi_head``, and
``replicate_model_fn``/``TowerOptimizer`` on
this machine's one device. The rest of the module (``add_metrics``, the
early-stopping hooks, ``InMemoryEvaluatorHook``) is ``tf.estimator``'s, found
through :data:`zoo.compat.contrib.SOURCES`.

Usage (after ``zoo.compat.install()``)::

    estimator = tf.contrib.estimator.forward_features(estimator, "example_id")
    optimizer = tf.contrib.estimator.clip_gradients_by_norm(optimizer, 5.0)
    head = tf.contrib.estimator.regression_head(label_dimension=2)
"""

import tensorflow as tf

from layers.errors import ZooError
from zoo.compat.estimator.canned import head as head_lib
from zoo.compat.estimator.canned.metric_keys import MetricKeys
from zoo.compat.estimator.estimator import Estimator, _call_with
from zoo.compat.estimator.export.export_output import PredictOutput
from zoo.compat.estimator.extenders import check_estimator
from zoo.compat.estimator.mode_keys import ModeKeys
from zoo.compat.estimator.model_fn import DEFAULT_SERVING_KEY, EstimatorSpec

v1 = tf.compat.v1
Reduction = v1.losses.Reduction


def forward_features(estimator, keys=None, sparse_default_values=None):
    """A new :class:`Estimator` whose predictions (and ``predict`` /
    ``serving_default`` ``PredictOutput`` exports) carry input features as they are.

    Args:
        estimator: a ``tf.estimator.Estimator``.
        keys: a feature key or a list of them (None: every feature).
        sparse_default_values: feature key -> default value: those sparse
            features are forwarded dense.

    Returns:
        An :class:`Estimator`.

    Raises:
        ZooError: keys neither a string nor a list of strings; (when the model
            is built) predictions that are not a dict, a key not among the
            features or already a prediction, a feature that is not a tensor.
    """
    check_estimator("forward_features", estimator)
    if isinstance(keys, str):
        keys = [keys]
    if keys is not None and not (
        isinstance(keys, list | tuple) and all(isinstance(key, str) for key in keys)
    ):
        raise ZooError(
            f"forward_features: expected keys a string or a list of strings, found "
            f"{keys!r}; pass e.g. keys='example_id'"
        )

    def new_model_fn(features, labels, mode, config):
        spec = estimator.model_fn(features, labels, mode, config)
        predictions = spec.predictions
        if predictions is None:
            return spec
        forwarded = _forwarded(features, predictions, keys, sparse_default_values)
        predictions = {**predictions, **forwarded}
        export_outputs = dict(spec.export_outputs or {})
        for name in ("predict", "serving_default"):
            if isinstance(export_outputs.get(name), PredictOutput):
                outputs = export_outputs[name].outputs
                export_outputs[name] = PredictOutput({**outputs, **forwarded})
        return spec._replace(predictions=predictions, export_outputs=export_outputs)

    return Estimator(new_model_fn, model_dir=estimator.model_dir, config=estimator.config)


def _forwarded(features, predictions, keys, sparse_default_values):
    """The features to forward, by key, each a dense tensor."""
    owner = "forward_features"
    if not isinstance(predictions, dict):
        raise ZooError(
            f"{owner}: expected the model_fn's predictions to be a dict, found "
            f"{type(predictions).__name__}; return predictions={{name: tensor}}"
        )
    forwarded = {}
    for key in features if keys is None else keys:
        if key not in features:
            raise ZooError(
                f"{owner}: expected keys among the features {sorted(features)}, found "
                f"{key!r}; pass keys the input_fn gives"
            )
        if key in predictions:
            raise ZooError(
                f"{owner}: expected keys that are not predictions already "
                f"{sorted(predictions)}, found {key!r}; forward another feature"
            )
        feature = v1.convert_to_tensor_or_sparse_tensor(features[key])
        if sparse_default_values and key in sparse_default_values:
            if not isinstance(feature, tf.SparseTensor):
                raise ZooError(
                    f"{owner}: expected feature {key!r} to be a SparseTensor (it has a "
                    f"sparse default value), found {type(feature).__name__}; leave it "
                    "out of sparse_default_values"
                )
            feature = tf.sparse.to_dense(feature, default_value=sparse_default_values[key])
        if not isinstance(feature, tf.Tensor):
            raise ZooError(
                f"{owner}: expected feature {key!r} to be a Tensor, found "
                f"{type(feature).__name__}; filter it out with keys=..., or give it a "
                "default in sparse_default_values"
            )
        forwarded[key] = feature
    return forwarded


class _TransformGradients(v1.train.Optimizer):
    """An optimizer that transforms the gradients before ``optimizer`` applies them
    (its slots are the wrapped optimizer's)."""

    def __init__(self, optimizer, transform_grads_fn, name):
        super().__init__(use_locking=False, name=name)
        self._optimizer, self._transform_grads_fn = optimizer, transform_grads_fn

    def compute_gradients(self, *args, **kwargs):
        return self._optimizer.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = self._transform_grads_fn(grads_and_vars)
        return self._optimizer.apply_gradients(grads_and_vars, global_step, name)

    def get_slot(self, *args, **kwargs):
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer.get_slot_names(*args, **kwargs)


def clip_gradients_by_norm(optimizer, clip_norm):
    """``optimizer`` applying gradients clipped by their global norm
    (``tf.clip_by_global_norm``), as TF 1.15's.

    Raises:
        ZooError: optimizer is not a ``tf.compat.v1.train.Optimizer``.
    """
    _check_optimizer("clip_gradients_by_norm", optimizer)

    def clip(grads_and_vars):
        gradients, variables = zip(*grads_and_vars, strict=True)
        gradients = tf.clip_by_global_norm(gradients, clip_norm)[0]
        return list(zip(gradients, variables, strict=True))

    return _TransformGradients(optimizer, clip, "ClipByNorm" + optimizer.get_name())


def _check_optimizer(owner, optimizer):
    if not isinstance(optimizer, v1.train.Optimizer):
        raise ZooError(
            f"{owner}: expected a tf.compat.v1.train.Optimizer, found {optimizer!r}; pass "
            "e.g. tf.train.AdamOptimizer(0.001)"
        )


def replicate_model_fn(model_fn, loss_reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
                       devices=None):  # fmt: skip
    """``model_fn`` on one tower: this machine's one device (TF 1.15 made one
    tower per local GPU, else one on the CPU; one tower's loss is not rescaled).

    Raises:
        ZooError: loss_reduction NONE; devices naming more than one device.
    """
    if loss_reduction == Reduction.NONE:
        raise ZooError(
            "replicate_model_fn: expected the tower losses reduced, found "
            "loss_reduction=NONE; pass tf.losses.Reduction.MEAN"
        )
    if devices is not None and len(devices) > 1:
        raise ZooError(
            f"replicate_model_fn: expected at most one device (zoo.compat runs one "
            f"tower), found {list(devices)}; pass devices=None, or see docs/towers.md "
            "for data-parallel towers"
        )

    def single_tower_model_fn(features, labels, mode, params=None, config=None):
        return _call_with(model_fn, features=features, labels=labels, mode=mode,
                          params=params, config=config)  # fmt: skip

    return single_tower_model_fn


def TowerOptimizer(optimizer_or_optimizer_fn):  # noqa: N802  (TF 1.15's class name)
    """The optimizer itself (one tower: no gradients to gather); an optimizer
    function is called for it."""
    optimizer = optimizer_or_optimizer_fn
    if callable(optimizer) and not isinstance(optimizer, v1.train.Optimizer):
        optimizer = optimizer()
    _check_optimizer("TowerOptimizer", optimizer)
    return optimizer


def binary_classification_head(weight_column=None, thresholds=None, label_vocabulary=None,
                               loss_reduction=Reduction.SUM_OVER_BATCH_SIZE,
                               loss_fn=None, name=None):  # fmt: skip
    """Two classes, one logit, sigmoid cross entropy; loss averaged by default.

    Raises:
        ZooError: thresholds or loss_fn given (not provided).
    """
    _unsupported("binary_classification_head", thresholds=thresholds, loss_fn=loss_fn)
    return head_lib.BinaryLogisticHead(weight_column, label_vocabulary, loss_reduction,
                                       name)  # fmt: skip


def multi_class_head(n_classes, weight_column=None, label_vocabulary=None,
                     loss_reduction=Reduction.SUM_OVER_BATCH_SIZE, loss_fn=None,
                     name=None):  # fmt: skip
    """``n_classes`` (> 2) classes, softmax cross entropy; loss averaged by default.

    Raises:
        ZooError: n_classes not above 2; loss_fn given (not provided).
    """
    _unsupported("multi_class_head", loss_fn=loss_fn)
    if not isinstance(n_classes, int) or n_classes < 3:
        raise ZooError(
            f"multi_class_head: expected n_classes an int > 2, found {n_classes!r}; "
            "use binary_classification_head for two classes"
        )
    return head_lib.MultiClassHead(n_classes, weight_column, label_vocabulary,
                                   loss_reduction, name)  # fmt: skip


def multi_label_head(n_classes, weight_column=None, thresholds=None,
                     label_vocabulary=None,
                     loss_reduction=Reduction.SUM_OVER_BATCH_SIZE, loss_fn=None,
                     name=None):  # fmt: skip
    """Any of ``n_classes`` classes per example, sigmoid cross entropy averaged over
    the classes; loss averaged over the batch by default.

    Raises:
        ZooError: n_classes not above 1; thresholds or loss_fn given (not provided).
    """
    _unsupported("multi_label_head", thresholds=thresholds, loss_fn=loss_fn)
    return head_lib.MultiLabelHead(n_classes, weight_column, label_vocabulary,
                                   loss_reduction, name)  # fmt: skip


def regression_head(weight_column=None, label_dimension=1,
                    loss_reduction=Reduction.SUM_OVER_BATCH_SIZE, loss_fn=None,
                    inverse_link_fn=None, name=None):  # fmt: skip
    """``label_dimension`` outputs, mean squared error; loss averaged by default.

    Raises:
        ZooError: loss_fn or inverse_link_fn given (not provided).
    """
    _unsupported("regression_head", loss_fn=loss_fn, inverse_link_fn=inverse_link_fn)
    return head_lib.RegressionHead(label_dimension, weight_column, loss_reduction, name)


def _unsupported(owner, **arguments):
    given = sorted(name for name, value in arguments.items() if value is not None)
    if given:
        raise ZooError(
            f"tf.contrib.estimator.{owner}: expected {' and '.join(given)} None "
            f"(zoo.compat does not provide {', '.join(given)}), found them given; leave "
            "them out, or build the loss in a model_fn of your own"
        )


def multi_head(heads, head_weights=None):
    """One head of several named heads (multi-objective learning), as TF 1.15's:
    the losses summed (weighted by ``head_weights``), the metrics of each head
    (their keys carry the head's name), predictions keyed ``(head name, key)``,
    the first head's default export served.

    Args:
        heads: heads of this module, each with a ``name``.
        head_weights: None, or one loss weight per head.

    Returns:
        A head: ``create_estimator_spec(features, mode, logits, labels, ...)``
        with logits and labels dicts by head name (logits may be one tensor,
        split along its last axis).

    Raises:
        ZooError: no heads; a head without a name; weights of another length.
    """
    heads = tuple(heads or ())
    if not heads:
        raise ZooError(
            "multi_head: expected heads, found none; pass e.g. [regression_head("
            "name='a'), binary_classification_head(name='b')]"
        )
    unnamed = [head for head in heads if not getattr(head, "name", None)]
    if unnamed:
        raise ZooError(
            f"multi_head: expected every head to have a name, found {unnamed}; pass "
            "name=... to each head"
        )
    if head_weights and len(head_weights) != len(heads):
        raise ZooError(
            f"multi_head: expected one weight per head ({len(heads)}), found "
            f"{len(head_weights)}; pass head_weights of the heads' length"
        )
    return _MultiHead(heads, tuple(head_weights or ()))


class _MultiHead:
    """What :func:`multi_head` returns (TF 1.15's ``_MultiHead``)."""

    def __init__(self, heads, head_weights):
        self._heads, self._head_weights = heads, head_weights
        self.logits_dimension = sum(head.logits_dimension for head in heads)

    @property
    def name(self):
        return "_".join(head.name for head in self._heads)

    def create_loss(self, features, mode, logits, labels):
        """The weighted sum of the heads' losses, and each head's per-example
        loss, weights and labels by head name (a ``LossSpec``)."""
        logits = self._logits_by_head(logits)
        specs = {head.name: head.create_loss(features, mode, logits[head.name],
                                             labels[head.name])  # fmt: skip
                 for head in self._heads}  # fmt: skip
        weights = dict(zip(specs, self._head_weights or [1.0] * len(specs), strict=True))
        return head_lib.LossSpec(
            self._merged([spec.training_loss for spec in specs.values()]),
            {name: spec.unreduced_loss * weights[name] for name, spec in specs.items()},
            {name: spec.weights * weights[name] for name, spec in specs.items()},
            {name: spec.processed_labels for name, spec in specs.items()},
        )

    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None,
                              train_op_fn=None, regularization_losses=None):  # fmt: skip
        """The merged :class:`EstimatorSpec` of ``mode``.

        Raises:
            ZooError: labels not a dict by head name; in TRAIN, both or neither of
                optimizer and train_op_fn.
        """
        logits = self._logits_by_head(logits)
        if labels is not None and not isinstance(labels, dict):
            raise ZooError(
                f"multi_head: expected labels to be a dict by head name "
                f"{[head.name for head in self._heads]}, found {labels!r}; return "
                "{name: labels} from input_fn"
            )
        specs = [
            head.create_estimator_spec(
                features, mode, logits[head.name],
                labels[head.name] if labels else None, train_op_fn=_no_train_op,
            )  # fmt: skip
            for head in self._heads
        ]
        if mode == ModeKeys.PREDICT:
            return self._merged_predict(specs)
        loss = self._merged([spec.loss for spec in specs], regularization_losses)
        if mode == ModeKeys.EVAL:
            metrics = {}
            with v1.name_scope("merge_eval"):
                for head, spec in zip(self._heads, specs, strict=True):
                    key = f"{MetricKeys.LOSS}/{head.name}"
                    metrics[key] = v1.metrics.mean(spec.loss, name=key)
                    metrics.update(spec.eval_metric_ops)
            return EstimatorSpec(ModeKeys.EVAL, predictions=self._predictions(specs),
                                 loss=loss, eval_metric_ops=metrics)  # fmt: skip
        train_op = head_lib._train_op(loss, optimizer, train_op_fn)  # noqa: SLF001
        with v1.name_scope(""):
            v1.summary.scalar(MetricKeys.LOSS, loss)
        return EstimatorSpec(ModeKeys.TRAIN, loss=loss, train_op=train_op)

    def _logits_by_head(self, logits):
        """``logits`` as a dict by head name: a tensor is split along its last axis."""
        if isinstance(logits, dict):
            return logits
        with v1.name_scope(None, "split_logits", [logits]):
            sizes = [head.logits_dimension for head in self._heads]
            parts = tf.split(tf.convert_to_tensor(logits), sizes, axis=-1)
        return {head.name: part for head, part in zip(self._heads, parts, strict=True)}

    def _merged(self, losses, regularization_losses=None):
        with v1.name_scope("merge_losses"):
            if self._head_weights:
                losses = [loss * weight for loss, weight in
                          zip(losses, self._head_weights, strict=True)]  # fmt: skip
            return tf.math.add_n([*losses, *(regularization_losses or ())])

    def _predictions(self, specs):
        return {(head.name, key): value
                for head, spec in zip(self._heads, specs, strict=True)
                for key, value in spec.predictions.items()}  # fmt: skip

    def _merged_predict(self, specs):
        """Predictions by ``(head, key)``; exports: the first head's default as
        ``serving_default``, each head's as ``<head>`` and ``<head>/<key>``, and
        ``predict`` of every head's predict outputs as ``<head>/<key>``."""
        first = specs[0].export_outputs
        outputs = {DEFAULT_SERVING_KEY: first.get(DEFAULT_SERVING_KEY,
                                                  next(iter(first.values())))}  # fmt: skip
        merged = {}
        for head, spec in zip(self._heads, specs, strict=True):
            for key, output in spec.export_outputs.items():
                default = key == DEFAULT_SERVING_KEY
                outputs[head.name if default else f"{head.name}/{key}"] = output
                predict = isinstance(output, PredictOutput)
                if key == head_lib.PREDICT_SERVING_KEY and predict:
                    merged.update({f"{head.name}/{name}": tensor
                                   for name, tensor in output.outputs.items()})  # fmt: skip
        outputs[head_lib.PREDICT_SERVING_KEY] = PredictOutput(merged)
        return EstimatorSpec(ModeKeys.PREDICT, predictions=self._predictions(specs),
                             export_outputs=outputs)  # fmt: skip


def _no_train_op(loss):
    """Each head's train op in a multi head: none (the merged loss is trained)."""
    del loss
    return tf.no_op()
