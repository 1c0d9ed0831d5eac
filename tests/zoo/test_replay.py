"""The replay buffer, the rollout and their checkpoint: a ring, exact restores, misuse."""

import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from layers.errors import EnvError, ShapeError, ZooError
from zoo.rl import replay as replay_module
from zoo.rl.replay import (
    REPLAY,
    ReplayBuffer,
    Rollout,
    RolloutCheckpoint,
    episode_seed,
    evaluate,
)
from zoo.training.checkpoints import Checkpointer


def test_replay_buffer_is_a_ring():
    replay = ReplayBuffer(3, 2)
    for i in range(5):
        replay.add([i, -i], i % 2, float(i), [i + 1, 0], i == 4)
    assert (replay.position, replay.size) == (2, 3)
    assert replay.arrays["rewards"].tolist() == [3.0, 4.0, 2.0]  # 0 and 1 overwritten
    assert replay.arrays["observations"][1].tolist() == [4.0, -4.0]
    assert replay.arrays["terminated"].tolist() == [0.0, 1.0, 0.0]
    observations, actions, rewards, next_observations, terminated = replay.sample(
        np.random.default_rng(0), 50
    )
    assert set(rewards.tolist()) == {2.0, 3.0, 4.0}
    assert (next_observations[:, 0] == observations[:, 0] + 1).all()
    assert (actions == rewards.astype(int) % 2).all()


@pytest.mark.parametrize(
    "capacity, width, message",
    [
        (0, 4, r"ReplayBuffer: expected capacity to be an int >= 1, found 0"),
        (10, 2.5, r"ReplayBuffer: expected n_observations to be an int >= 1, found 2.5"),
    ],
)
def test_replay_buffer_refuses_bad_sizes(capacity, width, message):
    with pytest.raises(ZooError, match=message):
        ReplayBuffer(capacity, width)


def test_replay_buffer_refuses_misuse_by_message():
    replay = ReplayBuffer(4, 2)
    with pytest.raises(ZooError, match="expected transitions to sample, found none"):
        replay.sample(np.random.default_rng(0), 8)
    with pytest.raises(ShapeError, match=r"expected observations of shape \[2\], found"):
        replay.add([1.0, 2.0, 3.0], 0, 1.0, [1.0, 2.0, 3.0], False)
    assert (replay.position, replay.size) == (0, 0)


def test_episode_seeds_differ_and_repeat():
    assert episode_seed(0, 3) == episode_seed(0, 3)
    assert len({episode_seed(s, e) for s in range(3) for e in range(3)}) == 9


def test_evaluation_seeds_are_disjoint_from_training_seeds():
    training = {episode_seed(s, e) for s in range(5) for e in range(2000)}
    evaluation = {episode_seed(s, e, evaluation=True) for s in range(5) for e in range(100)}
    assert len(training) == 10000 and len(evaluation) == 500
    assert all(seed % 2 == 0 for seed in training)  # even: any run, any episode
    assert all(seed % 2 == 1 for seed in evaluation)  # odd: never a training start
    rollout = random_rollout(seed=4)
    starts = []
    rollout.env.reset = lambda seed: (
        starts.append(seed) or type(rollout.env).reset(rollout.env, seed=seed)
    )
    while len(rollout.returns) < 3:
        rollout.step(never)
    assert starts == [episode_seed(4, e) for e in range(1, 4)]  # what training resets with


def test_evaluate_plays_greedy_episodes_from_the_evaluation_seeds():
    observations = []

    def act(observation):
        observations.append(observation)
        return 0  # always push left: an episode of about 10 steps

    returns = evaluate("CartPole-v1", act, 3, seed=7)
    assert len(returns) == 3 and all(8 <= r <= 12 for r in returns)
    assert sum(returns) == len(observations)
    starts = [np.asarray(observations[int(sum(returns[:i]))]) for i in range(3)]
    env = gymnasium.make("CartPole-v1")
    for i, start in enumerate(starts):
        expected, _ = env.reset(seed=episode_seed(7, i, evaluation=True))
        assert (expected == start).all()
    assert evaluate("CartPole-v1", act, 3, seed=7) == returns
    with pytest.raises(ZooError, match="evaluate: expected episodes to be an int >= 1"):
        evaluate("CartPole-v1", act, 0, seed=7)


def random_rollout(seed=3):
    """A CartPole rollout that acts at random (epsilon 1): no network needed."""
    return Rollout("CartPole-v1", seed, capacity=64, epsilon=(1.0, 1.0, 1), name="r")


def never(observation):
    raise AssertionError("a random rollout asked for a greedy action")


def test_rollout_restored_mid_episode_continues_as_the_original():
    original = random_rollout()
    for _ in range(40):
        original.step(never)
    assert original.returns and original.actions  # episodes ended, one is under way
    state = original.state()
    arrays = {key: array.copy() for key, array in original.replay.arrays.items()}
    restored = random_rollout()
    restored.restore(state)
    for key, array in restored.replay.arrays.items():
        array[...] = arrays[key]
    for _ in range(100):  # the buffer (capacity 64) wraps around
        original.step(never)
        restored.step(never)
    assert restored.returns == original.returns and restored.ends == original.ends
    assert (restored.observation == original.observation).all()
    for key, array in original.replay.arrays.items():
        assert (restored.replay.arrays[key] == array).all(), key
    batches = [r.sample(16) for r in (original, restored)]
    assert all((a == b).all() for a, b in zip(*batches, strict=True))


def test_restore_refuses_an_environment_that_does_not_replay():
    rollout = random_rollout()
    for _ in range(5):
        rollout.step(never)
    state = rollout.state()
    state["observation"] = [9.0, 9.0, 9.0, 9.0]
    with pytest.raises(EnvError, match=r"r: expected the replayed episode to reach"):
        random_rollout().restore(state)


@pytest.mark.parametrize(
    "epsilon, message",
    [
        ((1.5, 0.01, 10), r"epsilon's start to be a finite number in \[0, 1\], found 1.5"),
        ((1.0, -0.1, 10), r"epsilon's end to be a finite number in \[0, 1\], found -0.1"),
        ((1.0, 0.01, 0), r"epsilon's decay \(environment steps\) to be an int >= 1, "
         "found 0"),
    ],
)  # fmt: skip
def test_rollout_refuses_a_bad_epsilon(epsilon, message):
    fix = r"; pass epsilon=\(start, end, decay\), such as \(1.0, 0.01, 5000\)"
    with pytest.raises(ZooError, match=f"run: expected {message}{fix}"):
        Rollout("CartPole-v1", 0, 8, epsilon=epsilon, name="run")


def test_timed_adds_the_time_of_its_block(monkeypatch):
    rollout = random_rollout()
    clock = iter([10.0, 12.5, 20.0, 20.25])
    monkeypatch.setattr(replay_module.time, "perf_counter", lambda: next(clock))
    with rollout.timed("train"):
        pass
    with pytest.raises(RuntimeError), rollout.timed("train"):
        raise RuntimeError("counted all the same")
    assert rollout.seconds["train"] == 2.75


def test_rollout_checkpoint_holds_the_variables_and_the_buffer(tmp_path):
    def session_and_rollout():
        graph = tf.Graph()
        with graph.as_default():
            weight = tf.compat.v1.get_variable("w", initializer=[1.0, 2.0])
            double = weight.assign(weight * 2.0)
            session = tf.compat.v1.Session(graph=graph)
            session.run(weight.initializer)
        return session, weight, double, random_rollout()

    def checkpoint(session, rollout, resume):
        owner = Checkpointer(str(tmp_path), every=5, resume=resume)
        path = owner.next_path("agent")
        return RolloutCheckpoint(owner, path, session, rollout, "agent", 10, 4)

    session, weight, double, rollout = session_and_rollout()
    saved = checkpoint(session, rollout, resume=False)
    assert saved.shapes()[REPLAY + "observations"] == [64, 4]
    for _ in range(30):
        rollout.step(never)
    session.run(double)
    saved.save(5, [], 0.0)

    session2, weight2, _, rollout2 = session_and_rollout()
    assert checkpoint(session2, rollout2, resume=True).restore()[0] == 5
    assert session2.run(weight2).tolist() == [2.0, 4.0]
    assert rollout2.state() == rollout.state()
    for key, array in rollout.replay.arrays.items():
        assert (rollout2.replay.arrays[key] == array).all(), key
