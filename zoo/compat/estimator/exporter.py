"""``tf.estimator.FinalExporter``, ``LatestExporter``, ``BestExporter``: what
:func:`~zoo.compat.estimator.training.train_and_evaluate` exports after an evaluation,
into ``model_dir/export/<name>/<timestamp>``."""

import glob
import os
import shutil

import tensorflow as tf

from layers.errors import ZooError

v1 = tf.compat.v1


class Exporter:
    """Exports a model after an evaluation; see the subclasses.

    Args:
        name: the directory under ``model_dir/export``.
        serving_input_receiver_fn, assets_extra, as_text: as
            ``Estimator.export_saved_model``.
    """

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False):
        if not isinstance(name, str) or not name:
            raise ZooError(
                f"{type(self).__name__}: expected a name (the export's directory), found "
                f"{name!r}; pass e.g. name='exporter'"
            )
        self._name = name
        self._serving_input_receiver_fn = serving_input_receiver_fn
        self._assets_extra, self._as_text = assets_extra, as_text

    @property
    def name(self):
        """The export's directory name under ``model_dir/export``."""
        return self._name

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):  # fmt: skip
        """Exports (or not) the checkpoint just evaluated.

        Returns:
            The export directory (bytes), or None when nothing was exported.
        """
        raise NotImplementedError

    def _save(self, estimator, export_path, checkpoint_path):
        return estimator.export_saved_model(
            export_path, self._serving_input_receiver_fn, assets_extra=self._assets_extra,
            as_text=self._as_text, checkpoint_path=checkpoint_path,
        )  # fmt: skip


class FinalExporter(Exporter):
    """Exports once, after the final evaluation."""

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):  # fmt: skip
        if not is_the_final_export:
            return None
        return self._save(estimator, export_path, checkpoint_path)


class LatestExporter(Exporter):
    """Exports after every evaluation, keeping the ``exports_to_keep`` newest
    (None: all)."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False,
                 exports_to_keep=5):  # fmt: skip
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)
        self._exports_to_keep = exports_to_keep

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):  # fmt: skip
        path = self._save(estimator, export_path, checkpoint_path)
        _keep_newest(export_path, self._exports_to_keep)
        return path


def _loss_smaller(best_eval_result, current_eval_result):
    """BestExporter's default comparison: a smaller ``loss``."""
    for result in (best_eval_result, current_eval_result):
        if not result or "loss" not in result:
            raise ZooError(
                f"BestExporter: expected eval results with 'loss', found {result!r}; "
                "pass a compare_fn for other metrics"
            )
    return best_eval_result["loss"] > current_eval_result["loss"]


class BestExporter(Exporter):
    """Exports when an evaluation beats every earlier one (those in the event files
    of ``event_file_pattern`` too, so a restarted run remembers).

    Args:
        compare_fn: ``compare_fn(best_eval_result, current_eval_result)``, True
            when the current is better (default: a smaller loss).
        event_file_pattern: the evaluation's event files, relative to model_dir.
        exports_to_keep: how many of the best exports stay (None: all).
    """

    def __init__(self, name="best_exporter", serving_input_receiver_fn=None,
                 event_file_pattern="eval/*.tfevents.*", compare_fn=_loss_smaller,
                 assets_extra=None, as_text=False, exports_to_keep=5):  # fmt: skip
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)
        self._compare_fn, self._pattern = compare_fn, event_file_pattern
        self._exports_to_keep = exports_to_keep
        self._best, self._model_dir = None, None

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):  # fmt: skip
        if self._model_dir != estimator.model_dir:
            self._model_dir = estimator.model_dir
            if self._pattern:
                self._best = _best_of_events(
                    os.path.join(self._model_dir, self._pattern), self._compare_fn
                )
        if self._best is not None and not self._compare_fn(
            best_eval_result=self._best, current_eval_result=eval_result
        ):
            return None
        self._best = eval_result
        path = self._save(estimator, export_path, checkpoint_path)
        _keep_newest(export_path, self._exports_to_keep)
        return path


def _best_of_events(pattern, compare_fn):
    """The best evaluation result written in the event files of ``pattern``."""
    best = None
    for path in glob.glob(pattern):
        for event in v1.train.summary_iterator(path):
            result = {
                value.tag: value.simple_value
                for value in event.summary.value
                if value.HasField("simple_value")
            }
            if result and (best is None or compare_fn(best, result)):
                best = result
    return best


def _keep_newest(export_path, count):
    """Deletes all but the ``count`` newest timestamped exports in ``export_path``."""
    if count is None:
        return
    versions = sorted(
        name for name in os.listdir(export_path) if name.isdigit() and len(name) == 10
    )
    for name in versions[:-count] if count else versions:
        shutil.rmtree(os.path.join(export_path, name), ignore_errors=True)
