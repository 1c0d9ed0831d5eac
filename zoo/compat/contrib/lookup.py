"""TF 1.15's ``tf.contrib.lookup`` names that TensorFlow 2.21 has under no name, or
under another signature.

The tables and initializers live on in ``tf.compat.v1.lookup`` and its
``experimental`` (``KeyValueTensorInitializer``, ``TextFileInitializer``,
``MutableHashTable``); ``index_table_from_file``, ``HashTable``,
``IdTableWithHashBuckets`` and the other names TF 1.15's contrib took from its core
``lookup_ops`` are still there, in TensorFlow's internal
``tensorflow.python.ops.lookup_ops`` (TF 2.21's feature columns build on them; no
public name has them): the map's last source. This module holds what contrib wrote
itself: the ``*_from_tensor`` functions, whose first argument TF 1.15's contrib called
``mapping`` (core: ``vocabulary_list``), its deprecated aliases and
``MutableDenseHashTable``. Imported on a first such name, after TensorFlow.
"""

import tensorflow as tf
from tensorflow.python.ops import lookup_ops

__all__ = [
    "MutableDenseHashTable",
    "index_table_from_tensor",
    "index_to_string",
    "index_to_string_table_from_tensor",
    "string_to_index",
    "string_to_index_table_from_file",
    "string_to_index_table_from_tensor",
]

MutableDenseHashTable = lookup_ops.DenseHashTable  # as TF 1.15's contrib defined it


def index_table_from_tensor(
    mapping,
    num_oov_buckets=0,
    default_value=-1,
    hasher_spec=lookup_ops.FastHashSpec,
    dtype=tf.string,
    name=None,
):
    """A table from the keys of ``mapping`` to their positions (int64), out of
    vocabulary keys to ``default_value`` or, with ``num_oov_buckets``, to a bucket by
    hash (TF 1.15's contrib function: core's ``index_table_from_tensor``).

    Returns:
        The table; ``tf.tables_initializer()`` fills it.

    Raises:
        ValueError: ``mapping`` is None, or ``num_oov_buckets`` negative (TF's).
    """
    if mapping is None:
        raise ValueError("mapping must be specified.")
    return lookup_ops.index_table_from_tensor(
        mapping, num_oov_buckets, default_value, hasher_spec, dtype, name
    )


def index_to_string_table_from_tensor(mapping, default_value="UNK", name=None):
    """A table from int64 positions to the strings of ``mapping``, others to
    ``default_value`` (TF 1.15's contrib function).

    Returns:
        The table; ``tf.tables_initializer()`` fills it.

    Raises:
        ValueError: ``mapping`` is None (TF's).
    """
    if mapping is None:
        raise ValueError("mapping must be specified.")
    return lookup_ops.index_to_string_table_from_tensor(mapping, default_value, name)


def string_to_index_table_from_file(
    vocabulary_file=None,
    num_oov_buckets=0,
    vocab_size=None,
    default_value=-1,
    hasher_spec=lookup_ops.FastHashSpec,
    name=None,
):
    """TF 1.15's deprecated name of ``index_table_from_file`` for string keys."""
    return lookup_ops.index_table_from_file(
        vocabulary_file, num_oov_buckets, vocab_size, default_value, hasher_spec, name=name
    )


def string_to_index_table_from_tensor(
    mapping,
    num_oov_buckets=0,
    default_value=-1,
    hasher_spec=lookup_ops.FastHashSpec,
    name=None,
):
    """TF 1.15's deprecated name of :func:`index_table_from_tensor` for string keys."""
    return index_table_from_tensor(
        mapping, num_oov_buckets, default_value, hasher_spec, name=name
    )


def string_to_index(tensor, mapping, default_value=-1, name=None):
    """The positions of the strings ``tensor`` in ``mapping`` (``default_value`` if
    absent); TF 1.15's deprecated function.

    Returns:
        An int64 tensor of ``tensor``'s shape, once ``tf.tables_initializer()`` ran.
    """
    return index_table_from_tensor(mapping, default_value=default_value, name=name).lookup(
        tensor
    )


def index_to_string(tensor, mapping, default_value="UNK", name=None):
    """The strings of ``mapping`` at the int64 positions ``tensor``
    (``default_value`` outside); TF 1.15's deprecated function.

    Returns:
        A string tensor of ``tensor``'s shape, once ``tf.tables_initializer()`` ran.
    """
    return index_to_string_table_from_tensor(mapping, default_value, name).lookup(tensor)
