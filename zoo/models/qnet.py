"""The Q-network and DQN's losses: a network, its TD target and the Huber loss.

:func:`q_network` maps observations to one value per action; :func:`td_target`
and :func:`huber` are the two formulas of DQN's loss. The update that trains them
(the target network, Adam, the sync) is :func:`zoo.rl.dqn.dqn_update`.

Usage::

    obs = tf.compat.v1.placeholder(tf.float32, [None, 4])
    q = q_network(obs, n_actions=2, scope="qnet")          # qnet/W_hid_1 ... qnet/b_out
    y = td_target(rewards, terminated, next_q, gamma=0.99)  # under tf.stop_gradient
    loss = huber(q_taken - y)
"""

import dataclasses

import tensorflow as tf

from layers import Dense
from layers.dense import check_size
from layers.variables import at_least_float32
from zoo.models.parts import builder_scope, hidden_stack, input_width


@dataclasses.dataclass(frozen=True)
class QNetwork:
    """What :func:`q_network` builds.

    Attributes:
        q_values: one value per action [batch, n_actions] (linear read-out).
        layers: the hidden layers then the read-out.
        scope_name: the full variable scope.
        hidden: the hidden widths it was built with.
    """

    q_values: tf.Tensor
    layers: tuple
    scope_name: str
    hidden: tuple


def q_network(x, n_actions=2, scope="qnet", reuse=False, hidden=(64, 64)):
    """Builds ``x -> ReLU hidden layers -> one linear value per action`` under ``scope``.

    Variables are ``W_hid_i``/``b_hid_i`` per hidden layer and ``W_out``/``b_out``;
    weights start Glorot-uniform (the usual initialization of DQN's MLPs), biases
    at zero.
    Under a precision policy (``zoo.training.precision``) the layers compute in
    its dtype and ``q_values`` are float32, as the TD targets and losses read them.

    Args:
        x: observations [batch, n_obs], n_obs known statically.
        n_actions: number of discrete actions (CartPole: 2).
        scope, reuse, hidden: the variable scope, whether it is shared (False,
            True or ``tf.compat.v1.AUTO_REUSE``) and the hidden widths.

    Returns:
        :class:`QNetwork`.

    Raises:
        ShapeError: ``n_actions`` or a hidden width is not a positive int, or ``x``
            is not [batch, n] with n known (before any variable is made).
        ScopeError, EagerError: as :func:`zoo.models.mlp_classifier`.
    """
    with builder_scope(scope, reuse) as var_scope:
        check_size(var_scope.name, n_actions=n_actions)  # hidden: in hidden_stack
        width = input_width(var_scope.name, x, "observations x")
        initializer = tf.compat.v1.glorot_uniform_initializer()
        layers, h, width = hidden_stack(x, width, hidden, w_init=initializer)
        readout = Dense(
            h,
            width,
            n_actions,
            names=("W_out", "b_out"),
            activation=tf.identity,
            w_init=initializer,
        )
        return QNetwork(
            q_values=at_least_float32(readout.output),  # TD targets, losses
            layers=(*layers, readout),
            scope_name=var_scope.name,
            hidden=tuple(hidden),
        )


def td_target(rewards, terminated, next_q, gamma, chooser_q=None):
    """Returns ``r + gamma * (1 - terminated) * next_q[a*]``, gradients stopped.

    ``a*`` is ``argmax_a next_q`` (DQN: the max), or ``argmax_a chooser_q``
    (double DQN, van Hasselt et al. 2016: the online network picks the next
    action, the target network values it). A truncated episode (time limit) is
    not terminated: its last transition still bootstraps from the next state.

    Args:
        rewards: [batch] float rewards.
        terminated: [batch] float, 1.0 where the episode ended in that transition.
        next_q: [batch, n_actions] values of the next observations.
        gamma: discount factor.
        chooser_q: None, or [batch, n_actions] values whose argmax picks ``a*``.

    Returns:
        [batch] tensor under ``tf.stop_gradient``.
    """
    if chooser_q is None:
        next_value = tf.reduce_max(next_q, axis=1)
    else:
        chosen = tf.one_hot(tf.argmax(chooser_q, axis=1), tf.shape(next_q)[1])
        next_value = tf.reduce_sum(next_q * tf.cast(chosen, next_q.dtype), axis=1)
    return tf.stop_gradient(rewards + gamma * (1.0 - terminated) * next_value)


def huber(errors, delta=1.0):
    """Returns the mean Huber loss: quadratic within ``delta`` of 0, then linear."""
    absolute = tf.abs(errors)
    quadratic = tf.minimum(absolute, delta)
    return tf.reduce_mean(0.5 * tf.square(quadratic) + delta * (absolute - quadratic))
