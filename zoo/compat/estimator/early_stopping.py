"""Early-stopping hooks of ``tf.estimator.experimental`` (TF 1.15's
``tf.contrib.estimator`` too): training stops when the evaluations written in
``estimator.eval_dir()`` (the event files ``evaluate`` and ``train_and_evaluate``
write) say so, checked every ``run_every_secs`` seconds or ``run_every_steps``
steps. As TF 1.15, the hook makes the boolean variable ``signal_early_stopping/STOP``
(saved in the checkpoints) and sets it when it stops.

Usage::

    hook = tf.estimator.experimental.stop_if_no_decrease_hook(
        estimator, "loss", max_steps_without_decrease=1000, run_every_secs=None,
        run_every_steps=100)
    tf.estimator.train_and_evaluate(
        estimator, tf.estimator.TrainSpec(train_input_fn, hooks=[hook]), eval_spec)
"""

import collections
import glob
import operator
import os

import tensorflow as tf

from layers.errors import ZooError
from zoo.compat.estimator.extenders import check_estimator

v1 = tf.compat.v1


def make_early_stopping_hook(estimator, should_stop_fn, run_every_secs=60,
                             run_every_steps=None):  # fmt: skip
    """A hook that stops training when ``should_stop_fn()`` returns True.

    Args:
        estimator: the ``tf.estimator.Estimator`` being trained.
        should_stop_fn: a callable of no arguments returning a bool.
        run_every_secs, run_every_steps: how often to call it (one of them).

    Returns:
        A ``SessionRunHook``.

    Raises:
        ZooError: not an Estimator; both intervals set; should_stop_fn not callable.
    """
    check_estimator("make_early_stopping_hook", estimator)
    if run_every_secs is not None and run_every_steps is not None:
        raise ZooError(
            f"make_early_stopping_hook: expected one of run_every_secs and "
            f"run_every_steps, found both ({run_every_secs}, {run_every_steps}); pass "
            "run_every_secs=None to check every run_every_steps steps"
        )
    if not callable(should_stop_fn):
        raise ZooError(
            f"make_early_stopping_hook: expected should_stop_fn to be callable, found "
            f"{should_stop_fn!r}; pass a function of no arguments returning a bool"
        )
    return _StopOnPredicateHook(should_stop_fn, run_every_secs, run_every_steps)


def stop_if_higher_hook(estimator, metric_name, threshold, eval_dir=None, min_steps=0,
                        run_every_secs=60, run_every_steps=None):  # fmt: skip
    """Stops once an evaluation at step >= min_steps has ``metric_name`` > threshold."""
    return _threshold_hook(estimator, metric_name, threshold, operator.gt, eval_dir,
                           min_steps, run_every_secs, run_every_steps)  # fmt: skip


def stop_if_lower_hook(estimator, metric_name, threshold, eval_dir=None, min_steps=0,
                       run_every_secs=60, run_every_steps=None):  # fmt: skip
    """Stops once an evaluation at step >= min_steps has ``metric_name`` < threshold."""
    return _threshold_hook(estimator, metric_name, threshold, operator.lt, eval_dir,
                           min_steps, run_every_secs, run_every_steps)  # fmt: skip


def stop_if_no_increase_hook(estimator, metric_name, max_steps_without_increase,
                             eval_dir=None, min_steps=0, run_every_secs=60,
                             run_every_steps=None):  # fmt: skip
    """Stops once ``metric_name`` has not risen above its best for
    ``max_steps_without_increase`` steps of evaluations (from min_steps on)."""
    return _no_improvement_hook(estimator, metric_name, max_steps_without_increase,
                                operator.gt, eval_dir, min_steps, run_every_secs,
                                run_every_steps)  # fmt: skip


def stop_if_no_decrease_hook(estimator, metric_name, max_steps_without_decrease,
                             eval_dir=None, min_steps=0, run_every_secs=60,
                             run_every_steps=None):  # fmt: skip
    """Stops once ``metric_name`` has not fallen below its best for
    ``max_steps_without_decrease`` steps of evaluations (from min_steps on)."""
    return _no_improvement_hook(estimator, metric_name, max_steps_without_decrease,
                                operator.lt, eval_dir, min_steps, run_every_secs,
                                run_every_steps)  # fmt: skip


def read_eval_metrics(eval_dir):
    """The scalar metrics of the event files in ``eval_dir``.

    Returns:
        An ordered dict of global step -> {metric name: value}, by step.
    """
    by_step = collections.defaultdict(dict)
    for path in sorted(glob.glob(os.path.join(eval_dir, "events.out.tfevents.*"))):
        try:
            for event in v1.train.summary_iterator(path):
                metrics = {
                    value.tag: value.simple_value
                    for value in event.summary.value
                    if value.HasField("simple_value")
                }
                if metrics:
                    by_step[event.step].update(metrics)
        except tf.errors.DataLossError:
            continue  # as TF 1.15: the rest of a corrupt file is skipped
    return collections.OrderedDict(sorted(by_step.items()))


def _threshold_hook(estimator, metric_name, threshold, better, eval_dir, min_steps,
                    run_every_secs, run_every_steps):  # fmt: skip
    check_estimator("early stopping hook", estimator)
    eval_dir = eval_dir or estimator.eval_dir()

    def crossed():
        for step, metrics in read_eval_metrics(eval_dir).items():
            if step >= min_steps and better(_metric(metrics, metric_name, step), threshold):
                return True
        return False

    return make_early_stopping_hook(estimator, crossed, run_every_secs, run_every_steps)


def _no_improvement_hook(estimator, metric_name, max_steps_without_improvement, better,
                         eval_dir, min_steps, run_every_secs, run_every_steps):  # fmt: skip
    check_estimator("early stopping hook", estimator)
    eval_dir = eval_dir or estimator.eval_dir()

    def stalled():
        best, best_step = None, None
        for step, metrics in read_eval_metrics(eval_dir).items():
            if step < min_steps:
                continue
            value = _metric(metrics, metric_name, step)
            if best is None or better(value, best):
                best, best_step = value, step
            if step - best_step >= max_steps_without_improvement:
                return True
        return False

    return make_early_stopping_hook(estimator, stalled, run_every_secs, run_every_steps)


def _metric(metrics, name, step):
    if name not in metrics:
        raise ZooError(
            f"early stopping hook: expected metric {name!r} in the evaluation at step "
            f"{step}, found {sorted(metrics)}; pass one of those as metric_name"
        )
    return metrics[name]


def _stop_variable():
    """TF 1.15's ``signal_early_stopping/STOP`` (a global, untrained bool)."""
    with v1.variable_scope("signal_early_stopping", values=[], reuse=v1.AUTO_REUSE):
        return v1.get_variable(
            "STOP", shape=[], dtype=tf.bool,
            initializer=v1.initializers.constant(False),
            collections=[v1.GraphKeys.GLOBAL_VARIABLES], trainable=False,
        )  # fmt: skip


class _StopOnPredicateHook(v1.train.SessionRunHook):
    """Calls ``should_stop_fn`` on its timer after a run; if True, sets the stop
    variable and asks the session to stop.

    The global step fetched with a run may be read before or after that run's
    increment (TF 1.15's hook used it as is: under load it read one value twice,
    skipped that check and stopped a step late). Here, when the step the run made
    may be due, its value is read after the run, as ``CheckpointSaverHook`` does.
    """

    def __init__(self, should_stop_fn, run_every_secs, run_every_steps):
        self._should_stop_fn = should_stop_fn
        self._timer = v1.train.SecondOrStepTimer(
            every_secs=run_every_secs, every_steps=run_every_steps
        )

    def begin(self):
        self._global_step = v1.train.get_global_step()
        self._stop_op = v1.assign(_stop_variable(), True)

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values):
        if not self._timer.should_trigger_for_step(run_values.results + 1):
            return
        step = run_context.session.run(self._global_step)
        if self._timer.should_trigger_for_step(step):
            self._timer.update_last_triggered_step(step)
            if self._should_stop_fn():
                v1.logging.info("Requesting early stopping at global step %d", step)
                run_context.session.run(self._stop_op)
                run_context.request_stop()
