"""``tf.estimator.add_metrics`` (TF 1.15 and 2.x): a new Estimator whose evaluation
has the metrics of ``metric_fn`` too.

Usage::

    def my_auc(labels, predictions):
        return {"auc": tf.compat.v1.metrics.auc(labels, predictions["logistic"])}

    estimator = tf.estimator.add_metrics(estimator, my_auc)
"""

from layers.errors import ZooError
from zoo.compat.estimator.estimator import Estimator, _arguments, _call_with
from zoo.compat.estimator.mode_keys import ModeKeys

_METRIC_FN_ARGUMENTS = ("predictions", "features", "labels", "config")


def add_metrics(estimator, metric_fn):
    """A new :class:`Estimator` on ``estimator``'s model_fn, model_dir and config
    whose EVAL spec has ``metric_fn``'s metrics too (they win a name clash).

    Args:
        estimator: a ``tf.estimator.Estimator``.
        metric_fn: takes any of ``predictions``, ``features``, ``labels``,
            ``config`` by name; returns a dict of name -> ``(value, update_op)``.

    Returns:
        An :class:`Estimator`.

    Raises:
        ZooError: estimator is not an Estimator; metric_fn takes another argument.
    """
    check_estimator("add_metrics", estimator)
    unexpected = sorted(set(_arguments(metric_fn)) - set(_METRIC_FN_ARGUMENTS))
    if unexpected:
        raise ZooError(
            f"add_metrics: expected metric_fn's arguments among "
            f"{', '.join(_METRIC_FN_ARGUMENTS)}, found {unexpected}; rename them "
            "(they are passed by name)"
        )

    def new_model_fn(features, labels, mode, config):
        spec = estimator.model_fn(features, labels, mode, config)
        if mode != ModeKeys.EVAL:
            return spec
        metrics = _call_with(
            metric_fn, features=features, labels=labels,
            predictions=spec.predictions, config=config,
        )  # fmt: skip
        return spec._replace(eval_metric_ops={**(spec.eval_metric_ops or {}), **metrics})

    return Estimator(
        new_model_fn, model_dir=estimator.model_dir, config=estimator.config,
        warm_start_from=estimator._warm_start_settings,  # noqa: SLF001  (TF 1.15's too)
    )  # fmt: skip


def check_estimator(owner, estimator):
    """Raises unless ``estimator`` is a ``tf.estimator.Estimator``.

    Raises:
        ZooError: naming ``owner`` and what was found.
    """
    if not isinstance(estimator, Estimator):
        raise ZooError(
            f"{owner}: expected a tf.estimator.Estimator, found {estimator!r}; pass the "
            "estimator (e.g. tf.estimator.DNNClassifier(...))"
        )
