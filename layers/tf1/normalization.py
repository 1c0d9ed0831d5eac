"""TF 1.15's ``tf.layers`` normalization module: ``BatchNormalization`` and
``batch_normalization``."""

import tensorflow as tf

from layers.checks import number_problem, probability_problem, require
from layers.errors import ShapeError
from layers.normalization import check_training, moving_statistics_update
from layers.tf1.base import ONES, UNSUPPORTED, ZEROS, Layer, function_form, settings
from layers.variables import at_least_float32


class BatchNormalization(Layer):
    """TF 1.15's ``tf.layers.BatchNormalization``, over the ``axis`` (the features).

    Variables ``gamma`` (if ``scale``), ``beta`` (if ``center``), ``moving_mean``
    and ``moving_variance`` (not trained). Called with ``training`` True (or a
    bool tensor fed True), it normalizes with the batch's mean and biased
    variance and moves ``moving := moving - (1 - momentum) * (moving - batch)``
    by one op in ``GraphKeys.UPDATE_OPS`` and :attr:`updates` (fed False: the
    moving statistics normalize and stay as they are); with False, the moving
    statistics normalize and nothing is added. As in TF 1.15, where its fused
    kernel would run (``fused`` not False, rank 4 or 5, features on axis 1 or
    last) the moving variance moves toward the unbiased batch variance; the
    output equals the fused kernel's up to round-off.

    Raises:
        ZooError: ``renorm``, ``virtual_batch_size`` or ``adjustment`` (not
            provided), ``momentum`` outside [0, 1], ``epsilon`` not above 0, or
            ``training`` neither a bool nor a scalar bool tensor.
        ShapeError: the input's rank or a normalized dimension is unknown.
    """

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer=ZEROS, gamma_initializer=ONES,
                 moving_mean_initializer=ZEROS, moving_variance_initializer=ONES,
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm=False, renorm_clipping=None,
                 renorm_momentum=0.99, fused=None, trainable=True, virtual_batch_size=None,
                 adjustment=None, name=None, **kwargs):  # fmt: skip
        super().__init__(trainable, name, **kwargs)
        owner = self._base_name
        for option, value in (("renorm", renorm), ("renorm_clipping", renorm_clipping),
                              ("virtual_batch_size", virtual_batch_size),
                              ("adjustment", adjustment)):  # fmt: skip
            require(owner, None if not value else f"expected no {option}, found {value!r}",
                    UNSUPPORTED)  # fmt: skip
        require(owner, probability_problem(momentum, zero=True, name="momentum"),
                "pass e.g. momentum=0.99")  # fmt: skip
        require(owner, number_problem(epsilon, 0, low_open=True, name="epsilon"),
                "pass e.g. epsilon=1e-3")  # fmt: skip
        self.axis, self.momentum, self.epsilon = axis, momentum, epsilon
        self.center, self.scale, self.fused = center, scale, fused
        self._settings = {
            "gamma": settings(gamma_initializer, gamma_regularizer, gamma_constraint),
            "beta": settings(beta_initializer, beta_regularizer, beta_constraint),
            "moving_mean": settings(moving_mean_initializer),
            "moving_variance": settings(moving_variance_initializer),
        }
        self.gamma = self.beta = None

    def build(self, input_shape):
        rank = input_shape.rank
        axes = [self.axis] if isinstance(self.axis, int) else list(self.axis)
        if rank is None or any(input_shape[axis] is None for axis in axes):
            raise ShapeError(
                f"{self._scope.name}: expected an input whose axis {self.axis} is known, "
                f"found shape {input_shape}; give the input a static shape"
            )
        self._axes = sorted(axis % rank for axis in axes)
        sizes = [int(input_shape[axis]) for axis in self._axes]
        self._shape = [input_shape[i] if i in self._axes else 1 for i in range(rank)]
        params = sizes if len(sizes) == 1 else self._shape
        if self.scale:
            self.gamma = self.add_weight("gamma", params, **self._settings["gamma"])
        if self.center:
            self.beta = self.add_weight("beta", params, **self._settings["beta"])
        scope = tf.compat.v1.get_variable_scope()
        partitioner = scope.partitioner
        scope.set_partitioner(None)  # as TF 1.15: the moving statistics whole
        try:
            self.moving_mean, self.moving_variance = (
                self.add_weight(name, params, trainable=False, **self._settings[name])
                for name in ("moving_mean", "moving_variance")
            )
        finally:
            scope.set_partitioner(partitioner)

    def _fused_in_tensorflow(self, rank):
        """Whether TF 1.15 takes its fused kernel here, whose moving variance moves
        toward the unbiased batch variance (count / (count - 1) times the biased)."""
        fusable = ((4, [1]), (4, [3]), (5, [1]), (5, [4]))
        return self.fused is not False and (rank, self._axes) in fusable

    def _broadcast(self, value, rank):
        """``value`` shaped to broadcast against the input (features not last)."""
        if value is None or value.shape.rank == rank or self._axes == [rank - 1]:
            return value
        return tf.reshape(value, self._shape)

    def call(self, inputs, training=False):
        check_training(self.scope_name, training)
        rank = inputs.shape.rank
        reduction = [i for i in range(rank) if i not in self._axes]
        moving = [self.moving_mean, self.moving_variance]
        # In float32 under a precision policy too; the output in the inputs' dtype.
        inputs32 = at_least_float32(inputs)

        def batch_moments():
            return tf.nn.moments(inputs32, reduction, keepdims=len(self._axes) > 1)

        if training is False:
            mean, variance = moving
        elif training is True:
            mean, variance = batch_moments()
        else:
            mean, variance = tf.cond(
                training, batch_moments, lambda: tuple(tf.identity(v) for v in moving)
            )
        if training is not False:
            toward = variance
            if self._fused_in_tensorflow(rank):
                count = tf.cast(tf.size(inputs) / tf.size(variance), variance.dtype)
                toward = variance * (count / (count - 1.0))
            self._updates += moving_statistics_update(
                training, self.momentum, moving, mean, toward
            )
        offset, scale = (
            None if v is None else at_least_float32(v) for v in (self.beta, self.gamma)
        )
        outputs = tf.nn.batch_normalization(
            inputs32,
            *(self._broadcast(v, rank) for v in (mean, variance, offset, scale)),
            self.epsilon,
        )
        return tf.cast(outputs, inputs.dtype)


batch_normalization = function_form(
    BatchNormalization,
    training=True,
    last=("renorm", "renorm_clipping", "renorm_momentum", "fused", "virtual_batch_size",
          "adjustment"),
)  # fmt: skip
