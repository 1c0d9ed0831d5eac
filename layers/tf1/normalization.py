"""TF 1.15's ``tf.layers`` normalization module: ``BatchNormalization`` and
``batch_normalization`` (and TF's short names ``BatchNorm``, ``batch_norm``).

The moving statistics move as TensorFlow moves them, path by path. Where TF takes
its fused kernel (``fused`` not False; rank 4 or 5 with one feature axis, 1 or
last; no ``renorm``, ``virtual_batch_size`` or ``adjustment``; float16, bfloat16 or
float32) the moving variance moves toward the kernel's unbiased batch variance
(``count / (count - 1)`` times the biased one), by ``AssignMovingAvg`` with
``1 - momentum`` taken in float32 and momentum 1 when a bool tensor ``training`` is
fed False; in TensorFlow 2 execution (eagerly or in a ``tf.function``: inside
``zoo.share`` or ``ZooLayer``) as the kernel's own exponential average
(``exponential_avg_factor = 1 - momentum``). Elsewhere toward the biased batch
variance, by ``AssignMovingAvg`` inside a ``tf.cond`` when ``training`` is a tensor.
Either way two ops join ``GraphKeys.UPDATE_OPS`` and :attr:`BatchNormalization.updates`,
named as TF names them (``<scope>/AssignMovingAvg``, ``<scope>/AssignMovingAvg_1``,
or the ``cond_2`` and ``cond_3`` outputs).

The output, where TF takes the kernel and ``training`` is True (a Python bool or a
constant): TensorFlow's ``FusedBatchNormV3`` itself, no ``tf.cond`` around it, its
batch mean and variance moving the statistics. Everywhere else (evaluation, a bool
tensor ``training``, the other paths): ``tf.nn.batch_normalization`` of the batch's
moments (biased) or the moving ones, in float32 for 16-bit inputs, a ``tf.cond``
picking only the statistics. So evaluation is the same ops whatever form
``training`` takes, and a TF1 graph, its ``tf.function`` and its Keras port agree bit
for bit there (the kernel's inference output is one rounding away from
``tf.nn.batch_normalization``'s); in training a bool and a tensor ``training`` agree
to round-off.

Usage::

    x = tf.compat.v1.placeholder(tf.float32, [None, 8, 8, 16])
    training = tf.compat.v1.placeholder(tf.bool)
    h = batch_normalization(x, training=training, renorm=True)   # 7 variables
    train_op = tf.group(optimizer.minimize(loss),
                        tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS))
"""

import contextlib

import tensorflow as tf

from layers.checks import (
    int_problem,
    int_value,
    number_problem,
    probability_problem,
    require,
)
from layers.errors import ShapeError
from layers.normalization import check_training
from layers.tf1.base import ONES, ZEROS, Layer, function_form
from layers.variables import at_least_float32

# (rank, feature axes) where TensorFlow's fused kernel runs -> its data format
FUSED = {(4, (1,)): "NCHW", (4, (3,)): "NHWC", (5, (1,)): "NCDHW", (5, (4,)): "NDHWC"}
CLIPPING_KEYS = ("rmax", "rmin", "dmax")


class BatchNormalization(Layer):
    """TF 1.15's ``tf.layers.BatchNormalization``, over the ``axis`` (the features).

    Variables ``gamma`` (if ``scale``), ``beta`` (if ``center``), ``moving_mean``
    and ``moving_variance`` (not trained); with ``renorm`` also ``moving_stddev``,
    ``renorm_mean`` and ``renorm_stddev`` (not trained). Parameters are float32
    for float16 and bfloat16 inputs, and the output has the inputs' dtype.
    Called with ``training`` True (or a bool tensor, of any static shape, fed
    True) it normalizes with the batch's statistics and adds two update ops (see
    the module's docstring); with False it normalizes with the moving statistics
    and adds none. ``axis`` may be a list: the parameters then have the input's
    rank, 1 on the reduced axes.

    Batch renormalization (``renorm``): in training the batch-normalized value
    ``x`` becomes ``x * r + d``, ``r = stddev / renorm_stddev`` clipped to
    [rmin, rmax] and ``d = (mean - renorm_mean) / renorm_stddev`` to [-dmax, dmax]
    (``renorm_clipping``, each key optional), the renorm statistics moving with
    ``renorm_momentum`` when the updates run; the moving variance is kept as
    ``moving_stddev ** 2 - epsilon``. ``virtual_batch_size``: ghost batches, the
    batch reshaped to [virtual_batch_size, batch / virtual_batch_size, ...] and
    normalized over its first axis. ``adjustment``: a function of the input's
    dynamic shape returning ``(scale, bias)`` applied to the normalized value in
    training, before ``gamma`` and ``beta``.

    Raises:
        ZooError: ``momentum`` or ``renorm_momentum`` outside [0, 1], ``epsilon``
            not above 0, ``renorm_clipping`` with other keys, ``virtual_batch_size``
            not an int >= 1 or given with ``adjustment``, an ``axis`` out of range,
            repeated, or 0 with ``virtual_batch_size``, ``training`` neither a
            bool nor a bool tensor.
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
        for problem, fix in _argument_problems(
            axis,
            momentum,
            epsilon,
            renorm,
            renorm_clipping,
            renorm_momentum,
            virtual_batch_size,
            adjustment,
        ):
            require(self._base_name, problem, fix)
        self.axis, self.momentum, self.epsilon = axis, momentum, epsilon
        self.center, self.scale = center, scale
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self.moving_mean_initializer = moving_mean_initializer
        self.moving_variance_initializer = moving_variance_initializer
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint
        self.renorm, self.renorm_clipping = renorm, renorm_clipping or {}
        self.renorm_momentum = renorm_momentum
        self.fused = True if fused is None else fused  # TF 1.15: decided again in build
        self.virtual_batch_size = int_value(virtual_batch_size)
        self.adjustment = adjustment
        # TF's own switch (its tests turn it off): True, the fused path moves the
        # moving variance toward the unbiased batch variance; False, the biased one.
        self._bessels_correction_test_only = True
        self.gamma = self.beta = None

    def build(self, input_shape):
        self._axes = _validate_axes(self._scope.name, self.axis, input_shape)
        rank = input_shape.rank
        require(
            self._scope.name,
            f"expected an axis other than 0 with virtual_batch_size, found axis={self.axis}"
            if self.virtual_batch_size and 0 in self._axes
            else None,
            "normalize over the features, not the batch",
        )
        fusable = not (self.renorm or self.virtual_batch_size or self.adjustment)
        self.fused = bool(
            self.fused
            and fusable
            and (rank, tuple(self._axes)) in FUSED
            and self.dtype in (tf.float16, tf.bfloat16, tf.float32)
        )
        unknown = [a for a in self._axes if input_shape[a] is None]
        if unknown:
            raise ShapeError(
                f"{self._scope.name}: expected an input whose axis {self.axis} is known "
                f"(TensorFlow: Input has undefined `axis` dimension), found shape "
                f"{input_shape}; give the input a static shape there"
            )
        shape = [input_shape[i] if i in self._axes else 1 for i in range(rank)]
        if self.virtual_batch_size:  # the parameters get the ghost batches' axis too
            shape.insert(1, 1)
            self._axes = [a + 1 for a in self._axes]
        self._shape = shape
        self._param_shape = param_shape = (
            shape
            if len(self._axes) > 1 or self.virtual_batch_size
            else [int(input_shape[self._axes[0]])]
        )
        # float16 and bfloat16 layers keep float32 parameters, as TensorFlow's do
        dtype = tf.float32 if self.dtype in (tf.float16, tf.bfloat16) else self.dtype

        def weight(name, initializer, **settings):
            return self.add_weight(name, param_shape, dtype, initializer, **settings)

        if self.scale:
            self.gamma = weight(
                "gamma",
                self.gamma_initializer,
                regularizer=self.gamma_regularizer,
                constraint=self.gamma_constraint,
            )
        if self.center:
            self.beta = weight(
                "beta",
                self.beta_initializer,
                regularizer=self.beta_regularizer,
                constraint=self.beta_constraint,
            )
        scope = tf.compat.v1.get_variable_scope()
        partitioner = scope.partitioner
        scope.set_partitioner(None)  # as TF 1.15: the statistics whole, never in shards
        try:
            self._build_statistics(weight)
        finally:
            scope.set_partitioner(partitioner)

    def _build_statistics(self, weight):
        """The moving statistics (and renorm's), made by ``weight(name, initializer)``."""
        self.moving_mean = weight(
            "moving_mean", self.moving_mean_initializer, trainable=False
        )
        self.moving_variance = weight(
            "moving_variance", self.moving_variance_initializer, trainable=False
        )
        if self.renorm:

            def stddev_initializer(*args, **kwargs):
                return tf.sqrt(self.moving_variance_initializer(*args, **kwargs))

            self.moving_stddev = weight(
                "moving_stddev", stddev_initializer, trainable=False
            )
            self.renorm_mean = weight(
                "renorm_mean", self.moving_mean_initializer, trainable=False
            )
            self.renorm_stddev = weight(
                "renorm_stddev", stddev_initializer, trainable=False
            )

    def call(self, inputs, training=False):
        check_training(self.scope_name, training)
        if self.virtual_batch_size:  # TF 1.15's ghost batches, in either mode
            ghosts = tf.concat([[self.virtual_batch_size, -1], tf.shape(inputs)[1:]], 0)
            outputs = self._normalize(tf.reshape(inputs, ghosts), training)
            return tf.reshape(outputs, tf.concat([[-1], tf.shape(inputs)[1:]], 0))
        return self._normalize(inputs, training)

    def _normalize(self, inputs, training):
        """The output; the updates join ``UPDATE_OPS``, and :attr:`updates` in a TF1
        graph (a ``tf.function`` runs them with the call)."""
        if self.fused and _static(training):
            outputs, updates = self._fused_batch_norm(inputs)
        else:
            outputs, updates = self._batch_norm(inputs, training)
        if tf.executing_eagerly():  # they have run
            return outputs
        updates = [getattr(update, "op", update) for update in updates]
        for update in updates:
            tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.UPDATE_OPS, update)
        if not tf.compat.v1.executing_eagerly_outside_functions():  # not a tf.function's
            self._updates += updates
        return outputs

    def _fused_batch_norm(self, inputs):
        """TensorFlow's fused kernel in training, no ``tf.cond`` around it: ``(outputs,
        updates)``."""
        scale, offset = (
            at_least_float32(v)
            if v is not None
            else tf.constant(value, shape=self._param_shape)
            for v, value in ((self.gamma, 1.0), (self.beta, 0.0))
        )
        outputs, mean, variance = tf.compat.v1.nn.fused_batch_norm(
            inputs,
            scale,
            offset,
            mean=self.moving_mean,
            variance=self.moving_variance,
            epsilon=self.epsilon,
            data_format=FUSED[inputs.shape.rank, tuple(self._axes)],
        )
        return outputs, self._fused_updates(inputs, mean, variance, True)

    def _fused_updates(self, inputs, mean, unbiased, training):
        """The moving statistics moved as TF's fused kernel moves them, toward the
        batch mean and the unbiased batch variance (the kernel's: ``count / (count -
        1)`` times the biased one): two ``AssignMovingAvg`` ops, momentum 1 when
        ``training`` is fed False; in TF2 execution the kernel's own exponential
        average (its ``exponential_avg_factor``), assigned."""
        moving = self.moving_mean, self.moving_variance
        if not tf.compat.v1.executing_eagerly_outside_functions():
            momentum = _smart_cond(training, lambda: self.momentum, lambda: 1.0)
            momentum = tf.convert_to_tensor(momentum)  # float32, as TensorFlow's
            targets = mean, self._bessel(inputs, unbiased, remove=True)
            return [
                _moving_average(v, t, momentum)
                for v, t in zip(moving, targets, strict=True)
            ]
        factor = tf.constant(1.0 - self.momentum)

        def averaged():
            kept = 1.0 - factor, self._bessel(inputs, moving[1], remove=False)
            return (
                kept[0] * moving[0] + factor * mean,
                kept[0] * kept[1] + factor * unbiased,
            )

        moved = _smart_cond(training, averaged, lambda: tuple(map(tf.identity, moving)))
        targets = moved[0], self._bessel(inputs, moved[1], remove=True)
        return [
            _assign(v, t, "AssignNewValue") for v, t in zip(moving, targets, strict=True)
        ]

    def _bessel(self, inputs, variance, remove):
        """``variance`` without (or with) Bessel's correction, when TF's switch says."""
        if self._bessels_correction_test_only:
            return variance
        count = tf.cast(tf.size(inputs) / tf.size(variance), variance.dtype)
        one = tf.cast(1.0, variance.dtype)
        return variance * ((count - one) / count if remove else count / (count - one))

    def _batch_norm(self, inputs, training):
        """``tf.nn.moments`` and ``tf.nn.batch_normalization`` in float32 (or wider),
        with renorm, ghost batches and the adjustment: ``(outputs, updates)``."""
        dtype, inputs = inputs.dtype, at_least_float32(inputs)
        rank = inputs.shape.rank
        reduction = [i for i in range(rank) if i not in self._axes]
        if self.virtual_batch_size:
            del reduction[1]  # each ghost batch has its own statistics

        def broadcast(value):
            if (
                value is None
                or value.shape.rank == rank
                or reduction == list(range(rank - 1))
            ):
                return value
            return tf.reshape(value, self._shape)

        scale, offset = (
            broadcast(at_least_float32(v)) if v is not None else None
            for v in (self.gamma, self.beta)
        )
        updates = []
        if _static(training) is False:
            mean, variance = self.moving_mean, self.moving_variance
        else:
            if self.adjustment:
                adjust_scale, adjust_bias = self.adjustment(tf.shape(inputs))
                adjust_scale = _smart_cond(
                    training, lambda: adjust_scale, lambda: tf.ones_like(adjust_scale)
                )
                adjust_bias = _smart_cond(
                    training, lambda: adjust_bias, lambda: tf.zeros_like(adjust_bias)
                )
                scale, offset = _then(adjust_scale, adjust_bias, scale, offset)
            keepdims = bool(self.virtual_batch_size) or len(self._axes) > 1
            batch = tf.nn.moments(
                tf.cast(inputs, self.moving_mean.dtype), reduction, keepdims=keepdims
            )
            mean, variance = (
                _smart_cond(training, lambda b=b: b, lambda m=m: tf.convert_to_tensor(m))
                for b, m in zip(
                    batch, (self.moving_mean, self.moving_variance), strict=True
                )
            )
            new_mean, new_variance = mean, variance
            if self.virtual_batch_size:  # one move by the ghost batches' average
                new_mean, new_variance = (
                    tf.reduce_mean(v, axis=1, keepdims=True) for v in (mean, variance)
                )
            if self.renorm:
                r, d, new_mean, new_variance = self._renorm(
                    new_mean, new_variance, training
                )
                r = broadcast(tf.stop_gradient(r, name="renorm_r"))
                d = broadcast(tf.stop_gradient(d, name="renorm_d"))
                scale, offset = _then(r, d, scale, offset)
            updates = (
                self._fused_updates(inputs, mean, _unbiased(inputs, variance), training)
                if self.fused
                else [
                    self._mean_update(new_mean, training),
                    self._variance_update(new_variance, training),
                ]
            )
        mean, variance = (tf.cast(v, inputs.dtype) for v in (mean, variance))
        outputs = tf.nn.batch_normalization(
            inputs, broadcast(mean), broadcast(variance), offset, scale, self.epsilon
        )
        outputs = tf.cast(outputs, dtype)
        outputs.set_shape(inputs.shape)
        return outputs, updates

    def _mean_update(self, mean, training):
        return _smart_cond(
            training,
            lambda: _moving_average(self.moving_mean, mean, self.momentum),
            lambda: self.moving_mean,
        )

    def _variance_update(self, variance, training):
        def move():
            if not self.renorm:
                return _moving_average(self.moving_variance, variance, self.momentum)
            # the moving stddev moves, as in training; the variance follows it
            stddev = _moving_average(
                self.moving_stddev, tf.sqrt(variance + self.epsilon), self.momentum
            )
            return _assign(
                self.moving_variance,
                tf.nn.relu(stddev * stddev - self.epsilon),
                "AssignNewValue",
            )

        return _smart_cond(training, move, lambda: self.moving_variance)

    def _renorm(self, mean, variance, training):
        """Batch renormalization's ``(r, d, mean, variance)``: the correction from the
        renorm statistics before they move, and the batch moments once they have."""
        stddev = tf.sqrt(variance + self.epsilon)
        renorm_stddev = tf.maximum(self.renorm_stddev, tf.sqrt(self.epsilon))
        r = stddev / renorm_stddev
        d = (mean - self.renorm_mean) / renorm_stddev
        with tf.control_dependencies([r, d]):  # the corrections read them first
            mean, stddev = tf.identity(mean), tf.identity(stddev)
        rmin, rmax, dmax = (
            self.renorm_clipping.get(key) for key in ("rmin", "rmax", "dmax")
        )
        if rmin is not None:
            r = tf.maximum(r, rmin)
        if rmax is not None:
            r = tf.minimum(r, rmax)
        if dmax is not None:
            d = tf.minimum(tf.maximum(d, -dmax), dmax)
        r = _smart_cond(training, lambda: r, lambda: tf.ones_like(r))
        d = _smart_cond(training, lambda: d, lambda: tf.zeros_like(d))
        moved = [
            _smart_cond(
                training,
                lambda v=v, value=value: _moving_average(
                    v, tf.identity(value), self.renorm_momentum
                ),
                lambda v=v: tf.identity(v),
            )
            for v, value in ((self.renorm_mean, mean), (self.renorm_stddev, stddev))
        ]
        with tf.control_dependencies(moved):
            return r, d, tf.identity(mean), tf.identity(variance)


def _argument_problems(axis, momentum, epsilon, renorm, renorm_clipping, renorm_momentum,
                       virtual_batch_size, adjustment):  # fmt: skip
    """``(problem, fix)`` for each argument of the constructor; ``problem`` None if
    the argument is right."""
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    ints = axes and all(isinstance(a, int) and not isinstance(a, bool) for a in axes)
    extra = sorted(set(renorm_clipping or {}) - set(CLIPPING_KEYS)) if renorm else []
    return [
        (None if ints else f"expected axis to be an int or a list of ints, found {axis!r}",
         "pass e.g. axis=-1"),
        (probability_problem(momentum, zero=True, name="momentum"), "pass e.g. 0.99"),
        (probability_problem(renorm_momentum, zero=True, name="renorm_momentum"),
         "pass e.g. 0.99"),
        (number_problem(epsilon, 0, low_open=True, name="epsilon"), "pass e.g. 1e-3"),
        (f"expected renorm_clipping keys among {list(CLIPPING_KEYS)}, found {extra}"
         if extra else None, "leave the others out"),
        (None if virtual_batch_size is None
         else int_problem(virtual_batch_size, name="virtual_batch_size"),
         "pass a size that divides the batch, or None"),
        (None if virtual_batch_size is None or adjustment is None
         else "expected no adjustment with virtual_batch_size, found both",
         "leave one of them out"),
    ]  # fmt: skip


def _validate_axes(owner, axis, input_shape):
    """``axis`` as a list of non-negative axes of ``input_shape``, as TF checks it.

    Raises:
        ShapeError: the rank is unknown.
        ZooError: an axis out of range, or repeated.
    """
    rank = input_shape.rank
    if not rank:
        raise ShapeError(
            f"{owner}: expected an input of known rank (TensorFlow: Input has undefined "
            f"rank), found shape {input_shape}; give the input a static shape"
        )
    axes = [
        a + rank if a < 0 else a
        for a in (axis if isinstance(axis, (list, tuple)) else [axis])
    ]
    problem = None
    if any(not 0 <= a < rank for a in axes):
        problem = (
            f"expected 0 <= axis < inputs.rank (with inputs.rank={rank}) (TensorFlow: "
            f"Invalid value for `axis` argument), found axis={axis}"
        )
    elif len(set(axes)) != len(axes):
        problem = f"expected each axis once (TensorFlow: Duplicate axis), found axis={axis}"
    require(owner, problem, "pass the feature axes of the input, each once")
    return sorted(axes)


def _static(training):
    """``training`` as a Python bool when it is one or a constant, else None."""
    return training if isinstance(training, bool) else tf.get_static_value(training)


def _smart_cond(training, true_fn, false_fn):
    """``true_fn()`` or ``false_fn()`` when ``training`` is known, ``tf.cond`` otherwise."""
    known = _static(training)
    if known is None:
        return tf.cond(training, true_fn, false_fn)
    return true_fn() if known else false_fn()


def _unbiased(inputs, variance):
    """The batch ``variance`` of ``inputs`` with Bessel's correction, as the fused
    kernel gives it: ``count / (count - 1)`` times the biased one."""
    count = tf.cast(tf.size(inputs) / tf.size(variance), variance.dtype)
    return variance * (count / (count - 1.0))


def _then(scale, offset, then_scale, then_offset):
    """The transform ``x * scale + offset`` followed by ``* then_scale + then_offset``,
    as one ``(scale, offset)``."""
    if then_scale is not None:
        scale, offset = scale * then_scale, offset * then_scale
    if then_offset is not None:
        offset = offset + then_offset
    return scale, offset


def _moving_average(variable, value, momentum):
    """TensorFlow's ``AssignMovingAvg``: ``variable -= (variable - value) * (1 -
    momentum)`` (``1 - momentum`` in Python for a number, in float32 for a tensor);
    returns the assignment."""
    return _assign(variable, value, "AssignMovingAvg", momentum)


def _assign(variable, value, name, momentum=None):
    """``variable := value`` (``momentum`` None), or the moving average toward it,
    under the name scope ``name``, colocated with ``variable`` in a TF1 graph."""
    with (
        tf.name_scope(name) as scope,
        (
            contextlib.nullcontext()
            if tf.compat.v1.executing_eagerly_outside_functions()
            else tf.compat.v1.colocate_with(variable)
        ),
    ):
        value = tf.cast(value, variable.dtype.base_dtype)
        if momentum is None:
            return tf.compat.v1.assign(variable, value, name=scope)
        decay = tf.cast(
            tf.convert_to_tensor(1.0 - momentum, name="decay"), variable.dtype.base_dtype
        )
        return tf.compat.v1.assign_sub(variable, (variable - value) * decay, name=scope)


batch_normalization = function_form(
    BatchNormalization,
    training=True,
    last=("renorm", "renorm_clipping", "renorm_momentum", "fused", "virtual_batch_size",
          "adjustment"),
)  # fmt: skip

BatchNorm, batch_norm = BatchNormalization, batch_normalization  # TF's module has both
