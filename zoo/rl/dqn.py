"""The DQN update: online and target Q-networks, TD loss, Adam, the target's sync.

The target network of DQN (Mnih et al. 2015) is the seed 002 pattern: the same
builder under a second scope, read under ``tf.stop_gradient`` and synced from the
live scope by :mod:`zoo.sharing.state`. :func:`dqn_update` builds both from any
Q-network builder (:func:`zoo.models.q_network` by default) and one training op
that takes the optimizer step, counts it, and then, every ``period`` updates, moves
the target towards the online network by ``tau`` (1.0: a hard copy, as in DQN;
small: Polyak averaging, as in DDPG), all inside the one ``session.run`` of the
step; with ``updates_per_run=K`` one run takes K such updates on K batches (a
burst, through :func:`zoo.training.repeat_step`).
:class:`zoo.rl.bursts.BurstRunner` runs it against an environment.

Usage::

    agent = dqn_update(n_observations=4, n_actions=2, period=500)  # hard copy
    polyak = dqn_update(4, 2, period=1, tau=0.005, scope="polyak")  # every update
    burst = dqn_update(4, 2, period=128, max_grad_norm=10, updates_per_run=128,
                       network=functools.partial(q_network, hidden=(256, 256)))
    session.run(agent.start_op)                  # target := online, once
    session.run(agent.greedy_action, {agent.act_observations: o[None]})
    session.run(agent.train_op, dict(zip(agent.batch, replay.sample(rng, 32))))
"""

import collections
import dataclasses

import tensorflow as tf

from layers.checks import int_problem, probability_problem, require
from layers.errors import ScopeError, ShapeError, ZooError
from layers.variables import reading_through
from zoo.models.parts import builder_scope
from zoo.models.qnet import huber, q_network, td_target
from zoo.sharing.state import check_tau, copy_variables, frozen_copy, frozen_getter
from zoo.training.steps import check_clip_norm, repeat_step

Transitions = collections.namedtuple(
    "Transitions",
    ("observations", "actions", "rewards", "next_observations", "terminated"),
)
"""A batch of transitions, in the order :meth:`zoo.rl.replay.ReplayBuffer.sample`
returns them."""


@dataclasses.dataclass(frozen=True)
class DQNUpdate:
    """What :func:`dqn_update` builds.

    Attributes:
        batch: :data:`Transitions` of the placeholders one run trains on:
            observations [batch, n_obs], actions [batch] (int64), rewards,
            next_observations, terminated [batch] (float, 1.0 where the episode
            terminated, not truncated); with ``updates_per_run`` K > 1 each is a
            stack [count, batch, ...] of the run's batches (:meth:`stacks`).
        act_observations: [batch, n_obs] placeholder of the observations to act on.
        learning_rate: the optimizer's learning rate, a scalar placeholder whose
            default is the ``learning_rate`` given: feed it to follow a schedule.
        online: the trained network on the (first) batch's observations.
        target: the :class:`zoo.sharing.state.Snapshot` of the online network on
            the next observations (``.output`` the network); None without a
            target network.
        greedy_action: [batch] argmax of the online values on ``act_observations``.
        next_action: the same, computed after ``train_op`` (fetch both in one run
            to train and then act).
        q_taken: [batch] online value of the action taken.
        td_target: [batch] ``r + gamma * (1 - terminated) * max_a Q'(s', a)``.
        loss: mean Huber loss of ``q_taken - td_target`` (the first batch).
        losses: [count] the loss of each update of a ``train_op`` run.
        update_op: the optimizer step alone (counts ``updates``), first batch.
        train_op: ``count`` updates, each followed by the target's sync when due.
        count: scalar int32 placeholder, default ``updates_per_run``: feed a
            smaller value (and stacks of that many batches) for fewer updates.
        synced: bool scalar fetched with ``train_op`` (``updates_per_run`` 1):
            this step synced the target; None with ``updates_per_run`` > 1.
        start_op: ``target := online`` (run once after initialization); a no-op
            without a target network.
        updates: int64 variable, the number of optimizer steps taken.
        updates_per_run: K, the updates one run of ``train_op`` takes.
        scope_name: the full variable scope (``online``/``target`` lie under it).
    """

    batch: Transitions
    act_observations: tf.Tensor
    learning_rate: tf.Tensor
    online: object
    target: object
    greedy_action: tf.Tensor
    next_action: tf.Tensor
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
    updates_per_run: int
    scope_name: str

    def stacks(self, transitions, count):
        """The five arrays of a run of ``count`` batches, as :attr:`batch` takes them.

        Args:
            transitions: the five arrays of ``count`` batches one after the other
                (``ReplayBuffer.sample(rng, count * batch_size)``).
            count: the updates of the run: 1 with ``updates_per_run`` 1.

        Returns:
            The arrays, each reshaped to [count, batch, ...] when
            ``updates_per_run`` > 1, else as they are.
        """
        if self.updates_per_run == 1:
            return list(transitions)
        return [a.reshape(count, len(a) // count, *a.shape[1:]) for a in transitions]


def dqn_update(
    n_observations,
    n_actions,
    *,
    network=q_network,
    updates_per_run=1,
    target_network=True,
    double=False,
    period=500,
    tau=1.0,
    gamma=0.99,
    learning_rate=1e-3,
    optimizer=tf.compat.v1.train.AdamOptimizer,
    max_grad_norm=None,
    scope="dqn",
    reuse=False,
):
    """Builds DQN's online and target networks, Huber TD loss, Adam step and sync.

    The online network is ``<scope>/online``; the target network
    ``<scope>/target`` is a :func:`zoo.sharing.state.frozen_copy` of it (not
    trainable, read under ``tf.stop_gradient``). ``train_op`` takes one Adam step
    on the online variables, increments ``updates``, and when ``updates % period
    == 0`` sets ``target := tau * online + (1 - tau) * target``
    (:func:`zoo.sharing.state.copy_variables` inside a ``tf.cond``): no extra
    ``session.run``. DQN's hard copy is ``period=C, tau=1``; Polyak averaging
    ``period=1, tau=0.005``. With ``target_network=False`` the TD target reads
    the online network itself (under ``tf.stop_gradient``).

    With ``updates_per_run`` K > 1 the batch placeholders are stacks of K batches
    (``[K, batch, ...]``, or ``[count, batch, ...]`` with ``count`` fed) and one
    run of ``train_op`` takes the K updates in order, each on its batch and each
    followed by its sync when due, in a ``tf.while_loop``
    (:func:`zoo.training.repeat_step`): a burst of updates in one ``session.run``.

    Args:
        n_observations: width of an observation.
        n_actions: number of actions.
        network: the Q-network builder, called as ``network(observations,
            n_actions, scope=..., reuse=...)``; it returns an object whose
            ``q_values`` are [batch, n_actions] (:func:`zoo.models.q_network`,
            or ``functools.partial(q_network, hidden=(256, 256))``).
        updates_per_run: K >= 1, the updates one run of ``train_op`` takes.
        target_network: False reads the next-state values from the online network.
        double: double DQN: the online network (a ``reuse=True`` build on the next
            observations) picks the next action, the target network values it;
            needs ``target_network``.
        period: sync the target every ``period`` updates (DQN's C); >= 1.
        tau: the sync's step, in (0, 1]: 1.0 copies, 0.005 is a Polyak update.
        gamma: discount factor in [0, 1].
        learning_rate: the default of :attr:`DQNUpdate.learning_rate`.
        optimizer: ``optimizer(learning_rate)`` returns the
            ``tf.compat.v1.train.Optimizer`` of the update (Adam; DQN's paper used
            ``RMSPropOptimizer``).
        max_grad_norm: None, or clip each update's gradients to this global norm
            (``tf.clip_by_global_norm``; Stable-Baselines3's DQN uses 10).
        scope: variable scope holding ``online``, ``target`` and ``updates`` (the
            optimizer's slots are ``<scope>/online/.../Adam``, Adam's
            ``beta1_power``/``beta2_power`` at the top level).
        reuse: as a builder's: True builds another update of the networks and
            counter already under ``scope``, with an optimizer of another name
            (its slots are new).

    Returns:
        :class:`DQNUpdate`.

    Raises:
        ZooError: ``period`` < 1, ``tau`` outside (0, 1], ``gamma`` outside
            [0, 1], ``double`` without ``target_network``, ``max_grad_norm``
            not None or a number > 0, ``updates_per_run`` not an int >= 1, or
            ``network`` returns no ``q_values``.
        ShapeError: ``n_observations`` or ``n_actions`` not a positive int.
            These are raised before any variable is made.
        ScopeError: as :func:`zoo.models.q_network`, or the optimizer's slots
            exist already (``reuse=True`` with the same optimizer name).
        EagerError: as :func:`zoo.models.q_network`; the network's own errors
            as it raises them.
    """
    with builder_scope(scope, reuse) as var_scope:
        owner = var_scope.name
        _check_dqn_args(owner, n_observations, n_actions, updates_per_run, period, tau)
        check_gamma(owner, gamma)
        check_clip_norm(owner, max_grad_norm)
        if double and not target_network:
            raise ZooError(
                f"{owner}: expected a target network with double=True, found "
                "target_network=False; pass target_network=True, or double=False"
            )
        batch, act_observations, rate = _placeholders(
            n_observations, updates_per_run, learning_rate
        )
        updates = tf.compat.v1.get_variable(
            "updates", [], tf.int64, tf.zeros_initializer(), trainable=False
        )

    def build(observations, scope, reuse=False):
        return _network(owner, network(observations, n_actions, scope=scope, reuse=reuse))

    built = []  # each call's parts; the first call made the variables

    def td_loss(transitions, _labels):
        with tf.compat.v1.variable_scope(var_scope, auxiliary_name_scope=False):
            parts = _td_parts(
                transitions, build, n_actions, target_network, double, gamma, built
            )
        built.append(parts)
        return parts["loss"]

    applied, synced = [], []  # each update op (the first: outside the loop), syncs

    def sync_when_due(update_op):
        applied.append(update_op)
        first = built[0]
        if first["snapshot"] is None:
            return update_op
        synced.append(_sync_when_due(update_op, updates, first, period, tau))
        return synced[-1]

    # Outside the scope, so the slots are <scope>/online/W_hid_1/Adam, not doubled.
    try:
        repeated = repeat_step(
            td_loss,
            optimizer(rate),
            _Batches(batch, updates, updates_per_run),
            updates_per_run,
            global_step=updates,
            clip_norm=max_grad_norm,
            after_update=sync_when_due,
        )
    except ValueError as err:
        if "already exists" not in str(err):
            raise
        raise ScopeError(
            f"{owner}: expected the optimizer to make new slots, found {err}; with "
            "reuse=True pass an optimizer of another name, e.g. optimizer="
            "functools.partial(tf.compat.v1.train.AdamOptimizer, name='Adam2')"
        ) from None
    first = built[0]
    with tf.compat.v1.variable_scope(var_scope, auxiliary_name_scope=False):
        acting = build(act_observations, "online", reuse=True)
        with tf.control_dependencies([repeated.train_op]):  # the weights after the run
            after_run = build(act_observations, "online", reuse=True)
    snapshot = first["snapshot"]
    one_sync = synced[0] if synced else tf.constant(False)  # of the one-update graph
    return DQNUpdate(
        batch=batch,
        act_observations=act_observations,
        learning_rate=rate,
        online=first["online"],
        target=snapshot,
        greedy_action=tf.argmax(acting.q_values, axis=1, name="greedy_action"),
        next_action=tf.argmax(after_run.q_values, axis=1, name="next_action"),
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
        updates_per_run=updates_per_run,
        scope_name=owner,
    )


def _placeholders(n_observations, updates_per_run, learning_rate):
    """The batch (stacks of batches with K > 1), the observations to act on, and
    the learning rate, in this order (the graph's op ids, hence its seeds, follow it)."""
    v1 = tf.compat.v1
    stack = [None] if updates_per_run > 1 else []
    batch = Transitions(
        v1.placeholder(tf.float32, [*stack, None, n_observations], "observations"),
        v1.placeholder(tf.int64, [*stack, None], name="actions"),
        v1.placeholder(tf.float32, [*stack, None], name="rewards"),
        v1.placeholder(tf.float32, [*stack, None, n_observations], "next_observations"),
        v1.placeholder(tf.float32, [*stack, None], name="terminated"),
    )
    acting = v1.placeholder(tf.float32, [None, n_observations], "act_observations")
    rate = v1.placeholder_with_default(learning_rate, [], name="learning_rate")
    return batch, acting, rate


def _network(owner, built):
    """``built`` (what the network builder returned), once it has ``q_values``."""
    if not isinstance(getattr(built, "q_values", None), tf.Tensor):
        raise ZooError(
            f"{owner}: expected the network builder to return an object with q_values "
            f"[batch, n_actions], found {built!r}; return zoo.models.QNetwork or alike"
        )
    return built


def _td_parts(transitions, build, n_actions, target_network, double, gamma, built):
    """Builds the TD loss of one batch inside the DQN's scope.

    The first call (``built`` empty) makes the online network and the target
    snapshot; later calls (the burst's loop body) read them with ``reuse=True``.

    Returns:
        dict: ``loss``, ``q_taken``, ``td_target``, ``online`` (the network),
        ``online_variables``, ``snapshot`` (or None).
    """
    observations, actions, rewards, next_observations, terminated = transitions
    reuse = bool(built)
    online = build(observations, "online", reuse)
    snapshot = built[0]["snapshot"] if reuse else None
    if not target_network:
        next_q = build(next_observations, "online", reuse=True).q_values
    elif reuse:  # read as frozen_copy reads it: no gradient, in the precision policy
        with reading_through(frozen_getter):
            next_q = build(next_observations, "target", reuse=True).q_values
    else:
        snapshot = frozen_copy(
            lambda name: build(next_observations, name), "online", "target"
        )
        next_q = snapshot.output.q_values
    taken = tf.one_hot(tf.cast(actions, tf.int32), n_actions, dtype=online.q_values.dtype)
    q_taken = tf.reduce_sum(online.q_values * taken, axis=1)
    chooser_q = build(next_observations, "online", reuse=True).q_values if double else None
    y = td_target(rewards, terminated, next_q, gamma, chooser_q)
    scope = tf.compat.v1.get_variable_scope().name
    return {
        "loss": tf.identity(huber(q_taken - y), name="loss"),
        "q_taken": q_taken,
        "td_target": y,
        "online": online,
        "online_variables": tf.compat.v1.get_collection(
            tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES, scope=f"{scope}/online/"
        ),
        "snapshot": snapshot,
    }


class _Batches:
    """The batch placeholders as :func:`zoo.training.repeat_step` draws them.

    With K = 1 they are one batch (``images``; no loop is built). With K > 1 they
    are stacks of batches: ``images`` is the first batch, and :meth:`draw` (in
    the loop body) the batch of the current update, ``updates`` counted from
    its value when the run began. ``window`` is K, as repeat_step asks of its
    batches.
    """

    labels = None

    def __init__(self, batch, updates, updates_per_run):
        self.window, self.updates = updates_per_run, updates
        if updates_per_run == 1:
            self.images = tuple(batch)
            return
        self.stacks = tuple(batch)
        self.images = tuple(stack[0] for stack in batch)
        self.first_update = updates.read_value()  # before the loop's updates

    def draw(self):
        """The batch of this update: stacks[updates - updates at the run's start]."""
        index = self.updates.read_value() - self.first_update
        return tuple(tf.gather(stack, index) for stack in self.stacks), None


def _sync_when_due(update_op, updates, first, period, tau):
    """Returns a bool tensor: after ``update_op``, whether ``updates % period == 0``.

    When it is, the branch of the ``tf.cond`` moves the target by ``tau`` (``first``:
    the parts of the first batch, :func:`_td_parts`). The
    assign ops must be built inside the branch (an op built outside would run
    every step), where graph collections are out of reach: the copy goes through
    :func:`zoo.sharing.state.copy_variables` with the variables themselves.
    """

    def sync():
        target = list(first["snapshot"].variables)
        copy = copy_variables(first["online_variables"], target, tau=tau)
        with tf.control_dependencies([copy.op]):
            return tf.constant(True)

    with tf.control_dependencies([update_op]):
        due = tf.equal(tf.math.floormod(updates.read_value(), period), 0)
        return tf.cond(due, sync, lambda: tf.constant(False), name="sync_target")


def _check_dqn_args(owner, n_observations, n_actions, updates_per_run, period, tau):
    for name, size in (("n_observations", n_observations), ("n_actions", n_actions)):
        require(
            owner,
            int_problem(size, name=name),
            "pass the environment's size (zoo.rl.envs.check_env gives both)",
            ShapeError,
        )
    require(
        owner,
        int_problem(updates_per_run, name="updates_per_run"),
        "pass 1 for one update a run, or the updates of a burst",
    )
    check_period(owner, period)
    check_tau(owner, tau)


def check_period(owner, period):
    """Raises ZooError naming ``owner`` unless the sync period ``period`` is an int >= 1."""
    require(
        owner,
        int_problem(period, name="the target's sync period C"),
        "pass e.g. 500 for a hard copy every 500 updates, 1 for Polyak averaging",
    )


def check_gamma(owner, gamma):
    """Raises ZooError naming ``owner`` unless the discount ``gamma`` is in [0, 1]."""
    require(
        owner,
        probability_problem(gamma, zero=True, name="the discount gamma"),
        "pass e.g. gamma=0.99",
    )
