"""``tf.compat.v1.estimator.inputs.pandas_input_fn``: a pandas DataFrame as an
input_fn (each column a feature), when pandas is installed."""

from layers.errors import ZooError
from zoo.compat.estimator.inputs.numpy_io import batched_input_fn, check_shuffle


def pandas_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None,
                    queue_capacity=1000, num_threads=1,
                    target_column="target"):  # fmt: skip
    """An input_fn of a DataFrame's columns and a Series (or DataFrame) of labels.

    Args:
        x: a ``pandas.DataFrame``.
        y: a ``pandas.Series`` or ``DataFrame`` of the same index, or None.
        target_column: kept (the labels are ``y`` as given).
        The rest as :func:`numpy_input_fn`.

    Raises:
        ZooError: pandas is not installed; shuffle not a bool; x and y have
            different indexes.
    """
    del num_threads, target_column
    owner = "pandas_input_fn"
    try:
        import pandas as pd
    except ImportError as err:
        raise ZooError(
            f"{owner}: expected pandas, found it is not installed; pip install pandas"
        ) from err
    check_shuffle(owner, shuffle)
    if not isinstance(x, pd.DataFrame):
        raise ZooError(
            f"{owner}: expected x to be a pandas.DataFrame, found {type(x).__name__}; "
            "pass a DataFrame, or use numpy_input_fn for arrays"
        )
    if y is not None and not x.index.equals(y.index):
        raise ZooError(
            f"{owner}: expected x and y of one index, found {list(x.index[:5])}... and "
            f"{list(y.index[:5])}...; align them (y = y.loc[x.index])"
        )
    columns = {name: x[name].values for name in x.columns}
    if isinstance(y, pd.DataFrame):
        labels = {name: y[name].values for name in y.columns}
    else:
        labels = None if y is None else y.values
    return batched_input_fn(owner, columns, labels, batch_size, num_epochs, shuffle,
                            queue_capacity)  # fmt: skip
