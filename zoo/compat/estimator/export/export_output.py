"""``tf.estimator.export``'s outputs: what a SavedModel signature returns.

A model_fn names them in ``EstimatorSpec(export_outputs={name: output})``;
:meth:`ExportOutput.as_signature_def` makes the signature from the serving
input's tensors, with ``tf.compat.v1.saved_model``'s signature builders.

Usage::

    export_outputs = {"serving_default": PredictOutput({"probabilities": probs})}
"""

import tensorflow as tf

from layers.errors import ZooError

v1 = tf.compat.v1


class ExportOutput:
    """An output of a model that can be served (one head)."""

    def as_signature_def(self, receiver_tensors):
        """The SignatureDef of this output read from ``receiver_tensors``.

        Args:
            receiver_tensors: a dict of name -> tensor, the serving inputs.
        """
        raise NotImplementedError


def _output_dict(outputs, default_name, owner):
    """``outputs`` (a tensor, or a dict with str or tuple-of-str keys) as a dict of
    str -> tensor; tuple keys are joined with "/"."""
    if not isinstance(outputs, dict):
        outputs = {default_name: outputs}
    checked = {}
    for key, value in outputs.items():
        key = _output_key(key, owner)
        if not isinstance(value, tf.Tensor):
            raise ZooError(
                f"{owner}: expected Tensor values, found {key!r}: {value!r}; pass a "
                "tensor or a dict of name -> tensor"
            )
        checked[key] = value
    return checked


def _output_key(key, owner):
    """``key`` as a str: a tuple of str (a head's) joined with "/"."""
    key = "/".join(key) if isinstance(key, tuple) else key
    if not isinstance(key, str):
        raise ZooError(
            f"{owner}: expected str keys (or tuples of str), found {key!r}; name each "
            "output with a string"
        )
    return key


def _single_string_input(receiver_tensors, owner):
    """The one string tensor of ``receiver_tensors`` (classify and regress read
    serialized tf.Examples)."""
    tensors = list(receiver_tensors.values())
    if len(tensors) != 1 or tensors[0].dtype != tf.string:
        raise ZooError(
            f"{owner}: expected a single tf.string input (serialized tf.Example), found "
            f"{receiver_tensors}; serve it with build_parsing_serving_input_receiver_fn, "
            "or export a PredictOutput"
        )
    return tensors[0]


class ClassificationOutput(ExportOutput):
    """A classification head: ``scores`` (float) and/or ``classes`` (string labels).

    Args:
        scores: a float tensor ``[batch, n_classes]``, or None.
        classes: a string tensor ``[batch, n_classes]``, or None.

    Raises:
        ZooError: neither given, or one of the wrong dtype.
    """

    def __init__(self, scores=None, classes=None):
        if scores is not None and not (
            isinstance(scores, tf.Tensor) and scores.dtype.is_floating
        ):
            raise ZooError(
                f"ClassificationOutput: expected scores to be a float Tensor, found "
                f"{scores!r}; pass the probabilities or logits"
            )
        if classes is not None and not (
            isinstance(classes, tf.Tensor) and classes.dtype == tf.string
        ):
            raise ZooError(
                f"ClassificationOutput: expected classes to be a tf.string Tensor, found "
                f"{classes!r}; convert class ids with tf.as_string or a vocabulary lookup"
            )
        if scores is None and classes is None:
            raise ZooError(
                "ClassificationOutput: expected scores or classes, found neither; "
                "pass at least one"
            )
        self.scores, self.classes = scores, classes

    def as_signature_def(self, receiver_tensors):
        examples = _single_string_input(receiver_tensors, "ClassificationOutput")
        return v1.saved_model.classification_signature_def(
            examples, self.classes, self.scores
        )


class RegressionOutput(ExportOutput):
    """A regression head: ``value``, a float tensor.

    Raises:
        ZooError: ``value`` is not a float tensor.
    """

    def __init__(self, value):
        if not (isinstance(value, tf.Tensor) and value.dtype.is_floating):
            raise ZooError(
                f"RegressionOutput: expected value to be a float Tensor, found {value!r}; "
                "pass the predicted values"
            )
        self.value = value

    def as_signature_def(self, receiver_tensors):
        examples = _single_string_input(receiver_tensors, "RegressionOutput")
        return v1.saved_model.regression_signature_def(examples, self.value)


class PredictOutput(ExportOutput):
    """Any outputs: a tensor (named ``"output"``) or a dict of name -> tensor.

    Raises:
        ZooError: a key that is not a string or a value that is not a tensor.
    """

    def __init__(self, outputs):
        self.outputs = _output_dict(outputs, "output", "PredictOutput")

    def as_signature_def(self, receiver_tensors):
        return v1.saved_model.predict_signature_def(receiver_tensors, self.outputs)


class EvalOutput(ExportOutput):
    """TF's ``tf.estimator.export.EvalOutput``: an evaluation's loss, predictions and
    metrics as the outputs of a ``tensorflow/supervised/eval`` signature.

    Keys are prefixed as TF prefixed them: ``loss``, ``predictions/<key>``,
    ``metrics/<name>/value`` and ``metrics/<name>/update_op`` (a key that starts
    with its prefix already keeps it; an update op that is an Operation is served as
    an empty tensor run after it, ``metric_op_wrapper``).

    Args:
        loss: a tensor or a dict of name -> tensor, or None.
        predictions: a tensor or a dict of name -> tensor, or None.
        metrics: a ``(value, update_op)`` tuple or a dict of name -> such tuples
            (``tf.compat.v1.metrics``'), or None.

    Raises:
        ZooError: a key that is not a string, a value that is not a tensor, a metric
            that is not a ``(value, update_op)`` tuple.
    """

    def __init__(self, loss=None, predictions=None, metrics=None):
        self.loss = self.predictions = self.metrics = None
        if loss is not None:
            self.loss = _prefixed(_output_dict(loss, "loss", "EvalOutput"), "loss")
        if predictions is not None:
            outputs = _output_dict(predictions, "predictions", "EvalOutput")
            self.predictions = _prefixed(outputs, "predictions")
        if metrics is not None:
            self.metrics = _metric_outputs(metrics)

    def as_signature_def(self, receiver_tensors):
        """The eval SignatureDef.

        Raises:
            ZooError: no receiver tensors.
        """
        if not receiver_tensors:
            raise ZooError(
                "EvalOutput: expected the serving input's tensors, found none; return "
                "them from the serving_input_receiver_fn"
            )
        outputs = {**(self.loss or {}), **(self.predictions or {}), **(self.metrics or {})}
        info = v1.saved_model.build_tensor_info
        return v1.saved_model.build_signature_def(
            {key: info(tensor) for key, tensor in receiver_tensors.items()},
            {key: info(tensor) for key, tensor in outputs.items()},
            "tensorflow/supervised/eval",
        )


def _prefixed(outputs, prefix):
    """``outputs`` with each key under ``prefix`` (:func:`_under`)."""
    return {_under(prefix, key): value for key, value in outputs.items()}


def _under(prefix, key):
    """``prefix/key``, or ``key`` if it starts with ``prefix`` already."""
    return key if key.startswith(prefix) else f"{prefix}/{key}"


def _metric_outputs(metrics):
    """``metrics/<name>/value`` and ``.../update_op`` of each ``(value, update_op)``."""
    if not isinstance(metrics, dict):
        metrics = {"metrics": metrics}
    outputs = {}
    for key, metric in metrics.items():
        name = _under("metrics", _output_key(key, "EvalOutput"))
        if not (isinstance(metric, tuple) and len(metric) == 2
                and isinstance(metric[0], tf.Tensor)
                and isinstance(metric[1], (tf.Tensor, tf.Operation))):  # fmt: skip
            raise ZooError(
                f"EvalOutput: expected metric {name!r} a (value Tensor, update_op) tuple, "
                f"found {metric!r}; pass what tf.compat.v1.metrics returns"
            )
        value, update = metric
        if isinstance(update, tf.Operation):
            with tf.control_dependencies([update]):
                update = tf.constant([], name="metric_op_wrapper")
        outputs[f"{name}/value"], outputs[f"{name}/update_op"] = value, update
    return outputs
