"""``tf.estimator.tpu.TPUEstimator`` on CPU (``use_tpu=False``), as BERT's scripts run
it: ``params["batch_size"]`` for input_fn and model_fn, ``TPUEstimatorSpec`` with
``scaffold_fn`` and ``eval_metrics=(metric_fn, tensors)``."""

import collections

import tensorflow as tf

from layers.errors import ZooError
from zoo.compat.estimator.estimator import Estimator, _arguments, _call_with
from zoo.compat.estimator.mode_keys import ModeKeys
from zoo.compat.estimator.model_fn import EstimatorSpec
from zoo.compat.estimator.tpu.tpu_config import RunConfig

_SPEC_FIELDS = (
    "mode", "predictions", "loss", "train_op", "eval_metrics", "export_outputs",
    "scaffold_fn", "host_call", "training_hooks", "evaluation_hooks", "prediction_hooks",
)  # fmt: skip


class TPUEstimatorSpec(collections.namedtuple("TPUEstimatorSpec", _SPEC_FIELDS)):
    """What a TPUEstimator model_fn returns: an EstimatorSpec whose metrics are
    ``eval_metrics=(metric_fn, tensors)`` (a list or dict of tensors) and whose
    scaffold is ``scaffold_fn()``; ``host_call`` is kept (not run on CPU)."""

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metrics=None,
                export_outputs=None, scaffold_fn=None, host_call=None, training_hooks=None,
                evaluation_hooks=None, prediction_hooks=None):  # fmt: skip
        if eval_metrics is not None and not (
            isinstance(eval_metrics, tuple | list) and len(eval_metrics) == 2
            and callable(eval_metrics[0])
        ):  # fmt: skip
            raise ZooError(
                f"TPUEstimatorSpec(mode={mode!r}): expected eval_metrics to be "
                f"(metric_fn, tensors), found {eval_metrics!r}; pass (metric_fn, [tensors])"
            )
        return super().__new__(
            cls, mode, predictions, loss, train_op, eval_metrics, export_outputs,
            scaffold_fn, host_call, training_hooks, evaluation_hooks, prediction_hooks,
        )  # fmt: skip

    def as_estimator_spec(self):
        """The :class:`EstimatorSpec` CPU runs: metric_fn called on its tensors,
        scaffold_fn called."""
        metric_ops = None
        if self.eval_metrics is not None:
            metric_fn, tensors = self.eval_metrics
            by_name = isinstance(tensors, dict)
            metric_ops = metric_fn(**tensors) if by_name else metric_fn(*tensors)
        return EstimatorSpec(
            self.mode, predictions=self.predictions, loss=self.loss,
            train_op=self.train_op, eval_metric_ops=metric_ops,
            export_outputs=self.export_outputs, training_hooks=self.training_hooks,
            scaffold=self.scaffold_fn() if self.scaffold_fn else None,
            evaluation_hooks=self.evaluation_hooks, prediction_hooks=self.prediction_hooks,
        )  # fmt: skip


class TPUEstimator(Estimator):
    """An :class:`Estimator` that gives input_fn and model_fn ``params["batch_size"]``
    (``train_batch_size``, ``eval_batch_size`` or ``predict_batch_size`` by mode) and
    ``params["use_tpu"]``, and takes :class:`TPUEstimatorSpec`.

    Args:
        model_fn: ``model_fn(features, labels, mode, params[, config])``.
        use_tpu: False (this machine has no TPU; True runs on CPU the same way).
        train_batch_size, eval_batch_size, predict_batch_size: the batch sizes.
        The rest as :class:`Estimator` (``batch_axis``, ``eval_on_tpu``,
        ``export_to_tpu`` and the like are kept).

    Raises:
        ZooError: a model_fn without params; params holding ``batch_size``; a
            config that is not a TPU RunConfig.
    """

    def __init__(self, model_fn=None, model_dir=None, config=None, params=None,
                 use_tpu=True, train_batch_size=None, eval_batch_size=None,
                 predict_batch_size=None, batch_axis=None, eval_on_tpu=True,
                 export_to_tpu=True, export_to_cpu=True, warm_start_from=None,
                 embedding_config_spec=None, export_saved_model_api_version=1):  # fmt: skip
        if "params" not in _arguments(model_fn):
            raise ZooError(
                "TPUEstimator: expected model_fn to take params (it gets "
                "params['batch_size']), found the arguments "
                f"{_arguments(model_fn)}; add params to model_fn"
            )
        if params and ("batch_size" in params or "context" in params):
            raise ZooError(
                f"TPUEstimator: expected params without 'batch_size' or 'context', found "
                f"{sorted(params)}; pass train_batch_size=... instead"
            )
        config = RunConfig() if config is None else config
        if not isinstance(config, RunConfig):
            raise ZooError(
                f"TPUEstimator: expected config to be a tf.estimator.tpu.RunConfig, found "
                f"{config!r}; pass tf.estimator.tpu.RunConfig(tpu_config=TPUConfig(...))"
            )
        self._batch_sizes = {
            ModeKeys.TRAIN: train_batch_size, ModeKeys.EVAL: eval_batch_size,
            ModeKeys.PREDICT: predict_batch_size,
        }  # fmt: skip
        self._use_tpu = use_tpu

        def cpu_model_fn(features, labels, mode, params, config):
            params = {**params, "use_tpu": False}
            if self._batch_sizes.get(mode) is not None and features is not None:
                params["batch_size"] = self._batch_sizes[mode]
            spec = _call_with(
                model_fn, features, labels=labels, mode=mode, params=params, config=config
            )
            return spec.as_estimator_spec() if isinstance(spec, TPUEstimatorSpec) else spec

        super().__init__(cpu_model_fn, model_dir, config, params, warm_start_from)

    def _input_params(self, mode):
        batch_size = self._batch_sizes.get(mode)
        if batch_size is None:
            return self._params
        return {**self._params, "batch_size": batch_size}


def CrossShardOptimizer(opt, reduction=None, name="CrossShardOptimizer",  # noqa: N802
                        group_assignment=None):  # fmt: skip
    """``tf.contrib.tpu.CrossShardOptimizer`` on one CPU: the optimizer itself
    (one shard: nothing to average)."""
    del reduction, name, group_assignment
    if not isinstance(opt, tf.compat.v1.train.Optimizer):
        raise ZooError(
            f"CrossShardOptimizer: expected a tf.compat.v1.train.Optimizer, found {opt!r}; "
            "wrap a TF1 optimizer"
        )
    return opt
