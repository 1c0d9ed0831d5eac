"""``tf.estimator.tpu.TPUEstimator`` on CPU (``use_tpu=False``), as BERT's scripts run
it: ``params["batch_size"]`` for input_fn and model_fn, ``TPUEstimatorSpec`` with
``scaffold_fn`` and ``eval_metrics=(metric_fn, tensors)``. With ``use_tpu=False``
one training step per ``session.run``, as TF 1.15 ran it on CPU (every hook sees
every step); ``use_tpu=True``, or our opt-in ``loop_on_cpu=True``, runs
``iterations_per_loop`` steps in each ``session.run``, as on a TPU, through
:func:`zoo.training.repeat_updates` (the same numbers as one step per run).

K steps per run call the model_fn twice: once as usual (its variables, its
optimizer's slots), then inside the loop, where every variable it asks for is
the one the first call made: ``get_variable`` under ``reuse=True`` with the
variable-scope counts of the first call (so unnamed layers get the same names;
TensorFlow keeps those counts in the graph collection ``("__varscope",)``, the
one private name this module reads), other variables (an optimizer's
``beta1_power``) by name. Summaries the model_fn adds in the loop are dropped; a
hook that fetches a tensor of the first call (a summary, other than the loss)
reads batches of an iterator of its own, not the loop's.
"""

import collections
import contextlib
import math

import tensorflow as tf

from layers.errors import ZooError
from zoo.compat.estimator.estimator import (
    Estimator,
    IteratorInitializer,
    _arguments,
    _call_with,
)
from zoo.compat.estimator.mode_keys import ModeKeys
from zoo.compat.estimator.model_fn import EstimatorSpec
from zoo.compat.estimator.tpu.tpu_config import RunConfig

v1_iterator = tf.compat.v1.data.make_initializable_iterator

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
        """The :class:`EstimatorSpec` CPU runs: metric_fn called on its tensors (in
        EVAL), scaffold_fn called."""
        metric_ops = None
        if self.eval_metrics is not None and self.mode == ModeKeys.EVAL:
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
        use_tpu: False: one training step per ``session.run``, as TF 1.15 ran
            it on CPU; True (this machine has no TPU): ``iterations_per_loop``
            steps per run on CPU, as a TPU runs them.
        train_batch_size, eval_batch_size, predict_batch_size: the batch sizes.
        loop_on_cpu: ours, not TF 1.15's: with ``use_tpu=False`` too, run
            ``iterations_per_loop`` training steps in each ``session.run`` (hooks
            see one run per loop, as on a TPU; the variables are the same).
        The rest as :class:`Estimator` (``batch_axis``, ``eval_on_tpu``,
        ``export_to_tpu`` and the like are kept); params a dict, an ``HParams``
        (``batch_size`` is set on a copy) or an object that takes items.

    Raises:
        ZooError: a model_fn without params; params holding ``batch_size``; a
            config that is not a TPU RunConfig.
    """

    def __init__(self, model_fn=None, model_dir=None, config=None, params=None,
                 use_tpu=True, train_batch_size=None, eval_batch_size=None,
                 predict_batch_size=None, batch_axis=None, eval_on_tpu=True,
                 export_to_tpu=True, export_to_cpu=True, warm_start_from=None,
                 embedding_config_spec=None, export_saved_model_api_version=1,
                 loop_on_cpu=False):  # fmt: skip
        if "params" not in _arguments(model_fn):
            raise ZooError(
                "TPUEstimator: expected model_fn to take params (it gets "
                "params['batch_size']), found the arguments "
                f"{_arguments(model_fn)}; add params to model_fn"
            )
        if params is not None and not hasattr(params, "__contains__"):
            raise ZooError(
                f"TPUEstimator: expected params a dict or an HParams (it sets "
                f"params['batch_size']), found {type(params).__name__}; pass a dict or "
                "tf.contrib.training.HParams"
            )
        if params is not None and any(key in params for key in ("batch_size", "context")):
            raise ZooError(
                f"TPUEstimator: expected params without 'batch_size' or 'context', found "
                f"{params!r}; pass train_batch_size=... instead"
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
        self._loop = bool(use_tpu or loop_on_cpu)

        def cpu_model_fn(features, labels, mode, params, config):
            params = _with_item(params, "use_tpu", False)
            spec = _call_with(
                model_fn, features=features, labels=labels, mode=mode, params=params,
                config=config,
            )
            return spec.as_estimator_spec() if isinstance(spec, TPUEstimatorSpec) else spec

        # As TF 1.15: the Estimator's loss logging and step counter give way to an
        # ExamplesPerSecondHook every ceil(log_step_count_steps / iterations_per_loop)
        # steps (and, K steps per run, a loss logging hook as often)
        self._log_every_n_steps = config.log_step_count_steps and math.ceil(
            config.log_step_count_steps / config.tpu_config.iterations_per_loop
        )
        config = config.replace(log_step_count_steps=None)
        super().__init__(cpu_model_fn, model_dir, config, params, warm_start_from)

    def train(self, input_fn, hooks=None, steps=None, max_steps=None,
              saving_listeners=None):  # fmt: skip
        """As :meth:`Estimator.train`, ``iterations_per_loop`` steps per run (the
        last run fewer, to stop at ``steps`` or ``max_steps``)."""
        self._train_steps = steps, max_steps
        return super().train(input_fn, hooks, steps, max_steps, saving_listeners)

    def _build(self, input_fn, mode):
        steps_per_run = self._config.tpu_config.iterations_per_loop
        if mode != ModeKeys.TRAIN:
            return super()._build(input_fn, mode)
        if steps_per_run == 1 or not self._loop:
            spec, hooks = super()._build(input_fn, mode)
            return spec, [*hooks, *self._progress_hooks(spec.loss, 1)]
        from zoo.training.steps import repeat_updates

        dataset = self._input(input_fn, mode)
        if not isinstance(dataset, tf.data.Dataset):
            raise ZooError(
                f"TPUEstimator: expected input_fn to return a tf.data.Dataset "
                f"(iterations_per_loop={steps_per_run} draws batches in the loop), found "
                f"{type(dataset).__name__}; return a Dataset, or pass "
                "TPUConfig(iterations_per_loop=1)"
            )
        batches = _DatasetBatches(dataset, steps_per_run)
        specs, variables = [], _FirstCallVariables(steps_per_run)

        def update_fn(features, labels):
            with variables.call():
                spec = self._call_model_fn(features, labels, mode, self._config)
            specs.append(spec)
            return spec.train_op, spec.loss, {}

        with tf.compat.v1.variable_creator_scope(variables.creator):
            repeated = repeat_updates(
                update_fn, batches, steps_per_run,
                name="model_fn",
            )  # fmt: skip
        spec = specs[0]._replace(train_op=repeated.train_op, loss=repeated.losses[-1])
        hooks = [*map(IteratorInitializer, batches.iterators),
                 _StepsPerRun(repeated, *self._train_steps),
                 *self._progress_hooks(spec.loss, steps_per_run)]  # fmt: skip
        return spec, hooks

    def _progress_hooks(self, loss, steps_per_run):
        """TF 1.15's TPUEstimator logging: examples/sec and global_step/sec; the
        loss and step too when steps run in loops (as on a TPU)."""
        every_n = self._log_every_n_steps
        if not every_n:
            return []
        examples = ExamplesPerSecondHook(
            self._batch_sizes[ModeKeys.TRAIN], every_n_steps=every_n,
            output_dir=self.model_dir if self._config.save_summary_steps else None,
        )  # fmt: skip
        if not self._loop:
            return [examples]
        examples._set_steps_per_run(steps_per_run)  # noqa: SLF001  (as TF 1.15 set it)
        step = tf.compat.v1.train.get_global_step()
        logging = tf.compat.v1.train.LoggingTensorHook(
            {"loss": tf.identity(loss), "step": step}, every_n_iter=every_n
        )
        return [logging, examples]

    def _mode_params(self, mode):
        params = super()._mode_params(mode)
        batch_size = self._batch_sizes.get(mode)
        if batch_size is None:
            return params
        return _with_item(params, "batch_size", batch_size)


def _with_item(params, key, value):
    """``params`` (a copy already) with ``key`` set to ``value``, as TF 1.15's
    TPUEstimator set it: ``set_hparam``/``add_hparam`` on an ``HParams``, else
    ``params[key] = value``."""
    if hasattr(params, "set_hparam"):
        if key in params:
            params.set_hparam(key, value)
        else:
            params.add_hparam(key, value)
        return params
    params[key] = value
    return params


class ExamplesPerSecondHook(tf.compat.v1.train.StepCounterHook):
    """A step counter that logs (and writes as summaries) ``global_step/sec`` and
    ``examples/sec`` of ``batch_size`` examples a step, as TF 1.15's TPUEstimator.
    It overrides ``StepCounterHook._log_and_record``, the private method TF's own
    subclass overrides (tests/zoo/test_estimator_tail.py names it)."""

    def __init__(self, batch_size, every_n_steps=100, every_n_secs=None,
                 output_dir=None, summary_writer=None):  # fmt: skip
        self._batch_size = batch_size
        super().__init__(every_n_steps=every_n_steps, every_n_secs=every_n_secs,
                         output_dir=output_dir, summary_writer=summary_writer)  # fmt: skip

    def _log_and_record(self, elapsed_steps, elapsed_time, global_step):
        rates = {"global_step/sec": elapsed_steps / elapsed_time}
        if self._batch_size is not None:
            rates["examples/sec"] = self._batch_size * rates["global_step/sec"]
        for tag, value in rates.items():
            if self._summary_writer is not None:
                summary = tf.compat.v1.Summary(
                    value=[tf.compat.v1.Summary.Value(tag=tag, simple_value=value)]
                )
                self._summary_writer.add_summary(summary, global_step)
            tf.compat.v1.logging.info("%s: %g", tag, value)


class _DatasetBatches:
    """A dataset as :func:`zoo.training.repeat_updates` draws from it: ``draw()``
    (the loop's batches) and ``images``/``labels``, the first call's batch from an
    iterator of its own (what a hook fetches of that call reads its own data,
    never the loop's)."""

    def __init__(self, dataset, window):
        self.window = window
        self.iterators = [v1_iterator(dataset) for _ in range(2)]
        self.images, self.labels = self._next(self.iterators[1])

    def draw(self):
        return self._next(self.iterators[0])

    @staticmethod
    def _next(iterator):
        batch = iterator.get_next()
        return batch if isinstance(batch, tuple) and len(batch) == 2 else (batch, None)


class _FirstCallVariables:
    """What the model_fn's calls in the loop build on: the first call's variables.

    :meth:`call` wraps each call: the first records the variable-scope counts
    and then the variables made; a later one builds with those counts, and
    :meth:`creator` (a ``variable_creator_scope`` around the whole loop, so it
    also sees the variables an optimizer lifts out of it) hands it the first
    call's variable of each name. Summaries a later call adds are dropped.
    """

    def __init__(self, steps_per_run):
        self._steps_per_run, self._counts, self._variables = steps_per_run, None, None
        self._in_loop = False

    @contextlib.contextmanager
    def call(self):
        store = tf.compat.v1.get_collection(("__varscope",))[0]
        if self._counts is None:
            self._counts = dict(store.variable_scopes_count)
            yield
            self._variables = {v.op.name: v for v in tf.compat.v1.global_variables()}
            return
        summaries = tf.compat.v1.get_collection_ref(tf.compat.v1.GraphKeys.SUMMARIES)
        outer_summaries = list(summaries)
        store.variable_scopes_count = dict(self._counts)
        self._in_loop = True
        try:
            yield
        finally:
            self._in_loop = False
            summaries[:] = outer_summaries

    def creator(self, next_creator, **kwargs):
        if not self._in_loop:
            return next_creator(**kwargs)
        name = kwargs.get("name")
        if name not in self._variables:
            raise ZooError(
                f"TPUEstimator: expected model_fn to make its variables on its first call "
                f"(iterations_per_loop={self._steps_per_run} calls it again in the loop), "
                f"found a new variable {name!r} on the second; make variables with "
                "tf.compat.v1.get_variable, or pass TPUConfig(iterations_per_loop=1)"
            )
        return self._variables[name]


class _StepsPerRun(tf.compat.v1.train.SessionRunHook):
    """Feeds each run's step count: ``steps_per_run``, fewer to end at the last step
    (``steps`` more, or ``max_steps``), where it stops."""

    def __init__(self, repeated, steps, max_steps):
        self._count, self._steps_per_run = repeated.count, repeated.steps_per_run
        self._steps, self._max_steps = steps, max_steps

    def after_create_session(self, session, coord):
        self._step = int(session.run(tf.compat.v1.train.get_global_step()))
        self._last = None if self._max_steps is None else math.ceil(self._max_steps)
        if self._steps is not None:  # steps=2.5 stops at 3 more, as StopAtStepHook
            self._last = self._step + math.ceil(self._steps)

    def before_run(self, run_context):
        self._now = self._steps_per_run
        if self._last is not None:
            self._now = max(1, min(self._now, self._last - self._step))
        return tf.compat.v1.train.SessionRunArgs(None, feed_dict={self._count: self._now})

    def after_run(self, run_context, run_values):
        self._step += self._now
        if self._last is not None and self._step >= self._last:
            run_context.request_stop()


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
