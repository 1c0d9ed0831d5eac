"""Deep Q-learning on scopes: a Q-network, and an online network with its target network.

The target network of DQN (Mnih et al. 2015) is the seed 002 pattern: the same
builder under a second scope, read under ``tf.stop_gradient`` and synced from the
live scope by :mod:`zoo.state`. :func:`dqn` builds both and one training op that
takes the optimizer step, counts it, and then, every ``period`` updates, moves the
target towards the online network by ``tau`` (1.0: a hard copy, as in DQN; small:
Polyak averaging, as in DDPG), all inside the one ``session.run`` of the step.

Usage::

    obs = tf.compat.v1.placeholder(tf.float32, [None, 4])
    q = q_network(obs, n_actions=2, scope="qnet")          # qnet/W_hid_1 ... qnet/b_out
    model = dqn(obs, actions, rewards, next_obs, terminated, n_actions=2,
                period=500)                     # hard copy every 500 updates
    polyak = dqn(..., period=1, tau=0.005)      # Polyak averaging every update
    session.run(model.start_op)                 # target := online, once
    session.run(model.greedy_action, {obs: o})  # acting: the online argmax
    session.run(model.train_op, feed)           # step, count, sync when due
"""

import dataclasses

import tensorflow as tf

from layers import Dense
from layers.dense import check_size
from layers.errors import ZooError
from zoo.models.parts import builder_scope, hidden_stack, input_width
from zoo.state import check_tau, copy_variables, frozen_copy


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

    Args:
        x: observations [batch, n_obs], n_obs known statically.
        n_actions: number of discrete actions (CartPole: 2).
        scope: variable scope of the network.
        reuse: False, True or ``tf.compat.v1.AUTO_REUSE``.
        hidden: widths of the hidden layers.

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
            q_values=readout.output,
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


@dataclasses.dataclass(frozen=True)
class DQN:
    """What :func:`dqn` builds.

    Attributes:
        online: the trained :class:`QNetwork` on the batch's observations.
        target: the :class:`zoo.state.Snapshot` of the online network on the next
            observations (``.output`` a :class:`QNetwork`); None without a target
            network.
        greedy_action: [batch] argmax of the online values on ``observations``
            (feed one observation to act).
        next_action: [batch] argmax of the online values on ``act_observations``
            computed after ``train_op`` (fetch both in one run to step and act);
            None without ``act_observations``.
        q_taken: [batch] online value of the action taken.
        td_target: [batch] ``r + gamma * (1 - terminated) * max_a Q'(s', a)``.
        loss: mean Huber loss of ``q_taken - td_target``.
        update_op: the optimizer step on the online variables (counts ``updates``).
        train_op: ``update_op``, then the sync of the target when it is due.
        synced: bool scalar, fetched with ``train_op``: this step synced the target.
        start_op: ``target := online`` (run once after initialization); a no-op
            without a target network.
        updates: int64 variable, the number of optimizer steps taken.
        scope_name: the full variable scope (``online``/``target`` lie under it).
    """

    online: QNetwork
    target: object
    greedy_action: tf.Tensor
    next_action: object
    q_taken: tf.Tensor
    td_target: tf.Tensor
    loss: tf.Tensor
    update_op: object
    train_op: object
    synced: tf.Tensor
    start_op: object
    updates: tf.Variable
    scope_name: str


def dqn(
    observations,
    actions,
    rewards,
    next_observations,
    terminated,
    n_actions,
    *,
    target_network=True,
    double=False,
    period=500,
    tau=1.0,
    gamma=0.99,
    learning_rate=1e-3,
    hidden=(64, 64),
    scope="dqn",
    act_observations=None,
):
    """Builds DQN's online and target networks, Huber TD loss, Adam step and sync.

    The online network is ``<scope>/online``; the target network
    ``<scope>/target`` is a :func:`zoo.state.frozen_copy` of it (not trainable,
    read under ``tf.stop_gradient``). ``train_op`` takes one Adam step on the
    online variables, increments ``updates``, and when ``updates % period == 0``
    sets ``target := tau * online + (1 - tau) * target``
    (:func:`zoo.state.copy_variables` inside a ``tf.cond``): no extra
    ``session.run``. DQN's hard copy is ``period=C, tau=1``; Polyak averaging
    ``period=1, tau=0.005``. With ``target_network=False`` the TD target reads
    the online network itself (under ``tf.stop_gradient``).

    Args:
        observations: [batch, n_obs] float.
        actions: [batch] int actions taken.
        rewards: [batch] float.
        next_observations: [batch, n_obs] float.
        terminated: [batch] float, 1.0 where the episode terminated (not truncated).
        n_actions: number of actions.
        target_network: False reads the next-state values from the online network.
        double: double DQN: the online network (a ``reuse=True`` build on the next
            observations) picks the next action, the target network values it;
            needs ``target_network``.
        period: sync the target every ``period`` updates (DQN's C); >= 1.
        tau: the sync's step, in (0, 1]: 1.0 copies, 0.005 is a Polyak update.
        gamma: discount factor in [0, 1].
        learning_rate: Adam's learning rate.
        hidden: hidden widths of the Q-network.
        scope: variable scope holding ``online``, ``target`` and ``updates`` (a
            new one: a training op is never shared; the Adam step's slots are
            ``<scope>/online/.../Adam``, its ``beta1_power``/``beta2_power`` at the
            top level).
        act_observations: optional [batch, n_obs] observations to act on after
            the step: ``next_action``. An agent that steps the environment once
            per update then needs one ``session.run`` per step, not two.

    Returns:
        :class:`DQN`.

    Raises:
        ZooError: ``period`` < 1, ``tau`` outside (0, 1], ``gamma`` outside
            [0, 1], ``double`` without ``target_network``; raised before any
            variable is made.
        ShapeError, ScopeError, EagerError: as :func:`q_network` (the online
            network, built first, checks ``n_actions`` and ``hidden``).
    """
    with builder_scope(scope, reuse=False) as var_scope:
        owner = var_scope.name
        _check_dqn_args(owner, period, tau, gamma)
        if double and not target_network:
            raise ZooError(
                f"{owner}: expected a target network with double=True, found "
                "target_network=False; pass target_network=True, or double=False"
            )
        online = q_network(observations, n_actions, scope="online", hidden=hidden)
        snapshot = None
        if target_network:
            snapshot = frozen_copy(
                lambda name: q_network(
                    next_observations, n_actions, scope=name, hidden=hidden
                ),
                "online",
                "target",
            )
            next_q = snapshot.output.q_values
        else:
            next_q = q_network(
                next_observations, n_actions, scope="online", reuse=True, hidden=hidden
            ).q_values
        taken = tf.one_hot(
            tf.cast(actions, tf.int32), n_actions, dtype=online.q_values.dtype
        )
        q_taken = tf.reduce_sum(online.q_values * taken, axis=1)
        chooser_q = None
        if double:
            chooser_q = q_network(
                next_observations, n_actions, scope="online", reuse=True, hidden=hidden
            ).q_values
        y = td_target(rewards, terminated, next_q, gamma, chooser_q)
        loss = tf.identity(huber(q_taken - y), name="loss")
        updates = tf.compat.v1.get_variable(
            "updates", [], tf.int64, tf.zeros_initializer(), trainable=False
        )
    # Outside the scope, so the slots are <scope>/online/W_hid_1/Adam, not doubled.
    online_variables = tf.compat.v1.get_collection(
        tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES, scope=online.scope_name + "/"
    )
    update_op = tf.compat.v1.train.AdamOptimizer(learning_rate).minimize(
        loss, global_step=updates, var_list=online_variables
    )
    synced, start_op = tf.constant(False), tf.no_op()
    if snapshot is not None:
        synced = _sync_when_due(update_op, updates, online_variables, snapshot, period, tau)
        start_op = snapshot.sync_op
    train_op = tf.group(update_op, synced, name="train")
    next_action = None
    if act_observations is not None:
        with (
            tf.control_dependencies([train_op]),  # the weights after the step
            tf.compat.v1.variable_scope(var_scope, auxiliary_name_scope=False),
        ):
            acting = q_network(
                act_observations, n_actions, scope="online", reuse=True, hidden=hidden
            )
            next_action = tf.argmax(acting.q_values, axis=1, name="next_action")
    return DQN(
        online=online,
        target=snapshot,
        greedy_action=tf.argmax(online.q_values, axis=1, name="greedy_action"),
        next_action=next_action,
        q_taken=q_taken,
        td_target=y,
        loss=loss,
        update_op=update_op,
        train_op=train_op,
        synced=synced,
        start_op=start_op,
        updates=updates,
        scope_name=owner,
    )


def _sync_when_due(update_op, updates, online_variables, snapshot, period, tau):
    """Returns a bool tensor: after ``update_op``, whether ``updates % period == 0``.

    When it is, the branch of the ``tf.cond`` moves the target by ``tau``. The
    assign ops must be built inside the branch (an op built outside would run
    every step), where graph collections are out of reach: the copy goes through
    :func:`zoo.state.copy_variables` with the variables themselves.
    """

    def sync():
        copy = copy_variables(online_variables, list(snapshot.variables), tau=tau)
        with tf.control_dependencies([copy.op]):
            return tf.constant(True)

    with tf.control_dependencies([update_op]):
        due = tf.equal(tf.math.floormod(updates.read_value(), period), 0)
        return tf.cond(due, sync, lambda: tf.constant(False), name="sync_target")


def _check_dqn_args(owner, period, tau, gamma):
    check_period(owner, period)
    check_tau(owner, tau)
    check_gamma(owner, gamma)


def check_period(owner, period):
    """Raises ZooError naming ``owner`` unless the sync period ``period`` is an int >= 1."""
    if isinstance(period, bool) or not isinstance(period, int) or period < 1:
        raise ZooError(
            f"{owner}: expected the target's sync period C to be an int >= 1, found "
            f"{period!r}; pass e.g. 500 for a hard copy every 500 updates, 1 for Polyak "
            "averaging"
        )


def check_gamma(owner, gamma):
    """Raises ZooError naming ``owner`` unless the discount ``gamma`` is in [0, 1]."""
    if (
        isinstance(gamma, bool)
        or not isinstance(gamma, (int, float))
        or not 0 <= gamma <= 1
    ):
        raise ZooError(
            f"{owner}: expected the discount gamma in [0, 1], found {gamma!r}; pass e.g. "
            "gamma=0.99"
        )
