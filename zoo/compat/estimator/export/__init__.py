"""``tf.estimator.export``: serving inputs and outputs of a SavedModel."""

from zoo.compat.estimator.export.export_output import (
    ClassificationOutput,
    ExportOutput,
    PredictOutput,
    RegressionOutput,
)

__all__ = ["ClassificationOutput", "ExportOutput", "PredictOutput", "RegressionOutput"]
