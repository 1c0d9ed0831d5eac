"""``tf.estimator.Estimator`` on ``tf.compat.v1``'s MonitoredSession, hooks and Saver.

Each call builds a new graph, calls the model_fn in its mode and runs it in a
``tf.compat.v1.train.MonitoredSession`` (train: with MonitoredTrainingSession's
hooks, restores the latest checkpoint of model_dir, saves ``model.ckpt-N``,
``checkpoint``, ``graph.pbtxt`` and events there), with the files TF 1.15 wrote;
its session reads repeated fetches once (:mod:`zoo.compat.session`).

Usage::

    estimator = tf.estimator.Estimator(model_fn, model_dir="/tmp/m", params={"lr": 0.1})
    estimator.train(input_fn, max_steps=1000)
    metrics = estimator.evaluate(input_fn, steps=10)
    for prediction in estimator.predict(input_fn):
        ...
    estimator.export_saved_model("/tmp/export", serving_input_receiver_fn)
"""

import collections
import contextlib
import copy
import inspect
import numbers
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

from layers.errors import ZooError
from zoo.compat.estimator.export import export_lib
from zoo.compat.estimator.mode_keys import ModeKeys
from zoo.compat.estimator.run_config import RunConfig
from zoo.compat.estimator.warm_starting import WarmStartSettings, warm_start
from zoo.compat.session import CachedRunsCreator

v1 = tf.compat.v1


class Estimator:
    """Trains, evaluates, predicts with and exports the model ``model_fn`` builds.

    Args:
        model_fn: ``model_fn(features, labels, mode, params, config)`` with any
            subset of those arguments (``features`` first), returning an
            :class:`~zoo.compat.estimator.model_fn.EstimatorSpec`.
        model_dir: where checkpoints, events and exports go; None: the
            config's, else a new temporary directory.
        config: a :class:`RunConfig` (None: the defaults).
        params: hyperparameters of any type (a dict, ``HParams``, an object of
            the program's own), deep-copied as TF 1.15 copied them; model_fn and
            input_fn (those that take it) get a deep copy of them on each call.
        warm_start_from: a checkpoint path, a SavedModel directory or
            :class:`WarmStartSettings` to start from when model_dir has none.

    Raises:
        ZooError: model_dir and config.model_dir differ; config is not a
            RunConfig or distributes over several replicas; a model_fn argument
            of another name; params given to a model_fn without ``params``.
    """

    def __init__(self, model_fn, model_dir=None, config=None, params=None,
                 warm_start_from=None):  # fmt: skip
        config = RunConfig() if config is None else config
        if not isinstance(config, RunConfig):
            raise ZooError(
                f"Estimator: expected config to be a tf.estimator.RunConfig, found "
                f"{config!r}; pass RunConfig(...) or None"
            )
        for strategy in (config.train_distribute, config.eval_distribute):
            replicas = getattr(strategy, "num_replicas_in_sync", 1)
            if replicas != 1:
                raise ZooError(
                    f"Estimator: expected a distribution strategy of one replica (or "
                    f"none), found {type(strategy).__name__} of {replicas}; train on one "
                    "device (RunConfig(train_distribute=None)): zoo.compat runs Estimator "
                    "locally"
                )
        model_dir = os.fspath(model_dir) if model_dir is not None else None
        if model_dir and config.model_dir and model_dir != config.model_dir:
            raise ZooError(
                f"Estimator: expected model_dir to equal config.model_dir, found "
                f"{model_dir!r} and {config.model_dir!r}; give one of them"
            )
        model_dir = model_dir or config.model_dir or tempfile.mkdtemp()
        arguments = _arguments(model_fn)
        if "features" not in arguments:
            raise ZooError(
                f"Estimator: expected model_fn to take features, found the arguments "
                f"{arguments}; define model_fn(features, labels, mode, params)"
            )
        known = {"features", "labels", "mode", "params", "config"}
        unexpected = sorted(set(arguments) - known)
        if unexpected:
            raise ZooError(
                f"Estimator: expected model_fn's arguments among features, labels, mode, "
                f"params, config, found {unexpected}; rename them (TF calls them by name)"
            )
        if params is not None and "params" not in arguments:
            raise ZooError(
                f"Estimator: expected model_fn to take params (params were given), found "
                f"the arguments {arguments}; add params to model_fn or leave params out"
            )
        self._model_fn = model_fn
        self._config = config.replace(model_dir=model_dir)
        self._params = copy.deepcopy(params or {})  # as TF 1.15
        if isinstance(warm_start_from, str | os.PathLike):
            warm_start_from = WarmStartSettings(os.fspath(warm_start_from))
        self._warm_start_settings = warm_start_from

    @property
    def model_dir(self):
        """The directory of checkpoints, events and exports."""
        return self._config.model_dir

    @property
    def config(self):
        """The :class:`RunConfig` (its model_dir is :attr:`model_dir`)."""
        return self._config

    @property
    def params(self):
        """A deep copy of the params (as TF 1.15's ``Estimator.params``)."""
        return copy.deepcopy(self._params)

    @property
    def model_fn(self):
        """The model_fn, called as :meth:`train` calls it: ``(features, labels,
        mode, config)``."""

        def model_fn(features, labels, mode, config):
            return self._call_model_fn(features, labels, mode, config)

        return model_fn

    def eval_dir(self, name=None):
        """The directory :meth:`evaluate` writes its metrics to: ``model_dir/eval``
        or ``model_dir/eval_<name>``."""
        return os.path.join(self.model_dir, f"eval_{name}" if name else "eval")

    def latest_checkpoint(self):
        """The path of model_dir's latest checkpoint, or None."""
        return v1.train.latest_checkpoint(self.model_dir)

    def get_variable_names(self):
        """The names of the latest checkpoint's variables.

        Raises:
            ZooError: no checkpoint yet.
        """
        return [name for name, _ in v1.train.list_variables(self._checkpoint("names"))]

    def get_variable_value(self, name):
        """The value of variable ``name`` in the latest checkpoint, a numpy array.

        Raises:
            ZooError: no checkpoint yet, or no such variable in it.
        """
        path = self._checkpoint("get_variable_value")
        names = self.get_variable_names()
        if name not in names:
            raise ZooError(
                f"Estimator.get_variable_value: expected one of the checkpoint's variables "
                f"{names}, found {name!r}; pick one of get_variable_names()"
            )
        return v1.train.load_variable(path, name)

    def train(self, input_fn, hooks=None, steps=None, max_steps=None,
              saving_listeners=None):  # fmt: skip
        """Trains ``steps`` more steps, or up to global step ``max_steps``.

        Continues from model_dir's latest checkpoint (a killed run resumes from
        its last one); with neither ``steps`` nor ``max_steps``, until input_fn's
        data ends.

        Args:
            input_fn: returns a ``tf.data.Dataset`` of ``(features, labels)`` or
                ``(features, labels)`` tensors; takes any of params, config, mode.
            hooks: ``SessionRunHook`` list.
            steps, max_steps: at most one of them, > 0.
            saving_listeners: ``CheckpointSaverListener`` list.

        Returns:
            self.

        Raises:
            ZooError: both or non-positive steps; input_fn or model_fn returns
                the wrong kind of thing; model_dir holds another model's checkpoint.
        """
        for name, value in (("steps", steps), ("max_steps", max_steps)):
            if value is not None and not (is_number(value) and value > 0):
                raise ZooError(
                    f"Estimator.train: expected {name} to be a number > 0, found "
                    f"{value!r}; pass e.g. {name}=1000 or None"
                )
        if steps is not None and max_steps is not None:
            raise ZooError(
                f"Estimator.train: expected steps or max_steps, found both ({steps}, "
                f"{max_steps}); pass one of them"
            )
        if max_steps is not None and self._global_step() >= max_steps:
            return self  # as TF 1.15: the checkpoint is past max_steps already
        with _new_graph():
            spec, input_hooks = self._build(input_fn, ModeKeys.TRAIN)
            all_hooks = [*input_hooks, *(hooks or ()), *self._stop_hooks(steps, max_steps)]
            try:
                session = self._training_session(spec, all_hooks, saving_listeners)
            except tf.errors.NotFoundError:
                # a variable a hook made (an early-stopping hook's) missing from the
                # checkpoint, as in TF 1.15: say which
                if latest := self.latest_checkpoint():  # (the scaffold is final here)
                    check_compatible(latest, "Estimator.train")
                raise
            loss = None
            with session:
                while not session.should_stop():
                    _, loss = session.run([spec.train_op, spec.loss])
            v1.logging.info("Loss for final step: %s.", loss)
        return self

    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """Evaluates a checkpoint on ``steps`` batches (None: until the data ends).

        Writes the metrics as events in ``model_dir/eval`` (``eval_<name>``).

        Returns:
            A dict of each metric's value, with ``loss`` and ``global_step``.

        Raises:
            ZooError: no checkpoint to evaluate; a model_fn without loss.
        """
        checkpoint_path = checkpoint_path or self._checkpoint("evaluate")
        with _new_graph():
            evaluation = self._evaluation(input_fn, steps, hooks)
            scaffold = evaluation.spec.scaffold
            check_compatible(checkpoint_path, "Estimator.evaluate", scaffold)
            return evaluation.run(checkpoint_path, None, self.eval_dir(name))

    def _evaluation(self, input_fn, steps, hooks):
        """In the default graph: the EVAL spec and what runs it (TF 1.15's
        ``_evaluate_build_graph``; ``InMemoryEvaluatorHook`` builds it once and
        runs it on the training variables)."""
        spec, input_hooks = self._build(input_fn, ModeKeys.EVAL)
        return _Evaluation(spec, input_hooks, hooks, steps, self._config.session_config)

    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):  # fmt: skip
        """Yields the predictions of a checkpoint (without one: of fresh variables).

        Args:
            input_fn: returns features (or ``(features, labels)``, labels unused).
            predict_keys: the prediction keys to yield (None: all).
            yield_single_examples: one example at a time (else whole batches).

        Yields:
            A dict of key -> numpy value (or the value, when predictions is a
            tensor), per example or per batch.

        Raises:
            ZooError: an unknown predict key; predictions of different batch sizes.
        """
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        with _new_graph():
            spec, input_hooks = self._build(input_fn, ModeKeys.PREDICT)
            if checkpoint_path:
                check_compatible(checkpoint_path, "Estimator.predict", spec.scaffold)
            predictions = _selected(spec.predictions, predict_keys)
            all_hooks = [*input_hooks, *spec.prediction_hooks, *(hooks or ())]
            with _monitored_session(
                all_hooks,
                scaffold=spec.scaffold,
                checkpoint_filename_with_path=checkpoint_path,
                config=self._config.session_config,
            ) as session:
                while not session.should_stop():
                    batch = session.run(predictions)
                    if not yield_single_examples:
                        yield batch
                        continue
                    if not isinstance(batch, dict):
                        yield from batch
                        continue
                    for i in range(_batch_size(batch)):
                        yield {key: value[i] for key, value in batch.items()}

    def export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                           assets_extra=None, as_text=False, checkpoint_path=None,
                           experimental_mode=ModeKeys.PREDICT):  # fmt: skip
        """Exports a SavedModel of a checkpoint under ``export_dir_base/<timestamp>``.

        Args:
            export_dir_base: the directory of timestamped exports.
            serving_input_receiver_fn: returns a ``ServingInputReceiver``.
            assets_extra: dict of destination path (under ``assets.extra``) ->
                source path.
            as_text: write ``saved_model.pbtxt``.
            checkpoint_path: the checkpoint (None: the latest).
            experimental_mode: the mode the model_fn is called in (PREDICT).

        Returns:
            The export directory, as bytes (as TF 1.15 returned it).

        Raises:
            ZooError: no serving_input_receiver_fn; no checkpoint; export
                outputs that make no signature.
        """
        if serving_input_receiver_fn is None:
            raise ZooError(
                "Estimator.export_saved_model: expected a serving_input_receiver_fn, found "
                "None; pass e.g. tf.estimator.export.build_raw_serving_input_receiver_fn("
                "{name: placeholder})"
            )
        checkpoint_path = checkpoint_path or self._checkpoint("export_saved_model")
        with _new_graph():
            v1.train.get_or_create_global_step()
            receiver = serving_input_receiver_fn()
            spec = self._call_model_fn(receiver.features, None, experimental_mode)
            return export_lib.save(
                export_dir_base, receiver, spec, checkpoint_path,
                self._config.session_config, assets_extra, as_text,
            )  # fmt: skip

    def export_savedmodel(self, export_dir_base, serving_input_receiver_fn,
                          assets_extra=None, as_text=False, checkpoint_path=None,
                          strip_default_attrs=False):  # fmt: skip
        """TF 1.15's name of :meth:`export_saved_model` (default attributes are
        always stripped)."""
        del strip_default_attrs
        return self.export_saved_model(
            export_dir_base, serving_input_receiver_fn, assets_extra, as_text,
            checkpoint_path,
        )  # fmt: skip

    def _checkpoint(self, method):
        """The latest checkpoint, or a ZooError naming ``method``."""
        path = self.latest_checkpoint()
        if path is None:
            raise ZooError(
                f"Estimator.{method}: expected a checkpoint in model_dir {self.model_dir}, "
                "found none; train first, or pass checkpoint_path"
            )
        return path

    def _global_step(self):
        path = self.latest_checkpoint()
        return int(v1.train.load_variable(path, "global_step")) if path else 0

    def _build(self, input_fn, mode):
        """In the default graph: the global step, input_fn's batch and model_fn's
        spec; returns ``(spec, input hooks)``."""
        features, labels, input_hooks = _features_and_labels(self._input(input_fn, mode))
        return self._call_model_fn(features, labels, mode, self._config), input_hooks

    def _input(self, input_fn, mode):
        """In the default graph: the seed, the global step, then what input_fn returns."""
        v1.set_random_seed(self._config.tf_random_seed)
        v1.train.get_or_create_global_step()
        with tf.device("/cpu:0"):
            return _call_with(input_fn, params=self._mode_params(mode),
                              config=self._config, mode=mode)  # fmt: skip

    def _mode_params(self, mode):
        """A deep copy of the params, as input_fn and model_fn get them in ``mode``
        (TPUEstimator adds the batch size)."""
        del mode
        return self.params

    def _call_model_fn(self, features, labels, mode, config=None):
        """model_fn's spec, called with the arguments it takes."""
        from zoo.compat.estimator.model_fn import EstimatorSpec

        arguments = _arguments(self._model_fn)
        if labels is not None and "labels" not in arguments:
            raise ZooError(
                f"Estimator: expected model_fn to take labels (input_fn returns labels), "
                f"found the arguments {arguments}; name its argument labels, or return "
                "features only from input_fn"
            )
        spec = _call_with(
            self._model_fn, features=features, labels=labels, mode=mode,
            params=self._mode_params(mode), config=config or self._config,
        )  # fmt: skip
        if not isinstance(spec, EstimatorSpec):
            raise ZooError(
                f"Estimator: expected model_fn to return a tf.estimator.EstimatorSpec in "
                f"mode {mode!r}, found {spec!r}; return EstimatorSpec(mode, ...)"
            )
        return spec

    def _training_session(self, spec, hooks, saving_listeners):
        """A MonitoredSession with MonitoredTrainingSession's hooks that restores
        model_dir's latest checkpoint (or warm-starts) and saves as TF 1.15's
        Estimator saved."""
        config = self._config
        latest = self.latest_checkpoint()
        if latest:
            check_compatible(latest, "Estimator.train", spec.scaffold)
        elif self._warm_start_settings is not None:
            warm_start(self._warm_start_settings)
        # As TF 1.15: a "loss" summary unless the model_fn made one, and the loss in
        # GraphKeys.LOSSES (before any hook's begin(), so hooks read it there).
        summaries = v1.get_collection(v1.GraphKeys.SUMMARIES)
        if not any(summary.op.name == "loss" for summary in summaries):
            v1.summary.scalar("loss", spec.loss)
        v1.add_to_collection(v1.GraphKeys.LOSSES, spec.loss)
        if not (spec.scaffold.saver or v1.get_collection(v1.GraphKeys.SAVERS)):
            v1.add_to_collection(
                v1.GraphKeys.SAVERS,
                v1.train.Saver(
                    sharded=True,
                    max_to_keep=config.keep_checkpoint_max,
                    keep_checkpoint_every_n_hours=config.keep_checkpoint_every_n_hours,
                    defer_build=True,
                    save_relative_paths=True,
                ),
            )
        global_step = v1.train.get_global_step()
        hooks = [
            *hooks,
            v1.train.NanTensorHook(spec.loss),
            *spec.training_hooks,
        ]
        if config.log_step_count_steps:
            hooks.append(
                v1.train.LoggingTensorHook(
                    {"loss": spec.loss, "step": global_step},
                    every_n_iter=config.log_step_count_steps,
                )
            )
        # MonitoredTrainingSession's chief hooks, in its order (it takes no session
        # creator, so the session is built here)
        chief_hooks = list(spec.training_chief_hooks)
        if config.save_checkpoints_secs or config.save_checkpoints_steps:
            chief_hooks.append(
                v1.train.CheckpointSaverHook(
                    self.model_dir,
                    save_secs=config.save_checkpoints_secs,
                    save_steps=config.save_checkpoints_steps,
                    scaffold=spec.scaffold,
                    listeners=saving_listeners,
                    save_graph_def=config.checkpoint_save_graph_def,
                )
            )
        if config.log_step_count_steps:
            chief_hooks.append(
                v1.train.StepCounterHook(
                    output_dir=self.model_dir, every_n_steps=config.log_step_count_steps
                )
            )
        if config.save_summary_steps:
            chief_hooks.append(
                v1.train.SummarySaverHook(
                    scaffold=spec.scaffold,
                    save_steps=config.save_summary_steps,
                    output_dir=self.model_dir,
                )
            )
        return _monitored_session(
            [*chief_hooks, *hooks],
            scaffold=spec.scaffold,
            checkpoint_dir=self.model_dir,
            config=config.session_config,
        )

    def _stop_hooks(self, steps, max_steps):
        if steps is None and max_steps is None:
            return []
        return [v1.train.StopAtStepHook(num_steps=steps, last_step=max_steps)]


def _monitored_session(hooks, **settings):
    """A ``MonitoredSession`` with ``hooks`` around a ``ChiefSessionCreator(**settings)``
    session whose repeated runs are read once (:mod:`zoo.compat.session`): the one
    session every Estimator call runs in."""
    creator = CachedRunsCreator(v1.train.ChiefSessionCreator(**settings))
    return v1.train.MonitoredSession(creator, hooks)


@contextlib.contextmanager
def _new_graph():
    """A new default graph, in which Keras 3 names layers afresh (``sequential/dense``
    in every graph, as TF 1.15's Keras named them per graph): a Keras model called
    in a model_fn reads its checkpoint from evaluate, predict and export. Keras 3
    counts names per process, in ``keras.src.backend.common.global_state``'s
    ``object_name_uids`` (the private name this module touches; put back after)."""
    keras_state = sys.modules.get("keras.src.backend.common.global_state")
    with tf.Graph().as_default():
        if keras_state is None:
            yield
            return
        before = keras_state.get_global_attribute("object_name_uids")
        keras_state.set_global_attribute("object_name_uids", collections.defaultdict(int))
        try:
            yield
        finally:
            keras_state.set_global_attribute("object_name_uids", before)


class _Evaluation:
    """An EVAL spec's metrics (with ``loss`` and ``global_step``), run to the end
    of the data or ``steps`` batches by :meth:`run`, as many times as asked."""

    def __init__(self, spec, input_hooks, hooks, steps, session_config):
        self.spec, self._session_config = spec, session_config
        metrics = {"loss": v1.metrics.mean(spec.loss), **spec.eval_metric_ops}
        self._update_op = tf.group(*(update for _, update in metrics.values()))
        values = {key: value for key, (value, _) in sorted(metrics.items())}
        values["global_step"] = v1.train.get_global_step()
        self._final = v1.train.FinalOpsHook(values)
        self._hooks = [*input_hooks, *spec.evaluation_hooks, *(hooks or ()), self._final]
        if steps is not None:
            self._hooks.append(_StopAfterRuns(steps))

    def run(self, checkpoint_path, scaffold, eval_dir):
        """Evaluates ``checkpoint_path`` (or what ``scaffold`` initializes), writes
        the metrics as events in ``eval_dir``, returns them as a dict."""
        with _monitored_session(
            self._hooks,
            scaffold=scaffold or self.spec.scaffold,
            checkpoint_filename_with_path=checkpoint_path,
            config=self._session_config,
        ) as session:
            while not session.should_stop():
                session.run(self._update_op)
        results = dict(self._final.final_ops_values)
        v1.logging.info(
            "Saving dict for global step %d: %s", results["global_step"],
            ", ".join(f"{key} = {value}" for key, value in sorted(results.items())),
        )  # fmt: skip
        _write_summary(eval_dir, results)
        return results


class _StopAfterRuns(v1.train.SessionRunHook):
    """Asks the session to stop after ``runs`` runs (evaluate's ``steps``)."""

    def __init__(self, runs):
        self._runs, self._done = runs, 0

    def begin(self):
        self._done = 0

    def after_run(self, run_context, run_values):
        self._done += 1
        if self._done >= self._runs:
            run_context.request_stop()


class IteratorInitializer(v1.train.SessionRunHook):
    """Initializes a dataset iterator when the session is made."""

    def __init__(self, iterator):
        self._iterator = iterator

    def after_create_session(self, session, coord):
        session.run(self._iterator.initializer)


def is_number(value):
    """An int or a float, not a bool (TF 1.15 took ``steps=62.5`` and stopped at 63)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _arguments(function):
    return list(inspect.signature(function).parameters)


def _call_with(function, **available):
    """``function(**those of available it takes)``, all by name (as TF 1.15 called
    model_fn: ``model_fn(mode, features, labels)`` works too)."""
    arguments = _arguments(function)
    return function(**{k: v for k, v in available.items() if k in arguments})


def _features_and_labels(result):
    """input_fn's result as ``(features, labels, hooks)``: a Dataset's next batch
    (features, or (features, labels)) or ``(features, labels)`` tensors."""
    hooks = []
    if isinstance(result, tf.data.Dataset):
        iterator = v1.data.make_initializable_iterator(result)
        hooks.append(IteratorInitializer(iterator))
        result = iterator.get_next()
    if isinstance(result, tuple | list):
        if len(result) != 2:
            raise ZooError(
                f"input_fn: expected features or (features, labels), found a "
                f"{type(result).__name__} of {len(result)} items; return (features, labels)"
            )
        return result[0], result[1], hooks
    if not isinstance(result, tf.Tensor | tf.SparseTensor | dict):
        raise ZooError(
            f"input_fn: expected a tf.data.Dataset, features or (features, labels), found "
            f"{result!r}; return tensors (or a dict of them) or a Dataset"
        )
    return result, None, hooks


def _selected(predictions, predict_keys):
    """The predictions of ``predict_keys`` (all when None)."""
    if predict_keys is None:
        return predictions
    predict_keys = [predict_keys] if isinstance(predict_keys, str) else list(predict_keys)
    unknown = sorted(set(predict_keys) - set(predictions))
    if not isinstance(predictions, dict) or unknown:
        raise ZooError(
            f"Estimator.predict: expected predict_keys among {sorted(predictions)}, found "
            f"{unknown or predict_keys}; pick keys the model_fn predicts"
        )
    return {key: predictions[key] for key in predict_keys}


def _batch_size(batch):
    """The batch size every prediction of ``batch`` shares."""
    sizes = {key: np.shape(v)[0] if np.ndim(v) else None for key, v in batch.items()}
    if len(set(sizes.values())) != 1 or None in sizes.values():
        raise ZooError(
            f"Estimator.predict (mode {ModeKeys.PREDICT!r}): expected predictions of one "
            f"batch size, found {sizes}; give every prediction the batch dimension, or "
            "predict with yield_single_examples=False"
        )
    return next(iter(sizes.values()))


def check_compatible(checkpoint, owner, scaffold=None):
    """Raises unless ``checkpoint`` holds every saved variable of the default graph
    with its shape. A ``scaffold`` with its own saver names the variables its own
    way (model_to_estimator's object-based keys): that saver restores, unchecked.

    Raises:
        ZooError: naming the variables missing or of another shape.
    """
    if scaffold is not None and scaffold.saver is not None:
        return
    stored = dict(v1.train.list_variables(checkpoint))
    graph = {}
    for variable in v1.global_variables():
        # A part of a partitioned variable is saved under its whole's name (TF keeps it
        # in the private _save_slice_info; slots of parts: "<whole>/t_0/Adagrad").
        info = variable._save_slice_info  # noqa: SLF001
        name = info.full_name if info else variable.op.name
        graph[name] = None if info else variable.shape
    missing = sorted(name for name in graph if name not in stored)
    reshaped = sorted(
        name for name in graph
        if name in stored and graph[name] is not None and graph[name].is_fully_defined()
        and list(graph[name]) != list(stored[name])
    )  # fmt: skip
    if missing or reshaped:
        extra = sorted(set(stored) - set(graph))
        raise ZooError(
            f"{owner}: expected {checkpoint} to hold this model's variables, found "
            f"{missing} missing from it, {reshaped} of other shapes, {extra} only in it "
            "(another model's checkpoint); train in a new model_dir and start from it "
            "with warm_start_from=tf.estimator.WarmStartSettings(checkpoint, ...)"
        )


def _write_summary(directory, results):
    """Writes the scalar results as events in ``directory`` at their global_step."""
    summary = v1.Summary()
    for key, value in results.items():
        if key != "global_step" and np.ndim(value) == 0 and np.issubdtype(
            np.asarray(value).dtype, np.number
        ):
            summary.value.add(tag=key, simple_value=float(value))
    writer = v1.summary.FileWriterCache.get(directory)
    writer.add_summary(summary, int(results["global_step"]))
    writer.flush()
