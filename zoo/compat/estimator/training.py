"""``tf.estimator.TrainSpec``, ``EvalSpec``, ``train_and_evaluate`` on one machine:
train, and evaluate (then run the exporters) after each checkpoint at most every
``throttle_secs``, and once more at the end."""

import collections
import os

import tensorflow as tf

from layers.errors import ZooError
from zoo.compat.estimator.estimator import is_number

v1 = tf.compat.v1


def _check(owner, name, value, minimum, fix):
    """Raises unless ``value`` is None or a number >= ``minimum`` (TF 1.15 took
    floats: ``max_steps=examples / batch_size``)."""
    if value is not None and not (is_number(value) and value >= minimum):
        raise ZooError(f"{owner}: expected {name} to be a number >= {minimum}, "
                       f"found {value!r}; {fix}")  # fmt: skip


class TrainSpec(
    collections.namedtuple(
        "TrainSpec", ["input_fn", "max_steps", "hooks", "saving_listeners"]
    )
):
    """What :func:`train_and_evaluate` trains: ``input_fn`` up to ``max_steps``.

    Raises:
        ZooError: input_fn not callable, max_steps not a number > 0.
    """

    def __new__(cls, input_fn, max_steps=None, hooks=None, saving_listeners=None):
        if not callable(input_fn):
            raise ZooError(
                f"TrainSpec: expected input_fn to be callable, found {input_fn!r}; "
                "pass the function that returns the dataset"
            )
        _check("TrainSpec", "max_steps", max_steps, 1, "pass e.g. max_steps=1000 or None")
        return super().__new__(
            cls, input_fn, max_steps, tuple(hooks or ()), tuple(saving_listeners or ())
        )


class EvalSpec(
    collections.namedtuple(
        "EvalSpec",
        ["input_fn", "steps", "name", "hooks", "exporters", "start_delay_secs",
         "throttle_secs"],  # fmt: skip
    )
):
    """How :func:`train_and_evaluate` evaluates: ``steps`` batches (None: all of
    input_fn's data), under ``name``, then ``exporters``; not more often than every
    ``throttle_secs`` (``start_delay_secs`` is kept, a local run does not wait).

    Raises:
        ZooError: input_fn not callable, steps < 1, negative seconds, exporters
            not Exporters or of the same name.
    """

    def __new__(cls, input_fn, steps=100, name=None, hooks=None, exporters=None,
                start_delay_secs=120, throttle_secs=600):  # fmt: skip
        from zoo.compat.estimator.exporter import Exporter

        if not callable(input_fn):
            raise ZooError(
                f"EvalSpec: expected input_fn to be callable, found {input_fn!r}; "
                "pass the function that returns the dataset"
            )
        _check("EvalSpec", "steps", steps, 1, "pass e.g. steps=100, or None for all")
        _check("EvalSpec", "start_delay_secs", start_delay_secs, 0, "pass e.g. 0")
        _check("EvalSpec", "throttle_secs", throttle_secs, 0, "pass e.g. 600")
        if isinstance(exporters, Exporter):
            exporters = (exporters,)
        exporters = tuple(exporters or ())
        names = [getattr(e, "name", None) for e in exporters]
        distinct = len(set(names)) == len(names)
        if not (distinct and all(isinstance(e, Exporter) for e in exporters)):
            raise ZooError(
                f"EvalSpec: expected exporters of distinct names, found {exporters!r}; "
                "pass tf.estimator.FinalExporter/LatestExporter/BestExporter instances"
            )
        return super().__new__(
            cls, input_fn, steps, name, tuple(hooks or ()), exporters, start_delay_secs,
            throttle_secs,
        )  # fmt: skip


class _EvaluateAfterSave(v1.train.CheckpointSaverListener):
    """Evaluates and exports after each checkpoint (the first, of the untrained
    model, and those within throttle_secs of the last evaluation skipped) and at
    the end, unless the last checkpoint was evaluated."""

    def __init__(self, estimator, eval_spec, max_steps):
        self._estimator, self._spec, self._max_steps = estimator, eval_spec, max_steps
        self.eval_result, self.export_results = None, []

    def begin(self):
        self._timer = v1.train.SecondOrStepTimer(every_secs=self._spec.throttle_secs)
        self._first = True

    def after_save(self, session, global_step_value):
        if self._first:
            self._first = False
            return
        if self._timer.should_trigger_for_step(global_step_value):
            self._evaluate(global_step_value)

    def end(self, session, global_step_value):
        if global_step_value != self._timer.last_triggered_step():
            self._evaluate(global_step_value)

    def _evaluate(self, global_step_value):
        self._timer.update_last_triggered_step(global_step_value)
        estimator, spec = self._estimator, self._spec
        checkpoint = estimator.latest_checkpoint()
        self.eval_result = estimator.evaluate(
            spec.input_fn, spec.steps, spec.hooks, checkpoint, spec.name
        )
        final = self._max_steps is not None and global_step_value >= self._max_steps
        self.export_results = [
            exporter.export(
                estimator,
                os.path.join(estimator.model_dir, "export", exporter.name),
                checkpoint,
                self.eval_result,
                final,
            )
            for exporter in spec.exporters
        ]


def train_and_evaluate(estimator, train_spec, eval_spec):
    """Trains ``estimator`` as ``train_spec`` says, evaluating and exporting as
    ``eval_spec`` says (on this machine; ``TF_CONFIG`` is not read).

    Returns:
        ``(metrics of the last evaluation, results of its exporters)``.

    Raises:
        ZooError: specs of the wrong type.
    """
    for spec, kind in ((train_spec, TrainSpec), (eval_spec, EvalSpec)):
        if not isinstance(spec, kind):
            raise ZooError(
                f"train_and_evaluate: expected a tf.estimator.{kind.__name__}, found "
                f"{spec!r}; pass {kind.__name__}(input_fn, ...)"
            )
    listener = _EvaluateAfterSave(estimator, eval_spec, train_spec.max_steps)
    estimator.train(
        train_spec.input_fn,
        hooks=train_spec.hooks,
        max_steps=train_spec.max_steps,
        saving_listeners=[*train_spec.saving_listeners, listener],
    )
    return listener.eval_result, listener.export_results
