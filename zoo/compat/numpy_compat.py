"""What :func:`zoo.compat.install` changes in TensorFlow's NumPy 1.x/2.x shim: the
NumPy version read once, not at every value converted.

TensorFlow 2.21 turns values into arrays through
``tensorflow.python.util.numpy_compat.np_asarray``, which parses ``np.__version__``
(``np.lib.NumpyVersion``) at every call to pick its NumPy 1 or NumPy 2 branch: 11 µs
a call where ``np.asarray`` takes 0.25 (docs/benchmark.md). It runs for every value a
``py_func`` or ``numpy_function`` returns, three to four times for each element of a
``Dataset.from_generator`` pipeline, for each value an uncached ``Session.run`` feeds
and for each constant a graph makes. So TF1 input pipelines on generators ran at
three quarters of their speed on TensorFlow 2.15. Under install() ``np_asarray`` is the
branch TensorFlow's takes for the NumPy this process imported (its version cannot
change): the same arrays, the same errors.
"""

import numpy as np

from zoo.compat.change import Change


def asarray_numpy2(values, dtype=None, order=None, copy=None):
    """``np_asarray`` under NumPy 2: to a numeric dtype through ``astype``, so values
    that overflow it wrap as NumPy 1 wrapped them."""
    if dtype is not None and np.issubdtype(dtype, np.number):
        return np.asarray(values, order=order, copy=copy).astype(dtype, copy=copy)
    return np.asarray(values, dtype=dtype, order=order, copy=copy)


def asarray_numpy1(values, dtype=None, order=None, copy=None):
    """``np_asarray`` under NumPy 1 (which has no ``copy`` argument)."""
    del copy
    return np.asarray(values, dtype=dtype, order=order)


#: ``np_asarray`` as TensorFlow's branches it for the NumPy this process imported
np_asarray = asarray_numpy2 if np.lib.NumpyVersion(np.__version__) >= "2.0.0.dev0" else (
    asarray_numpy1)  # fmt: skip


def changes():
    """``numpy_compat.np_asarray``, where this TensorFlow has it.

    Returns:
        A list of one :class:`~zoo.compat.change.Change`, or none for a TensorFlow
        without the shim.
    """
    try:
        from tensorflow.python.util import numpy_compat  # noqa: PLC0415
    except ImportError:  # no shim, no version to read
        return []
    if not hasattr(numpy_compat, "np_asarray"):
        return []
    name = f"{numpy_compat.__name__}.np_asarray"
    return [Change(name, numpy_compat, "np_asarray", np_asarray)]
