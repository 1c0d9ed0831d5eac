"""zoo.compat.numpy_compat: under install(), TensorFlow's ``np_asarray`` (private:
``tensorflow.python.util.numpy_compat``) reads the NumPy version once, and converts
every value as TensorFlow's own function does."""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.util import numpy_compat

import zoo.compat
import zoo.compat.numpy_compat as ours
from tests.zoo.test_compat import uninstalled  # noqa: F401  (autouse: nothing installed)

v1 = tf.compat.v1

# (values, keyword arguments): numeric casts (an overflow wraps), strings, objects,
# orders, copies refused
CASES = [
    ([1, 2, 3], {}),
    ([1.5, -2.0], {"dtype": np.float32}),
    ([300, -1], {"dtype": np.uint8}),
    (np.arange(6, dtype=np.int64).reshape(2, 3), {"dtype": np.int32, "order": "F"}),
    (np.ones((2, 2), np.float32), {"dtype": np.float32, "copy": False}),
    (np.ones(3, np.float64), {"dtype": np.float32, "copy": False}),
    ([b"a", b"bc"], {"dtype": object, "order": "C"}),
    (["x", "yz"], {}),
    ([[1, 2], [3]], {"dtype": object}),
    (7, {"dtype": np.float16}),
    ([True, False], {"dtype": np.bool_}),
]


def outcome(function, values, kwargs):
    """``function(values, **kwargs)`` as (dtype, shape, C and F contiguity, list,
    shares memory with ``values``), or the error's type and message."""
    try:
        array = function(values, **kwargs)
    except (TypeError, ValueError) as err:
        return type(err), str(err)
    flags = array.flags["C_CONTIGUOUS"], array.flags["F_CONTIGUOUS"]
    shared = isinstance(values, np.ndarray) and np.shares_memory(array, values)
    return array.dtype, array.shape, flags, array.tolist(), shared


@pytest.mark.parametrize(("values", "kwargs"), CASES)
def test_asarray_converts_as_tensorflows_own(values, kwargs):
    theirs = outcome(numpy_compat.np_asarray, values, kwargs)
    zoo.compat.install()
    assert numpy_compat.np_asarray in (ours.asarray_numpy1, ours.asarray_numpy2)
    assert outcome(numpy_compat.np_asarray, values, kwargs) == theirs


def test_asarray_reads_the_numpy_version_once(monkeypatch):
    zoo.compat.install()

    def refuse(version):
        raise AssertionError(f"NumpyVersion({version!r}) read at a conversion")

    monkeypatch.setattr(np.lib, "NumpyVersion", refuse)
    assert numpy_compat.np_asarray([300], dtype=np.uint8).tolist() == [44]
    with tf.Graph().as_default():  # a py_func's result goes through it
        wrapped = v1.py_func(lambda: np.array([1.0, 2.0], np.float32), [], tf.float32)
        with v1.Session() as session:
            assert session.run(wrapped).tolist() == [1.0, 2.0]
