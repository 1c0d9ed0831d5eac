"""``tf.estimator.classifier_parse_example_spec`` and ``regressor_parse_example_spec``:
the ``tf.io.parse_example`` spec of the feature columns, the label and the weight,
as TF 1.15's ``canned/parsing_utils.py`` made it.

Usage::

    spec = tf.estimator.classifier_parse_example_spec(
        feature_columns, label_key="clicked", label_dtype=tf.string,
        weight_column="weight")
    features = tf.io.parse_example(serialized, spec)
    labels = features.pop("clicked")
"""

import tensorflow as tf

from layers.errors import ZooError
from zoo.compat.estimator.canned.head import numeric_weight_column

v1 = tf.compat.v1


def classifier_parse_example_spec(feature_columns, label_key, label_dtype=tf.int64,
                                  label_default=None, weight_column=None):  # fmt: skip
    """The parsing spec of a classifier's examples: the columns', the label's
    (``FixedLenFeature([1], label_dtype, label_default)``) and the weight's.

    Args:
        feature_columns: the feature columns (``tf.feature_column``'s).
        label_key: the label's key in the examples.
        label_dtype: its dtype (``tf.string`` with a label vocabulary).
        label_default: its value where an example lacks it, or None (required).
        weight_column: None, a feature key or a numeric column of each example's
            weight.

    Returns:
        A dict of key -> ``FixedLenFeature`` or ``VarLenFeature``.

    Raises:
        ZooError: (a ValueError, as TF's) ``label_key`` or the weight's key is a
            feature's, or ``weight_column`` is not a numeric column.
    """
    label = tf.io.FixedLenFeature((1,), label_dtype, label_default)
    return _spec("classifier_parse_example_spec", feature_columns, label_key, label,
                 weight_column)  # fmt: skip


def regressor_parse_example_spec(feature_columns, label_key, label_dtype=tf.float32,
                                 label_default=None, label_dimension=1,
                                 weight_column=None):  # fmt: skip
    """The parsing spec of a regressor's examples: as
    :func:`classifier_parse_example_spec`'s, the label
    ``FixedLenFeature([label_dimension], label_dtype, label_default)``.

    Raises:
        ZooError: as :func:`classifier_parse_example_spec`.
    """
    label = tf.io.FixedLenFeature((label_dimension,), label_dtype, label_default)
    return _spec("regressor_parse_example_spec", feature_columns, label_key, label,
                 weight_column)  # fmt: skip


def _spec(owner, feature_columns, label_key, label, weight_column):
    """The columns' spec with ``label`` under ``label_key`` and the weight's."""
    spec = v1.feature_column.make_parse_example_spec(feature_columns)
    if label_key in spec:
        raise ZooError(
            f"{owner}: expected a label_key no feature column parses, found "
            f"{label_key!r} among the features {sorted(spec)} (TF: label should not be "
            "used as feature); pass the label's own key"
        )
    spec[label_key] = label
    if weight_column is None:
        return spec
    weight_column = numeric_weight_column(weight_column, owner)
    if weight_column.key in spec:
        raise ZooError(
            f"{owner}: expected a weight_column no feature column or label parses, "
            f"found {weight_column.key!r} among {sorted(spec)} (TF: weight_column should "
            "not be used as feature); pass the weight's own key"
        )
    spec.update(weight_column.parse_example_spec)
    return spec
