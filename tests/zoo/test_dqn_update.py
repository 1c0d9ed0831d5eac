"""DQN's update: online and target variables, gradients, syncs, TD target, bursts."""

import functools

import numpy as np
import pytest
import tensorflow as tf

from layers.errors import ScopeError, ShapeError, ZooError
from zoo.models import q_network
from zoo.rl.dqn import dqn_update
from zoo.sharing.state import FROZEN_VARIABLES

v1 = tf.compat.v1
NAMES = ["W_hid_1", "b_hid_1", "W_hid_2", "b_hid_2", "W_out", "b_out"]
BATCH = 16


def names(variables, scope):
    return sorted(v.name[len(scope) + 1 : -2] for v in variables)


def transitions(rng, stack=()):
    """Random transitions of 4 observations and 3 actions: [*stack, BATCH, ...]."""
    shape = (*stack, BATCH)
    return [
        rng.normal(size=(*shape, 4)),
        rng.integers(0, 3, shape),
        rng.normal(size=shape),
        rng.normal(size=(*shape, 4)),
        (rng.random(shape) < 0.3).astype(np.float32),
    ]


def build(target_network=True, period=1000, tau=1.0, gamma=0.9, double=False, **kwargs):
    """Builds a DQN update (4 observations, 3 actions) and a feed of one batch."""
    v1.set_random_seed(1)
    kwargs = {"learning_rate": 0.01, "network": functools.partial(q_network, hidden=(8, 8)),
              **kwargs}  # fmt: skip
    agent = dqn_update(4, 3, target_network=target_network, double=double, period=period,
                       tau=tau, gamma=gamma, **kwargs)  # fmt: skip
    feed = dict(zip(agent.batch, transitions(np.random.default_rng(0)), strict=True))
    return agent, feed


def start(agent):
    session = v1.Session()
    session.run(v1.global_variables_initializer())
    session.run(agent.start_op)
    return session


def online_variables():
    return v1.get_collection(v1.GraphKeys.TRAINABLE_VARIABLES, scope="dqn/online/")


def test_online_and_target_variables(graph):
    agent, _ = build()
    assert names(online_variables(), "dqn/online") == sorted(NAMES)
    assert names(agent.target.variables, "dqn/target") == sorted(NAMES)
    assert names(v1.get_collection(FROZEN_VARIABLES), "dqn/target") == sorted(NAMES)
    assert len(v1.trainable_variables()) == 6  # the target is not trainable
    assert agent.target.scope_name == "dqn/target"
    assert agent.updates.name == "dqn/updates:0"
    slots = [v.name for v in v1.global_variables() if v.name.endswith("/Adam:0")]
    assert sorted(slots) == sorted(f"dqn/online/{n}/Adam:0" for n in NAMES)
    assert [p.name for p in agent.batch] == [
        "dqn/observations:0", "dqn/actions:0", "dqn/rewards:0",
        "dqn/next_observations:0", "dqn/terminated:0",
    ]  # fmt: skip


def test_no_target_network_reads_the_online_one(graph):
    agent, _ = build(target_network=False)
    assert agent.target is None
    assert not any("target" in v.name for v in v1.global_variables())
    assert all(g is None for g in tf.gradients(agent.td_target, online_variables()))


def test_target_gets_no_gradient_and_does_not_move(graph):
    agent, feed = build(period=1000)
    assert all(g is None for g in tf.gradients(agent.loss, list(agent.target.variables)))
    session = start(agent)
    online_before, target_before = session.run([online_variables(), agent.target.variables])
    for _ in range(3):
        session.run(agent.train_op, feed)
    online_after, target_after = session.run([online_variables(), agent.target.variables])
    assert all((a == b).all() for a, b in zip(target_before, target_after, strict=True))
    assert not any((a == b).all() for a, b in zip(online_before, online_after, strict=True))


def test_hard_sync_every_period_makes_them_equal(graph):
    agent, feed = build(period=3)
    session = start(agent)
    initial = session.run(agent.target.variables)
    for step in range(1, 7):
        _, synced = session.run([agent.train_op, agent.synced], feed)
        online, target = session.run([online_variables(), agent.target.variables])
        assert synced == (step % 3 == 0)
        expected = online if step % 3 == 0 else initial
        assert all((t == e).all() for t, e in zip(target, expected, strict=True))
        if synced:
            initial = target
    assert session.run(agent.updates) == 6


def test_polyak_sync_equals_numpy(graph):
    tau = 0.25
    agent, feed = build(period=1, tau=tau)
    session = start(agent)
    for _ in range(2):  # the second step starts from target != online
        before = session.run(agent.target.variables)
        session.run(agent.train_op, feed)
        online, target = session.run([online_variables(), agent.target.variables])
        for o, t, b in zip(online, target, before, strict=True):
            np.testing.assert_allclose(t, (1 - tau) * b + tau * o, rtol=1e-6, atol=1e-7)
    assert not all((o == t).all() for o, t in zip(online, target, strict=True))


@pytest.mark.parametrize("target_network", [True, False])
def test_td_target_and_loss_equal_numpy(graph, target_network):
    gamma = 0.9
    agent, feed = build(target_network=target_network, gamma=gamma)
    session = start(agent)
    session.run(agent.train_op, feed)  # online != target from here on
    observations, actions, rewards, next_observations, terminated = feed.values()
    if target_network:
        next_q = session.run(agent.target.output.q_values, feed)
    else:
        next_q = session.run(agent.online.q_values, {agent.batch[0]: next_observations})
    q, y, q_taken, loss = session.run(
        [agent.online.q_values, agent.td_target, agent.q_taken, agent.loss], feed
    )
    expected_y = rewards + gamma * (1 - terminated) * next_q.max(axis=1)
    np.testing.assert_allclose(y, expected_y, rtol=1e-5)
    np.testing.assert_allclose(q_taken, q[np.arange(BATCH), actions], rtol=1e-6)
    error = np.abs(q_taken - expected_y)
    expected_loss = np.where(error <= 1, 0.5 * error**2, error - 0.5).mean()
    np.testing.assert_allclose(loss, expected_loss, rtol=1e-5)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"period": 0}, r"dqn: expected the target's sync period C to be an int >= 1, "
         "found 0; pass e.g. 500"),
        ({"period": 2.5}, r"sync period C to be an int >= 1, found 2.5"),
        ({"tau": 0.0}, r"dqn: expected tau.* in \(0, 1\], found 0.0"),
        ({"tau": 1.5}, r"dqn: expected tau.* in \(0, 1\], found 1.5"),
        ({"max_grad_norm": 0.0}, r"dqn: expected the gradients' clip norm to be a finite "
         "number > 0, found 0.0; pass e.g. 10.0, or None"),
        ({"updates_per_run": 0}, r"dqn: expected updates_per_run to be an int >= 1, found "
         "0; pass 1"),
        ({"gamma": 1.5}, r"dqn: expected the discount gamma to be a finite number in "
         r"\[0, 1\], found 1.5; pass e.g. gamma=0.99"),
        ({"double": True, "target_network": False}, r"dqn: expected a target network "
         "with double=True, found target_network=False"),
        ({"network": lambda x, n, scope, reuse: x}, r"dqn: expected the network builder "
         "to return an object with q_values"),
    ],
)  # fmt: skip
def test_bad_arguments_fail_by_message(graph, kwargs, message):
    with pytest.raises(ZooError, match=message):
        dqn_update(4, 2, **kwargs)
    if "network" not in kwargs:  # the builder is called after the update counter
        assert v1.global_variables() == []


@pytest.mark.parametrize("n_observations, n_actions", [(0, 2), (4, 2.0)])
def test_bad_sizes_fail_before_any_variable(graph, n_observations, n_actions):
    name = "n_observations" if n_observations == 0 else "n_actions"
    with pytest.raises(ShapeError, match=rf"dqn: expected {name} to be an int >= 1"):
        dqn_update(n_observations, n_actions)
    assert v1.global_variables() == []


def test_greedy_and_next_action_are_the_argmax_before_and_after_the_step(graph):
    agent, feed = build(
        learning_rate=0.5, network=functools.partial(q_network, hidden=(8,))
    )
    observations = np.random.default_rng(1).normal(size=(64, 4))
    session = start(agent)
    acting = {agent.act_observations: observations}
    before = session.run(agent.greedy_action, acting)
    q = session.run(agent.online.q_values, {agent.batch[0]: observations})
    assert (before == q.argmax(axis=1)).all()
    _, fused = session.run([agent.train_op, agent.next_action], {**feed, **acting})
    assert (fused == session.run(agent.greedy_action, acting)).all()
    assert (fused != before).any()  # the step (a large one) changed some choices


def test_double_dqn_the_online_network_picks_the_target_network_values(graph):
    gamma = 0.9
    agent, feed = build(gamma=gamma, double=True)
    variables = len(v1.global_variables())
    session = start(agent)
    for _ in range(20):  # online drifts from the target (synced every 1,000 updates)
        session.run(agent.train_op, feed)
    _, _, rewards, next_observations, terminated = feed.values()
    chooser = session.run(agent.online.q_values, {agent.batch[0]: next_observations})
    values = session.run(agent.target.output.q_values, feed)
    picked = chooser.argmax(axis=1)
    expected = rewards + gamma * (1 - terminated) * values[np.arange(BATCH), picked]
    np.testing.assert_allclose(session.run(agent.td_target, feed), expected, rtol=1e-5)
    assert (picked != values.argmax(axis=1)).any()  # plain DQN's max would differ here
    assert len(v1.global_variables()) == variables  # the online re-read made nothing


def test_clipped_gradients_move_adam_as_numpy_says(graph):
    """Adam's first step is lr * sqrt(1 - b2) * g / (sqrt(1 - b2) * |g| + eps): with
    gradients clipped to a global norm near eps, the step depends on the clipping."""
    clip, lr, beta2, eps = 1e-7, 0.01, 0.999, 1e-8
    agent, feed = build(max_grad_norm=clip)
    gradients = tf.gradients(agent.loss, online_variables())
    session = start(agent)
    before, raw = session.run([online_variables(), gradients], feed)
    session.run(agent.train_op, feed)
    after = session.run(online_variables())
    norm = np.sqrt(sum((g.astype(np.float64) ** 2).sum() for g in raw))
    assert norm > 100 * clip  # the clipping acts
    for w0, w1, g in zip(before, after, raw, strict=True):
        clipped = g * clip / norm
        step = (
            lr * np.sqrt(1 - beta2) * clipped / (np.sqrt(1 - beta2) * np.abs(clipped) + eps)
        )
        np.testing.assert_allclose(w0 - w1, step, rtol=1e-3, atol=2e-7)
        unclipped = lr * np.sqrt(1 - beta2) * g / (np.sqrt(1 - beta2) * np.abs(g) + eps)
        assert not np.allclose(w0 - w1, unclipped, rtol=1e-2, atol=1e-6)


def test_a_fed_learning_rate_moves_the_weights_in_proportion(graph):
    """Adam's first step is proportional to its rate: feeding half the rate halves it."""
    steps = []
    for rate in (None, 0.005):
        with tf.Graph().as_default():
            agent, feed = build()
            session = start(agent)
            before = session.run(online_variables())
            session.run(
                agent.train_op, {**feed, **({agent.learning_rate: rate} if rate else {})}
            )
            steps.append([a - b for a, b in zip(before, session.run(online_variables()),
                                                 strict=True)])  # fmt: skip
    for default, half in zip(*steps, strict=True):
        np.testing.assert_allclose(half, default / 2, rtol=1e-4, atol=1e-9)


def test_reuse_builds_a_second_update_of_the_same_networks(graph):
    agent, feed = build()
    before = {v.name for v in v1.global_variables()}
    rmsprop = functools.partial(v1.train.RMSPropOptimizer, name="RMSProp")
    network = functools.partial(q_network, hidden=(8, 8))
    again = dqn_update(4, 3, network=network, optimizer=rmsprop, reuse=True)
    assert again.updates is agent.updates
    assert again.target.variables == agent.target.variables
    added = {v.name for v in v1.global_variables()} - before
    assert added == {f"dqn/online/{n}/RMSProp{s}:0" for n in NAMES for s in ("", "_1")}
    session = start(again)
    session.run(again.train_op, dict(zip(again.batch, feed.values(), strict=True)))
    assert session.run(agent.updates) == 1


def test_reuse_with_the_same_optimizer_name_is_refused(graph):
    build()
    with pytest.raises(
        ScopeError,
        match=r"dqn: expected the optimizer to make new slots, "
        r"found Variable dqn/online/W_hid_1/Adam/ already exists.*; with "
        "reuse=True pass an optimizer of another name",
    ):
        dqn_update(4, 3, network=functools.partial(q_network, hidden=(8, 8)), reuse=True)


@pytest.mark.parametrize(
    "kwargs",
    [{"period": 1, "tau": 0.3}, {"period": 2, "double": True}],
    ids=["polyak", "double"],  # a sync after every update; a hard copy mid-burst
)  # fmt: skip
def test_a_burst_in_one_run_equals_one_update_a_run(kwargs):
    """K updates in one run (a tf.while_loop, syncs inside) = K runs of one update."""
    burst = 5
    stacks = transitions(np.random.default_rng(2), stack=(burst,))
    results = []
    for updates_per_run in (1, burst):
        with tf.Graph().as_default():
            agent, _ = build(max_grad_norm=1.0, updates_per_run=updates_per_run, **kwargs)
            session = start(agent)
            fetch = [agent.train_op, agent.losses]
            if updates_per_run == 1:
                runs = [[stack[i] for stack in stacks] for i in range(burst)]
            else:
                runs = [agent.stacks([s.reshape(-1, *s.shape[2:]) for s in stacks], burst)]
            losses = [
                loss
                for batch in runs
                for loss in session.run(fetch, dict(zip(agent.batch, batch, strict=True)))[
                    1
                ]
            ]
            variables = session.run(v1.global_variables())
            results.append((losses, variables, session.run(agent.updates)))
    (losses_1, values_1, updates_1), (losses_k, values_k, updates_k) = results
    assert updates_1 == updates_k == burst
    np.testing.assert_allclose(losses_k, losses_1, rtol=1e-5)
    for a, b in zip(values_1, values_k, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
