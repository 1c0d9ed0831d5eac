"""tf.contrib.lookup under install(): TF 1.15's tables and index functions."""

import numpy as np
import pytest
import tensorflow as tf

import zoo.compat
from tests.zoo.test_compat import uninstalled  # noqa: F401  (autouse: nothing installed)

v1 = tf.compat.v1
VOCABULARY = ["<=50K", ">50K", "unknown"]


def test_index_tables_map_strings_to_ids_as_a_dict_does(tmp_path):
    zoo.compat.install()
    from tensorflow.contrib.lookup import (
        HashTable,
        KeyValueTensorInitializer,
        index_table_from_file,
        index_table_from_tensor,
        index_to_string,
        index_to_string_table_from_tensor,
        string_to_index,
    )

    words = np.array([[">50K"], ["<=50K"], ["other"], ["unknown"]])
    ids = {word: i for i, word in enumerate(VOCABULARY)}
    expected = np.array([[ids.get(w, -1)] for w in words[:, 0]])
    vocabulary_file = tmp_path / "vocabulary.txt"
    vocabulary_file.write_text("\n".join(VOCABULARY) + "\n")
    with tf.Graph().as_default():
        positions = np.arange(3, dtype=np.int64)
        tables = [
            index_table_from_tensor(mapping=tf.constant(VOCABULARY)),
            index_table_from_file(str(vocabulary_file)),
            HashTable(KeyValueTensorInitializer(VOCABULARY, positions), -1),
        ]
        found = [table.lookup(tf.constant(words)) for table in tables]
        found.append(string_to_index(tf.constant(words), VOCABULARY))
        back = index_to_string_table_from_tensor(VOCABULARY).lookup(
            tf.constant(expected, tf.int64)
        )
        back_unk = index_to_string(tf.constant([1, 9], tf.int64), VOCABULARY)
        with v1.Session() as sess:
            sess.run(v1.tables_initializer())
            found, back, back_unk = sess.run([found, back, back_unk])
    for ids_found in found:
        np.testing.assert_array_equal(ids_found, expected)
    assert back[:, 0].tolist() == [b">50K", b"<=50K", b"UNK", b"unknown"]
    assert back_unk.tolist() == [b">50K", b"UNK"]


def test_oov_buckets_follow_the_vocabulary_and_hash_into_their_range():
    zoo.compat.install()
    with tf.Graph().as_default():
        table = tf.contrib.lookup.index_table_from_tensor(VOCABULARY, num_oov_buckets=2)
        ids = table.lookup(tf.constant(["unknown", "a", "b", "a"]))
        with v1.Session() as sess:
            sess.run(v1.tables_initializer())
            ids = sess.run(ids)
    assert ids[0] == 2 and all(3 <= i < 5 for i in ids[1:]) and ids[1] == ids[3]


def test_the_tables_come_from_tensorflows_public_homes_then_lookup_ops():
    """``index_table_from_file`` and ``HashTable`` are TensorFlow's internal
    ``tensorflow.python.ops.lookup_ops`` (TF 2.21's feature columns build on them; no
    public name has them)."""
    from tensorflow.python.ops import lookup_ops

    zoo.compat.install()
    lookup = tf.contrib.lookup
    assert lookup.KeyValueTensorInitializer is v1.lookup.KeyValueTensorInitializer
    assert lookup.MutableHashTable is v1.lookup.experimental.MutableHashTable
    assert lookup.MutableDenseHashTable is tf.lookup.experimental.DenseHashTable
    assert lookup.index_table_from_file is lookup_ops.index_table_from_file
    assert lookup.HashTable is lookup_ops.HashTable
    with pytest.raises(ValueError, match="mapping must be specified"):
        lookup.index_table_from_tensor(None)
