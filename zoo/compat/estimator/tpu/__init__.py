"""``tf.estimator.tpu`` and ``tf.contrib.tpu``'s Estimator names, on CPU: TPUEstimator,
TPUEstimatorSpec, RunConfig, TPUConfig, InputPipelineConfig, CrossShardOptimizer
(the optimizer itself: one shard); ``experimental``'s TPU embeddings are refused."""

from zoo.compat.estimator.tpu import experimental  # noqa: F401  (tf.estimator.tpu's)
from zoo.compat.estimator.tpu.tpu_config import InputPipelineConfig, RunConfig, TPUConfig
from zoo.compat.estimator.tpu.tpu_estimator import (
    CrossShardOptimizer,
    TPUEstimator,
    TPUEstimatorSpec,
)

__all__ = [
    "CrossShardOptimizer", "InputPipelineConfig", "RunConfig", "TPUConfig",
    "TPUEstimator", "TPUEstimatorSpec",
]  # fmt: skip
