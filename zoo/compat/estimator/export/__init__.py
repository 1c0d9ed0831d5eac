"""``tf.estimator.export``: serving inputs and outputs of a SavedModel."""

from zoo.compat import refused
from zoo.compat.estimator.export.export_output import (
    ClassificationOutput,
    ExportOutput,
    PredictOutput,
    RegressionOutput,
)
from zoo.compat.estimator.export.receiver import (
    ServingInputReceiver,
    TensorServingInputReceiver,
    build_parsing_serving_input_receiver_fn,
    build_raw_serving_input_receiver_fn,
)

__all__ = [
    "ClassificationOutput", "ExportOutput", "PredictOutput", "RegressionOutput",
    "ServingInputReceiver", "TensorServingInputReceiver",
    "build_parsing_serving_input_receiver_fn", "build_raw_serving_input_receiver_fn",
]  # fmt: skip

__getattr__, __dir__ = refused.hooks(
    "tf.estimator.export", __name__,
    {"EvalOutput": "tf.estimator.export.PredictOutput (serving), or Estimator.evaluate"},
    lambda: globals(),
)  # fmt: skip
