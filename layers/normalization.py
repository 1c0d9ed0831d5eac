"""Batch normalization on ``tf.compat.v1.get_variable``, sharable under ``reuse``.

:class:`BatchNorm` keeps four variables in its scope: ``gamma`` and ``beta``
(trained) and ``moving_mean`` and ``moving_variance`` (not trained, in the
global collection, so checkpoints hold them). Training normalizes with the
batch's statistics and adds to ``tf.compat.v1.GraphKeys.UPDATE_OPS`` one op that
moves the moving statistics; evaluation normalizes with the moving statistics
and adds no op. A builder called again with ``reuse=True`` shares all
four variables, whatever the mode of either call.

Usage::

    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 64])
        training = tf.compat.v1.placeholder_with_default(True, [])
        bn = BatchNorm(x, training, scope="bn")          # bn/gamma, bn/beta, ...
        current = tf.compat.v1.get_variable_scope()
        with tf.compat.v1.variable_scope(current, reuse=True):
            frozen = BatchNorm(x, False, scope="bn")     # same variables, no update
        train_op = zoo.training.with_updates(optimizer.minimize(loss))

:func:`batch_statistics` changes, for the layers built inside it, how the
batch statistics are computed and whether the moving ones are updated (what
data-parallel towers need).
"""

import contextlib
import threading

import tensorflow as tf

from layers.base import Layer, read_only
from layers.checks import number_problem, require
from layers.dense import scope_or_current
from layers.errors import ShapeError, ZooError
from layers.variables import at_least_float32, full_name, get_variable

_settings = threading.local()  # .stack: the (moments, update) of open batch_statistics


@contextlib.contextmanager
def batch_statistics(moments=None, update=True):
    """Inside (this thread only), every BatchNorm built in training mode computes
    its batch moments with ``moments(inputs, axes) -> (mean, variance)`` instead of
    ``tf.nn.moments``, and adds its moving-statistics updates only if ``update``.

    The innermost open context wins; leaving it (by an exception too) restores
    the one outside it. Layers built in evaluation mode are not affected.

    Args:
        moments: a function ``(inputs, axes) -> (mean, variance)`` with the
            signature of ``tf.nn.moments`` (``axes`` all but the last), each
            [features]; None for ``tf.nn.moments``.
        update: False builds no update of the moving statistics (a second
            tower that reads the first tower's variables).

    Raises:
        ZooError: ``moments`` is not callable or ``update`` is not a bool.
    """
    if moments is not None and not callable(moments):
        raise ZooError(
            f"batch_statistics: expected moments to be a function (inputs, axes) -> "
            f"(mean, variance) or None, found {moments!r}; pass e.g. tf.nn.moments"
        )
    if not isinstance(update, bool):
        raise ZooError(
            f"batch_statistics: expected update True or False, found {update!r}; pass "
            "update=(tower == 0) to update the moving statistics from one tower"
        )
    stack = _stack()
    stack.append((moments or tf.nn.moments, update))
    try:
        yield
    finally:
        stack.pop()


def _stack():
    """The calling thread's stack of ``batch_statistics`` settings."""
    if not hasattr(_settings, "stack"):
        _settings.stack = []
    return _settings.stack


def _current_settings():
    """``(moments, update)`` of the innermost ``batch_statistics``, or the defaults."""
    stack = _stack()
    return stack[-1] if stack else (tf.nn.moments, True)


class BatchNorm:
    """``gamma * (x - mean) / sqrt(variance + epsilon) + beta`` over the last axis.

    In training, ``mean`` and ``variance`` are the batch's, over every axis but
    the last (``[batch]`` for [batch, features], ``[batch, height, width]`` for
    NHWC images); the variance is the biased one ``tf.nn.moments`` gives (divided
    by the count, not count - 1), and the moving statistics move by
    ``moving_x := decay * moving_x + (1 - decay) * batch_x`` (computed as
    ``moving_x -= (1 - decay) * (moving_x - batch_x)``, equal up to round-off).
    Otherwise the moving statistics normalize and nothing moves.

    In a graph the update is one op, added to
    ``tf.compat.v1.GraphKeys.UPDATE_OPS`` and to :attr:`updates`: run it with the
    training step (``zoo.training``'s loops do; see
    ``zoo.training.with_updates``). Eagerly and in ``tf.function`` (``zoo.share``,
    ``zoo.sharing.keras.ZooLayer``) it runs with the call.

    Args:
        inputs: float32 tensor [batch, ..., features], the feature width known
            (bfloat16 or float16 too: the statistics are computed in float32 and
            the output has the inputs' dtype).
        training: Python bool, or a scalar bool tensor (one graph for both modes:
            ``tf.compat.v1.placeholder_with_default(True, [])``; fed False, the
            output uses the moving statistics and the update leaves them as they
            are). Python False builds no update at all.
        scope: variable scope of the four variables, relative to the current
            one; None creates them directly under the current scope.
        decay: weight of the old moving value, in [0, 1].
        epsilon: added to the variance, > 0.

    Raises:
        ShapeError: the input's rank or feature width is not known statically,
            or the scope holds the variables of another width (reuse).
        ZooError: the input is not float32, bfloat16 or float16, ``training`` is
            neither a bool nor a scalar bool tensor, or ``decay``/``epsilon`` are
            out of range.
        ScopeError, EagerError: as :class:`layers.Dense`.
    """

    def __init__(self, inputs, training, scope="bn", decay=0.99, epsilon=1e-3):
        owner = full_name(scope) if scope else type(self).__name__
        width = _feature_width(owner, inputs)
        check_training(owner, training)
        require(owner, number_problem(decay, 0, 1, name="decay"), "pass e.g. decay=0.99")
        require(
            owner,
            number_problem(epsilon, 0, low_open=True, name="epsilon"),
            "pass e.g. epsilon=1e-3",
        )
        self._inputs = inputs
        moments, may_update = _current_settings()
        with scope_or_current(scope) as var_scope:
            self._scope_name = var_scope.name
            self._params = _variables(owner, width)
            gamma, beta, moving_mean, moving_variance = self._params
            self._gamma, self._beta = gamma, beta
            self._moving_mean, self._moving_variance = moving_mean, moving_variance
            axes = list(range(inputs.shape.rank - 1))
            # Statistics in float32 whatever the inputs' dtype (a precision policy's
            # bfloat16 or float16); the output returns to the inputs' dtype.
            inputs32 = at_least_float32(inputs)
            if training is False:
                mean, variance = moving_mean, moving_variance
            elif training is True:
                mean, variance = moments(inputs32, axes)
            else:
                mean, variance = tf.cond(
                    training,
                    lambda: moments(inputs32, axes),
                    lambda: (tf.identity(moving_mean), tf.identity(moving_variance)),
                )
            self._mean, self._variance = mean, variance
            self._updates = []
            if training is not False and may_update:
                moving = [moving_mean, moving_variance]
                self._updates = moving_statistics_update(
                    training, decay, moving, mean, variance
                )
            scale, offset = (at_least_float32(v) for v in (gamma, beta))
            self._output = tf.cast(
                tf.nn.batch_normalization(inputs32, mean, variance, offset, scale, epsilon),
                inputs.dtype,
            )

    input = Layer.input
    output = read_only("_output", "The normalized tensor, the input's shape.")
    scope_name = Layer.scope_name
    gamma = read_only("_gamma", "The scale variable [features].")
    beta = read_only("_beta", "The offset variable [features].")
    moving_mean = read_only("_moving_mean", "The moving mean [features] (not trained).")
    moving_variance = read_only(
        "_moving_variance", "The moving variance [features] (not trained)."
    )
    mean = read_only("_mean", "The mean this call normalizes with [features].")
    variance = read_only("_variance", "The variance this call normalizes with [features].")

    @property
    def updates(self):
        """This call's update op, in a list: empty for Python ``training=False``,
        inside ``batch_statistics(update=False)``, and eagerly (it has run)."""
        return list(self._updates)

    @property
    def params(self):
        """The four variables: gamma, beta, moving_mean, moving_variance."""
        return list(self._params)


def _variables(owner, width):
    """Creates or reuses gamma, beta, moving_mean and moving_variance, each [width]."""
    ones, zeros = tf.compat.v1.ones_initializer(), tf.compat.v1.zeros_initializer()
    try:
        return [
            get_variable(owner, "gamma", [width], ones),
            get_variable(owner, "beta", [width], zeros),
            get_variable(owner, "moving_mean", [width], zeros, trainable=False),
            get_variable(owner, "moving_variance", [width], ones, trainable=False),
        ]
    except ShapeError:
        with tf.compat.v1.variable_scope(tf.compat.v1.get_variable_scope(), reuse=True):
            built = tf.compat.v1.get_variable("gamma").shape[0]
        raise ShapeError(
            f"{owner}: expected inputs with {built} features (the width this BatchNorm "
            f"scope was built with), found {width}; feed {built}-wide inputs, or build "
            "under another scope"
        ) from None


def moving_statistics_update(training, decay, moving, mean, variance):
    """Moves ``moving`` = (moving_mean, moving_variance) toward (mean, variance).

    Returns:
        ``[op]`` in a graph (also added to ``GraphKeys.UPDATE_OPS``); ``[]``
        eagerly, where the assignments have run.
    """
    rate = tf.constant(1.0 - decay, tf.float32)
    if tf.is_tensor(training):  # fed False, the statistics stay exactly as they are
        rate = rate * tf.cast(training, tf.float32)
    with tf.name_scope("moving_statistics"):
        assignments = [
            variable.assign_sub((variable - value) * rate, read_value=False)
            for variable, value in zip(moving, (mean, variance), strict=True)
        ]
    if tf.executing_eagerly():
        return []
    update = tf.group(*assignments, name="update_moving_statistics")
    tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.UPDATE_OPS, update)
    return [update]


def _feature_width(owner, inputs):
    """The static last dimension of float ``inputs`` (rank >= 2).

    Raises:
        ZooError: another dtype.
        ShapeError: unknown rank, rank below 2, or an unknown last dimension.
    """
    if inputs.dtype not in (tf.float32, tf.bfloat16, tf.float16):
        raise ZooError(
            f"{owner}: expected float32 inputs (bfloat16 or float16 under a precision "
            f"policy), found {inputs.dtype.name}; cast them with tf.cast(x, tf.float32)"
        )
    shape = inputs.shape
    if shape.rank is None or shape.rank < 2 or shape[-1] is None:
        raise ShapeError(
            f"{owner}: expected input of shape [batch, ..., features] with the feature "
            f"width known, found {shape}; give the input a static last dimension, e.g. "
            "tf.ensure_shape(x, [None, 64]) or a placeholder of shape [None, 64]"
        )
    return int(shape[-1])


def check_training(owner, training):
    """Raises ZooError unless ``training`` is a bool or a scalar bool tensor (or a
    bool tensor of unknown shape: ``tf.compat.v1.placeholder(tf.bool)``, fed a scalar)."""
    if isinstance(training, bool):
        return
    if (
        tf.is_tensor(training)
        and training.dtype == tf.bool
        and training.shape.rank in (0, None)
    ):
        return
    found = repr(training)
    if tf.is_tensor(training):
        found = f"a {training.dtype.name} tensor of shape {training.shape}"
    raise ZooError(
        f"{owner}: expected training to be True, False or a scalar bool tensor, found "
        f"{found}; pass a Python bool, or "
        "tf.compat.v1.placeholder_with_default(True, []) for one graph serving both"
    )
