"""``tf.estimator.EstimatorSpec``: what a model_fn returns, checked as TF 1.15 checked it.

Usage::

    def model_fn(features, labels, mode, params):
        logits = tf.compat.v1.layers.dense(features["x"], 10)
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(mode, predictions={"logits": logits})
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        train_op = optimizer.minimize(loss, tf.compat.v1.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
"""

import collections

import tensorflow as tf

from layers.errors import ZooError
from zoo.compat.estimator.export.export_output import ExportOutput, PredictOutput
from zoo.compat.estimator.mode_keys import MODES, ModeKeys

v1 = tf.compat.v1

DEFAULT_SERVING_KEY = "serving_default"

_FIELDS = (
    "mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs",
    "training_chief_hooks", "training_hooks", "scaffold", "evaluation_hooks",
    "prediction_hooks",
)  # fmt: skip


class EstimatorSpec(collections.namedtuple("EstimatorSpec", _FIELDS)):
    """The ops and objects a model_fn returns for one mode.

    Args:
        mode: a :class:`ModeKeys` value.
        predictions: a tensor or dict of tensors (required in PREDICT).
        loss: a scalar (or ``[1]``) tensor (required in TRAIN and EVAL).
        train_op: the op of one training step (required in TRAIN).
        eval_metric_ops: dict of name -> ``(value, update_op)`` or a Keras metric.
        export_outputs: dict of name -> :class:`ExportOutput`; in PREDICT, a
            single one also becomes ``"serving_default"``, and none gives a
            :class:`PredictOutput` of the predictions.
        training_chief_hooks, training_hooks, evaluation_hooks,
        prediction_hooks: ``SessionRunHook`` lists.
        scaffold: a ``tf.compat.v1.train.Scaffold`` (a default one when None).

    Raises:
        ZooError: a field missing in its mode or of the wrong kind; the message
            names the mode and the field.
    """

    def __new__(cls, mode, predictions=None, loss=None, train_op=None,
                eval_metric_ops=None, export_outputs=None, training_chief_hooks=None,
                training_hooks=None, scaffold=None, evaluation_hooks=None,
                prediction_hooks=None):  # fmt: skip
        owner = f"EstimatorSpec(mode={mode!r})"
        if mode not in MODES:
            raise ZooError(
                f"EstimatorSpec: expected mode to be one of {MODES}, found {mode!r}; "
                "pass the mode the model_fn was called with"
            )
        predictions = _predictions(predictions, mode, owner)
        return super().__new__(
            cls,
            mode=mode,
            predictions=predictions,
            loss=_loss(loss, mode, owner),
            train_op=_train_op(train_op, mode, owner),
            eval_metric_ops=_eval_metric_ops(eval_metric_ops, owner),
            export_outputs=(
                export_outputs_with_default(export_outputs, predictions, owner)
                if mode == ModeKeys.PREDICT
                else export_outputs
            ),
            training_chief_hooks=_hooks(
                training_chief_hooks, "training_chief_hooks", owner
            ),
            training_hooks=_hooks(training_hooks, "training_hooks", owner),
            scaffold=_scaffold(scaffold, owner),
            evaluation_hooks=_hooks(evaluation_hooks, "evaluation_hooks", owner),
            prediction_hooks=_hooks(prediction_hooks, "prediction_hooks", owner),
        )

    def _replace(self, **fields):
        """A copy with ``fields`` changed (checked again); the mode stays.

        Raises:
            ZooError: another mode.
        """
        if fields.get("mode", self.mode) != self.mode:
            raise ZooError(
                f"EstimatorSpec._replace: expected mode {self.mode!r}, found "
                f"{fields['mode']!r}; make a new EstimatorSpec for another mode"
            )
        return EstimatorSpec(**{**self._asdict(), **fields})


def _missing(owner, key, fix):
    return ZooError(f"{owner}: expected {key}, found None; {fix}")


def _in_default_graph(value, key, owner):
    """Raises unless tensor or op ``value`` belongs to the default graph."""
    if value.graph is not v1.get_default_graph():
        raise ZooError(
            f"{owner}: expected {key} from the graph model_fn is called in, found "
            f"{value.name} of another graph; build it inside model_fn"
        )


def _tensor(value, key, owner):
    if not isinstance(value, tf.Tensor):
        raise ZooError(
            f"{owner}: expected {key} to be a Tensor, found {value!r}; "
            "return the tensor model_fn built"
        )
    _in_default_graph(value, key, owner)
    return value


def _train_op(train_op, mode, owner):
    if train_op is None:
        if mode == ModeKeys.TRAIN:
            raise _missing(
                owner, "train_op", "return e.g. train_op=optimizer.minimize(loss, "
                "global_step=tf.compat.v1.train.get_global_step())"
            )
        return None
    if isinstance(train_op, tf.Variable):
        train_op = train_op.op
    if not isinstance(train_op, (tf.Operation, tf.Tensor)):
        raise ZooError(
            f"{owner}: expected train_op to be an Operation or Tensor, found "
            f"{train_op!r}; return optimizer.minimize(...)"
        )
    _in_default_graph(train_op, "train_op", owner)
    return train_op


def _loss(loss, mode, owner):
    if loss is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise _missing(owner, "loss", "return EstimatorSpec(mode, loss=..., ...)")
        return None
    loss = _tensor(loss, "loss", owner)
    if loss.shape.num_elements() not in (None, 1):
        raise ZooError(
            f"{owner}: expected loss to be a scalar, found shape {loss.shape}; "
            "reduce it, e.g. tf.reduce_mean(losses)"
        )
    return loss if loss.shape.rank == 0 else tf.reshape(loss, [])


def _predictions(predictions, mode, owner):
    if predictions is None:
        if mode == ModeKeys.PREDICT:
            raise _missing(owner, "predictions", "return predictions={name: tensor}")
        return {}
    if isinstance(predictions, dict):
        return {
            key: _tensor(value, f"predictions[{key!r}]", owner)
            for key, value in predictions.items()
        }
    return _tensor(predictions, "predictions", owner)


def export_outputs_with_default(export_outputs, predictions, owner):
    """``export_outputs`` as PREDICT mode completes it: a ``"serving_default"``.

    Args:
        export_outputs: dict of name -> :class:`ExportOutput`, or None (then a
            :class:`PredictOutput` of ``predictions``).
        predictions: the model_fn's predictions.
        owner: who is asking, for messages.

    Returns:
        A new dict with a ``"serving_default"`` entry.

    Raises:
        ZooError: not a dict of ExportOutput, or several without a default.
    """
    if export_outputs is None:
        return {DEFAULT_SERVING_KEY: PredictOutput(predictions)}
    if not isinstance(export_outputs, dict) or not all(
        isinstance(output, ExportOutput) for output in export_outputs.values()
    ):
        raise ZooError(
            f"{owner}: expected export_outputs to be a dict of name -> ExportOutput "
            f"(PredictOutput, ClassificationOutput, RegressionOutput), found "
            f"{export_outputs!r}; wrap the tensors in tf.estimator.export.PredictOutput"
        )
    outputs = dict(export_outputs)
    if len(outputs) == 1:
        outputs.setdefault(DEFAULT_SERVING_KEY, next(iter(outputs.values())))
    if DEFAULT_SERVING_KEY not in outputs:
        raise ZooError(
            f"{owner}: expected one of the export_outputs {sorted(outputs)} under "
            f"{DEFAULT_SERVING_KEY!r}, found none; name the default one "
            "tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY"
        )
    return outputs


def _eval_metric_ops(eval_metric_ops, owner):
    """``eval_metric_ops`` as a dict of name -> ``(value, update_op)``; a Keras
    metric becomes its ``(result(), updates[0])`` and its variables local."""
    if eval_metric_ops is None:
        return {}
    if not isinstance(eval_metric_ops, dict):
        raise ZooError(
            f"{owner}: expected eval_metric_ops to be a dict, found {eval_metric_ops!r}; "
            "pass {name: tf.compat.v1.metrics.accuracy(labels, predictions)}"
        )
    checked = {}
    for key, value in eval_metric_ops.items():
        if hasattr(value, "update_state") and hasattr(value, "result"):
            value = _keras_metric_ops(value, key, owner)
        if not (isinstance(value, tuple) and len(value) == 2):
            raise ZooError(
                f"{owner}: expected eval_metric_ops[{key!r}] to be a (metric_value, "
                f"update_op) tuple, found {value!r}; return a tf.compat.v1.metrics result"
            )
        for part in tf.nest.flatten(value):
            _in_default_graph(part, f"eval_metric_ops[{key!r}]", owner)
        checked[key] = value
    return checked


def _keras_metric_ops(metric, key, owner):
    """A Keras metric whose ``update_state`` was called in the graph, as a
    ``(value, update_op)`` pair; its variables join the local variables."""
    updates = getattr(metric, "updates", None)
    if not updates:
        raise ZooError(
            f"{owner}: expected eval_metric_ops[{key!r}] to have been updated, found a "
            f"metric with no update_state call; call metric.update_state(...) in model_fn"
        )
    local = set(map(id, v1.get_collection(v1.GraphKeys.LOCAL_VARIABLES)))
    for variable in metric.variables:
        if id(variable) not in local:
            v1.add_to_collection(v1.GraphKeys.LOCAL_VARIABLES, variable)
            v1.add_to_collection(v1.GraphKeys.METRIC_VARIABLES, variable)
    return metric.result(), updates[0]


def _hooks(hooks, key, owner):
    hooks = tuple(hooks or ())
    for hook in hooks:
        if not isinstance(hook, v1.train.SessionRunHook):
            raise ZooError(
                f"{owner}: expected {key} to hold SessionRunHook instances, found "
                f"{hook!r}; subclass tf.estimator.SessionRunHook"
            )
    return hooks


def _scaffold(scaffold, owner):
    scaffold = scaffold or v1.train.Scaffold()
    if not isinstance(scaffold, v1.train.Scaffold):
        raise ZooError(
            f"{owner}: expected scaffold to be a tf.compat.v1.train.Scaffold, found "
            f"{scaffold!r}; pass tf.compat.v1.train.Scaffold(...) or None"
        )
    return scaffold
