"""Dynamic loss scaling for float16: an optimizer wrapper with the TF1 interface.

float16 has 5 exponent bits: gradients below about 6e-8 become zero on their
way back through a ``mixed_float16`` model (:mod:`zoo.training.precision`).
:class:`LossScaleOptimizer` multiplies the loss by a scale before the backward
pass and divides the float32 gradients by it before the update; the scale
doubles after ``growth_steps`` steps with finite gradients, and a step whose
gradients are not finite is skipped (no update, no slot moves) and halves the
scale. The scale and the count of finite steps are variables, so checkpoints
hold them and a resumed run continues exactly. The loss the loops see and log
is the unscaled one, so the NaN guard stops only on a loss that is itself
NaN or Inf.

Usage::

    with precision.policy("mixed_float16"):
        step = repeat_step(loss_fn, LossScaleOptimizer(adam), batches, 32,
                           jit_compile=True)
"""

import tensorflow as tf

from layers.checks import int_problem, number_problem, require


class LossScaleOptimizer(tf.compat.v1.train.Optimizer):
    """Wraps a ``tf.compat.v1.train.Optimizer`` with dynamic loss scaling.

    Args:
        optimizer: the optimizer that applies the unscaled gradients.
        initial_scale: the first scale, a number >= 1 (default 2**15).
        growth_steps: finite steps after which the scale doubles (default 2000).
        name: the variable scope of ``scale`` and ``finite_steps`` (made
            unique: two wrappers keep two scales).

    Raises:
        ZooError: ``optimizer`` is not a TF1 optimizer, or a number is out of
            range.
    """

    def __init__(
        self, optimizer, initial_scale=2.0**15, growth_steps=2000, name="loss_scale"
    ):
        owner = "LossScaleOptimizer"
        is_tf1 = isinstance(optimizer, tf.compat.v1.train.Optimizer)
        require(
            owner,
            None
            if is_tf1
            else f"expected a tf.compat.v1.train.Optimizer, found {optimizer!r}",
            "wrap e.g. tf.compat.v1.train.AdamOptimizer(1e-3)",
        )
        require(
            owner,
            number_problem(initial_scale, 1, name="the initial scale"),
            "pass e.g. initial_scale=2.0**15",
        )
        require(
            owner,
            int_problem(growth_steps, 1, name="the steps before the scale grows"),
            "pass e.g. growth_steps=2000",
        )
        super().__init__(use_locking=False, name=name)
        self._optimizer = optimizer
        self._initial_scale = float(initial_scale)
        self._growth_steps = growth_steps
        self._scale = self._finite_steps = None

    @property
    def loss_scale(self):
        """The scale variable (float32), made by the first ``compute_gradients``."""
        return self._scale

    @property
    def finite_steps(self):
        """The int64 variable counting the finite steps since the scale last moved."""
        return self._finite_steps

    def compute_gradients(self, loss, var_list=None, **kwargs):
        """The inner optimizer's gradients of ``loss * scale``, divided by the scale.

        Args:
            loss: the (unscaled, float32) loss.
            var_list, kwargs: as ``tf.compat.v1.train.Optimizer.compute_gradients``.

        Returns:
            A list of ``(gradient, variable)``; a gradient that overflowed is Inf or NaN.
        """
        scale = self._state()[0]
        grads_and_vars = self._optimizer.compute_gradients(
            loss * tf.cast(scale, loss.dtype), var_list, **kwargs
        )
        return [(_divided(g, scale), v) for g, v in grads_and_vars]

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Applies the gradients if all are finite, then moves the scale.

        Args:
            grads_and_vars: what :meth:`compute_gradients` returned.
            global_step: incremented by every step, skipped ones too.
            name: of the returned op.

        Returns:
            The op of one step: update (or skip), new scale, global step.
        """
        grads_and_vars = list(grads_and_vars)
        scale, finite_steps = self._state()
        finite = tf.reduce_all(
            [
                tf.reduce_all(tf.math.is_finite(_values(g)))
                for g, _ in grads_and_vars
                if g is not None
            ]
        )

        def apply():
            with tf.control_dependencies([self._optimizer.apply_gradients(grads_and_vars)]):
                return tf.constant(True)

        applied = tf.cond(finite, apply, lambda: tf.constant(False))
        grow = tf.logical_and(applied, finite_steps + 1 >= self._growth_steps)
        new_scale = tf.where(
            applied,
            tf.where(grow, scale * 2.0, scale),
            tf.maximum(scale / 2.0, 1.0),
        )
        counting = tf.logical_and(applied, tf.logical_not(grow))
        new_count = tf.where(counting, finite_steps + 1, tf.zeros_like(finite_steps))
        updates = [scale.assign(new_scale), finite_steps.assign(new_count)]
        if global_step is not None:  # after the update, as TF's optimizers count steps
            with tf.control_dependencies([applied]):
                updates.append(global_step.assign_add(1))
        return tf.group(*updates, name=name or self.get_name())

    def get_slot(self, var, name):
        return self._optimizer.get_slot(var, name)

    def get_slot_names(self):
        return self._optimizer.get_slot_names()

    def variables(self):
        """The inner optimizer's variables and the two of the scale."""
        own = [v for v in (self._scale, self._finite_steps) if v is not None]
        return [*self._optimizer.variables(), *own]

    def _state(self):
        """``(scale, finite_steps)``, made on the first call (outside any loop)."""
        if self._scale is None:
            with (
                tf.init_scope(),
                tf.compat.v1.variable_scope(None, default_name=self._name),
            ):
                self._scale = tf.compat.v1.get_variable(
                    "scale",
                    [],
                    tf.float32,
                    tf.compat.v1.constant_initializer(self._initial_scale),
                    trainable=False,
                )
                self._finite_steps = tf.compat.v1.get_variable(
                    "finite_steps", [], tf.int64, tf.zeros_initializer(), trainable=False
                )
        return self._scale, self._finite_steps


def _values(gradient):
    """A gradient's values: the tensor itself, or an ``IndexedSlices``' values."""
    return gradient.values if isinstance(gradient, tf.IndexedSlices) else gradient


def _divided(gradient, scale):
    """``gradient / scale`` for a tensor or ``IndexedSlices`` (None stays None)."""
    if gradient is None:
        return None
    inverse = tf.cast(1.0 / scale, gradient.dtype)
    if isinstance(gradient, tf.IndexedSlices):
        return tf.IndexedSlices(
            gradient.values * inverse, gradient.indices, gradient.dense_shape
        )
    return gradient * inverse
