"""TF 1.15's RNN cells (``tensorflow/python/ops/rnn_cell_impl.py``, ``tf.nn.rnn_cell``)
on ``tf.compat.v1.get_variable``, and contrib's ``LayerNormBasicLSTMCell``.

Under Keras 3, ``tf.compat.v1.nn.rnn_cell.LSTMCell`` raises "`LSTMCell` is not
available with Keras 3". These are the cells again, with TF 1.15's signatures,
defaults, math and variable names, on :class:`layers.tf1.base.Layer`:

* a cell's variables live in ``<enclosing scope>/<cell name>``: under
  ``dynamic_rnn`` ``rnn/basic_lstm_cell/kernel``, in a ``MultiRNNCell``
  ``rnn/multi_rnn_cell/cell_0/lstm_cell/kernel``; ``reuse=True`` (or an enclosing
  ``variable_scope(..., reuse=True)``) shares them, and a cell object shares its
  own on every call;
* TensorFlow's ``tf.compat.v1.nn.dynamic_rnn``, ``static_rnn``,
  ``bidirectional_dynamic_rnn``, ``raw_rnn`` and ``static_bidirectional_rnn``
  take them as they took TF 1.15's (they ask for ``output_size``, ``state_size``,
  ``zero_state`` or ``get_initial_state``, and a call); contrib's stacked
  bidirectional functions are in :mod:`layers.tf1.rnn`;
* graph mode, or inside a sharing template (``zoo.share``).

``zoo.compat.install()`` makes ``tf.compat.v1.nn.rnn_cell`` this module.

Usage::

    from layers.tf1 import rnn_cell
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 35, 200])
        cells = [rnn_cell.DropoutWrapper(rnn_cell.BasicLSTMCell(200), output_keep_prob=0.5)
                 for _ in range(2)]                     # one cell object per layer
        outputs, state = tf.compat.v1.nn.dynamic_rnn(
            rnn_cell.MultiRNNCell(cells), x, dtype=tf.float32)
        # rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel, .../bias, cell_1/...
"""

import collections
import hashlib
import numbers

import tensorflow as tf

from layers.checks import (
    int_problem,
    int_value,
    number_problem,
    probability_problem,
    require,
)
from layers.errors import ShapeError, ZooError
from layers.tf1.base import UNSUPPORTED, ZEROS, Layer

__all__ = [
    "BasicLSTMCell", "BasicRNNCell", "DeviceWrapper", "DropoutWrapper", "GRUCell",
    "LSTMCell", "LSTMStateTuple", "LayerNormBasicLSTMCell", "MultiRNNCell", "RNNCell",
    "ResidualWrapper",
]  # fmt: skip

ONE_CELL_PER_LAYER = (
    "make one cell object per layer: MultiRNNCell([BasicLSTMCell(n) for _ in "
    "range(layers)]), not MultiRNNCell([BasicLSTMCell(n)] * layers); for a "
    "bidirectional RNN, one cell forward and another backward"
)


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """TF 1.15's ``LSTMStateTuple``: an LSTM's state, ``c`` (memory) then ``h`` (output)."""

    __slots__ = ()

    @property
    def dtype(self):
        """The dtype of ``c`` and ``h``.

        Raises:
            ZooError: they differ.
        """
        c, h = self
        if c.dtype != h.dtype:
            raise ZooError(
                f"LSTMStateTuple: expected c and h of one dtype, found {c.dtype.name} "
                f"and {h.dtype.name}; cast one to the other's dtype"
            )
        return c.dtype


def activation_function(activation):
    """``activation`` as a function: None is ``tanh``, a string a Keras name."""
    if activation is None:
        return tf.tanh
    if isinstance(activation, str):
        return tf.keras.activations.get(activation)
    return activation


def structure(value):
    """``value``'s nesting with each tensor as its shape, for messages."""
    return tf.nest.map_structure(lambda leaf: getattr(leaf, "shape", leaf), value)


def zeros(batch_size, size, dtype):
    """A ``[batch_size, *size]`` tensor of zeros, its shape as static as given."""
    return tf.zeros([batch_size, *tf.TensorShape(size).as_list()], dtype)


class RNNCell(Layer):
    """TF 1.15's ``tf.nn.rnn_cell.RNNCell``: ``(output, new_state) = cell(inputs, state)``.

    A subclass gives ``state_size`` (an int, a ``TensorShape`` or a nested tuple
    of them), ``output_size``, and ``call(inputs, state)``; its variables are
    made in ``build(input_shape)`` with :meth:`add_weight`, or in ``call`` with
    ``tf.compat.v1.get_variable`` (both under the cell's scope, shared on every
    later call), as in TF 1.15 (``LayerRNNCell`` and ``RNNCell``).

    Args:
        trainable: whether the variables join ``TRAINABLE_VARIABLES``.
        name: the cell's scope name; None: the class's name in snake case
            (``basic_lstm_cell``), made unique in the enclosing scope.
        dtype: the variables' dtype; None takes the input's.
        **kwargs: ``_reuse`` (what the cells' ``reuse`` argument passes on).
    """

    owns_variables_eagerly = False  # a cell may make variables in call (get_variable)

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        super().__init__(trainable, name, dtype, **kwargs)
        self._input_depth = None

    @property
    def name(self):
        """The cell's scope's last part once called, else its name or its class's."""
        return self._scope.name.split("/")[-1] if self._scope else self._base_name

    @property
    def state_size(self):
        """The size(s) of the state: an int, a ``TensorShape``, or a tuple of them."""
        raise NotImplementedError(f"{type(self).__name__} must define state_size")

    @property
    def output_size(self):
        """The size of the output: an int or a ``TensorShape``."""
        raise NotImplementedError(f"{type(self).__name__} must define output_size")

    def __call__(self, inputs, state, scope=None):
        """Runs the cell on ``inputs`` ([batch, depth]) from ``state``.

        Args:
            inputs: a ``[batch, depth]`` tensor.
            state: a tensor or nested tuple of the structure of ``state_size``.
            scope: None, or the exact variable scope for the cell's variables
                (on its first call).

        Returns:
            ``(output, new_state)``.

        Raises:
            ZooError: ``state`` is not of the structure of ``state_size``.
            ShapeError: a cell called again on inputs of another depth (the same
                cell object in a second layer).
        """
        if scope is not None and self._scope is None:
            with tf.compat.v1.variable_scope(scope) as captured:
                self._scope = captured
        self._check_state(state)
        shape = tf.TensorShape(getattr(inputs, "shape", None)).with_rank_at_least(1)
        depth = tf.compat.dimension_value(shape[-1])
        self._check_depth(depth)
        output, new_state = super().__call__(inputs, state)
        self._input_depth = self._input_depth or depth
        return output, new_state

    def _owner(self):
        """The cell's scope, or the one it would get, for messages."""
        if self._scope is not None:
            return self._scope.name
        enclosing = tf.compat.v1.get_variable_scope().name
        return f"{enclosing}/{self._base_name}" if enclosing else self._base_name

    def _check_state(self, state):
        try:
            tf.nest.assert_same_structure(self.state_size, state, check_types=False)
        except (TypeError, ValueError):
            raise ZooError(
                f"{self._owner()} ({type(self).__name__}): expected a state of the "
                f"structure of its state_size, {self.state_size}, found "
                f"{structure(state)}; pass cell.zero_state(batch_size, dtype), or "
                "the state this cell returned"
            ) from None

    def _check_depth(self, depth):
        if self._input_depth is None or depth in (None, self._input_depth):
            return
        enclosing = tf.compat.v1.get_variable_scope().name
        raise ShapeError(
            f"{self._scope.name} ({type(self).__name__}): expected inputs of depth "
            f"{self._input_depth}, as on its first call, found depth {depth} in "
            f"scope {enclosing!r}: the cell object was used again in a second layer, "
            f"whose weights it cannot share; {ONE_CELL_PER_LAYER} (TensorFlow 1.x: "
            "Attempt to reuse RNNCell with a different variable scope than its first "
            "use)"
        )

    def build(self, input_shape):
        """Makes the cell's variables (none here: a subclass may make them in call)."""

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        """The zero state, its batch size and dtype taken from ``inputs`` if given."""
        if inputs is not None:
            inputs = tf.convert_to_tensor(inputs)
            batch_size = tf.compat.dimension_value(inputs.shape[0]) or tf.shape(inputs)[0]
            dtype = inputs.dtype
        return self.zero_state(batch_size, dtype)

    def zero_state(self, batch_size, dtype):
        """Zeros of the structure of ``state_size``, each ``[batch_size, size]``.

        Args:
            batch_size: an int or a scalar int tensor.
            dtype: the state's dtype.

        Returns:
            A tensor, or a nested tuple of tensors, as ``state_size``.
        """
        with tf.name_scope(f"{type(self).__name__}ZeroState"):
            return tf.nest.map_structure(
                lambda size: zeros(batch_size, size, dtype), self.state_size
            )

    @property
    def trainable_weights(self):
        """The trainable variables under the cell's scope, in the order made."""
        return self._scope_variables(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES)

    @property
    def weights(self):
        """Every variable under the cell's scope, in the order made."""
        return self._scope_variables(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)

    @property
    def non_trainable_weights(self):
        """The variables under the cell's scope that are not trained."""
        trainable = self.trainable_weights
        return [v for v in self.weights if all(v is not t for t in trainable)]

    trainable_variables, non_trainable_variables = trainable_weights, non_trainable_weights
    variables = weights

    def _scope_variables(self, key):
        if self._scope is None:
            return []
        return tf.compat.v1.get_collection(key, scope=f"{self._scope.name}/")

    def _dimension_of(self, input_shape):
        """The static depth of [batch, depth] inputs (a ShapeError if unknown)."""
        return self._dimension(input_shape, 2, 1, "depth")


class UnitsCell(RNNCell):
    """A cell of ``num_units`` units and an activation: its state and output are
    ``num_units`` wide unless a subclass says otherwise.

    Raises:
        ZooError: ``num_units`` is not a positive int.
    """

    def __init__(self, num_units, activation, reuse, name=None, dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype, _reuse=reuse, **kwargs)
        problem = int_problem(num_units, name="num_units")
        require(self._base_name, problem, "pass e.g. num_units=128")
        self._num_units = int_value(num_units)
        self._activation = activation_function(activation)

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units


class BasicRNNCell(UnitsCell):
    """TF 1.15's ``BasicRNNCell``: output and new state ``tanh(W [inputs, state] + b)``.

    Variables ``kernel`` [depth + num_units, num_units] and ``bias`` (zeros).

    Args:
        num_units: the state's size.
        activation: None (``tanh``), a function, or a Keras activation's name.
        reuse: True shares the variables of ``<scope>/<name>``.
        name, dtype, **kwargs: as :class:`RNNCell`.
    """

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None,
                 **kwargs):  # fmt: skip
        super().__init__(num_units, activation, reuse, name, dtype, **kwargs)

    def build(self, input_shape):
        depth = self._dimension_of(input_shape)
        self._kernel = self.add_weight("kernel", [depth + self._num_units, self._num_units])
        self._bias = self.add_weight("bias", [self._num_units], initializer=ZEROS)

    def call(self, inputs, state):
        gate_inputs = tf.matmul(tf.concat([inputs, state], 1), self._kernel)
        output = self._activation(tf.nn.bias_add(gate_inputs, self._bias))
        return output, output


class GRUCell(UnitsCell):
    """TF 1.15's ``GRUCell`` (Cho et al., 2014).

    Variables ``gates/kernel`` [depth + num_units, 2 num_units], ``gates/bias``
    (ones unless ``bias_initializer``), ``candidate/kernel`` and
    ``candidate/bias`` (zeros unless ``bias_initializer``).

    Args:
        num_units: the state's size.
        activation: None (``tanh``), a function, or a Keras activation's name.
        reuse: True shares the variables of ``<scope>/<name>``.
        kernel_initializer, bias_initializer: None for TF 1.15's defaults.
        name, dtype, **kwargs: as :class:`RNNCell`.
    """

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None,
                 bias_initializer=None, name=None, dtype=None, **kwargs):  # fmt: skip
        super().__init__(num_units, activation, reuse, name, dtype, **kwargs)
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    def build(self, input_shape):
        depth, units = self._dimension_of(input_shape), self._num_units
        self._gate_kernel = self.add_weight(
            "gates/kernel", [depth + units, 2 * units], initializer=self._kernel_initializer
        )
        self._gate_bias = self.add_weight(
            "gates/bias", [2 * units],
            initializer=self._bias_initializer or tf.compat.v1.constant_initializer(1.0),
        )  # fmt: skip
        self._candidate_kernel = self.add_weight(
            "candidate/kernel", [depth + units, units], initializer=self._kernel_initializer
        )
        self._candidate_bias = self.add_weight(
            "candidate/bias", [units], initializer=self._bias_initializer or ZEROS
        )

    def call(self, inputs, state):
        gate_inputs = tf.matmul(tf.concat([inputs, state], 1), self._gate_kernel)
        reset, update = tf.split(tf.sigmoid(tf.nn.bias_add(gate_inputs, self._gate_bias)),
                                 2, axis=1)  # fmt: skip
        candidate = tf.matmul(tf.concat([inputs, reset * state], 1), self._candidate_kernel)
        candidate = self._activation(tf.nn.bias_add(candidate, self._candidate_bias))
        new_h = update * state + (1 - update) * candidate
        return new_h, new_h


class BasicLSTMCell(UnitsCell):
    """TF 1.15's ``BasicLSTMCell``: one matmul of ``[inputs, h]`` by ``kernel``
    [depth + num_units, 4 num_units], gates ``i, j, f, o`` in that order.

    Args:
        num_units: the size of ``c`` and ``h``.
        forget_bias: added to the forget gate's pre-activation.
        state_is_tuple: True: the state is ``LSTMStateTuple(c, h)``; False:
            ``c`` and ``h`` concatenated on axis 1.
        activation: None (``tanh``), a function, or a Keras activation's name.
        reuse: True shares the variables of ``<scope>/<name>``.
        name, dtype, **kwargs: as :class:`RNNCell`.
    """

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None, **kwargs):  # fmt: skip
        super().__init__(num_units, activation, reuse, name, dtype, **kwargs)
        require(self._base_name, number_problem(forget_bias, name="forget_bias"),
                "pass e.g. forget_bias=1.0")  # fmt: skip
        self._forget_bias, self._state_is_tuple = forget_bias, state_is_tuple

    @property
    def state_size(self):
        units = self._num_units
        return LSTMStateTuple(units, units) if self._state_is_tuple else 2 * units

    def build(self, input_shape):
        depth, units = self._dimension_of(input_shape), self._num_units
        self._kernel = self.add_weight("kernel", [depth + units, 4 * units])
        self._bias = self.add_weight("bias", [4 * units], initializer=ZEROS)

    def call(self, inputs, state):
        c, h = state if self._state_is_tuple else tf.split(state, 2, axis=1)
        gate_inputs = tf.matmul(tf.concat([inputs, h], 1), self._kernel)
        i, j, f, o = tf.split(tf.nn.bias_add(gate_inputs, self._bias), 4, axis=1)
        forget_bias = tf.constant(self._forget_bias, dtype=f.dtype)
        new_c = c * tf.sigmoid(f + forget_bias) + tf.sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * tf.sigmoid(o)
        return new_h, lstm_state(new_c, new_h, self._state_is_tuple)


def lstm_state(c, h, state_is_tuple):
    """``LSTMStateTuple(c, h)``, or ``[c, h]`` concatenated on axis 1."""
    return LSTMStateTuple(c, h) if state_is_tuple else tf.concat([c, h], 1)


class LSTMCell(UnitsCell):
    """TF 1.15's ``LSTMCell``: :class:`BasicLSTMCell` with optional peepholes
    (``w_f_diag``, ``w_i_diag``, ``w_o_diag``), clipping of ``c``, and a
    projection of the output (``projection/kernel`` [num_units, num_proj]).

    Args:
        num_units: the size of ``c``.
        use_peepholes: diagonal peephole connections from ``c`` to the gates.
        cell_clip: None, or clip ``c`` to ``[-cell_clip, cell_clip]``.
        initializer: of the kernel, peepholes and projection (None: the scope's).
        num_proj: None, or the size of the projected output ``h``.
        proj_clip: None, or clip the projection to ``[-proj_clip, proj_clip]``.
        num_unit_shards, num_proj_shards: None (TF 1.15 deprecated them).
        forget_bias: added to the forget gate's pre-activation.
        state_is_tuple: True: ``LSTMStateTuple(c, h)``; False: concatenated.
        activation: None (``tanh``), a function, or a Keras activation's name.
        reuse: True shares the variables of ``<scope>/<name>``.
        name, dtype, **kwargs: as :class:`RNNCell`.

    Raises:
        ZooError: ``num_unit_shards`` or ``num_proj_shards`` given.
    """

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None,
                 num_proj=None, proj_clip=None, num_unit_shards=None, num_proj_shards=None,
                 forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None,
                 name=None, dtype=None, **kwargs):  # fmt: skip
        super().__init__(num_units, activation, reuse, name, dtype, **kwargs)
        owner = self._base_name
        require(owner, None if num_proj is None else int_problem(num_proj, name="num_proj"),
                "pass e.g. num_proj=64, or None")  # fmt: skip
        shards = {"num_unit_shards": num_unit_shards, "num_proj_shards": num_proj_shards}
        given = sorted(name for name, value in shards.items() if value is not None)
        require(owner, f"expected no {given}, found {shards}" if given else None,
                f"TF 1.15 deprecated them; {UNSUPPORTED}")  # fmt: skip
        self._use_peepholes, self._initializer = use_peepholes, initializer
        self._cell_clip, self._proj_clip = cell_clip, proj_clip
        self._num_proj = int_value(num_proj)
        self._forget_bias, self._state_is_tuple = forget_bias, state_is_tuple

    @property
    def state_size(self):
        width = self._num_proj or self._num_units
        if self._state_is_tuple:
            return LSTMStateTuple(self._num_units, width)
        return self._num_units + width

    @property
    def output_size(self):
        return self._num_proj or self._num_units

    def build(self, input_shape):
        depth, units = self._dimension_of(input_shape), self._num_units
        init = self._initializer
        self._kernel = self.add_weight(
            "kernel", [depth + self.output_size, 4 * units], initializer=init
        )
        self._bias = self.add_weight("bias", [4 * units], initializer=ZEROS)
        if self._use_peepholes:
            self._peepholes = [
                self.add_weight(f"w_{gate}_diag", [units], initializer=init)
                for gate in "fio"
            ]
        if self._num_proj:
            self._projection = self.add_weight(
                "projection/kernel", [units, self._num_proj], initializer=init
            )

    def call(self, inputs, state):
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev, m_prev = tf.split(state, [self._num_units, self.output_size], axis=1)
        lstm_matrix = tf.matmul(tf.concat([inputs, m_prev], 1), self._kernel)
        i, j, f, o = tf.split(tf.nn.bias_add(lstm_matrix, self._bias), 4, axis=1)
        f = f + self._forget_bias
        if self._use_peepholes:
            w_f, w_i, w_o = self._peepholes
            f, i = f + w_f * c_prev, i + w_i * c_prev
        c = tf.sigmoid(f) * c_prev + tf.sigmoid(i) * self._activation(j)
        if self._cell_clip is not None:
            c = tf.clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            o = o + w_o * c
        m = tf.sigmoid(o) * self._activation(c)
        if self._num_proj:
            m = tf.matmul(m, self._projection)
            if self._proj_clip is not None:
                m = tf.clip_by_value(m, -self._proj_clip, self._proj_clip)
        return m, lstm_state(c, m, self._state_is_tuple)


class LayerNormBasicLSTMCell(UnitsCell):
    """TF 1.15 contrib's ``LayerNormBasicLSTMCell`` (Ba et al., 2016): a basic LSTM
    whose gates and new ``c`` are layer-normalized, with recurrent dropout on
    the candidate (Semeniuta et al., 2016).

    Variables ``kernel`` [depth + num_units, 4 num_units] (and ``bias`` without
    layer norm); per normalized part (``input``, ``transform``, ``forget``,
    ``output``, ``state``) ``<part>/gamma`` and ``<part>/beta``.

    Args:
        num_units: the size of ``c`` and ``h``.
        forget_bias: added to the forget gate's pre-activation.
        input_size: unused (TF 1.15 deprecated it).
        activation: the activation of the candidate and of ``c``.
        layer_norm: False: a plain LSTM with a bias.
        norm_gain, norm_shift: the initial ``gamma`` and ``beta``.
        dropout_keep_prob: keep probability (a float or a scalar tensor) of the
            candidate.
        dropout_prob_seed: the dropout's seed.
        reuse: True shares the variables of ``<scope>/<name>``.
    """

    def __init__(self, num_units, forget_bias=1.0, input_size=None, activation=tf.tanh,
                 layer_norm=True, norm_gain=1.0, norm_shift=0.0, dropout_keep_prob=1.0,
                 dropout_prob_seed=None, reuse=None):  # fmt: skip
        super().__init__(num_units, activation, reuse)
        self._forget_bias, self._layer_norm = forget_bias, layer_norm
        self._norm_gain, self._norm_shift = norm_gain, norm_shift
        self._keep_prob, self._seed = dropout_keep_prob, dropout_prob_seed

    @property
    def state_size(self):
        return LSTMStateTuple(self._num_units, self._num_units)

    def build(self, input_shape):
        depth, units = self._dimension_of(input_shape), self._num_units
        self._kernel = self.add_weight("kernel", [depth + units, 4 * units])
        if not self._layer_norm:
            self._bias = self.add_weight("bias", [4 * units])
            return
        gain = tf.compat.v1.constant_initializer(self._norm_gain)
        shift = tf.compat.v1.constant_initializer(self._norm_shift)
        self._norms = {
            part: (self.add_weight(f"{part}/gamma", [units], initializer=gain),
                   self.add_weight(f"{part}/beta", [units], initializer=shift))
            for part in ("input", "transform", "forget", "output", "state")
        }  # fmt: skip

    def _norm(self, values, part):
        gamma, beta = self._norms[part]
        mean, variance = tf.nn.moments(values, [1], keepdims=True)
        return tf.nn.batch_normalization(values, mean, variance, beta, gamma, 1e-12)

    def call(self, inputs, state):
        c, h = state
        gates = tf.matmul(tf.concat([inputs, h], 1), self._kernel)
        if not self._layer_norm:
            gates = tf.nn.bias_add(gates, self._bias)
        i, j, f, o = tf.split(gates, 4, axis=1)
        if self._layer_norm:
            i, j, f, o = (
                self._norm(i, "input"), self._norm(j, "transform"),
                self._norm(f, "forget"), self._norm(o, "output"),
            )  # fmt: skip
        g = self._activation(j)
        if not isinstance(self._keep_prob, float) or self._keep_prob < 1:
            g = tf.nn.dropout(g, rate=1 - self._keep_prob, seed=self._seed)
        new_c = c * tf.sigmoid(f + self._forget_bias) + tf.sigmoid(i) * g
        if self._layer_norm:
            new_c = self._norm(new_c, "state")
        new_h = self._activation(new_c) * tf.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)


class MultiRNNCell(RNNCell):
    """TF 1.15's ``MultiRNNCell``: cells stacked, each under ``cell_<i>``, the output
    of one the input of the next.

    Args:
        cells: a list of cells, one object per layer.
        state_is_tuple: True: the state is a tuple of the cells' states; False:
            their states concatenated on axis 1 (each cell's an int size).

    Raises:
        ZooError: no cells, or not a list or tuple.
    """

    def __init__(self, cells, state_is_tuple=True):
        super().__init__()
        owner = self._base_name
        given = isinstance(cells, (list, tuple))
        require(owner, None if given and cells else f"expected a non-empty list of "
                f"cells, found {cells!r}", "pass e.g. [BasicLSTMCell(128) for _ in "
                "range(2)]")  # fmt: skip
        if not state_is_tuple:  # as TF 1.15: state_size is read only for this check
            sizes = [cell.state_size for cell in cells]
            require(
                owner,
                None if all(isinstance(s, int) for s in sizes) else
                f"expected cells whose state_size is an int (state_is_tuple=False), "
                f"found {sizes}",
                "pass state_is_tuple=True, or cells built with state_is_tuple=False",
            )  # fmt: skip
        if len({id(cell) for cell in cells}) < len(cells):
            tf.compat.v1.logging.warning(
                "At least two cells provided to MultiRNNCell are the same object and "
                "will share weights."
            )
        self._cells, self._state_is_tuple = list(cells), state_is_tuple

    @property
    def state_size(self):
        sizes = tuple(cell.state_size for cell in self._cells)
        return sizes if self._state_is_tuple else sum(sizes)

    @property
    def output_size(self):
        return self._cells[-1].output_size

    def zero_state(self, batch_size, dtype):
        if not self._state_is_tuple:
            return super().zero_state(batch_size, dtype)
        with tf.name_scope(f"{type(self).__name__}ZeroState"):
            return tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)

    def call(self, inputs, state):
        if not self._state_is_tuple:
            state = tf.split(state, [cell.state_size for cell in self._cells], axis=1)
        new_states = []
        for i, (cell, cell_state) in enumerate(zip(self._cells, state, strict=True)):
            with tf.compat.v1.variable_scope(f"cell_{i}"):
                inputs, new_state = cell(inputs, cell_state)
            new_states.append(new_state)
        return inputs, tuple(new_states) if self._state_is_tuple else tf.concat(
            new_states, 1
        )


class RNNCellWrapper(RNNCell):
    """A cell around another: its sizes, zero state and variables; no scope of its own.

    Args:
        cell: the wrapped cell.

    Raises:
        ZooError: ``cell`` is not a cell (no ``output_size``, ``state_size``,
            ``zero_state`` or call).
    """

    def __init__(self, cell, **kwargs):
        super().__init__(**kwargs)
        missing = [
            name for name in ("output_size", "state_size", "zero_state", "__call__")
            if not hasattr(cell, name)
        ]  # fmt: skip
        problem = f"expected an RNN cell, found {cell!r} without {missing}"
        require(self._base_name, problem if missing else None, "wrap e.g. LSTMCell(128)")
        self.cell = cell

    @property
    def wrapped_cell(self):
        """The wrapped cell."""
        return self.cell

    @property
    def state_size(self):
        return self.cell.state_size

    @property
    def output_size(self):
        return self.cell.output_size

    def zero_state(self, batch_size, dtype):
        with tf.name_scope(f"{type(self).__name__}ZeroState"):
            return self.cell.zero_state(batch_size, dtype)

    @property
    def trainable_weights(self):
        return self.cell.trainable_weights

    @property
    def weights(self):
        return self.cell.weights

    trainable_variables, variables = trainable_weights, weights

    def __call__(self, inputs, state, scope=None):
        """Runs the wrapped cell with the wrapper's change (see the class)."""
        return self._call_wrapped_cell(inputs, state, scope)

    def _call_wrapped_cell(self, inputs, state, scope):
        raise NotImplementedError


class ResidualWrapper(RNNCellWrapper):
    """TF 1.15's ``ResidualWrapper``: the output is ``residual_fn(inputs, output)``
    (default: their sum, input and output of one structure and shape).

    Args:
        cell: the wrapped cell.
        residual_fn: None, or ``(inputs, outputs) -> outputs``.
    """

    def __init__(self, cell, residual_fn=None, **kwargs):
        super().__init__(cell, **kwargs)
        self._residual_fn = residual_fn or self._sum

    def _sum(self, inputs, outputs):
        try:
            tf.nest.assert_same_structure(inputs, outputs)
            tf.nest.map_structure(
                lambda i, o: i.shape.assert_is_compatible_with(o.shape), inputs, outputs
            )
        except (TypeError, ValueError):
            raise ShapeError(
                f"{self._base_name}: expected the cell's output of the structure and "
                f"shape of its input, found input {structure(inputs)} and output "
                f"{structure(outputs)}; give the cell as many units as the input is "
                "wide, or pass residual_fn"
            ) from None
        return tf.nest.map_structure(lambda i, o: i + o, inputs, outputs)

    def _call_wrapped_cell(self, inputs, state, scope):
        outputs, new_state = self.cell(inputs, state, scope=scope)
        return self._residual_fn(inputs, outputs), new_state


class DeviceWrapper(RNNCellWrapper):
    """TF 1.15's ``DeviceWrapper``: the cell and its zero state on ``device``.

    Args:
        cell: the wrapped cell.
        device: a device string or function, as ``tf.compat.v1.device`` takes.
    """

    def __init__(self, cell, device, **kwargs):
        super().__init__(cell, **kwargs)
        self._device = device

    def zero_state(self, batch_size, dtype):
        with tf.compat.v1.device(self._device):
            return super().zero_state(batch_size, dtype)

    def _call_wrapped_cell(self, inputs, state, scope):
        with tf.compat.v1.device(self._device):
            return self.cell(inputs, state, scope=scope)


def keeps_all_but_memory(substate):
    """TF 1.15's default state filter: no dropout on an ``LSTMStateTuple``'s ``c``."""
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return not isinstance(substate, tf.TensorArray)


def shallow_filter(visitor, value):
    """TF's ``get_traverse_shallow_structure``: ``value``'s nesting down to where
    ``visitor`` answers a bool (True: drop out there)."""
    answer = visitor(value)
    if not tf.nest.is_nested(value):
        return answer
    if isinstance(answer, bool):
        if not answer:
            return False
        answer = [True] * len(value)
    parts = [shallow_filter(visitor, child) if keep else False
             for keep, child in zip(answer, value, strict=True)]  # fmt: skip
    return rebuild(value, parts)


def rebuild(like, parts):
    """``parts`` in the sequence type of ``like`` (a named tuple, tuple or list)."""
    if hasattr(like, "_fields"):
        return type(like)(*parts)
    return type(like)(parts)


def map_leaves(shallow, function, *values):
    """``function(index, leaf, *subtrees)`` on each leaf of ``shallow`` (counted in
    order), ``values`` cut at ``shallow``'s leaves; TF's enumerated
    ``map_structure_up_to``."""
    counter = iter(range(1 << 30))

    def visit(node, *subtrees):
        if not tf.nest.is_nested(node):
            return function(next(counter), node, *subtrees)
        parts = [visit(*level) for level in zip(node, *subtrees, strict=True)]
        return rebuild(node, parts)

    return visit(shallow, *values)


class DropoutWrapper(RNNCellWrapper):
    """TF 1.15's ``DropoutWrapper``: dropout on the cell's inputs, output and state.

    With ``variational_recurrent``, one mask per ``session.run`` for every step
    (Gal and Ghahramani, 2016), drawn when the wrapper is made.

    Args:
        cell: the wrapped cell.
        input_keep_prob, output_keep_prob, state_keep_prob: a float in [0, 1]
            (1: no dropout there) or a scalar tensor.
        variational_recurrent: one mask for all steps.
        input_size: with ``variational_recurrent`` and input dropout, the
            input's depth (a ``TensorShape`` or nested tuple of them).
        dtype: with ``variational_recurrent``, the dtype of the masks.
        seed: None, or the seed the masks' seeds are derived from.
        dropout_state_filter_visitor: None, or a function from a part of the
            state to a bool (or a structure of bools) saying where to drop out;
            None: everywhere but an ``LSTMStateTuple``'s ``c``.

    Raises:
        ZooError: a keep probability outside [0, 1]; ``variational_recurrent``
            without ``dtype``, or with input dropout and without ``input_size``.
    """

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0,
                 state_keep_prob=1.0, variational_recurrent=False, input_size=None,
                 dtype=None, seed=None, dropout_state_filter_visitor=None,
                 **kwargs):  # fmt: skip
        super().__init__(cell, dtype=dtype, **kwargs)
        owner = self._base_name
        self._state_filter = dropout_state_filter_visitor or keeps_all_but_memory
        self._keep = {
            part: self._keep_probability(part, value)
            for part, value in (("input", input_keep_prob), ("state", state_keep_prob),
                                ("output", output_keep_prob))
        }  # fmt: skip
        self._seed, self._noise = seed, dict.fromkeys(self._keep)
        if not variational_recurrent:
            return
        problem = "expected dtype with variational_recurrent=True, found None"
        require(owner, None if dtype else problem, "pass e.g. dtype=tf.float32")
        sizes = [("state", cell.state_size), ("output", cell.output_size)]
        if self._drops("input"):
            require(owner, None if input_size is not None else "expected input_size "
                    "with variational_recurrent=True and input dropout, found None",
                    "pass the input's depth, e.g. input_size=200")  # fmt: skip
            sizes.insert(0, ("input", input_size))
        for part, size in sizes:
            self._noise[part] = map_leaves(
                size,
                lambda index, leaf, part=part: tf.random.uniform(
                    [1, *tf.TensorShape(leaf).as_list()],
                    seed=self._leaf_seed(part, index), dtype=dtype,
                ),
            )  # fmt: skip

    def _keep_probability(self, part, value):
        """A constant keep probability as a float, checked; a tensor as it is."""
        constant = tf.get_static_value(tf.convert_to_tensor(value))
        if constant is None:
            return value
        require(self._base_name, probability_problem(float(constant), zero=True,
                name=f"{part}_keep_prob"), f"pass e.g. {part}_keep_prob=0.5")  # fmt: skip
        return float(constant)

    def _drops(self, part):
        keep = self._keep[part]
        return not isinstance(keep, numbers.Real) or keep < 1

    def _leaf_seed(self, part, index):
        """TF 1.15's seed of a part's ``index``-th mask, from ``seed``."""
        if self._seed is None:
            return None
        text = f"{self._seed}{part}_{index}".encode()
        return int(hashlib.md5(text).hexdigest()[:8], 16) & 0x7FFFFFFF

    def _dropout(self, part, values, shallow=None):
        keep, noise = self._keep[part], self._noise[part]

        def drop(index, selected, value, *mask):
            if isinstance(selected, bool) and not selected:
                return value
            if noise is None:
                seed = self._leaf_seed(part, index)
                return tf.nn.dropout(value, rate=1 - keep, seed=seed)
            dropped = tf.divide(value, keep) * tf.floor(keep + mask[0])
            dropped.set_shape(value.shape)
            return dropped

        shallow = values if shallow is None else shallow
        return map_leaves(shallow, drop, values, *([] if noise is None else [noise]))

    def _call_wrapped_cell(self, inputs, state, scope):
        if self._drops("input"):
            inputs = self._dropout("input", inputs)
        output, new_state = self.cell(inputs, state, scope=scope)
        if self._drops("state"):
            shallow = shallow_filter(self._state_filter, new_state)
            new_state = self._dropout("state", new_state, shallow)
        if self._drops("output"):
            output = self._dropout("output", output)
        return output, new_state
