"""``tf.compat.v1.estimator.inputs.numpy_input_fn``: numpy arrays as an input_fn,
through ``tf.data`` (TF 1.15 used queues; the batches are the same, the shuffled
order is tf.data's)."""

import numpy as np
import tensorflow as tf

from layers.errors import ZooError

v1 = tf.compat.v1
_SINGLE = "__direct_np_input_key__"  # an array x, as a dict of one


def check_shuffle(owner, shuffle):
    """Raises unless ``shuffle`` is a bool (TF 1.15 required it explicitly)."""
    if not isinstance(shuffle, bool):
        raise ZooError(
            f"{owner}: expected shuffle to be True or False, found {shuffle!r}; pass "
            "shuffle=True to train, False to evaluate or predict"
        )


def batched_input_fn(owner, x, y, batch_size, num_epochs, shuffle, queue_capacity):
    """An input_fn returning ``(features, labels)`` batches of the columns ``x``
    (dict) and ``y`` (an array, a dict, or None), ``num_epochs`` times (None:
    forever)."""
    check_shuffle(owner, shuffle)
    lengths = {name: len(column) for name, column in x.items()}
    if isinstance(y, dict):
        lengths.update({f"y[{name!r}]": len(column) for name, column in y.items()})
    elif y is not None:
        lengths["y"] = len(y)
    if len(set(lengths.values())) != 1:
        raise ZooError(
            f"{owner}: expected x and y of one length, found {lengths}; give every "
            "array the same number of rows"
        )

    def input_fn():
        data = (x,) if y is None else (x, y)
        dataset = tf.data.Dataset.from_tensor_slices(data)
        if shuffle:
            dataset = dataset.shuffle(max(queue_capacity, batch_size))
        dataset = dataset.repeat(num_epochs).batch(batch_size)
        batch = v1.data.make_one_shot_iterator(dataset).get_next()
        features = batch[0]
        if _SINGLE in features:
            features = features[_SINGLE]
        return features if y is None else (features, batch[1])

    return input_fn


def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None,
                   queue_capacity=1000, num_threads=1):  # fmt: skip
    """An input_fn of numpy arrays: ``(features, labels)`` batches.

    Args:
        x: an array (then features is one tensor) or a dict of arrays.
        y: an array, a dict of arrays, or None (then features only).
        batch_size: rows per batch (the last of the data may have fewer).
        num_epochs: passes over the data (None: forever).
        shuffle: True or False (required).
        queue_capacity: the shuffle buffer.
        num_threads: kept (tf.data reads in order).

    Returns:
        A function of no arguments returning the batch tensors.

    Raises:
        ZooError: shuffle not a bool; x empty or not arrays; lengths differ.
    """
    del num_threads
    owner = "numpy_input_fn"
    columns = {_SINGLE: x} if isinstance(x, np.ndarray) else x
    if not isinstance(columns, dict) or not columns or not all(
        len(np.shape(column)) for column in columns.values()
    ):
        raise ZooError(
            f"{owner}: expected x to be a non-empty array or dict of arrays, found "
            f"{type(x).__name__}; pass x={{'name': array}}"
        )
    return batched_input_fn(owner, columns, y, batch_size, num_epochs, shuffle,
                            queue_capacity)  # fmt: skip
