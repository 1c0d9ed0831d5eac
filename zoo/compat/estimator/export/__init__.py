"""``tf.estimator.export``: serving inputs and outputs of a SavedModel."""

from zoo.compat.estimator.export.export_output import (
    ClassificationOutput,
    EvalOutput,
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
    "ClassificationOutput", "EvalOutput", "ExportOutput", "PredictOutput",
    "RegressionOutput",
    "ServingInputReceiver", "TensorServingInputReceiver",
    "build_parsing_serving_input_receiver_fn", "build_raw_serving_input_receiver_fn",
]  # fmt: skip
