"""``tf.estimator.experimental`` (TF 1.15 and 2.x): the early-stopping hooks,
``InMemoryEvaluatorHook``, the canned logit-fn builders and ``KMeans``; its other
names raise a ``ContribError`` naming the nearest replacement (docs/estimator.md)."""

from zoo.compat import refused
from zoo.compat.contrib.names import OWN_MODEL_FN
from zoo.compat.estimator.canned.dnn import dnn_logit_fn_builder
from zoo.compat.estimator.canned.kmeans import KMeansClustering as KMeans
from zoo.compat.estimator.canned.linear import linear_logit_fn_builder
from zoo.compat.estimator.early_stopping import (
    make_early_stopping_hook,
    stop_if_higher_hook,
    stop_if_lower_hook,
    stop_if_no_decrease_hook,
    stop_if_no_increase_hook,
)
from zoo.compat.estimator.hooks.hooks import InMemoryEvaluatorHook

__all__ = [
    "InMemoryEvaluatorHook", "KMeans", "dnn_logit_fn_builder", "linear_logit_fn_builder",
    "make_early_stopping_hook", "stop_if_higher_hook", "stop_if_lower_hook",
    "stop_if_no_decrease_hook", "stop_if_no_increase_hook",
]  # fmt: skip

# TF 2.15's other tf.estimator.experimental names -> the nearest replacement
REPLACEMENTS = {
    "LinearSDCA": "tf.estimator.LinearClassifier (FTRL)",
    "RNNClassifier": "tf.nn.dynamic_rnn in " + OWN_MODEL_FN,
    "RNNEstimator": "tf.nn.dynamic_rnn in " + OWN_MODEL_FN,
    "call_logit_fn": OWN_MODEL_FN,
    "build_raw_supervised_input_receiver_fn": "tf.estimator.export."
    "build_raw_serving_input_receiver_fn",
    "make_stop_at_checkpoint_step_hook": "tf.estimator.StopAtStepHook",
}


__getattr__, __dir__ = refused.hooks("tf.estimator.experimental", __name__, REPLACEMENTS,
                                     lambda: globals())
