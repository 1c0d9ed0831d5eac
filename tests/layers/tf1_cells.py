"""What the seq2seq tests decode with: the numpy step of ``BasicRNNCell``, and a cell
that is no ``RNNCell``, only TF 1.15's protocol (``state_size``, ``output_size``,
``zero_state``, a call)."""

import numpy as np
import tensorflow as tf

v1 = tf.compat.v1


def basic_rnn_step(kernel, bias, inputs, state):
    """The numpy step of ``BasicRNNCell``: ``(output, state)``, both
    ``tanh([inputs, state] @ kernel + bias)``."""
    output = np.tanh(np.concatenate([inputs, state], 1) @ kernel + bias)
    return output, output


class IdentityCell:
    """No variables: the output is the input, the state a [batch, 1] counter."""

    state_size = 1

    def __init__(self, width):
        self.output_size = width

    def zero_state(self, batch_size, dtype):
        return tf.zeros([batch_size, 1], dtype)

    def __call__(self, inputs, state):
        return inputs, state + 1


def values(session, scope=""):
    """``{variable name without :0: value}`` of the global variables under ``scope``."""
    found = [v for v in v1.global_variables() if v.name.startswith(scope)]
    return dict(zip([v.name[:-2] for v in found], session.run(found), strict=True))
