"""The Q-network and DQN's online/target pair: variables, gradients, syncs, TD target."""

import numpy as np
import pytest
import tensorflow as tf

from layers.errors import ShapeError, ZooError
from zoo.models import dqn, q_network
from zoo.models.qnet import huber
from zoo.sharing.inspect import inspect_model
from zoo.sharing.state import FROZEN_VARIABLES

v1 = tf.compat.v1
NAMES = ["W_hid_1", "b_hid_1", "W_hid_2", "b_hid_2", "W_out", "b_out"]
BATCH = 16


def names(variables, scope):
    return sorted(v.name[len(scope) + 1 : -2] for v in variables)


def transition_placeholders(stacked=False):
    """Observations [None, 4], actions, rewards, next observations, terminated flags
    (``stacked``: each with a leading axis of batches, for ``updates_per_run`` > 1)."""
    stack = [None] if stacked else []
    return [
        v1.placeholder(tf.float32, [*stack, None, 4]),
        v1.placeholder(tf.int64, [*stack, None]),
        v1.placeholder(tf.float32, [*stack, None]),
        v1.placeholder(tf.float32, [*stack, None, 4]),
        v1.placeholder(tf.float32, [*stack, None]),
    ]


def build(target_network=True, period=1000, tau=1.0, gamma=0.9, double=False, **kwargs):
    """Builds a DQN on placeholders (4 observations, 3 actions) and a feed for it."""
    placeholders = transition_placeholders()
    v1.set_random_seed(1)
    model = dqn(
        *placeholders,
        3,
        target_network=target_network,
        double=double,
        period=period,
        tau=tau,
        gamma=gamma,
        learning_rate=0.01,
        hidden=(8, 8),
        **kwargs,
    )
    rng = np.random.default_rng(0)
    values = [
        rng.normal(size=(BATCH, 4)),
        rng.integers(0, 3, BATCH),
        rng.normal(size=BATCH),
        rng.normal(size=(BATCH, 4)),
        (rng.random(BATCH) < 0.3).astype(np.float32),
    ]
    return model, dict(zip(placeholders, values, strict=True))


def start(model):
    session = v1.Session()
    session.run(v1.global_variables_initializer())
    session.run(model.start_op)
    return session


def online_variables():
    return v1.get_collection(v1.GraphKeys.TRAINABLE_VARIABLES, scope="dqn/online/")


def test_q_network_variables_and_sharing(graph):
    x = v1.placeholder(tf.float32, [None, 4])
    net = q_network(x, n_actions=2, scope="q", hidden=(16, 8))
    again = q_network(x, n_actions=2, scope="q", reuse=True, hidden=(16, 8))
    assert net.q_values.shape.as_list() == [None, 2]
    assert names(v1.trainable_variables(), "q") == sorted(NAMES)
    assert len(v1.global_variables()) == 6
    assert again.scope_name == net.scope_name == "q"
    shapes = {v.name: v.shape.as_list() for v in v1.trainable_variables()}
    assert shapes["q/W_hid_1:0"] == [4, 16] and shapes["q/W_out:0"] == [8, 2]


def test_online_and_target_variables(graph):
    model, _ = build()
    assert names(online_variables(), "dqn/online") == sorted(NAMES)
    assert names(model.target.variables, "dqn/target") == sorted(NAMES)
    assert names(v1.get_collection(FROZEN_VARIABLES), "dqn/target") == sorted(NAMES)
    assert len(v1.trainable_variables()) == 6  # the target is not trainable
    assert model.target.scope_name == "dqn/target"
    assert model.updates.name == "dqn/updates:0"
    slots = [v.name for v in v1.global_variables() if v.name.endswith("/Adam:0")]
    assert sorted(slots) == sorted(f"dqn/online/{n}/Adam:0" for n in NAMES)


def test_no_target_network_reads_the_online_one(graph):
    model, _ = build(target_network=False)
    assert model.target is None
    assert not any("target" in v.name for v in v1.global_variables())
    assert all(g is None for g in tf.gradients(model.td_target, online_variables()))


def test_target_gets_no_gradient_and_does_not_move(graph):
    model, feed = build(period=1000)
    assert all(g is None for g in tf.gradients(model.loss, list(model.target.variables)))
    session = start(model)
    online_before, target_before = session.run([online_variables(), model.target.variables])
    for _ in range(3):
        session.run(model.train_op, feed)
    online_after, target_after = session.run([online_variables(), model.target.variables])
    assert all((a == b).all() for a, b in zip(target_before, target_after, strict=True))
    assert not any((a == b).all() for a, b in zip(online_before, online_after, strict=True))


def test_hard_sync_every_period_makes_them_equal(graph):
    model, feed = build(period=3)
    session = start(model)
    initial = session.run(model.target.variables)
    for step in range(1, 7):
        _, synced = session.run([model.train_op, model.synced], feed)
        online, target = session.run([online_variables(), model.target.variables])
        assert synced == (step % 3 == 0)
        expected = online if step % 3 == 0 else initial
        assert all((t == e).all() for t, e in zip(target, expected, strict=True))
        if synced:
            initial = target
    assert session.run(model.updates) == 6


def test_polyak_sync_equals_numpy(graph):
    tau = 0.25
    model, feed = build(period=1, tau=tau)
    session = start(model)
    for _ in range(2):  # the second step starts from target != online
        before = session.run(model.target.variables)
        session.run(model.train_op, feed)
        online, target = session.run([online_variables(), model.target.variables])
        for o, t, b in zip(online, target, before, strict=True):
            np.testing.assert_allclose(t, (1 - tau) * b + tau * o, rtol=1e-6, atol=1e-7)
    assert not all((o == t).all() for o, t in zip(online, target, strict=True))


@pytest.mark.parametrize("target_network", [True, False])
def test_td_target_and_loss_equal_numpy(graph, target_network):
    gamma = 0.9
    model, feed = build(target_network=target_network, gamma=gamma)
    session = start(model)
    session.run(model.train_op, feed)  # online != target from here on
    next_net = model.target.output if target_network else None
    observations, actions, rewards, next_observations, terminated = feed.values()
    if next_net is None:
        next_q = session.run(model.online.q_values, {list(feed)[0]: next_observations})
    else:
        next_q = session.run(next_net.q_values, feed)
    q, y, q_taken, loss = session.run(
        [model.online.q_values, model.td_target, model.q_taken, model.loss], feed
    )
    expected_y = rewards + gamma * (1 - terminated) * next_q.max(axis=1)
    np.testing.assert_allclose(y, expected_y, rtol=1e-5)
    np.testing.assert_allclose(q_taken, q[np.arange(BATCH), actions], rtol=1e-6)
    error = np.abs(q_taken - expected_y)
    expected_loss = np.where(error <= 1, 0.5 * error**2, error - 0.5).mean()
    np.testing.assert_allclose(loss, expected_loss, rtol=1e-5)


def test_huber_is_quadratic_then_linear(graph):
    errors = np.array([-3.0, -1.0, -0.5, 0.0, 0.25, 2.0], np.float32)
    with v1.Session() as session:
        value = session.run(huber(tf.constant(errors), delta=1.0))
    assert value == pytest.approx(np.mean([2.5, 0.5, 0.125, 0.0, 0.03125, 1.5]))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"period": 0},
            r"dqn: expected the target's sync period C to be an int >= 1, found 0",
        ),
        ({"period": 2.5}, r"sync period C to be an int >= 1, found 2.5"),
        ({"tau": 0.0}, r"dqn: expected tau to be a finite number in \(0, 1\], found 0.0"),
        ({"tau": 1.5}, r"dqn: expected tau to be a finite number in \(0, 1\], found 1.5"),
        (
            {"max_grad_norm": 0.0},
            r"dqn: expected the gradients' clip norm to be a finite number > 0, "
            r"found 0.0; pass e.g. 10.0",
        ),
        ({"updates_per_run": 0}, r"dqn: expected updates_per_run to be an int >= 1"),
        ({"gamma": 1.5}, r"dqn: expected the discount gamma in \[0, 1\], found 1.5"),
        (
            {"hidden": (8, 0)},
            r"dqn/online: expected hidden\[1\] to be an int >= 1, found 0",
        ),
    ],
)
def test_bad_arguments_fail_before_any_variable(graph, kwargs, message):
    x = v1.placeholder(tf.float32, [None, 4])
    v = v1.placeholder(tf.float32, [None])
    with pytest.raises(ZooError, match=message):
        dqn(x, v, v, x, v, 2, **kwargs)
    assert v1.global_variables() == []


def test_q_network_rejects_bad_sizes(graph):
    x = v1.placeholder(tf.float32, [None, 4])
    with pytest.raises(
        ShapeError, match=r"qnet: expected n_actions to be an int >= 1, found 0"
    ):
        q_network(x, n_actions=0)
    assert v1.global_variables() == []


def test_registered_for_inspect():
    rows, _ = inspect_model("q_network")
    assert sorted(row.name for row in rows) == sorted(f"qnet/{n}" for n in NAMES)


def test_next_action_is_the_argmax_after_the_step(graph):
    acting = v1.placeholder(tf.float32, [None, 4])
    placeholders = transition_placeholders()
    model = dqn(*placeholders, 3, learning_rate=0.5, hidden=(8,), act_observations=acting)
    rng = np.random.default_rng(1)
    batch = [rng.normal(size=(BATCH, 4)), rng.integers(0, 3, BATCH), rng.normal(size=BATCH)]
    batch += [rng.normal(size=(BATCH, 4)), np.zeros(BATCH)]
    feed = dict(zip(placeholders, batch, strict=True))
    observations = rng.normal(size=(64, 4))
    session = start(model)
    before = session.run(model.greedy_action, {placeholders[0]: observations})
    _, fused = session.run(
        [model.train_op, model.next_action], {**feed, acting: observations}
    )
    after = session.run(model.greedy_action, {placeholders[0]: observations})
    assert (fused == after).all()
    assert (fused != before).any()  # the step (a large one) changed some choices


def test_double_dqn_the_online_network_picks_the_target_network_values(graph):
    gamma = 0.9
    model, feed = build(gamma=gamma, double=True)
    variables = len(v1.global_variables())
    session = start(model)
    for _ in range(20):  # online drifts from the target (synced every 1,000 updates)
        session.run(model.train_op, feed)
    _, _, rewards, next_observations, terminated = feed.values()
    chooser = session.run(model.online.q_values, {list(feed)[0]: next_observations})
    values = session.run(model.target.output.q_values, feed)
    picked = chooser.argmax(axis=1)
    expected = rewards + gamma * (1 - terminated) * values[np.arange(BATCH), picked]
    np.testing.assert_allclose(session.run(model.td_target, feed), expected, rtol=1e-5)
    assert (picked != values.argmax(axis=1)).any()  # plain DQN's max would differ here
    assert len(v1.global_variables()) == variables  # the online re-read made nothing


def test_double_dqn_without_a_target_network_is_refused(graph):
    with pytest.raises(ZooError, match=r"dqn: expected a target network with double=Tru"):
        build(target_network=False, double=True)
    assert v1.global_variables() == []


def test_clipped_gradients_move_adam_as_numpy_says(graph):
    """Adam's first step is lr * sqrt(1 - b2) * g / (sqrt(1 - b2) * |g| + eps): with
    gradients clipped to a global norm near eps, the step depends on the clipping."""
    clip, lr, beta2, eps = 1e-7, 0.01, 0.999, 1e-8
    model, feed = build(max_grad_norm=clip)
    gradients = tf.gradients(model.loss, online_variables())
    session = start(model)
    before, raw = session.run([online_variables(), gradients], feed)
    session.run(model.train_op, feed)
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


@pytest.mark.parametrize(
    "kwargs",
    [{"period": 1, "tau": 0.3}, {"period": 2, "double": True}],
    ids=["polyak", "double"],  # a sync after every update; a hard copy mid-burst
)  # fmt: skip
def test_a_burst_in_one_run_equals_one_update_a_run(kwargs):
    """K updates in one run (a tf.while_loop, syncs inside) = K runs of one update."""
    burst, rng = 5, np.random.default_rng(2)
    batches = [
        rng.normal(size=(burst, BATCH, 4)),
        rng.integers(0, 3, (burst, BATCH)),
        rng.normal(size=(burst, BATCH)),
        rng.normal(size=(burst, BATCH, 4)),
        (rng.random((burst, BATCH)) < 0.3).astype(np.float32),
    ]
    results = []
    for updates_per_run in (1, burst):
        with tf.Graph().as_default():
            placeholders = transition_placeholders(stacked=updates_per_run > 1)
            v1.set_random_seed(1)
            model = dqn(
                *placeholders, 3, hidden=(8, 8), learning_rate=0.01, max_grad_norm=1.0,
                updates_per_run=updates_per_run, **kwargs,
            )  # fmt: skip
            session = start(model)
            fetch = [model.train_op, model.losses]
            if updates_per_run == 1:
                losses = [
                    session.run(
                        fetch, dict(zip(placeholders, [b[i] for b in batches], strict=True))
                    )[1][0]
                    for i in range(burst)
                ]
            else:
                losses = session.run(fetch, dict(zip(placeholders, batches, strict=True)))[
                    1
                ]
            variables = session.run(v1.global_variables())
            results.append((losses, variables, session.run(model.updates)))
    (losses_1, values_1, updates_1), (losses_k, values_k, updates_k) = results
    assert updates_1 == updates_k == burst
    np.testing.assert_allclose(losses_k, losses_1, rtol=1e-5)
    for a, b in zip(values_1, values_k, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
