"""zoo.parallel.partitioned: lookups that read the rows a partitioner wrote, checkpoints
of N shards restored into M and into one variable, and the unsliceable initializer."""

import numpy as np
import pytest
import tensorflow as tf

from layers import ZooError
from zoo.parallel import partitioned

v1 = tf.compat.v1
TABLE = np.arange(20, dtype=np.float32).reshape(10, 2)
IDS = [0, 4, 7, 9, 3]


def table(shards, devices=None):
    """``emb/table`` [10, 2] = TABLE, in ``shards`` shards (1: unpartitioned), each
    shard on the next of ``devices`` (stand-ins for ps tasks)."""
    devices = devices or [""]
    placed = iter(range(10**6))

    def device(op):
        return devices[next(placed) % len(devices)] if op.type == "VarHandleOp" else ""

    partitioner = v1.fixed_size_partitioner(shards) if shards > 1 else None
    with v1.device(device), v1.variable_scope(
        "emb", partitioner=partitioner, custom_getter=partitioned.checked_getter
    ):
        return v1.get_variable("table", [10, 2], initializer=v1.zeros_initializer())


def test_lookup_reads_the_rows_asked_for_where_tensorflow_s_default_does_not(graph):
    params = table(3)
    ours = partitioned.embedding_lookup(params, IDS)
    theirs = v1.nn.embedding_lookup(params, IDS)  # partition_strategy="mod"
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        for shard, rows in zip(params, np.split(TABLE, [4, 7]), strict=True):
            shard.load(rows, session)
        found, default = session.run([ours, theirs])
    np.testing.assert_array_equal(found, TABLE[IDS])
    assert not np.array_equal(default, TABLE[IDS])  # the trap this module closes
    assert partitioned.row_layout(params) == [4, 3, 3]


def test_mod_on_a_partitioner_s_rows_is_refused(graph):
    with pytest.raises(
        ZooError,
        match=r"embedding_lookup: expected partition_strategy 'div' for a variable a "
        r"partitioner split into contiguous rows \[4, 3, 3\], found 'mod', which reads "
        r"other rows; pass partition_strategy='div' or leave it out",
    ):
        partitioned.embedding_lookup(table(3), IDS, partition_strategy="mod")
    with pytest.raises(ZooError, match="expected partition_strategy 'div', 'mod' or None"):
        partitioned.embedding_lookup(v1.get_variable("one", [10, 2]), IDS, "rows")


def test_shards_laid_out_by_hand_keep_tensorflow_s_strategies(graph):
    shards = [v1.get_variable(f"s{i}", [5, 2]) for i in range(2)]
    assert partitioned.row_layout(shards) is None
    partitioned.embedding_lookup(shards, IDS, partition_strategy="mod")  # the user's call


@pytest.mark.parametrize("into", [2, 1, 5])
def test_a_checkpoint_of_three_shards_on_two_devices_restores_into_other_splits(
    tmp_path, into
):
    """Three shards over two devices (as over two ps tasks), saved; restored into
    ``into`` shards: the same lookups."""
    config = v1.ConfigProto(device_count={"CPU": 2})
    with tf.Graph().as_default():
        params = table(3, devices=["/cpu:0", "/cpu:1"])
        assert {shard.device[-5:].lower() for shard in params} == {"cpu:0", "cpu:1"}
        lookup = partitioned.embedding_lookup(params, IDS)
        with v1.Session(config=config) as session:
            for shard, rows in zip(params, np.split(TABLE, [4, 7]), strict=True):
                shard.load(rows, session)
            saved = session.run(lookup)
            path = v1.train.Saver().save(session, str(tmp_path / "model.ckpt"))
    with tf.Graph().as_default():
        params = table(into)
        lookup = partitioned.embedding_lookup(params, IDS)
        with v1.Session() as session:
            v1.train.Saver().restore(session, path)
            restored = session.run(lookup)
    np.testing.assert_array_equal(saved, TABLE[IDS])
    np.testing.assert_array_equal(restored, saved)


def test_an_initializer_that_cannot_be_sliced_names_the_variable(graph):
    with pytest.raises(
        ZooError,
        match=r"emb/table: expected an initializer that can make any slice of the "
        r"variable .*found one that holds the whole value; pass one that builds a slice",
    ), v1.variable_scope(
        "emb",
        partitioner=v1.fixed_size_partitioner(3),
        custom_getter=partitioned.checked_getter,
    ):
        v1.get_variable("table", [10, 2], initializer=v1.constant_initializer(TABLE))
