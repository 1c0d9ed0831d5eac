"""The burst runner: environment steps then K updates a run, resume inside a burst,
the fused next action, the learning-rate schedule, misuse."""

import functools

import numpy as np
import pytest
import tensorflow as tf

from layers.errors import ZooError
from zoo.models import q_network
from zoo.rl.bursts import BurstRunner, linear_decay
from zoo.rl.dqn import dqn_update
from zoo.rl.replay import Rollout

BURST, BATCH, EVERY, WARM_UP = 4, 8, 5, 10


def agent_and_session(updates_per_run=BURST):
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(0)
        network = functools.partial(q_network, hidden=(8,))
        agent = dqn_update(4, 2, network=network, updates_per_run=updates_per_run)
        init = tf.compat.v1.global_variables_initializer()
    session = tf.compat.v1.Session(graph=graph)
    session.run(init)
    session.run(agent.start_op)
    return agent, session


def runner(agent, session, epsilon=(1.0, 1.0, 1), **kwargs):
    rollout = Rollout("CartPole-v1", 0, capacity=200, epsilon=epsilon, name="r")
    kwargs = {"batch_size": BATCH, "train_every": EVERY, "learning_starts": WARM_UP,
              **kwargs}  # fmt: skip
    return BurstRunner(session, agent, rollout, **kwargs)


def test_a_burst_is_its_environment_steps_then_its_updates_in_one_run():
    agent, session = agent_and_session()
    burster = runner(agent, session)
    losses, metrics = burster.run(BURST, with_loss=True)
    assert burster.rollout.env_steps == WARM_UP + EVERY  # the warm-up, then a burst's
    assert session.run(agent.updates) == burster.updates == BURST
    assert len(losses) == BURST and all(np.isfinite(losses))
    assert metrics["env_steps"] == [WARM_UP + EVERY] * BURST
    assert metrics["epsilon"] == [1.0] * BURST
    assert burster.run(2 * BURST, with_loss=False) is None  # two bursts, split in two
    assert burster.rollout.env_steps == WARM_UP + 3 * EVERY
    assert session.run(agent.updates) == 3 * BURST


def test_a_runner_started_inside_a_burst_finishes_it_without_environment_steps():
    """What a resume does: the counter says where in its burst the run stands."""
    agent, session = agent_and_session()
    first = runner(agent, session)
    first.run(BURST // 2, with_loss=False)  # half a burst, then "a checkpoint"
    resumed = BurstRunner(session, agent, first.rollout, batch_size=BATCH,
                          train_every=EVERY, learning_starts=WARM_UP)  # fmt: skip
    steps = first.rollout.env_steps
    losses, _ = resumed.run(BURST // 2, with_loss=True)  # the burst's other half
    assert resumed.rollout.env_steps == steps and len(losses) == BURST // 2
    resumed.run(BURST, with_loss=False)  # the next burst starts with its steps
    assert resumed.rollout.env_steps == steps + EVERY
    assert session.run(agent.updates) == 2 * BURST


def test_the_first_step_after_a_burst_acts_with_the_action_the_burst_returned():
    agent, session = agent_and_session()
    greedy = runner(agent, session, epsilon=(0.0, 0.0, 1), learning_starts=0)
    asked = []
    real = greedy.act
    greedy.act = lambda observation: asked.append(1) or real(observation)
    greedy.run(BURST, with_loss=False)
    assert len(asked) == EVERY  # no burst before: every step asked the network
    start, fused = greedy.rollout.env_steps, greedy._next_action
    assert fused == real(greedy.rollout.observation)  # the greedy action after the burst
    greedy.run(BURST, with_loss=False)
    assert len(asked) == 2 * EVERY - 1  # the first step of this burst took it
    assert greedy.rollout.replay.arrays["actions"][start] == fused


def test_the_learning_rate_is_set_before_each_run_from_the_updates_taken():
    agent, session = agent_and_session()
    asked = []

    def rate(updates):
        asked.append(updates)
        return 1e-3

    burster = runner(agent, session, learning_rate=rate)
    burster.run(BURST, with_loss=False)
    burster.run(BURST // 2, with_loss=False)
    burster.run(BURST, with_loss=False)  # ends one burst, starts the next: two runs
    assert asked == [0, BURST, BURST + BURST // 2, 2 * BURST]
    decay = linear_decay(1.0, 0.2, 10)
    assert [decay(u) for u in (0, 5, 10)] == pytest.approx([1.0, 0.6, 0.2])


def test_train_runs_the_loop_in_bursts(tmp_path):
    agent, session = agent_and_session()
    burster = runner(agent, session)
    runs = []
    logged, speed = burster.train(3 * BURST, before_run=lambda: runs.append(1), log_every=4)
    assert [step for step, _, _ in logged] == [0, 4, 8]
    assert logged[1][2]["env_steps"] == WARM_UP + 2 * EVERY
    assert len(runs) == 3 and speed > 0
    assert session.run(agent.updates) == 3 * BURST


def test_one_update_a_run_needs_no_stacks():
    agent, session = agent_and_session(updates_per_run=1)
    burster = runner(agent, session, train_every=2, learning_starts=0)
    losses, _ = burster.run(1, with_loss=True)
    assert len(losses) == 1 and burster.rollout.env_steps == 2


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"batch_size": 0}, r"BurstRunner: expected batch_size to be an int >= 1, found 0; "
         "pass batch_size=1 or more"),
        ({"train_every": 2.0}, r"BurstRunner: expected train_every to be an int >= 1, "
         "found 2.0"),
        ({"learning_starts": -1}, r"BurstRunner: expected learning_starts to be an int >= "
         "0, found -1"),
        ({"learning_rate": 0.1}, r"BurstRunner: expected learning_rate to be None or "
         r"rate\(updates\), found 0.1; pass e.g. linear_decay"),
    ],
)  # fmt: skip
def test_bad_arguments_fail_by_message(kwargs, message):
    agent, session = agent_and_session(updates_per_run=1)
    with pytest.raises(ZooError, match=message):
        runner(agent, session, **kwargs)
