"""A GRU classifier unrolled the TF1 way: one cell's variables read at every time step.

Images [batch, 784] are read as ``n_steps`` rows (28 rows of 28 pixels). One
GRU cell, two :class:`layers.Dense` layers on ``[x_t, h]``, is built at the
first step under ``<scope>/cell`` and applied again at every later step with
``reuse=True``; the ops of step t sit under the name scope ``<scope>/step_tt/``,
so ``python -m zoo inspect rnn_classifier`` shows each of the cell's four
variables read at all 28 steps. A softmax read-out classifies the last state.
``shared=False`` is the ablation: a cell of its own at every step
(``<scope>/cell_01`` ... ``<scope>/cell_28``), 28 times the cell's parameters.

The cell is the GRU of Cho et al. (2014), as ``tf.compat.v1.nn.rnn_cell.GRUCell``
computes it::

    r, z = split(sigmoid([x_t, h] @ W_gates + b_gates))     # b_gates starts at 1
    c = tanh([x_t, r * h] @ W_candidate + b_candidate)
    h' = z * h + (1 - z) * c                                # as c + z * (h - c)

Usage::

    net = rnn_classifier(x, y, scope="rnn")          # rnn/cell/gates/W ... rnn/W_RO
    train = tf.compat.v1.train.AdamOptimizer(1e-3).minimize(net.loss)
    net_eval = rnn_classifier(x_test, y_test, scope="rnn", reuse=True)  # nothing new
"""

import dataclasses

import tensorflow as tf

from layers import Dense, ReadOut
from layers.checks import int_problem
from layers.dense import check_size
from layers.errors import ShapeError
from zoo.models.parts import builder_scope, classifier_head, input_width


@dataclasses.dataclass(frozen=True)
class GRUStep:
    """One application of :func:`gru_step`.

    Attributes:
        state: the new hidden state [batch, n_hidden].
        gates: the :class:`layers.Dense` of the reset and update gates.
        candidate: the :class:`layers.Dense` of the candidate state.
        scope_name: the full variable scope of the cell.
    """

    state: tf.Tensor
    gates: Dense
    candidate: Dense
    scope_name: str

    @property
    def params(self):
        """The cell's variables: gates W, b, candidate W, b."""
        return [*self.gates.params, *self.candidate.params]


@dataclasses.dataclass(frozen=True)
class Recurrent:
    """What :func:`rnn_classifier` builds.

    Attributes:
        y_pred: class probabilities [batch, n_classes].
        logits: read-out before the softmax.
        loss: cross-entropy summed over the batch (as :func:`zoo.mlp_classifier`).
        accuracy: fraction of argmax(y_pred) == argmax(y) (a scalar).
        states: the hidden state after each step, ``n_steps`` tensors [batch, n_hidden].
        steps: the :class:`GRUStep` of each time step (one cell's variables in
            all of them when shared).
        readout: the :class:`layers.ReadOut` on the last state.
        scope_name: the full variable scope.
    """

    y_pred: tf.Tensor
    logits: tf.Tensor
    loss: tf.Tensor
    accuracy: tf.Tensor
    states: tuple
    steps: tuple
    readout: ReadOut
    scope_name: str


def gru_step(x, h, n_in, n_hidden):
    """Applies a GRU cell under the current variable scope; returns a :class:`GRUStep`.

    Variables ``gates/W`` [n_in + n_hidden, 2 n_hidden], ``gates/b`` (starting at
    1, so the cell starts by keeping its state), ``candidate/W`` [n_in + n_hidden,
    n_hidden] and ``candidate/b``; made or reused as the scope's ``reuse`` says.

    Args:
        x: the step's input [batch, n_in].
        h: the previous state [batch, n_hidden].
        n_in: input width.
        n_hidden: state width.
    """
    glorot = tf.compat.v1.glorot_uniform_initializer()
    width = n_in + n_hidden
    x = tf.cast(x, h.dtype)  # the policy's compute dtype from the second step on
    gates = Dense(
        tf.concat([x, h], 1),
        width,
        2 * n_hidden,
        scope="gates",
        activation=tf.sigmoid,
        w_init=glorot,
        b_init=tf.compat.v1.ones_initializer(),
    )
    reset, update = tf.split(gates.output, 2, axis=1)
    # Under a precision policy the gates compute in bfloat16/float16: so does the rest.
    x, h = (tf.cast(t, gates.output.dtype) for t in (x, h))
    candidate = Dense(
        tf.concat([x, reset * h], 1),
        width,
        n_hidden,
        scope="candidate",
        activation=tf.tanh,
        w_init=glorot,
    )
    # z * h + (1 - z) * c, written with one product (no 1 - z) and fewer gradient ops:
    # 1.5x the steps/s under XLA, a little more without (docs/rnn.md).
    state = candidate.output + update * (h - candidate.output)
    scope_name = tf.compat.v1.get_variable_scope().name
    return GRUStep(state=state, gates=gates, candidate=candidate, scope_name=scope_name)


def rnn_classifier(x, y, scope="rnn", reuse=False, n_hidden=128, n_steps=28, shared=True):
    """Reads each image as ``n_steps`` rows through a GRU and classifies the last state.

    Args:
        x: images [batch, n_pixels], n_pixels known statically and a multiple of
            ``n_steps`` (784 = 28 rows of 28 pixels).
        y: one-hot labels [batch, n_classes].
        scope: variable scope of the model.
        reuse: False, True or ``tf.compat.v1.AUTO_REUSE``.
        n_hidden: width of the state.
        n_steps: time steps; each reads ``n_pixels // n_steps`` pixels.
        shared: one cell (``<scope>/cell``) for every step; False gives step t
            its own (``<scope>/cell_tt``, t from 01).

    Returns:
        :class:`Recurrent`; the read-out is ``<scope>/W_RO``, ``<scope>/b_RO``.

    Raises:
        ShapeError: ``n_hidden`` or ``n_steps`` is not a positive int, or
            ``n_steps`` does not divide the image width.
        ScopeError, EagerError: as :func:`zoo.autoencoder`.
    """
    with builder_scope(scope, reuse) as var_scope:
        owner = var_scope.name
        width = input_width(owner, x, "x")
        n_classes = input_width(owner, y, "one-hot labels y")
        check_size(owner, n_hidden=n_hidden)
        if int_problem(n_steps) or width % n_steps:
            raise ShapeError(
                f"{owner}: expected n_steps, a positive int that divides the {width} "
                f"pixels of an image into rows, found n_steps={n_steps!r}; pass e.g. "
                "n_steps=28 (rows of 28 pixels)"
            )
        n_in = width // n_steps
        rows = tf.unstack(tf.reshape(x, [-1, n_steps, n_in]), axis=1)
        h = tf.zeros([tf.shape(x)[0], n_hidden], x.dtype)
        steps, states = [], []
        for t, row in enumerate(rows, start=1):
            cell = "cell" if shared else f"cell_{t:02d}"
            again = True if shared and t > 1 else None
            with (
                tf.name_scope(f"step_{t:02d}"),
                tf.compat.v1.variable_scope(cell, reuse=again),
            ):
                step = gru_step(row, h, n_in, n_hidden)
            steps.append(step)
            states.append(step.state)
            h = step.state
        readout = ReadOut(h, n_hidden, n_classes, names=("W_RO", "b_RO"))
        head = classifier_head(readout, y, [], owner)
    return Recurrent(
        y_pred=head.y_pred,
        logits=head.logits,
        loss=head.loss,
        accuracy=head.accuracy,
        states=tuple(states),
        steps=tuple(steps),
        readout=readout,
        scope_name=owner,
    )
