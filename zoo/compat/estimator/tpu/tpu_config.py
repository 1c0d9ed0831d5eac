"""``tf.estimator.tpu.TPUConfig``, ``InputPipelineConfig`` and the TPU ``RunConfig``:
TF 1.15's fields; on CPU ``iterations_per_loop`` is what counts."""

import collections

from layers.errors import ZooError
from zoo.compat.estimator import run_config


class InputPipelineConfig:
    """How input reaches the TPU cores (kept; CPU has one pipeline)."""

    PER_SHARD_V1 = 1
    PER_HOST_V1 = 2
    PER_HOST_V2 = 3
    BROADCAST = 4
    SLICED = 5


class TPUConfig(
    collections.namedtuple(
        "TPUConfig",
        ["iterations_per_loop", "num_shards", "num_cores_per_replica",
         "per_host_input_for_training", "tpu_job_name", "initial_infeed_sleep_secs",
         "input_partition_dims", "eval_training_input_configuration",
         "experimental_host_call_every_n_steps",
         "experimental_allow_per_host_v2_parallel_get_next", "experimental_feed_hook"],
    )
):  # fmt: skip
    """TPU settings of a :class:`RunConfig`.

    Args:
        iterations_per_loop: training steps per ``session.run`` (an int >= 1).
        The rest: TF 1.15's, kept.

    Raises:
        ZooError: iterations_per_loop not an int >= 1.
    """

    def __new__(cls, iterations_per_loop=2, num_shards=None, num_cores_per_replica=None,
                per_host_input_for_training=True, tpu_job_name=None,
                initial_infeed_sleep_secs=None, input_partition_dims=None,
                eval_training_input_configuration=InputPipelineConfig.PER_HOST_V1,
                experimental_host_call_every_n_steps=1,
                experimental_allow_per_host_v2_parallel_get_next=False,
                experimental_feed_hook=None):  # fmt: skip
        if not (isinstance(iterations_per_loop, int) and iterations_per_loop >= 1):
            raise ZooError(
                f"TPUConfig: expected iterations_per_loop to be an int >= 1, found "
                f"{iterations_per_loop!r}; pass e.g. iterations_per_loop=100"
            )
        return super().__new__(
            cls, iterations_per_loop, num_shards, num_cores_per_replica,
            per_host_input_for_training, tpu_job_name, initial_infeed_sleep_secs,
            input_partition_dims, eval_training_input_configuration,
            experimental_host_call_every_n_steps,
            experimental_allow_per_host_v2_parallel_get_next, experimental_feed_hook,
        )  # fmt: skip


class RunConfig(run_config.RunConfig):
    """:class:`~zoo.compat.estimator.run_config.RunConfig` with ``tpu_config``.

    Args:
        tpu_config: a :class:`TPUConfig` (None: the defaults).
        evaluation_master, master, cluster: kept (this machine runs it).
        **kwargs: :class:`~zoo.compat.estimator.run_config.RunConfig`'s.
    """

    def __init__(self, tpu_config=None, evaluation_master=None, master=None, cluster=None,
                 **kwargs):  # fmt: skip
        super().__init__(**kwargs)
        self._values.update(
            tpu_config=tpu_config or TPUConfig(), evaluation_master=evaluation_master or "",
            master=master or "", cluster=cluster,
        )  # fmt: skip

    def _replaceable(self):
        return ["tpu_config", "evaluation_master", "master", "cluster",
                *super()._replaceable()]  # fmt: skip
