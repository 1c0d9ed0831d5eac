"""``tf.estimator.RunConfig``: where and how often an Estimator saves, as in TF 1.15.

One machine: the cluster properties read as a local chief's (``task_type``
``"worker"``, ``task_id`` 0, ``is_chief`` True); ``TF_CONFIG`` is not read.

Usage::

    config = tf.estimator.RunConfig(model_dir, save_checkpoints_steps=500)
    config = config.replace(keep_checkpoint_max=2)
"""

import inspect
import os

from layers.errors import ZooError

_LOCAL_CHIEF = {
    "cluster_spec": None,
    "evaluation_master": "",
    "global_id_in_cluster": 0,
    "is_chief": True,
    "master": "",
    "num_ps_replicas": 0,
    "num_worker_replicas": 1,
    "service": None,
    "task_id": 0,
    "task_type": "worker",
}
_DEFAULT_SAVE_SECS = 600


class RunConfig:
    """How an Estimator runs: model_dir, seeds, when to save and log.

    Args:
        model_dir: where checkpoints and events go (None: the Estimator's).
        tf_random_seed: the graph-level seed of every graph the Estimator builds.
        save_summary_steps: summaries every this many steps (None or 0: never).
        save_checkpoints_steps, save_checkpoints_secs: checkpoint every this
            many steps or seconds, at most one of them (neither: every 600 s;
            both None explicitly: only at the end).
        session_config: a ``tf.compat.v1.ConfigProto``.
        keep_checkpoint_max: how many recent checkpoints stay (None or 0: all).
        keep_checkpoint_every_n_hours: also keep one per this many hours.
        log_step_count_steps: log loss and steps/s every this many steps.
        train_distribute: None, or a ``tf.distribute`` strategy of one replica
            set on this machine (what is supported: docs/estimator.md).
        The rest as in TF 1.15 (kept, not acted on): device_fn, protocol,
        eval_distribute, experimental_distribute,
        experimental_max_worker_delay_secs, session_creation_timeout_secs,
        checkpoint_save_graph_def.

    Raises:
        ZooError: both save_checkpoints_steps and save_checkpoints_secs.
    """

    _UNSET = object()

    def __init__(self, model_dir=None, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_steps=_UNSET, save_checkpoints_secs=_UNSET,
                 session_config=None, keep_checkpoint_max=5,
                 keep_checkpoint_every_n_hours=10000, log_step_count_steps=100,
                 train_distribute=None, device_fn=None, protocol=None,
                 eval_distribute=None, experimental_distribute=None,
                 experimental_max_worker_delay_secs=None,
                 session_creation_timeout_secs=7200,
                 checkpoint_save_graph_def=True):  # fmt: skip
        values = dict(locals())
        del values["self"]
        steps, secs = save_checkpoints_steps, save_checkpoints_secs
        if steps is self._UNSET and secs is self._UNSET:
            steps, secs = None, _DEFAULT_SAVE_SECS
        steps, secs = (None if v is self._UNSET else v for v in (steps, secs))
        if steps is not None and secs is not None:
            raise ZooError(
                f"RunConfig: expected save_checkpoints_steps or save_checkpoints_secs, "
                f"found both ({steps}, {secs}); pass one of them"
            )
        values.update(save_checkpoints_steps=steps, save_checkpoints_secs=secs)
        if model_dir is not None:
            values["model_dir"] = os.fspath(model_dir)
        self._values = values

    def __getattr__(self, name):
        values = self.__dict__.get("_values", {})
        if name in values:
            return values[name]
        if name in _LOCAL_CHIEF:
            return _LOCAL_CHIEF[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def replace(self, **changes):
        """A copy with ``changes`` (names of the constructor's arguments).

        Raises:
            ZooError: a name that is not one of them.
        """
        unknown = sorted(set(changes) - set(self._replaceable()))
        if unknown:
            raise ZooError(
                f"RunConfig.replace: expected names among {sorted(self._replaceable())}, "
                f"found {unknown}; change the others by making a new RunConfig"
            )
        values = {**self._values, **changes}
        pair = ("save_checkpoints_steps", "save_checkpoints_secs")
        for one, other in (pair, pair[::-1]):
            if changes.get(one) is not None and other not in changes:
                values[other] = None  # the one given replaces the other
        return type(self)(**values)

    def _replaceable(self):
        """The constructor's argument names: what :meth:`replace` may change."""
        return list(inspect.signature(RunConfig.__init__).parameters)[1:]

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"{type(self).__name__}({fields})"
