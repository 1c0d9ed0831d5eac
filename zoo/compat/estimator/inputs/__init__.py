"""``tf.compat.v1.estimator.inputs``: input_fns of numpy arrays and pandas frames."""

from zoo.compat.estimator.inputs.numpy_io import numpy_input_fn
from zoo.compat.estimator.inputs.pandas_io import pandas_input_fn

__all__ = ["numpy_input_fn", "pandas_input_fn"]
