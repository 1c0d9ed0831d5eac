"""What :func:`zoo.compat.install` changes in ``tf.nn`` for TF1's static shapes.

TF 1.x's ``Conv2DBackpropInput`` op gave its output the static shape of its
``input_sizes`` (a constant ``output_shape``); TensorFlow 2 takes the batch
dimension from the input instead, unknown for a placeholder of unknown batch.
So DCGAN's ``tf.reshape(deconv, deconv.get_shape())`` after
``tf.nn.conv2d_transpose(z, w, output_shape=[64, 8, 8, 256], ...)`` fails with
"partially known TensorShape". Under install() the ``compat.v1`` functions built
on that op (:data:`OUTPUT_SHAPE_ARGUMENT`) set their output's static shape from
the part of ``output_shape`` known when the graph is built, as TF 1.x did; the
values they compute are TensorFlow's. ``conv3d_transpose`` kept TF 1.x's rule
and stays as it is.
"""

import functools
import inspect

from zoo.compat.change import Change

# The compat.v1.nn functions on Conv2DBackpropInput -> their output shape argument.
OUTPUT_SHAPE_ARGUMENT = {
    "conv2d_transpose": "output_shape",
    "conv1d_transpose": "output_shape",
    "conv_transpose": "output_shape",
    "atrous_conv2d_transpose": "output_shape",
    "conv2d_backprop_input": "input_sizes",
}

_ORIGINAL = {}  # wrapper -> the TensorFlow function it wraps


def static_shape(shape):
    """What of an output shape argument is known when the graph is built.

    Args:
        shape: a list or tuple of ints and scalar tensors, an array or a 1-D tensor.

    Returns:
        A list with None for each unknown dimension, or None if nothing is known.
    """
    import tensorflow as tf

    if isinstance(shape, (list, tuple)):
        return [tf.get_static_value(dim) for dim in shape]
    known = tf.get_static_value(shape, partial=True)
    return None if known is None else list(known)


@functools.cache
def with_static_shape(function, argument):
    """``function`` whose output takes its static shape from ``argument``, as TF 1.x's.

    Args:
        function: a TensorFlow function built on ``Conv2DBackpropInput``.
        argument: the name of its output shape argument.

    Returns:
        A function of the same signature (the same object for the same arguments).
    """
    signature = inspect.signature(function)

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        output = function(*args, **kwargs)
        shape = static_shape(signature.bind(*args, **kwargs).arguments.get(argument))
        if shape is not None and len(shape) == output.shape.rank:
            output.set_shape(shape)
        return output

    _ORIGINAL[wrapper] = function
    return wrapper


def changes():
    """``nn.<name>`` of :data:`OUTPUT_SHAPE_ARGUMENT` for each ``compat.v1`` namespace.

    Returns:
        A list of :class:`~zoo.compat.change.Change`.
    """
    from zoo.compat.namespaces import v1_namespaces

    found = []
    for nn in {id(ns.nn): ns.nn for ns in v1_namespaces()}.values():  # often one module
        for name, argument in OUTPUT_SHAPE_ARGUMENT.items():
            current = getattr(nn, name)
            original = _ORIGINAL.get(current, current)
            wrapper = with_static_shape(original, argument)
            found.append(Change(f"{nn.__name__}.{name}", nn, name, wrapper))
    return found
