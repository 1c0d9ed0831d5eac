"""Small TF1 programs written against ``tf.compat.v1.nn.rnn_cell``, run two ways.

Each program takes the cells' namespace ``R`` (TensorFlow's own legacy cells
under ``tf_keras``, or :mod:`layers.tf1.rnn_cell`), builds in the default graph
with TensorFlow's ``tf.compat.v1.nn`` RNN functions, and returns ``(feed,
outputs)`` as :func:`tests.tf1_programs.run` takes them.

Run as a script with ``TF_USE_LEGACY_KERAS=1``, it writes every program's
results by TensorFlow's legacy cells and their constructors' parameter names to
an ``.npz`` file, from one process::

    TF_USE_LEGACY_KERAS=1 python -m tests.tf1_rnn_programs reference.npz
"""

import sys

import numpy as np
import tensorflow as tf

from tests.tf1_programs import flat, inputs, parameters, run

v1 = tf.compat.v1
CELLS = ["RNNCell", "BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell",
         "MultiRNNCell", "DropoutWrapper", "ResidualWrapper", "DeviceWrapper"]  # fmt: skip


def named(prefix, structure):
    """``{"<prefix>_<i>": leaf}`` for the tensors of a nested output or state."""
    return {f"{prefix}_{i}": leaf for i, leaf in enumerate(tf.nest.flatten(structure))}


def dynamic(cell, x, scope, **arguments):
    """``dynamic_rnn``'s outputs and final state, named after ``scope``."""
    outputs, state = v1.nn.dynamic_rnn(cell, x, dtype=tf.float32, scope=scope, **arguments)
    return {**named(f"{scope}_outputs", outputs), **named(f"{scope}_state", state)}


def cells(R):
    """Each cell under ``dynamic_rnn`` (one under ``static_rnn``), with their options."""
    x, fx = inputs([3, 5, 4], 20)
    lengths = v1.placeholder(tf.int32, [3])
    outputs = {
        **dynamic(R.BasicRNNCell(6, activation=tf.nn.relu), x, "basic_rnn"),
        **dynamic(R.GRUCell(5, bias_initializer=v1.constant_initializer(0.3)), x, "gru"),
        **dynamic(R.BasicLSTMCell(4, forget_bias=0.5), x, "basic_lstm",
                  sequence_length=lengths),
        **dynamic(R.BasicLSTMCell(3, state_is_tuple=False), x, "basic_lstm_concat"),
        **dynamic(R.LSTMCell(4, use_peepholes=True, forget_bias=0.3), x, "lstm_diagonals"),
        **dynamic(R.LSTMCell(6, use_peepholes=True, cell_clip=0.2, num_proj=4,
                             proj_clip=0.1), x, "lstm_peepholes"),
        **dynamic(R.LSTMCell(5, num_proj=3, forget_bias=0.0, state_is_tuple=False,
                             activation=tf.nn.softsign), x, "lstm_concat"),
    }  # fmt: skip
    static, state = v1.nn.static_rnn(R.GRUCell(3), tf.unstack(x, axis=1), dtype=tf.float32)
    outputs.update(named("static", static), **named("static_state", state))
    return {x: fx, lengths: np.array([5, 2, 4], np.int32)}, outputs


def language_model(R, x, keep_prob, reuse=None):
    """Two LSTM layers with dropout, as TF1 language models were written."""
    with v1.variable_scope("lm", reuse=reuse):
        layers = [
            R.DropoutWrapper(R.BasicLSTMCell(6), output_keep_prob=keep_prob)
            for _ in range(2)
        ]  # fmt: skip
        return dynamic(R.MultiRNNCell(layers), x, "rnn")


def stacks(R):
    """MultiRNNCell of dropout-wrapped LSTMs, built again with reuse=True; the other
    wrappers; a MultiRNNCell of concatenated states; bidirectional and raw RNNs."""
    x, fx = inputs([2, 4, 3], 21)
    outputs = {f"train_{k}": v for k, v in language_model(R, x, 1.0).items()}
    shared = language_model(R, 2 * x, 1.0, reuse=True)
    outputs.update({f"shared_{k}": v for k, v in shared.items()})
    residual = R.ResidualWrapper(R.GRUCell(3))
    device = R.DeviceWrapper(R.BasicRNNCell(3), "/cpu:0")
    concatenated = R.MultiRNNCell(
        [R.BasicLSTMCell(3, state_is_tuple=False), R.GRUCell(2)], state_is_tuple=False
    )
    outputs.update(
        **dynamic(R.MultiRNNCell([residual, device]), x, "wrappers"),
        **dynamic(concatenated, x, "concatenated"),
    )
    both, states = v1.nn.bidirectional_dynamic_rnn(
        R.LSTMCell(3), R.GRUCell(2), x, dtype=tf.float32
    )
    outputs.update(named("bidirectional", both), **named("bidirectional_state", states))
    outputs.update(named("raw", raw(R.BasicLSTMCell(4), tf.transpose(x, [1, 0, 2]))))
    return {x: fx}, outputs


def raw(cell, x):
    """``raw_rnn`` over time-major ``x``: the outputs stacked, and the final state."""
    steps, batch = x.shape[0], x.shape[1]
    step_inputs = tf.TensorArray(tf.float32, size=steps).unstack(x)

    def loop(time, output, state, loop_state):
        if state is None:  # the call before the first step
            state = cell.zero_state(batch, tf.float32)
        finished = time >= steps
        next_input = tf.cond(
            finished,
            lambda: tf.zeros([batch, 3]),
            lambda: step_inputs.read(tf.minimum(time, steps - 1)),
        )
        return finished, next_input, state, output, None  # fmt: skip

    outputs, state, _ = v1.nn.raw_rnn(cell, loop)
    return outputs.stack(), state


def dropout(R):
    """Seeded dropout on inputs, outputs and states, per step under ``static_rnn``
    (a stateful random op inside ``dynamic_rnn``'s loop draws differently from run
    to run); variational, with and without input dropout."""
    v1.set_random_seed(7)
    x, fx = inputs([4, 5, 3], 22)
    per_step = R.DropoutWrapper(
        R.BasicLSTMCell(4), input_keep_prob=0.8, output_keep_prob=0.7,
        state_keep_prob=0.6, seed=5,
    )  # fmt: skip
    variational = R.DropoutWrapper(
        R.GRUCell(4), input_keep_prob=0.7, output_keep_prob=0.8, state_keep_prob=0.5,
        variational_recurrent=True, input_size=3, dtype=tf.float32, seed=9,
    )  # fmt: skip
    stacked = R.MultiRNNCell([
        R.DropoutWrapper(R.LSTMCell(3), state_keep_prob=0.5, variational_recurrent=True,
                         dtype=tf.float32, seed=11),
        R.LSTMCell(2),
    ])  # fmt: skip
    static, state = v1.nn.static_rnn(per_step, tf.unstack(x, axis=1), dtype=tf.float32)
    outputs = {
        **named("per_step", static),
        **named("per_step_state", state),
        **dynamic(variational, x, "variational"),
        **dynamic(stacked, x, "stacked"),
    }
    return {x: fx}, outputs


def gradients(R):
    """The LSTM cells' gradients with respect to the inputs, the initial state and
    every variable, under ``dynamic_rnn`` (with sequence lengths), ``MultiRNNCell``,
    ``bidirectional_dynamic_rnn`` and ``static_rnn``."""
    x, fx = inputs([3, 5, 4], 23)
    (c, fc), (h, fh) = inputs([3, 4], 24), inputs([3, 4], 25)
    lengths = v1.placeholder(tf.int32, [3])
    state = R.LSTMStateTuple(c, h)
    outputs = {
        **dynamic(R.BasicLSTMCell(4, forget_bias=0.5), x, "basic", initial_state=state,
                  sequence_length=lengths),
        **dynamic(R.BasicLSTMCell(4, state_is_tuple=False), x, "concat",
                  initial_state=tf.concat([c, h], 1)),
        **dynamic(R.LSTMCell(4, use_peepholes=True, forget_bias=0.3), x, "peepholes",
                  initial_state=state),
        **dynamic(R.LSTMCell(4, use_peepholes=True, cell_clip=0.2), x, "clipped"),
        **dynamic(R.MultiRNNCell([R.DropoutWrapper(R.BasicLSTMCell(4)),
                                  R.LSTMCell(3, use_peepholes=True)]), x, "stacked"),
    }  # fmt: skip
    both, states = v1.nn.bidirectional_dynamic_rnn(
        R.BasicLSTMCell(3), R.LSTMCell(2, use_peepholes=True), x, dtype=tf.float32
    )
    static = v1.nn.static_rnn(R.BasicLSTMCell(3), tf.unstack(x, axis=1), dtype=tf.float32)
    outputs.update(named("bidirectional", (both, states)), **named("static", static))
    loss = tf.add_n([tf.reduce_sum(tf.sin(2 * value)) for value in outputs.values()])
    variables = v1.trainable_variables()
    grads = tf.gradients(loss, [x, c, h, *variables])
    names = ["x", "c", "h", *(v.op.name for v in variables)]
    feed = {x: fx, c: fc, h: fh, lengths: np.array([5, 2, 4], np.int32)}
    return feed, {**outputs, **{f"grad_{n}": g for n, g in zip(names, grads, strict=True)}}


PROGRAMS = {program.__name__: program for program in (cells, stacks, dropout, gradients)}


def main(path):
    """Writes every program's results and the parameters of :data:`CELLS` (from
    ``tf.compat.v1.nn.rnn_cell``) to the ``.npz`` file ``path`` (a program's part
    read with :func:`tests.tf1_programs.unflat`, a cell's parameters under
    ``"parameters|<cell>|"``)."""
    results = {}
    for name, program in PROGRAMS.items():
        results.update(flat(run(program, v1.nn.rnn_cell), name))
    for name in CELLS:
        cell = getattr(v1.nn.rnn_cell, name)
        results[f"parameters|{name}|"] = np.array(parameters(cell))
    np.savez(path, **results)


if __name__ == "__main__":
    main(sys.argv[1])
