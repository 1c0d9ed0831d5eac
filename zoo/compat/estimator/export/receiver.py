"""``tf.estimator.export``'s serving inputs: what a SavedModel is fed.

Usage::

    def serving_input_receiver_fn():
        x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
        return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})

    fn = tf.estimator.export.build_raw_serving_input_receiver_fn({"x": x_tensor})
    fn = tf.estimator.export.build_parsing_serving_input_receiver_fn(feature_spec)
"""

import collections

import tensorflow as tf

from layers.errors import ZooError

v1 = tf.compat.v1


def _tensor_dict(value, default_key, owner, field):
    """``value`` (a tensor or dict of str -> tensor) as a dict."""
    if not isinstance(value, dict):
        value = {default_key: value}
    for key, tensor in value.items():
        if not isinstance(key, str) or not isinstance(tensor, tf.Tensor | tf.SparseTensor):
            raise ZooError(
                f"{owner}: expected {field} to be a tensor or a dict of str -> tensor, "
                f"found {key!r}: {tensor!r}; pass the placeholders and the features "
                "built from them"
            )
    return value


class ServingInputReceiver(
    collections.namedtuple(
        "ServingInputReceiver",
        ["features", "receiver_tensors", "receiver_tensors_alternatives"],
    )
):
    """The features a model_fn reads and the tensors a client feeds.

    Args:
        features: a tensor or dict of name -> tensor (a tensor becomes
            ``{"feature": tensor}``).
        receiver_tensors: the placeholders fed (a tensor becomes ``{"input": t}``).
        receiver_tensors_alternatives: dict of name -> receiver tensors, more
            signatures of the same outputs.

    Raises:
        ZooError: features or receiver_tensors of the wrong kind.
    """

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        owner = cls.__name__
        if features is None:
            raise ZooError(f"{owner}: expected features, found None; pass the features")
        return super().__new__(
            cls,
            _tensor_dict(features, "feature", owner, "features"),
            _tensor_dict(receiver_tensors, "input", owner, "receiver_tensors"),
            {
                name: _tensor_dict(tensors, "input", owner, "receiver_tensors_alternatives")
                for name, tensors in (receiver_tensors_alternatives or {}).items()
            },
        )


class TensorServingInputReceiver(
    collections.namedtuple(
        "TensorServingInputReceiver",
        ["features", "receiver_tensors", "receiver_tensors_alternatives"],
    )
):
    """As :class:`ServingInputReceiver`, but the model_fn gets ``features`` as the
    one tensor it is (not a dict).

    Raises:
        ZooError: features is not a tensor.
    """

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        if not isinstance(features, tf.Tensor | tf.SparseTensor):
            raise ZooError(
                f"TensorServingInputReceiver: expected features to be one tensor, found "
                f"{features!r}; pass a tensor, or use ServingInputReceiver for a dict"
            )
        receiver = ServingInputReceiver(
            features, receiver_tensors, receiver_tensors_alternatives
        )
        return super().__new__(
            cls, features, receiver.receiver_tensors, receiver.receiver_tensors_alternatives
        )


def build_parsing_serving_input_receiver_fn(feature_spec, default_batch_size=None):
    """A serving_input_receiver_fn parsing serialized ``tf.Example`` protos.

    Args:
        feature_spec: dict of feature name -> ``FixedLenFeature`` etc.
        default_batch_size: the placeholder's batch size (None: any).

    Returns:
        A function returning a :class:`ServingInputReceiver` whose receiver is
        ``{"examples": <string placeholder "input_example_tensor">}``.
    """

    def serving_input_receiver_fn():
        examples = v1.placeholder(
            tf.string, [default_batch_size], name="input_example_tensor"
        )
        features = v1.parse_example(examples, feature_spec)
        return ServingInputReceiver(features, {"examples": examples})

    return serving_input_receiver_fn


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """A serving_input_receiver_fn feeding each feature as it is.

    Args:
        features: dict of name -> tensor (or a tensor): each gets a placeholder
            of its dtype and shape, the batch dimension ``default_batch_size``.
        default_batch_size: None: any batch size.

    Returns:
        A function returning a :class:`ServingInputReceiver` with the
        placeholders as both features and receiver tensors.
    """

    def serving_input_receiver_fn():
        def placeholder(name, tensor):
            shape = [default_batch_size, *tf.TensorShape(tensor.shape)[1:]]
            return v1.placeholder(tensor.dtype, shape, name=name)

        if isinstance(features, dict):
            received = {name: placeholder(name, t) for name, t in features.items()}
            return ServingInputReceiver(received, received)
        received = placeholder("input", features)
        return TensorServingInputReceiver(received, {"input": received})

    return serving_input_receiver_fn
