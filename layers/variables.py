"""``tf.compat.v1.get_variable`` with errors that name the layer and the fix.

Every layer creates its variables through :func:`get_variable`, which

* refuses to run where ``get_variable`` would silently make a new variable on
  every call (eager execution or ``tf.function`` outside a sharing template);
* turns TensorFlow's reuse and shape errors into :mod:`layers.errors` classes
  whose messages name the layer, what was expected, what was found and the
  builder argument to change.

Usage::

    with tf.compat.v1.variable_scope("encoder"):
        w = get_variable("encoder", "W", [784, 625], tf.zeros_initializer())
"""

import contextlib
import contextvars
import re

import tensorflow as tf
from tensorflow.python.ops import variable_scope as _vs

from layers.errors import EagerError, ScopeError, ShapeError

# The plain graph whose tf.function is being traced by `function_of_graph`.
_function_of = contextvars.ContextVar("function_of", default=None)


@contextlib.contextmanager
def function_of_graph():
    """Lets layers build inside a ``tf.function`` traced now and called in this graph.

    Such a function reads the graph's own variable store: ``get_variable`` with
    ``reuse=True`` returns the graph's variables, and a new variable fails
    loudly (the function traces twice and the second trace finds it existing),
    so nothing is made silently. :func:`zoo.training.repeat_step` traces its
    XLA-compiled loop under it.

    Raises:
        EagerError: not in graph mode.
    """
    require_graph("function_of_graph")
    token = _function_of.set(tf.compat.v1.get_default_graph())
    try:
        yield
    finally:
        _function_of.reset(token)


def sharing_store_active():
    """Tells whether variables made now are stored and shared across calls.

    Returns:
        True in graph mode (a ``tf.while_loop`` body in a graph included, and a
        ``tf.function`` traced under :func:`function_of_graph`) and inside a
        template (``tf.compat.v1.make_template``, ``zoo.share``), whose store
        returns the same variable on every call; False in plain eager
        execution or ``tf.function``, where ``tf.compat.v1.get_variable`` makes
        a new variable per call or trace.
    """
    if not tf.executing_eagerly():
        graph, traced_for = tf.compat.v1.get_default_graph(), _function_of.get()
        # A while_loop or cond body shares its graph's collections, so its
        # store; so does a function traced for that graph (function_of_graph).
        while getattr(graph, "is_control_flow_graph", False) or (
            traced_for is not None and getattr(graph, "outer_graph", None) is traced_for
        ):
            graph = graph.outer_graph
        if not graph.building_function:
            return True
    store = _vs._get_default_variable_store()  # no public accessor exists
    return bool(getattr(store, "_store_eager_variables", False))


def require_graph(owner):
    """Raises unless variables made now would be shared (see ``sharing_store_active``).

    Args:
        owner: layer or scope name used in the message.

    Raises:
        EagerError: in eager execution or ``tf.function`` outside a template.
    """
    if not sharing_store_active():
        raise EagerError(
            f"{owner}: expected a graph (`with tf.Graph().as_default():`) or a sharing "
            "template, found eager execution, where tf.compat.v1.get_variable makes a "
            "new variable on every call; build inside a graph, or wrap the builder with "
            "zoo.share(...) or tf.compat.v1.make_template(...)"
        )


def full_name(name):
    """Returns ``name`` prefixed with the current variable scope."""
    scope = tf.compat.v1.get_variable_scope().name
    return f"{scope}/{name}" if scope else name


def get_variable(
    owner, name, shape, initializer, trainable=True, dtype=tf.float32, regularizer=None
):
    """Creates or reuses ``<current scope>/<name>``.

    Args:
        owner: layer or scope name used in error messages.
        name: variable name relative to the current variable scope.
        shape: list of ints.
        initializer: a TF initializer.
        trainable: whether the variable joins the trainable collection.
        dtype: the variable's dtype.
        regularizer: None, or a function ``variable -> scalar loss`` (such as
            :func:`l2_regularizer`); None falls back to the enclosing
            ``variable_scope``'s regularizer. In graph mode TensorFlow adds the loss
            to ``GraphKeys.REGULARIZATION_LOSSES`` when the variable is created, so
            once per variable however often the scope is reused.

    Returns:
        The ``tf.Variable``.

    Raises:
        EagerError: where the variable would not be shared (see ``require_graph``).
        ScopeError: the variable exists and reuse is off, or reuse is on and it
            does not exist.
        ShapeError: reuse found the variable with another shape.
    """
    require_graph(owner)
    try:
        return tf.compat.v1.get_variable(
            name,
            shape,
            dtype,
            initializer=initializer,
            trainable=trainable,
            regularizer=regularizer,
        )
    except ValueError as err:
        raise translate_error(owner, full_name(name), list(shape), err) from None


def reading_through(custom_getter):
    """The current variable scope re-entered with ``custom_getter``, no new name scope.

    What is built inside gets its variables through ``custom_getter``, stacked on
    the scope's own getters (a precision policy, a snapshot's frozen reads, a
    recording store).

    Returns:
        The ``tf.compat.v1.variable_scope`` context manager.
    """
    return tf.compat.v1.variable_scope(
        tf.compat.v1.get_variable_scope(),
        custom_getter=custom_getter,
        auxiliary_name_scope=False,
    )


# The attribute a precision policy's cast read carries: the float32 variable it reads.
_STORED_AS = "_zoo_stored_variable"


def mark_cast_read(read, variable):
    """Notes that ``read`` is ``variable`` cast to a compute dtype; returns ``read``.

    A precision policy (``zoo.training.precision``) marks its cast reads, so what
    must see the stored float32 variable (a regularizer) finds it
    (:func:`stored_variable`).
    """
    setattr(read, _STORED_AS, variable)
    return read


def stored_variable(weight):
    """Returns the float32 variable behind a cast read, or ``weight`` itself.

    A weight decay computed on the stored variable stays float32 forward and
    backward (no bfloat16 rounding of its gradient, no cast either way).
    """
    return getattr(weight, _STORED_AS, weight)


def in_dtype_of(inputs, weight):
    """Returns ``inputs`` cast to the dtype ``weight`` is read in (itself when equal).

    A layer computes in its weights' dtype: under a precision policy
    (``zoo.training.precision``) a float32 variable is read as bfloat16 or
    float16, and the layer's inputs follow it on entry.
    """
    return tf.cast(inputs, weight.dtype.base_dtype)


def at_least_float32(tensor):
    """Returns a bfloat16 or float16 ``tensor`` cast to float32, any other as it is.

    Where a precision policy's products end, what must stay exact (batch-norm
    statistics, softmax, cross-entropies, loss reductions) reads its input
    through this; a float32 graph gets no op from it. A policy's cast read of a
    variable gives back the stored float32 variable (:func:`stored_variable`):
    its exact value, no cast either way. A Keras variable is read first: inside a
    layer's call under a Keras mixed policy it reads in the compute dtype.
    """
    tensor = stored_variable(tensor)
    if not isinstance(tensor, tf.Variable):
        tensor = tf.convert_to_tensor(tensor)
    if tensor.dtype in (tf.bfloat16, tf.float16):
        return tf.cast(tensor, tf.float32)
    return tensor


def l2_regularizer(scale):
    """Returns TF1's ``tf.contrib.layers.l2_regularizer``: ``scale * sum(w ** 2) / 2``.

    Args:
        scale: the weight of the penalty (a number or a scalar tensor).

    Returns:
        A function ``weight -> scalar loss`` for ``regularizer=`` arguments.
    """

    def l2(weight):
        loss = tf.nn.l2_loss(at_least_float32(weight))
        return tf.multiply(scale, loss, name="l2_regularizer")

    return l2


def translate_error(owner, name, shape, err):
    """Maps TensorFlow's variable-store ValueError to a zoo error.

    Args:
        owner: layer or scope name.
        name: full variable name.
        shape: the shape that was asked for.
        err: the ValueError TensorFlow raised.

    Returns:
        A :class:`ScopeError` or :class:`ShapeError`, or ``err`` itself when it is
        none of the known variable-store errors.
    """
    text = str(err)
    if "already exists, disallowed" in text:
        return ScopeError(
            f"{owner}: expected no variable {name} yet (reuse=False), found it already "
            "exists; pass reuse=True to share it, or build under another scope"
        )
    if "does not exist, or was not created" in text:
        return ScopeError(
            f"{owner}: expected variable {name} to exist (reuse=True), found none; build "
            "this scope once with reuse=False first, or pass "
            "reuse=tf.compat.v1.AUTO_REUSE"
        )
    found = re.search(r"found shape (\(.*?\)|\[.*?\])", text)
    if "Trying to share variable" in text and found:
        return ShapeError(
            f"{owner}: expected variable {name} with shape {shape}, found shape "
            f"{found.group(1)}; build with the sizes it was created with, or use "
            "another scope"
        )
    return err
