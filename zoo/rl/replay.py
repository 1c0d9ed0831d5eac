"""Experience for an off-policy agent: a replay buffer, a rollout, their checkpoint.

A :class:`Rollout` runs one gymnasium environment epsilon-greedily and stores
every transition in its :class:`ReplayBuffer`; :class:`RolloutCheckpoint` saves
the session's variables with the buffer, so the training loop resumes an agent
to the same numbers, mid-episode included. Check the environment first with
:func:`zoo.rl.envs.check_env`; train with :class:`zoo.rl.bursts.BurstRunner`,
which takes the environment steps and the updates in turn.

Usage::

    rollout = Rollout("CartPole-v1", seed=0, capacity=10000)
    checkpoints = RolloutCheckpoint(checkpointer, checkpointer.next_path("agent"),
                                    session, rollout, "agent", steps, batch_size)
    runner = BurstRunner(session, agent, rollout, batch_size=64, train_every=256)
    runner.train(steps, checkpoints)
    returns = evaluate("CartPole-v1", runner.act, episodes=20, seed=0)
"""

import contextlib
import time

import gymnasium
import numpy as np

from layers.checks import int_problem, probability_problem, require
from layers.errors import EnvError, ShapeError, ZooError
from zoo import training
from zoo.rl.returns import mean_of_last
from zoo.training.checkpoints import SessionLoopCheckpoint

REPLAY = "replay/"
"""Prefix of the replay buffer's arrays inside a checkpoint."""


class ReplayBuffer:
    """A ring buffer of transitions in numpy arrays; the oldest are overwritten.

    Args:
        capacity: transitions kept.
        n_observations: width of an observation.

    Attributes:
        arrays: ``observations``, ``actions``, ``rewards``, ``next_observations``
            and ``terminated``, each ``[capacity, ...]``, in that order.
        position: where the next transition goes.
        size: transitions stored (at most ``capacity``).

    Raises:
        ZooError: ``capacity`` or ``n_observations`` is not a positive int.
    """

    def __init__(self, capacity, n_observations):
        for name, value in (("capacity", capacity), ("n_observations", n_observations)):
            require("ReplayBuffer", int_problem(value, name=name), "pass a positive int")
        self.arrays = {
            "observations": np.zeros((capacity, n_observations), np.float32),
            "actions": np.zeros(capacity, np.int64),
            "rewards": np.zeros(capacity, np.float32),
            "next_observations": np.zeros((capacity, n_observations), np.float32),
            "terminated": np.zeros(capacity, np.float32),
        }
        self.capacity, self.position, self.size = capacity, 0, 0

    def add(self, observation, action, reward, next_observation, terminated):
        """Stores one transition.

        Raises:
            ShapeError: an observation is not ``[n_observations]``.
        """
        i = self.position
        values = (observation, action, reward, next_observation, terminated)
        try:
            for array, value in zip(self.arrays.values(), values, strict=True):
                array[i] = value
        except ValueError as err:
            width = self.arrays["observations"].shape[1]
            raise ShapeError(
                f"ReplayBuffer: expected observations of shape [{width}], found {err}; "
                "add the transitions of the environment the buffer was made for"
            ) from None
        self.position = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, rng, batch_size):
        """Returns the five arrays of ``batch_size`` transitions drawn uniformly.

        Args:
            rng: a ``numpy.random.Generator`` (the draws are its only randomness).
            batch_size: transitions drawn, with replacement.

        Raises:
            ZooError: the buffer is empty.
        """
        if not self.size:
            raise ZooError(
                "ReplayBuffer: expected transitions to sample, found none; add some "
                "before the first sample (a warm-up of random steps)"
            )
        index = rng.integers(0, self.size, batch_size)
        return [array[index] for array in self.arrays.values()]


def episode_seed(seed, episode, evaluation=False):
    """Returns the reset seed of episode ``episode`` of run ``seed`` (fixed: resumable).

    Training episodes get even seeds, :func:`evaluate`'s episodes (``evaluation``)
    odd ones from another stream: no evaluation starts where training did.
    """
    sequence = np.random.SeedSequence([seed, episode], spawn_key=(int(evaluation),))
    return int(sequence.generate_state(1)[0]) & ~1 | int(evaluation)


def evaluate(env_id, act, episodes, seed):
    """Runs ``episodes`` greedy episodes (no exploration); returns their returns.

    Episode ``i`` resets with ``episode_seed(seed, i, evaluation=True)``, a seed
    no training episode of any :class:`Rollout` uses (those are even, these odd),
    so a policy is judged on starts it never trained on.

    Args:
        env_id: a gymnasium id that :func:`zoo.rl.envs.check_env` accepts.
        act: ``act(observation)`` returns the action (e.g. the greedy one).
        episodes: number of episodes, an int >= 1.
        seed: the run's seed.

    Returns:
        list of float: each episode's return, in order.

    Raises:
        ZooError: ``episodes`` is not an int >= 1.
    """
    require("evaluate", int_problem(episodes, name="episodes"), "pass e.g. 20")
    env = gymnasium.make(env_id)
    returns = []
    try:
        for episode in range(episodes):
            observation, _ = env.reset(seed=episode_seed(seed, episode, evaluation=True))
            total, finished = 0.0, False
            while not finished:
                observation, reward, terminated, truncated, _ = env.step(
                    int(act(observation))
                )
                total += float(reward)
                finished = terminated or truncated
            returns.append(total)
    finally:
        env.close()
    return returns


class Rollout:
    """One run's environment, replay buffer, epsilon-greedy RNG and episode record.

    Every episode starts with ``env.reset(seed=episode_seed(seed, episode))``, and
    the actions of the current episode are kept, so :meth:`restore` rebuilds the
    environment mid-episode exactly: reset with the same seed, replay the actions.
    It is also the "batches" of its :class:`RolloutCheckpoint`: ``state()`` and
    ``restore()`` carry everything but the buffer's arrays; ``seed`` and
    ``num_examples`` (the buffer's capacity) are checked on resume.

    Args:
        env_id: a gymnasium id that :func:`zoo.rl.envs.check_env` accepts.
        seed: seeds exploration, replay draws and every episode's reset.
        capacity: the replay buffer's capacity.
        epsilon: ``(start, end, decay)``: epsilon falls linearly from ``start``
            to ``end`` over ``decay`` environment steps.
        name: names the run in TensorBoard tags and error messages.
        writer: optional TensorBoard ``FileWriter``; each episode's return goes
            to it as ``<name>/episode_return`` at its last environment step.

    Attributes:
        replay: the :class:`ReplayBuffer`.
        observation: the observation the next step acts on.
        returns, ends: each finished episode's return and last environment step.
        seconds: time spent per part: ``act``, ``env``, ``replay``, and ``train``
            (what the trainer times with :meth:`timed`); kept in checkpoints.

    Raises:
        ZooError: ``epsilon`` is not two probabilities and a positive int.
    """

    def __init__(
        self, env_id, seed, capacity, epsilon=(1.0, 0.01, 5000), name="rollout", writer=None
    ):
        start, end, decay = epsilon
        fix = "pass epsilon=(start, end, decay), such as (1.0, 0.01, 5000)"
        for problem in (
            probability_problem(start, zero=True, name="epsilon's start"),
            probability_problem(end, zero=True, name="epsilon's end"),
            int_problem(decay, name="epsilon's decay (environment steps)"),
        ):
            require(name, problem, fix)
        self.env = gymnasium.make(env_id)
        self.seed, self.name, self.writer = seed, name, writer
        self.n_actions = int(self.env.action_space.n)
        self.replay = ReplayBuffer(capacity, self.env.observation_space.shape[0])
        self.num_examples = capacity
        self.epsilon = (start, end, decay)
        self.rng = np.random.default_rng(seed)
        self.env_steps, self.returns, self.ends = 0, [], []
        self.seconds = dict.fromkeys(("act", "env", "replay", "train"), 0.0)
        self._start_episode()

    def _start_episode(self):
        self.actions, self.episode_return = [], 0.0
        seed = episode_seed(self.seed, len(self.returns))
        self.observation, _ = self.env.reset(seed=seed)

    @contextlib.contextmanager
    def timed(self, part):
        """Adds the time spent in the ``with`` block to ``seconds[part]``."""
        began = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[part] += time.perf_counter() - began

    def describe(self):
        """Returns ``"episodes N, mean return (100) R"``: the run so far, for a log line."""
        mean = mean_of_last(self.returns)
        shown = "-" if mean is None else f"{mean:.1f}"
        return f"episodes {len(self.returns)}, mean return (100) {shown}"

    def epsilon_now(self):
        """Returns epsilon at the current environment step (linear decay)."""
        start, end, decay = self.epsilon
        return end + (start - end) * max(0.0, 1.0 - self.env_steps / decay)

    def step(self, act):
        """Takes one epsilon-greedy environment step and stores its transition.

        Args:
            act: ``act(observation)`` returns the greedy action; called only when
                the step does not explore.
        """
        with self.timed("act"):
            if self.rng.random() < self.epsilon_now():
                action = int(self.rng.integers(self.n_actions))
            else:
                action = int(act(self.observation))
        with self.timed("env"):
            next_observation, reward, terminated, truncated, _ = self.env.step(action)
        with self.timed("replay"):
            self.replay.add(self.observation, action, reward, next_observation, terminated)
        self.actions.append(action)
        self.episode_return += float(reward)
        self.env_steps += 1
        self.observation = next_observation
        if terminated or truncated:
            self.returns.append(self.episode_return)
            self.ends.append(self.env_steps)
            if self.writer:
                training.add_scalar(
                    self.writer,
                    f"{self.name}/episode_return",
                    self.episode_return,
                    self.env_steps,
                )
            with self.timed("env"):
                self._start_episode()

    def sample(self, batch_size):
        """Returns a uniformly drawn batch of transitions (timed as ``replay``)."""
        with self.timed("replay"):
            return self.replay.sample(self.rng, batch_size)

    def close(self):
        """Closes the environment."""
        self.env.close()

    def state(self):
        """Returns everything but the buffer's arrays, as JSON-able values (a copy)."""
        return {
            "rng": self.rng.bit_generator.state,
            "env_steps": self.env_steps,
            "returns": list(self.returns),
            "ends": list(self.ends),
            "actions": list(self.actions),
            "episode_return": self.episode_return,
            "observation": self.observation.tolist(),
            "position": self.replay.position,
            "size": self.replay.size,
            "seconds": dict(self.seconds),
        }

    def restore(self, state):
        """Restores :meth:`state`; rebuilds the environment by replaying the episode.

        Raises:
            EnvError: the replayed episode does not reach the saved observation
                (the environment is not deterministic given its reset seed).
        """
        self.rng.bit_generator.state = state["rng"]
        self.env_steps, self.seconds = state["env_steps"], dict(state["seconds"])
        self.returns, self.ends = list(state["returns"]), list(state["ends"])
        self.replay.position, self.replay.size = state["position"], state["size"]
        self._start_episode()
        for action in state["actions"]:
            self.observation, *_ = self.env.step(action)
        self.actions, self.episode_return = list(state["actions"]), state["episode_return"]
        saved = np.asarray(state["observation"], self.observation.dtype)
        if not np.array_equal(saved, self.observation):
            raise EnvError(
                f"{self.name}: expected the replayed episode to reach the saved "
                f"observation {saved.tolist()}, found {self.observation.tolist()}; this "
                "environment is not deterministic given its reset seed, so it cannot "
                "resume exactly: start a new run"
            )


class RolloutCheckpoint(SessionLoopCheckpoint):
    """The session's variables plus a rollout's replay buffer in one checkpoint.

    Its arguments are :class:`zoo.training.checkpoints.SessionLoopCheckpoint`'s, with the
    :class:`Rollout` as ``batches``: its :meth:`Rollout.state` and buffer are
    saved and restored with the variables.
    """

    def shapes(self):
        arrays = self.batches.replay.arrays
        return {
            **super().shapes(),
            **{REPLAY + k: list(a.shape) for k, a in arrays.items()},
        }

    def values(self):
        arrays = self.batches.replay.arrays
        return {**super().values(), **{REPLAY + k: a for k, a in arrays.items()}}

    def assign(self, values):
        super().assign(values)
        for key, array in self.batches.replay.arrays.items():
            array[...] = values[REPLAY + key]
