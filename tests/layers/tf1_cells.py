"""A minimal RNN cell with TF 1.15's protocol (``state_size``, ``output_size``,
``zero_state``, ``__call__(inputs, state)`` in its own variable scope), and its numpy
step: what the seq2seq tests decode with, independent of the code under test."""

import numpy as np
import tensorflow as tf

v1 = tf.compat.v1


class ElmanCell:
    """``h' = tanh([x, h] @ kernel + bias)``, output ``h'``; variables
    ``<scope>/basic_rnn_cell/kernel`` and ``bias`` made on the first call."""

    def __init__(self, num_units):
        self.num_units, self._scope = num_units, None

    @property
    def state_size(self):
        return self.num_units

    @property
    def output_size(self):
        return self.num_units

    def zero_state(self, batch_size, dtype):
        return tf.zeros([batch_size, self.num_units], dtype)

    def __call__(self, inputs, state):
        opened = (v1.variable_scope(self._scope, reuse=True) if self._scope else
                  v1.variable_scope(None, default_name="basic_rnn_cell"))  # fmt: skip
        with opened as scope:
            self._scope = scope
            width = inputs.shape[-1] + self.num_units
            kernel = v1.get_variable("kernel", [width, self.num_units])
            bias = v1.get_variable("bias", [self.num_units],
                                   initializer=v1.random_normal_initializer())  # fmt: skip
            output = tf.tanh(tf.matmul(tf.concat([inputs, state], 1), kernel) + bias)
        return output, output


def elman_step(kernel, bias, inputs, state):
    """The numpy step of :class:`ElmanCell`: ``(output, state)``."""
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
