"""Deep Q-learning on scopes: a Q-network, and an online network with its target network.

The target network of DQN (Mnih et al. 2015) is the seed 002 pattern: the same
builder under a second scope, read under ``tf.stop_gradient`` and synced from the
live scope by :mod:`zoo.sharing.state`. :func:`dqn` builds both and one training op that
takes the optimizer step, counts it, and then, every ``period`` updates, moves the
target towards the online network by ``tau`` (1.0: a hard copy, as in DQN; small:
Polyak averaging, as in DDPG), all inside the one ``session.run`` of the step;
with ``updates_per_run=K`` one run takes K such steps on K batches (a burst, through
:func:`zoo.training.repeat_step`).

Usage::

    obs = tf.compat.v1.placeholder(tf.float32, [None, 4])
    q = q_network(obs, n_actions=2, scope="qnet")          # qnet/W_hid_1 ... qnet/b_out
    model = dqn(obs, actions, rewards, next_obs, terminated, n_actions=2,
                period=500)                     # hard copy every 500 updates
    polyak = dqn(..., period=1, tau=0.005)      # Polyak averaging every update
    burst = dqn(*stacks, n_actions=2, period=128, max_grad_norm=10,
                updates_per_run=128)            # [128, batch, ...] stacks: 128
                                                # clipped updates in one run
    session.run(model.start_op)                 # target := online, once
    session.run(model.greedy_action, {obs: o})  # acting: the online argmax
    session.run(model.train_op, feed)           # step, count, sync when due
"""

import dataclasses

import tensorflow as tf

from layers import Dense
from layers.dense import check_size
from layers.errors import ZooError
from zoo.models.parts import builder_scope, check_widths, hidden_stack, input_width
from zoo.sharing.state import check_tau, copy_variables, frozen_copy
from zoo.training.steps import check_clip_norm, repeat_step


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
        online: the trained :class:`QNetwork` on the batch's observations (with
            ``updates_per_run`` > 1: on the first batch of the stack).
        target: the :class:`zoo.sharing.state.Snapshot` of the online network on the next
            observations (``.output`` a :class:`QNetwork`); None without a target
            network.
        greedy_action: [batch] argmax of the online values on ``observations``
            (feed one observation to act; with ``updates_per_run`` > 1 feed it as
            a stack of one batch of one, ``[1, 1, n_obs]``).
        next_action: [batch] argmax of the online values on ``act_observations``
            computed after ``train_op`` (fetch both in one run to step and act);
            None without ``act_observations``.
        q_taken: [batch] online value of the action taken.
        td_target: [batch] ``r + gamma * (1 - terminated) * max_a Q'(s', a)``.
        loss: mean Huber loss of ``q_taken - td_target`` (one batch).
        losses: [count] the loss of each update of a ``train_op`` run.
        update_op: the optimizer step on the online variables (counts
            ``updates``); one update, on the first batch (of the stack).
        train_op: ``count`` updates, each followed by the sync of the target
            when it is due (``updates_per_run`` 1: one update).
        count: scalar int32 placeholder, default ``updates_per_run``: feed a
            smaller value (and stacks of that many batches) for fewer updates.
        synced: bool scalar, fetched with ``train_op`` (``updates_per_run`` 1):
            this step synced the target; None with ``updates_per_run`` > 1.
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
    losses: tf.Tensor
    update_op: object
    train_op: object
    count: tf.Tensor
    synced: object
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
    max_grad_norm=None,
    updates_per_run=1,
    hidden=(64, 64),
    scope="dqn",
    act_observations=None,
):
    """Builds DQN's online and target networks, Huber TD loss, Adam step and sync.

    The online network is ``<scope>/online``; the target network
    ``<scope>/target`` is a :func:`zoo.sharing.state.frozen_copy` of it (not trainable,
    read under ``tf.stop_gradient``). ``train_op`` takes one Adam step on the
    online variables, increments ``updates``, and when ``updates % period == 0``
    sets ``target := tau * online + (1 - tau) * target``
    (:func:`zoo.sharing.state.copy_variables` inside a ``tf.cond``): no extra
    ``session.run``. DQN's hard copy is ``period=C, tau=1``; Polyak averaging
    ``period=1, tau=0.005``. With ``target_network=False`` the TD target reads
    the online network itself (under ``tf.stop_gradient``).

    With ``updates_per_run`` K > 1 the five batch inputs are stacks of K batches
    (``[K, batch, ...]``, or ``[count, batch, ...]`` with ``count`` fed) and one
    run of ``train_op`` takes the K updates in order, each on its batch and each
    followed by its sync when due, in a ``tf.while_loop``
    (:func:`zoo.training.repeat_step`): a burst of updates in one ``session.run``.

    Args:
        observations: [batch, n_obs] float ([K, batch, n_obs] with K > 1).
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
        max_grad_norm: None, or clip each update's gradients to this global norm
            (``tf.clip_by_global_norm``; Stable-Baselines3's DQN uses 10).
        updates_per_run: K >= 1, the updates one run of ``train_op`` takes.
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
            [0, 1], ``double`` without ``target_network``, ``max_grad_norm``
            not None or a number > 0, ``updates_per_run`` not an int >= 1;
            raised before any variable is made.
        ShapeError, ScopeError, EagerError: as :func:`q_network` (the online
            network, built first, checks ``n_actions`` and ``hidden``).
    """
    with builder_scope(scope, reuse=False) as var_scope:
        owner = var_scope.name
        _check_dqn_args(owner, period, tau, gamma, max_grad_norm, updates_per_run)
        check_size(f"{owner}/online", n_actions=n_actions)  # before `updates` is made
        check_widths(f"{owner}/online", hidden)
        if double and not target_network:
            raise ZooError(
                f"{owner}: expected a target network with double=True, found "
                "target_network=False; pass target_network=True, or double=False"
            )
        updates = tf.compat.v1.get_variable(
            "updates", [], tf.int64, tf.zeros_initializer(), trainable=False
        )
    inputs = (observations, actions, rewards, next_observations, terminated)
    built = []  # each call's parts; the first call made the variables

    def td_loss(batch, _labels):
        with tf.compat.v1.variable_scope(var_scope, auxiliary_name_scope=False):
            built.append(
                _td_parts(batch, n_actions, target_network, double, gamma, hidden, built)
            )
        return built[-1]["loss"]

    applied, synced = [], []  # each update op (the first: outside the loop), syncs

    def sync_when_due(update_op):
        applied.append(update_op)
        first = built[0]
        if first["snapshot"] is None:
            return update_op
        synced.append(
            _sync_when_due(
                update_op,
                updates,
                first["online_variables"],
                first["snapshot"],
                period,
                tau,
            )
        )
        return synced[-1]

    # Outside the scope, so the slots are <scope>/online/W_hid_1/Adam, not doubled.
    repeated = repeat_step(
        td_loss,
        tf.compat.v1.train.AdamOptimizer(learning_rate),
        _Transitions(inputs, updates, updates_per_run),
        updates_per_run,
        global_step=updates,
        clip_norm=max_grad_norm,
        after_update=sync_when_due,
    )
    first = built[0]
    one_sync = synced[0] if synced else tf.constant(False)  # of the one-step graph
    snapshot = first["snapshot"]
    next_action = None
    if act_observations is not None:
        with (
            tf.control_dependencies([repeated.train_op]),  # the weights after the run
            tf.compat.v1.variable_scope(var_scope, auxiliary_name_scope=False),
        ):
            acting = q_network(
                act_observations, n_actions, scope="online", reuse=True, hidden=hidden
            )
            next_action = tf.argmax(acting.q_values, axis=1, name="next_action")
    online = first["online"]
    return DQN(
        online=online,
        target=snapshot,
        greedy_action=tf.argmax(online.q_values, axis=1, name="greedy_action"),
        next_action=next_action,
        q_taken=first["q_taken"],
        td_target=first["td_target"],
        loss=first["loss"],
        losses=repeated.losses,
        update_op=applied[0],
        train_op=repeated.train_op,
        count=repeated.count,
        synced=one_sync if updates_per_run == 1 else None,
        start_op=tf.no_op() if snapshot is None else snapshot.sync_op,
        updates=updates,
        scope_name=owner,
    )


def _td_parts(batch, n_actions, target_network, double, gamma, hidden, built):
    """Builds the TD loss of one batch inside the DQN's scope.

    The first call (``built`` empty) makes the online network and the target
    snapshot; later calls (the burst's loop body) read them with ``reuse=True``.

    Returns:
        dict: ``loss``, ``q_taken``, ``td_target``, ``online`` (the
        :class:`QNetwork`), ``online_variables``, ``snapshot`` (or None).
    """
    observations, actions, rewards, next_observations, terminated = batch
    reuse = bool(built)
    online = q_network(observations, n_actions, scope="online", reuse=reuse, hidden=hidden)
    snapshot = built[0]["snapshot"] if reuse else None
    if not target_network:
        next_q = q_network(
            next_observations, n_actions, scope="online", reuse=True, hidden=hidden
        ).q_values
    elif reuse:
        next_q = tf.stop_gradient(
            q_network(
                next_observations, n_actions, scope="target", reuse=True, hidden=hidden
            ).q_values
        )
    else:
        snapshot = frozen_copy(
            lambda name: q_network(next_observations, n_actions, scope=name, hidden=hidden),
            "online",
            "target",
        )
        next_q = snapshot.output.q_values
    taken = tf.one_hot(tf.cast(actions, tf.int32), n_actions, dtype=online.q_values.dtype)
    q_taken = tf.reduce_sum(online.q_values * taken, axis=1)
    chooser_q = None
    if double:
        chooser_q = q_network(
            next_observations, n_actions, scope="online", reuse=True, hidden=hidden
        ).q_values
    y = td_target(rewards, terminated, next_q, gamma, chooser_q)
    return {
        "loss": tf.identity(huber(q_taken - y), name="loss"),
        "q_taken": q_taken,
        "td_target": y,
        "online": online,
        "online_variables": tf.compat.v1.get_collection(
            tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES, scope=online.scope_name + "/"
        ),
        "snapshot": snapshot,
    }


class _Transitions:
    """The five batch inputs as :func:`zoo.training.repeat_step` draws them.

    With K = 1 they are one batch (``images``; no loop is built). With K > 1 they
    are stacks of batches: ``images`` is the first batch, and :meth:`draw` (in
    the loop body) the batch of the current update, ``updates`` counted from
    its value when the run began.
    """

    labels = None

    def __init__(self, inputs, updates, window):
        self.window, self.updates = window, updates
        if window == 1:
            self.images = tuple(inputs)
            return
        self.stacks = tuple(inputs)
        self.images = tuple(stack[0] for stack in inputs)
        self.first_update = updates.read_value()  # before the loop's updates

    def draw(self):
        """The batch of this update: stacks[updates - updates at the run's start]."""
        index = self.updates.read_value() - self.first_update
        return tuple(tf.gather(stack, index) for stack in self.stacks), None


def _sync_when_due(update_op, updates, online_variables, snapshot, period, tau):
    """Returns a bool tensor: after ``update_op``, whether ``updates % period == 0``.

    When it is, the branch of the ``tf.cond`` moves the target by ``tau``. The
    assign ops must be built inside the branch (an op built outside would run
    every step), where graph collections are out of reach: the copy goes through
    :func:`zoo.sharing.state.copy_variables` with the variables themselves.
    """

    def sync():
        copy = copy_variables(online_variables, list(snapshot.variables), tau=tau)
        with tf.control_dependencies([copy.op]):
            return tf.constant(True)

    with tf.control_dependencies([update_op]):
        due = tf.equal(tf.math.floormod(updates.read_value(), period), 0)
        return tf.cond(due, sync, lambda: tf.constant(False), name="sync_target")


def _check_dqn_args(owner, period, tau, gamma, max_grad_norm, updates_per_run):
    check_period(owner, period)
    check_tau(owner, tau)
    check_gamma(owner, gamma)
    check_clip_norm(owner, max_grad_norm)
    if (
        isinstance(updates_per_run, bool)
        or not isinstance(updates_per_run, int)
        or updates_per_run < 1
    ):
        raise ZooError(
            f"{owner}: expected updates_per_run to be an int >= 1, found "
            f"{updates_per_run!r}; pass 1 for one update a run, or the updates of a burst"
        )


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
