"""``Graph.get_collection`` with TF1's ``in``: what :func:`zoo.compat.install` changes
for tf-slim's collections.

tf-slim's ``batch_norm`` adds its moving statistics to ``variables_collections``
unless ``variable in tf.get_collection(name)`` (``_add_variable_to_collections``,
as ``inception_v1``'s arg_scope asks; also ``slim.add_model_variable``), which
TensorFlow 2's element-wise ``==`` makes raise eagerly and in ``tf.function``.
Under install() ``get_collection`` returns a :class:`Collection`, whose ``in``
compares tensors and variables by identity, as TF1's ``==`` did. TensorFlow's
``==`` itself stays as it is, for every thread.
"""

import functools

from zoo.compat.change import Change


class Collection(list):
    """A graph collection as ``get_collection`` returns it under :func:`install`.

    ``value in collection`` is TF1's: a tensor or variable is in it only as
    itself (TensorFlow 2 compares them element-wise, so the test raises in eager
    mode and in ``tf.function``, or answers by value); other values by ``==``.
    """

    def __contains__(self, value):
        tensors = _tensor_classes()
        by_value = not isinstance(value, tensors)
        return any(
            item is value or (by_value and not isinstance(item, tensors) and value == item)
            for item in self
        )


@functools.cache
def _tensor_classes():
    """The classes whose ``==`` TensorFlow 2 makes element-wise (imports TensorFlow)."""
    import tensorflow as tf

    return (tf.Tensor, tf.Variable)


@functools.cache
def _get_collection_as_tf1():
    """``Graph.get_collection`` returning a :class:`Collection` (the same one always,
    wrapping the method as TensorFlow defines it)."""
    from tensorflow.python.framework import ops

    get_collection = ops.Graph.get_collection

    @functools.wraps(get_collection)
    def get_collection_as_tf1(graph, name, scope=None):
        return Collection(get_collection(graph, name, scope))

    return get_collection_as_tf1


def changes():
    """``Graph.get_collection`` (internal: TF 2 has no public Graph class to patch).

    Returns:
        A list of one :class:`~zoo.compat.change.Change`.
    """
    from tensorflow.python.framework import ops

    name = f"{ops.__name__}.Graph.get_collection"
    return [Change(name, ops.Graph, "get_collection", _get_collection_as_tf1())]
