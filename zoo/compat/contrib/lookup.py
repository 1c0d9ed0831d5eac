"""TF 1.15's ``tf.contrib.lookup`` names that TensorFlow 2.21 has under no name.

The tables and initializers live on in ``tf.compat.v1.lookup`` and
``tf.lookup.experimental`` (``KeyValueTensorInitializer``, ``TextFileInitializer``,
``MutableHashTable``); the functions TF 1.15 exported here, ``index_table_from_tensor``
and its siblings, ``HashTable`` and ``IdTableWithHashBuckets``, are the ones TF 2.21's
feature columns still build on, in its internal ``tensorflow.python.ops.lookup_ops``
(the map's last source). This module adds TF 1.15's deprecated aliases, which were
contrib's own.
"""

__all__ = ["index_to_string", "string_to_index", "string_to_index_table_from_file",
           "string_to_index_table_from_tensor"]  # fmt: skip


def _lookup_ops():
    from tensorflow.python.ops import lookup_ops

    return lookup_ops


def string_to_index_table_from_file(vocabulary_file=None, num_oov_buckets=0,
                                    vocab_size=None, default_value=-1,
                                    hasher_spec=None, name=None):  # fmt: skip
    """TF 1.15's deprecated name of ``index_table_from_file`` (string keys)."""
    return _lookup_ops().index_table_from_file(
        vocabulary_file, num_oov_buckets, vocab_size, default_value,
        hasher_spec or _lookup_ops().FastHashSpec, name=name)  # fmt: skip


def string_to_index_table_from_tensor(mapping, num_oov_buckets=0, default_value=-1,
                                      hasher_spec=None, name=None):  # fmt: skip
    """TF 1.15's deprecated name of ``index_table_from_tensor`` (string keys)."""
    return _lookup_ops().index_table_from_tensor(
        mapping, num_oov_buckets, default_value,
        hasher_spec or _lookup_ops().FastHashSpec, name=name)  # fmt: skip


def string_to_index(tensor, mapping, default_value=-1, name=None):
    """The ids of the strings ``tensor`` in ``mapping`` (``default_value`` if absent).

    Returns:
        An int64 tensor of ``tensor``'s shape; its table needs
        ``tf.tables_initializer()`` run first, as in TF 1.15.
    """
    table = _lookup_ops().index_table_from_tensor(mapping, default_value=default_value,
                                                  name=name)  # fmt: skip
    return table.lookup(tensor)


def index_to_string(tensor, mapping, default_value="UNK", name=None):
    """The strings of ``mapping`` at the int64 ids ``tensor`` (``default_value`` if
    out of range).

    Returns:
        A string tensor of ``tensor``'s shape; its table needs
        ``tf.tables_initializer()`` run first, as in TF 1.15.
    """
    table = _lookup_ops().index_to_string_table_from_tensor(
        mapping, default_value=default_value, name=name)  # fmt: skip
    return table.lookup(tensor)
