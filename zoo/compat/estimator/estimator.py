"""``tf.estimator.Estimator`` on ``tf.compat.v1``'s MonitoredSession and the zoo's loop.

Usage::

    estimator = tf.estimator.Estimator(model_fn, model_dir="/tmp/m", params={"lr": 0.1})
    estimator.train(input_fn, max_steps=1000)
    metrics = estimator.evaluate(input_fn, steps=10)
    for prediction in estimator.predict(input_fn):
        ...
    estimator.export_saved_model("/tmp/export", serving_input_receiver_fn)
"""

import os
import tempfile

from layers.errors import ZooError
from zoo.compat.estimator.run_config import RunConfig


class Estimator:
    """Trains, evaluates, predicts with and exports the model ``model_fn`` builds.

    Args:
        model_fn: ``model_fn(features, labels, mode, params, config)`` with any
            subset of those arguments (``features`` first), returning an
            :class:`~zoo.compat.estimator.model_fn.EstimatorSpec`.
        model_dir: where checkpoints, events and exports go; None: the
            config's, else a new temporary directory.
        config: a :class:`RunConfig` (None: the defaults).
        params: a dict given to model_fn and input_fn (those that take it).
        warm_start_from: a checkpoint path, a SavedModel directory or
            :class:`WarmStartSettings` to start from when model_dir has none.

    Raises:
        ZooError: model_dir and config.model_dir differ; config is not a RunConfig.
    """

    def __init__(self, model_fn, model_dir=None, config=None, params=None,
                 warm_start_from=None):  # fmt: skip
        config = RunConfig() if config is None else config
        if not isinstance(config, RunConfig):
            raise ZooError(
                f"Estimator: expected config to be a tf.estimator.RunConfig, found "
                f"{config!r}; pass RunConfig(...) or None"
            )
        model_dir = os.fspath(model_dir) if model_dir is not None else None
        if model_dir and config.model_dir and model_dir != config.model_dir:
            raise ZooError(
                f"Estimator: expected model_dir to equal config.model_dir, found "
                f"{model_dir!r} and {config.model_dir!r}; give one of them"
            )
        model_dir = model_dir or config.model_dir or tempfile.mkdtemp()
        self._model_fn = model_fn
        self._config = config.replace(model_dir=model_dir)
        self._params = dict(params or {})
        self._warm_start_from = warm_start_from

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
        """A copy of the params dict."""
        return dict(self._params)

    @property
    def model_fn(self):
        """The model_fn as given."""
        return self._model_fn

    def train(self, input_fn, hooks=None, steps=None, max_steps=None,
              saving_listeners=None):  # fmt: skip
        """Trains ``steps`` more steps or up to ``max_steps``; returns self."""
        raise NotImplementedError

    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """Evaluates a checkpoint; returns the metrics dict (with ``global_step``)."""
        raise NotImplementedError

    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):  # fmt: skip
        """Yields predictions of a checkpoint."""
        raise NotImplementedError

    def export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                           assets_extra=None, as_text=False, checkpoint_path=None,
                           experimental_mode="infer"):  # fmt: skip
        """Exports a SavedModel under ``export_dir_base/<timestamp>``; returns its path."""
        raise NotImplementedError
