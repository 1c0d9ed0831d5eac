"""Variables split over tasks: lookups that read the rows a partitioner wrote,
creation errors that name the variable, and a memory budget per ps task.

``tf.compat.v1.get_variable(..., partitioner=...)`` (or a ``variable_scope`` with
one) splits a variable into shards of contiguous rows: 10 rows in 3 shards are rows
0-3, 4-6 and 7-9, TensorFlow's ``"div"`` layout. ``tf.compat.v1.nn.embedding_lookup``
assumes ``partition_strategy="mod"`` unless told (row ``i`` in shard ``i % 3``), so on
such a variable it returns other rows, silently. :func:`embedding_lookup` reads the
layout from the shards themselves.

Usage::

    with tf.compat.v1.variable_scope("emb", partitioner=fixed_size_partitioner(3),
                                     custom_getter=partitioned.checked_getter):
        table = tf.compat.v1.get_variable("table", [vocab, 64])
    vectors = partitioned.embedding_lookup(table, ids)   # the rows asked for
    partitioned.check_memory_budget(v1.global_variables(), budget=2**30)  # per ps task
"""

import tensorflow as tf

from layers.errors import ZooError

STRATEGIES = ("div", "mod")


def row_layout(params):
    """The rows of each shard of ``params``, as a partitioner laid them out.

    Args:
        params: a ``PartitionedVariable``, a list of its shards, or one variable.

    Returns:
        ``[rows of shard 0, ...]`` when every shard knows its place in the whole
        variable (a partitioner's shards do); None otherwise (shards a user laid
        out by hand, or one variable).
    """
    split = isinstance(params, (list, tuple)) or _partitioned(params)
    shards = list(params) if split else []
    infos = [getattr(shard, "_save_slice_info", None) for shard in shards]
    if not shards or None in infos:
        return None
    pairs = zip(infos, shards, strict=True)
    ordered = sorted(pairs, key=lambda pair: pair[0].var_offset[0])
    return [int(shard.shape[0]) for _, shard in ordered]


def _partitioned(params):
    """Whether ``params`` is what ``get_variable(partitioner=...)`` returns (TensorFlow
    exports no name for its class)."""
    return type(params).__name__ == "PartitionedVariable"


def div_layout(rows, shards):
    """TensorFlow's ``"div"`` rows per shard: the first ``rows % shards`` one more."""
    base, extra = divmod(rows, shards)
    return [base + (index < extra) for index in range(shards)]


def embedding_lookup(params, ids, partition_strategy=None, name=None, **kwargs):
    """``tf.compat.v1.nn.embedding_lookup`` that reads the rows asked for.

    Args:
        params: as TensorFlow's: a variable, a ``PartitionedVariable`` or a list
            of shards.
        ids: int tensor of row ids.
        partition_strategy: None: the layout of ``params`` (``"div"`` for a
            partitioner's shards, TensorFlow's ``"mod"`` for shards without a
            known place); ``"div"`` or ``"mod"``: checked against that layout.
        name: the op's name.
        **kwargs: the rest of TensorFlow's arguments (``max_norm``, ...).

    Returns:
        The rows of ``params`` at ``ids``.

    Raises:
        ZooError: ``partition_strategy`` is neither, or contradicts the layout
            a partitioner gave ``params`` (TensorFlow would return other rows).
    """
    if partition_strategy not in (None, *STRATEGIES):
        raise ZooError(
            f"embedding_lookup: expected partition_strategy 'div', 'mod' or None, found "
            f"{partition_strategy!r}; leave it out to read the layout of the variable"
        )
    rows = row_layout(params)
    if rows is not None:
        if rows != div_layout(sum(rows), len(rows)):  # never from TF's partitioners
            raise ZooError(
                f"embedding_lookup: expected shards in TensorFlow's 'div' layout, found "
                f"rows {rows}; build the variable with a partitioner of "
                "tf.compat.v1 (fixed_size_partitioner, ...)"
            )
        if partition_strategy == "mod" and len(rows) > 1:
            raise ZooError(
                f"embedding_lookup: expected partition_strategy 'div' for a variable a "
                f"partitioner split into contiguous rows {rows}, found 'mod', which "
                "reads other rows; pass partition_strategy='div' or leave it out"
            )
        partition_strategy = "div"
    return tf.compat.v1.nn.embedding_lookup(
        params, ids, partition_strategy=partition_strategy or "mod", name=name, **kwargs
    )


def checked_getter(getter, name, *args, **kwargs):
    """A ``custom_getter`` that names the variable when a partitioner cannot slice
    its initializer (TensorFlow says only "Too many elements provided").

    Raises:
        ZooError: a partitioned variable whose initializer holds the whole value.
    """
    try:
        return getter(name, *args, **kwargs)
    except ValueError as err:
        if kwargs.get("partitioner") is None or "Too many elements" not in str(err):
            raise
        raise ZooError(
            f"{name}: expected an initializer that can make any slice of the variable "
            "(its partitioner makes it shard by shard), found one that holds the whole "
            "value; pass one that builds a slice of any shape (zeros, a random "
            "initializer), then load the values with tf.compat.v1.train.init_from_"
            f"checkpoint or a Saver; or drop the partitioner (TensorFlow: {err})"
        ) from None


def bytes_per_task(variables):
    """The bytes of ``variables`` on each task, as their devices place them.

    Args:
        variables: graph variables (shards and optimizer slots each count).

    Returns:
        ``{"/job:<job>/task:<index>": bytes}`` over the placed variables.
    """
    return {
        task: sum(_nbytes(v) for v in on_task)
        for task, on_task in _per_task(variables).items()
    }


def _per_task(variables):
    """``{"/job:<job>/task:<index>": [variables there]}`` of the placed variables."""
    tasks = {}
    for variable in variables:
        spec = tf.DeviceSpec.from_string(variable.device or "")
        if spec.job is not None:
            tasks.setdefault(f"/job:{spec.job}/task:{spec.task or 0}", []).append(variable)
    return tasks


def _nbytes(variable):
    return variable.shape.num_elements() * variable.dtype.base_dtype.size


def check_memory_budget(variables, budget):
    """Refuses a placement that puts more than ``budget`` bytes on one ps task.

    Args:
        variables: graph variables, placed (``replica_device_setter``).
        budget: bytes of variables one ps task may hold.

    Raises:
        ZooError: a ps task holds more than ``budget`` bytes; the message
            names it and its largest variables.
    """
    for task, on_task in sorted(_per_task(variables).items()):
        size = sum(_nbytes(v) for v in on_task)
        if task.startswith("/job:ps/") and size > budget:
            largest = sorted(on_task, key=_nbytes, reverse=True)[:2]
            raise ZooError(
                f"{task}: expected at most {budget} bytes of variables on a ps task, "
                f"found {size} ({', '.join(v.op.name for v in largest)}, ...); split "
                "the large variables with a partitioner (fixed_size_partitioner, "
                "min_max_variable_partitioner) over more ps tasks"
            )
