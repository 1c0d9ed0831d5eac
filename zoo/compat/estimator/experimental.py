"""``tf.estimator.experimental`` (TF 1.15 and 2.x): the early-stopping hooks and
``InMemoryEvaluatorHook``; its other names (``LinearSDCA``, ``KMeans``,
``RNNClassifier``, ...) are not provided (docs/estimator.md)."""

from zoo.compat.estimator.early_stopping import (
    make_early_stopping_hook,
    stop_if_higher_hook,
    stop_if_lower_hook,
    stop_if_no_decrease_hook,
    stop_if_no_increase_hook,
)
from zoo.compat.estimator.hooks.hooks import InMemoryEvaluatorHook

__all__ = [
    "InMemoryEvaluatorHook", "make_early_stopping_hook", "stop_if_higher_hook",
    "stop_if_lower_hook", "stop_if_no_decrease_hook", "stop_if_no_increase_hook",
]  # fmt: skip
