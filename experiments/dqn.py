"""DQN on CartPole-v1 with and without a target network (hard copy, Polyak, none).

The target network is seed 002's "past network": :func:`zoo.models.dqn` builds the
Q-network under ``dqn/online`` and a frozen copy under ``dqn/target`` whose values
form the TD target, synced by :mod:`zoo.state` inside the training step. Three
variants, several seeds each:

* ``none``: the TD target reads the online network itself (no target network);
* ``hard``: target := online every ``--target-period`` (C) updates, as Mnih et al. 2015;
* ``polyak``: target := tau * online + (1 - tau) * target after every update.

Each run: ``--learning-starts`` uniformly random steps into a replay buffer, then
one Adam step on a sampled batch after every ``--train-every`` environment steps
(``--steps`` updates), acting epsilon-greedily (epsilon decays linearly over
``--epsilon-decay`` environment steps). One ``session.run`` per update
(``Session.make_callable``), which also returns the greedy action for the
observation the next environment step starts from (``DQN.next_action``); steps
between updates act with a ``session.run`` of their own.

Usage::

    make experiment-dqn
    python -m experiments.dqn --quick --out runs/dqn/quick
    python -m experiments.dqn --variant hard --seeds 2 --resume runs/dqn/RUN

Writes ``results.json`` (per variant and seed: episode returns, mean of the last
100, environment steps to a 100-episode mean of 475, speed), ``returns.png``,
``run.json``, TensorBoard events under ``tensorboard/<variant>-seed<N>/`` and
checkpoints (networks, optimizer, replay buffer, RNG and environment state).
"""

import difflib
import multiprocessing
import os
import platform
import shlex
import signal
import sys
import time
import warnings

import gymnasium
import numpy as np
import tensorflow as tf
from tqdm import tqdm

from experiments.harness import flags, rundir
from layers.errors import ZooError
from zoo import training
from zoo.checkpoints import SessionLoopCheckpoint
from zoo.models.qnet import check_gamma, check_period, dqn
from zoo.state import check_tau

v1 = tf.compat.v1
VARIANTS = ("none", "hard", "polyak")
WINDOW = 100
"""Episodes averaged for "solved": CartPole-v1 counts as solved at a 100-episode
mean of its ``reward_threshold`` (475)."""
REPLAY = "replay/"
"""Prefix of the replay buffer's arrays inside a checkpoint."""
PROFILE_CALLS = 200
"""Calls per timed batch of the step profile (``--profile-calls``)."""


def build_parser():
    """Returns the experiment's parser: the shared flags plus DQN's."""
    p = flags.parser(
        "DQN on a gymnasium environment with no target network, a hard copy every C "
        "updates, or Polyak averaging; several seeds each.",
        steps=49000,
        batch_size=64,
        quick_steps=300,
        data=False,
    )
    p.set_defaults(checkpoint_every=5000)
    p.add_argument("--env", default="CartPole-v1", help="gymnasium environment id")
    flags.add_variant_flag(p, VARIANTS, help="which target to use", every="all")
    p.add_argument(
        "--seeds", type=int, default=5, help="runs per variant: seeds --seed, --seed+1, ..."
    )
    p.add_argument("--learning-rate", type=float, default=1e-3, help="Adam learning rate")
    p.add_argument(
        "--gamma",
        type=float,
        default=0.99,
        check=flags.real(0.0, inclusive=True, maximum=1.0),
        help="discount factor",
    )
    p.add_argument("--buffer-size", type=int, default=10000, help="replay buffer capacity")
    p.add_argument(
        "--learning-starts",
        type=int,
        default=1000,
        help="uniformly random environment steps before the first update",
    )
    p.add_argument(
        "--train-every", type=int, default=1, help="environment steps per update"
    )
    p.add_argument("--epsilon-start", type=float, default=1.0, help="initial epsilon")
    p.add_argument("--epsilon-end", type=float, default=0.01, help="final epsilon")
    p.add_argument(
        "--epsilon-decay",
        type=int,
        default=5000,
        help="environment steps over which epsilon decays linearly",
    )
    p.add_argument(
        "--target-period", type=int, default=200, help="C: updates between hard copies"
    )
    p.add_argument(
        "--tau",
        type=float,
        default=0.01,
        check=flags.real(0.0, maximum=1.0),
        help="Polyak step, every update",
    )
    p.add_argument(
        "--hidden", type=int, nargs="+", default=[128, 128], help="hidden layer widths"
    )
    p.add_argument(
        "--profile-calls",
        type=int,
        default=PROFILE_CALLS,
        metavar="N",
        check=flags.integer(0),
        help="calls per timed batch of the step profile (first seed of each variant); "
        "0 skips it",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="runs trained at once, each in its own process (checkpoints and --resume "
        "as with 1)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="TensorFlow intra- and inter-op threads (a small network runs fastest on one)",
    )
    return p


def parse(argv):
    """Parses and checks every flag before any work.

    Returns:
        The namespace; ``--quick`` also trims the warm-up, buffer and seeds.

    Raises:
        ZooError: a bad flag, or an environment gymnasium does not know or that
            has no discrete actions and flat observations.
    """
    args = flags.parse_args(build_parser(), argv)
    if args.quick:
        args.profile_calls = min(args.profile_calls, 5)
        args.seeds = min(args.seeds, 2)
        args.learning_starts = min(args.learning_starts, 200)
        args.epsilon_decay = min(args.epsilon_decay, 300)
    check_period("--target-period", args.target_period)
    check_tau("--tau", args.tau)
    check_gamma("--gamma", args.gamma)
    positive = ("seeds", "buffer_size", "train_every", "epsilon_decay", "threads", "jobs")
    for flag in positive:
        _check(flag, getattr(args, flag), getattr(args, flag) >= 1, "an integer >= 1")
    _check(
        "learning_starts", args.learning_starts, args.learning_starts >= 0, "a count >= 0"
    )
    _check("learning_rate", args.learning_rate, args.learning_rate > 0, "a number > 0")
    _check("hidden", args.hidden, min(args.hidden) >= 1, "positive widths")
    for flag in ("epsilon_start", "epsilon_end"):
        value = getattr(args, flag)
        _check(flag, value, 0 <= value <= 1, "a probability in [0, 1]")
    args.env_spec = check_env(args.env)
    return args


def _check(flag, value, ok, expected):
    if not ok:
        raise ZooError(
            f"--{flag.replace('_', '-')}: expected {expected}, found {value!r}; "
            "pass a value in range"
        )


def check_env(env_id):
    """Returns ``(n_observations, n_actions, reward_threshold)`` of a gymnasium id.

    Raises:
        ZooError: the id is not registered, or the environment's observations are
            not a flat Box or its actions not Discrete.
    """
    if env_id not in gymnasium.envs.registry:
        close = difflib.get_close_matches(env_id, list(gymnasium.envs.registry), n=3)
        hint = f"did you mean {', '.join(close)}?" if close else "e.g. CartPole-v1"
        raise ZooError(
            f"--env: expected a gymnasium environment id, found {env_id!r} (not "
            f"registered); {hint}"
        )
    try:
        env = gymnasium.make(env_id)
    except gymnasium.error.Error as err:
        raise ZooError(
            f"--env {env_id}: expected an environment gymnasium can make, found "
            f"{type(err).__name__}: {err}; install what it needs or pick another id"
        ) from None
    try:
        observations, actions = env.observation_space, env.action_space
        if not (
            isinstance(actions, gymnasium.spaces.Discrete)
            and isinstance(observations, gymnasium.spaces.Box)
            and len(observations.shape) == 1
        ):
            raise ZooError(
                f"--env {env_id}: expected flat Box observations and Discrete actions, "
                f"found {observations} and {actions}; pick a discrete-action "
                "environment such as CartPole-v1"
            )
        if env.spec.reward_threshold is None:
            raise ZooError(
                f"--env {env_id}: expected a reward_threshold (what solved means), found "
                "none; pick an environment that has one, such as CartPole-v1"
            )
        return observations.shape[0], int(actions.n), env.spec.reward_threshold
    finally:
        env.close()


class ReplayBuffer:
    """A ring buffer of transitions in numpy arrays; the oldest are overwritten.

    Args:
        capacity: transitions kept.
        n_observations: width of an observation.
    """

    def __init__(self, capacity, n_observations):
        self.arrays = {
            "observations": np.zeros((capacity, n_observations), np.float32),
            "actions": np.zeros(capacity, np.int64),
            "rewards": np.zeros(capacity, np.float32),
            "next_observations": np.zeros((capacity, n_observations), np.float32),
            "terminated": np.zeros(capacity, np.float32),
        }
        self.capacity, self.position, self.size = capacity, 0, 0

    def add(self, observation, action, reward, next_observation, terminated):
        """Stores one transition."""
        i = self.position
        values = (observation, action, reward, next_observation, terminated)
        for array, value in zip(self.arrays.values(), values, strict=True):
            array[i] = value
        self.position = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, rng, batch_size):
        """Returns the five arrays of ``batch_size`` transitions drawn uniformly."""
        index = rng.integers(0, self.size, batch_size)
        return [array[index] for array in self.arrays.values()]


def episode_seed(seed, episode):
    """The reset seed of episode ``episode`` of run ``seed``: fixed, so resumable."""
    return int(np.random.SeedSequence([seed, episode]).generate_state(1)[0])


class Rollout:
    """One run's environment, replay buffer, epsilon-greedy RNG and episode record.

    Every episode starts with ``env.reset(seed=episode_seed(seed, episode))``, and
    the actions of the current episode are kept, so :meth:`restore` rebuilds the
    environment mid-episode exactly: reset with the same seed, replay the actions.

    It is also the "batches" of its :class:`RolloutCheckpoint`: ``state()`` and
    ``restore()`` carry everything but the buffer's arrays; ``seed`` and
    ``num_examples`` (the buffer's capacity) are checked on resume.
    """

    def __init__(self, args, seed, desc, writer):
        self.env = gymnasium.make(args.env)
        self.seed, self.desc, self.writer = seed, desc, writer
        self.n_actions = args.env_spec[1]
        self.replay = ReplayBuffer(args.buffer_size, args.env_spec[0])
        self.num_examples = args.buffer_size
        self.epsilon = (args.epsilon_start, args.epsilon_end, args.epsilon_decay)
        self.rng = np.random.default_rng(seed)
        self.env_steps, self.returns, self.ends = 0, [], []
        self.seconds = dict.fromkeys(("act", "env", "replay", "train"), 0.0)
        self.greedy_next = None
        self._start_episode()

    def _start_episode(self):
        self.actions, self.episode_return = [], 0.0
        seed = episode_seed(self.seed, len(self.returns))
        self.observation, _ = self.env.reset(seed=seed)

    def epsilon_now(self):
        """Linear decay from start to end over ``--epsilon-decay`` environment steps."""
        start, end, decay = self.epsilon
        return end + (start - end) * max(0.0, 1.0 - self.env_steps / decay)

    def step(self, act):
        """Takes one epsilon-greedy environment step.

        Args:
            act: ``act(observation)`` returns the greedy action; not called when
                ``greedy_next`` holds it already (set by the training step that
                just ran on the current observation).
        """
        began = time.perf_counter()
        greedy, self.greedy_next = self.greedy_next, None
        if self.rng.random() < self.epsilon_now():
            action = int(self.rng.integers(self.n_actions))
        elif greedy is not None:
            action = greedy
        else:
            action = int(act(self.observation))
        acted = time.perf_counter()
        next_observation, reward, terminated, truncated, _ = self.env.step(action)
        stepped = time.perf_counter()
        self.replay.add(self.observation, action, reward, next_observation, terminated)
        self.seconds["act"] += acted - began
        self.seconds["env"] += stepped - acted
        self.seconds["replay"] += time.perf_counter() - stepped
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
                    f"{self.desc}/episode_return",
                    self.episode_return,
                    self.env_steps,
                )
            began = time.perf_counter()
            self._start_episode()
            self.seconds["env"] += time.perf_counter() - began

    def sample(self, batch_size):
        """Returns a uniformly drawn batch of transitions (timed as ``replay``)."""
        began = time.perf_counter()
        batch = self.replay.sample(self.rng, batch_size)
        self.seconds["replay"] += time.perf_counter() - began
        return batch

    def state(self):
        """Everything but the buffer's arrays, as JSON-able values."""
        return {
            "rng": self.rng.bit_generator.state,
            "env_steps": self.env_steps,
            "returns": self.returns,
            "ends": self.ends,
            "actions": self.actions,
            "episode_return": self.episode_return,
            "observation": self.observation.tolist(),
            "position": self.replay.position,
            "size": self.replay.size,
            "seconds": self.seconds,
        }

    def restore(self, state):
        """Restores :meth:`state`; rebuilds the environment by replaying the episode.

        Raises:
            ZooError: the replayed episode does not reach the saved observation
                (the environment is not deterministic given its reset seed).
        """
        self.rng.bit_generator.state = state["rng"]
        self.greedy_next = None  # recomputed by act(): same weights, same observation
        self.env_steps, self.seconds = state["env_steps"], state["seconds"]
        self.returns, self.ends = state["returns"], state["ends"]
        self.replay.position, self.replay.size = state["position"], state["size"]
        self._start_episode()
        for action in state["actions"]:
            self.observation, *_ = self.env.step(action)
        self.actions, self.episode_return = state["actions"], state["episode_return"]
        saved = np.asarray(state["observation"], self.observation.dtype)
        if not np.array_equal(saved, self.observation):
            raise ZooError(
                f"{self.desc}: expected the replayed episode to reach the saved "
                f"observation {saved.tolist()}, found {self.observation.tolist()}; this "
                "environment is not deterministic given its reset seed, so it cannot "
                "resume exactly: start a new run"
            )


class RolloutCheckpoint(SessionLoopCheckpoint):
    """The session's variables plus the replay buffer's arrays in one checkpoint."""

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


def variant_settings(variant, args):
    """Returns ``(target_network, period, tau)`` of a variant."""
    return {
        "none": (False, 1, 1.0),
        "hard": (True, args.target_period, 1.0),
        "polyak": (True, 1, args.tau),
    }[variant]


def build(variant, args, seed):
    """Builds one run's graph: placeholders, the DQN, the initializer.

    Returns:
        ``(graph, placeholders, model, probes, init)``: the five placeholders of
        a batch then the one of the observation to act on after the step;
        ``probes`` holds a ``noop`` and the ``gradients``, for :func:`profile_step`.
    """
    n_observations, n_actions, _ = args.env_spec
    target_network, period, tau = variant_settings(variant, args)
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(seed)
        placeholders = [
            v1.placeholder(tf.float32, [None, n_observations], name="observations"),
            v1.placeholder(tf.int64, [None], name="actions"),
            v1.placeholder(tf.float32, [None], name="rewards"),
            v1.placeholder(tf.float32, [None, n_observations], name="next_observations"),
            v1.placeholder(tf.float32, [None], name="terminated"),
            v1.placeholder(tf.float32, [None, n_observations], name="act_observations"),
        ]
        model = dqn(
            *placeholders[:5],
            n_actions,
            target_network=target_network,
            period=period,
            tau=tau,
            gamma=args.gamma,
            learning_rate=args.learning_rate,
            hidden=tuple(args.hidden),
            act_observations=placeholders[5],
        )
        probes = {
            "noop": tf.constant(0, name="noop"),
            "gradients": tf.add_n(  # one scalar: no arrays copied out
                [
                    tf.reduce_sum(g)
                    for g in tf.gradients(model.loss, v1.trainable_variables())
                ]
            ),
        }
        init = v1.global_variables_initializer()
    return graph, placeholders, model, probes, init


def session_config(args):
    """A session config with ``--threads`` intra- and inter-op threads."""
    return v1.ConfigProto(
        intra_op_parallelism_threads=args.threads, inter_op_parallelism_threads=args.threads
    )


def run_seed(variant, seed, args, run, path, profile=False):
    """Trains one variant with one seed.

    Args:
        variant: one of :data:`VARIANTS`.
        seed: the run's seed (weights, exploration, replay draws, episode resets).
        args: the parsed flags.
        run: the :class:`experiments.harness.rundir.RunDir`.
        path: the run's checkpoint file (from ``Checkpointer.next_path``).
        profile: time the parts of a training step afterwards.

    Returns:
        ``(result dict, step profile or None)``; the profile (:func:`profile_step`)
        when ``profile`` is set.
    """
    desc = f"{variant}-seed{seed}"
    print(f"Training {variant}, seed {seed}...")
    graph, placeholders, model, probes, init = build(variant, args, seed)
    with graph.as_default():
        writer = run.summary_writer(desc, graph=graph)
    graph.finalize()
    rollout = Rollout(args, seed, desc, writer)
    with v1.Session(graph=graph, config=session_config(args)) as session:
        session.run(init)
        session.run(model.start_op)
        greedy = session.make_callable(model.greedy_action, placeholders[:1])
        train = session.make_callable(
            [model.train_op, model.loss, model.next_action], placeholders
        )

        def act(observation):
            return greedy(observation[None])[0]

        def run_step(_count, with_loss):  # one update a call (steps_per_run=1)
            _stop_if_asked()
            warm_up = max(args.learning_starts - rollout.env_steps, 0)
            for _ in range(warm_up + args.train_every):
                rollout.step(act)
            batch = rollout.sample(args.batch_size)
            began = time.perf_counter()
            _, loss, next_action = train(*batch, rollout.observation[None])
            rollout.greedy_next = int(next_action[0])  # the next step's greedy action
            rollout.seconds["train"] += time.perf_counter() - began
            if not with_loss:
                return None
            recent = rollout.returns[-WINDOW:]
            metrics = {
                "env_steps": rollout.env_steps,
                "episodes": len(rollout.returns),
                "mean_return_100": float(np.mean(recent)) if recent else None,
                "epsilon": rollout.epsilon_now(),
            }
            return [loss], {name: [value] for name, value in metrics.items()}

        checkpoints = RolloutCheckpoint(
            run.checkpointer,
            path,
            session,
            rollout,
            desc,
            args.steps,
            args.batch_size,
        )
        log_every = flags.log_period(args.steps)
        logged, updates_per_second = training.run_steps(
            run_step,
            args.steps,
            checkpoints,
            log_every=log_every,
            desc=desc,
            on_log=lambda step, loss: tqdm.write(
                f"  {desc} update {step:6d}: loss {loss:8.4f}, episodes "
                f"{len(rollout.returns)}, mean return (100) {_mean_tail(rollout.returns)}"
            ),
            writer=writer,
        )
        if profile:
            batch_placeholders = placeholders[:5]
            profile = profile_step(
                session, model, batch_placeholders, probes, rollout.replay, args
            )
    writer.close()
    rollout.env.close()
    wall = args.steps / updates_per_second
    return {
        "seed": seed,
        **summarize_returns(rollout.returns, rollout.ends, args.env_spec[2]),
        "episode_returns": rollout.returns,
        "episode_end_steps": rollout.ends,
        "env_steps": rollout.env_steps,
        "updates": args.steps,
        "wall_time_s": wall,
        "env_steps_per_second": rollout.env_steps / wall,
        "seconds": {**rollout.seconds, "other": wall - sum(rollout.seconds.values())},
        "losses": [[step, loss] for step, loss, _ in logged],
        "log_every": log_every,
    }, profile or None


def _mean_tail(returns):
    return f"{np.mean(returns[-WINDOW:]):.1f}" if returns else "-"


def summarize_returns(returns, ends, threshold):
    """Returns the last-100 mean, when the 100-episode mean first reached ``threshold``
    (environment steps, or None) and its lowest value after that.

    Args:
        returns: episode returns in order.
        ends: environment steps at which each episode ended.
        threshold: the environment's ``reward_threshold``.
    """
    means = rolling_means(returns)
    reached = next(
        (i for i, m in enumerate(means) if m is not None and m >= threshold), None
    )
    return {
        "episodes": len(returns),
        "last_100_mean": float(np.mean(returns[-WINDOW:])) if returns else None,
        "solved": bool(len(returns) >= WINDOW and means[-1] >= threshold),
        "steps_to_threshold": None if reached is None else ends[reached],
        "lowest_100_mean_after_threshold": (
            None if reached is None else float(min(means[reached:]))
        ),
    }


def rolling_means(returns):
    """The mean of the last 100 returns after each episode (None before the 100th)."""
    sums = np.cumsum([0.0, *returns])
    return [
        None if i + 1 < WINDOW else float(sums[i + 1] - sums[i + 1 - WINDOW]) / WINDOW
        for i in range(len(returns))
    ]


def profile_step(session, model, placeholders, probes, replay, args):
    """Times the parts of a training step on one replay batch, in ms per call.

    ``sample`` is the numpy draw of a batch; ``noop`` a ``session.run`` that
    computes nothing (the round trip every call pays); ``forward`` the loss
    beyond that; ``backward`` the gradients beyond the loss; ``apply`` Adam's
    update beyond the gradients; ``sync`` the target's check and sync beyond the
    update (``train_op`` minus ``update_op``); ``train_step`` the whole
    ``train_op``; ``copy`` a full hard copy alone. Each fetch is timed in batches
    of ``--profile-calls`` calls, the fetches taking turns, 7 rounds; the fastest
    round counts. ``cpu_ms`` is this process's CPU time (all its threads), which
    other processes on the machine barely disturb; ``wall_ms`` the elapsed time.
    Its updates come after the final checkpoint and change no result.

    Returns:
        ``{"cpu_ms": {part: ms}, "wall_ms": {part: ms}}``.
    """
    rng = np.random.default_rng(0)
    batch = replay.sample(rng, args.batch_size)
    fetches = {
        "noop": probes["noop"],
        "forward": model.loss,
        "gradients": probes["gradients"],
        "update": model.update_op,
        "train": model.train_op,
        "copy": model.start_op,
    }
    calls = {
        name: session.make_callable(fetch, placeholders) for name, fetch in fetches.items()
    }
    calls["sample"] = lambda *_: replay.sample(rng, args.batch_size)
    clocks = {"cpu_ms": time.process_time, "wall_ms": time.perf_counter}
    best = {clock: dict.fromkeys(calls, float("inf")) for clock in clocks}
    for _ in range(7):
        for name, call in calls.items():
            began = {clock: read() for clock, read in clocks.items()}
            for _ in range(args.profile_calls):
                call(*batch)
            for clock, read in clocks.items():
                seconds = (read() - began[clock]) / args.profile_calls
                best[clock][name] = min(best[clock][name], seconds)
    return {
        clock: _parts({k: v * 1e3 for k, v in ms.items()}) for clock, ms in best.items()
    }


def _parts(ms):
    """The step's parts from the times of the nested fetches (see profile_step)."""
    return {
        "sample": ms["sample"],
        "noop": ms["noop"],
        "forward": ms["forward"] - ms["noop"],
        "backward": ms["gradients"] - ms["forward"],
        "apply": ms["update"] - ms["gradients"],
        "sync": ms["train"] - ms["update"],
        "train_step": ms["train"],
        "copy": ms["copy"],
    }


def summarize_variant(runs):
    """Returns the spread over seeds of a variant's runs."""
    last = [r["last_100_mean"] for r in runs if r["last_100_mean"] is not None]
    steps = [r["steps_to_threshold"] for r in runs if r["steps_to_threshold"] is not None]
    return {
        "seeds": len(runs),
        "solved": sum(r["solved"] for r in runs),
        "reached_threshold": len(steps),
        "last_100_mean": {
            "mean": float(np.mean(last)),
            "std": float(np.std(last)),
            "min": float(np.min(last)),
            "max": float(np.max(last)),
        },
        "median_steps_to_threshold": float(np.median(steps)) if steps else None,
        "env_steps_per_second": float(np.mean([r["env_steps_per_second"] for r in runs])),
    }


def curve(run, grid):
    """The 100-episode mean return at each environment step of ``grid`` (NaN before
    the first episode ends; fewer than 100 episodes average what there is)."""
    ends = np.asarray(run["episode_end_steps"])
    returns = np.asarray(run["episode_returns"], float)
    sums = np.cumsum([0.0, *returns])
    done = np.searchsorted(ends, grid, side="right")
    first = np.maximum(done - WINDOW, 0)
    with np.errstate(invalid="ignore"):
        return np.where(
            done > 0, (sums[done] - sums[first]) / np.maximum(done - first, 1), np.nan
        )


def plot(results, threshold, env_id):
    """Returns a figure: mean over seeds of the 100-episode mean return vs env steps,
    with a band from the lowest to the highest seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 4.5))
    for variant, result in results.items():
        runs = result["runs"]
        grid = np.linspace(0, max(r["env_steps"] for r in runs), 400)
        curves = np.array([curve(r, grid) for r in runs])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
            mean = np.nanmean(curves, axis=0)
            low, high = np.nanmin(curves, axis=0), np.nanmax(curves, axis=0)
        line = axes.plot(grid, mean, label=f"{variant} ({len(runs)} seeds)")
        axes.fill_between(grid, low, high, color=line[0].get_color(), alpha=0.2)
    axes.axhline(threshold, color="gray", linestyle="--", lw=0.8, label=f"{threshold:g}")
    axes.set_xlabel("environment steps")
    axes.set_ylabel(f"mean return of the last {WINDOW} episodes")
    axes.set_title(f"DQN on {env_id}: mean over seeds, band = lowest..highest seed")
    axes.legend(loc="upper left")
    axes.grid(alpha=0.3)
    return figure


def machine():
    """What ran the experiment: host, CPUs, load, library versions."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "load_average_at_end": list(os.getloadavg()),
        "python": sys.version.split()[0],
        "tensorflow": tf.__version__,
        "gymnasium": gymnasium.__version__,
        "numpy": np.__version__,
    }


SETTINGS = (
    "env", "variant", "seed", "seeds", "steps", "batch_size", "learning_rate", "gamma",
    "buffer_size", "learning_starts", "train_every", "epsilon_start", "epsilon_end",
    "epsilon_decay", "target_period", "tau", "hidden",
)  # fmt: skip
"""The flags that shape the numbers (checked again on --resume)."""


_STOP = None
"""In a worker process: the shared signal number the parent received (0: none)."""


def _stop_if_asked():
    """In a worker, re-raises once the signal the parent received: the loop then
    checkpoints and stops as it does on a signal of its own."""
    global _STOP
    if _STOP is not None and _STOP.value:
        signum, _STOP = _STOP.value, None
        signal.raise_signal(signum)


def _start_worker(stop):
    global _STOP
    os.setpgrp()  # a Ctrl-C reaches the parent alone, which passes it on once
    _STOP = stop


def _work(task, args, run):
    """Runs one task in a worker; returns ``("done", outcome)``, or how it stopped.

    Zoo errors come back as text: their extra constructor arguments do not
    survive pickling.
    """
    if _STOP is not None and _STOP.value:
        return "skipped", None
    try:
        return "done", run_seed(task[0], task[1], args, run, *task[2:])
    except training.RunInterrupted as err:
        return "interrupted", (str(err), err.signum)
    except ZooError as err:
        return "error", str(err)


def run_in_processes(tasks, args, run):
    """Runs the tasks in ``--jobs`` worker processes; returns their outcomes in order.

    SIGINT/SIGTERM to this process is passed on: each worker checkpoints its run
    at the end of the current update and stops, workers not started yet skip
    theirs, and :class:`RunInterrupted` names the resume command.

    Raises:
        RunInterrupted: a signal stopped the run.
        ZooError: a worker failed with a zoo error (its message).
    """
    context = multiprocessing.get_context("spawn")
    stop = context.Value("i", 0)

    def forward(signum, frame):
        if not stop.value:
            stop.value = signum

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with context.Pool(args.jobs, _start_worker, (stop,), maxtasksperchild=1) as pool:
            pending = [pool.apply_async(_work, (task, args, run)) for task in tasks]
            outcomes = [result.get() for result in pending]
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    for kind, value in outcomes:
        if kind == "error":
            raise ZooError(value)
    if stop.value:
        stopped = [value[0] for kind, value in outcomes if kind == "interrupted"]
        raise training.RunInterrupted(
            f"dqn: interrupted by {signal.Signals(stop.value).name}; "
            f"{len(stopped)} runs checkpointed mid-way, "
            f"{sum(kind == 'skipped' for kind, _ in outcomes)} not started; resume with: "
            f"{run.checkpointer.command}",
            stop.value,
            run.checkpointer.command,
        )
    return [value for _, value in outcomes]


def main(argv=None):
    """Runs the experiment; see ``--help``.

    Raises:
        ZooError: bad flags, an unknown environment, an existing run directory,
            or a --resume directory of another experiment or other flags.
        RunInterrupted: SIGINT/SIGTERM; checkpoints were written.
    """
    args = parse(argv)
    run = rundir.run_dir(args, "dqn")
    settings = {name: getattr(args, name) for name in SETTINGS}
    threshold = args.env_spec[2]
    variants = flags.chosen_variants(args, VARIANTS)
    tasks = [
        (
            variant,
            seed,
            run.checkpointer.next_path(f"{variant}-seed{seed}"),
            seed == args.seed and args.profile_calls > 0,
        )
        for variant in variants
        for seed in range(args.seed, args.seed + args.seeds)
    ]
    began = time.perf_counter()
    if args.jobs == 1:
        outcomes = [
            run_seed(variant, seed, args, run, *rest) for variant, seed, *rest in tasks
        ]
    else:
        outcomes = run_in_processes(tasks, args, run)
    results = {}
    for variant in variants:
        done = [
            out for task, out in zip(tasks, outcomes, strict=True) if task[0] == variant
        ]
        runs = [result for result, _ in done]
        results[variant] = {
            "sync": dict(
                zip(
                    ("target_network", "period", "tau"),
                    variant_settings(variant, args),
                    strict=True,
                )
            ),
            "summary": summarize_variant(runs),
            "step_profile_ms": next((p for _, p in done if p), None),
            "runs": runs,
        }
        print(f"{variant}: {_describe(results[variant]['summary'])}")
    summary = {
        "experiment": "dqn",
        "env": args.env,
        "reward_threshold": threshold,
        "window": WINDOW,
        "settings": settings,
        "command": shlex.join(["python", "-m", "experiments.dqn", *args.argv]),
        "wall_time_s": time.perf_counter() - began,
        "jobs": args.jobs,
        "machine": machine(),
        "variants": results,
    }
    run.write_json("results.json", summary)
    run.save_figure("returns.png", plot(results, threshold, args.env))
    print(f"results in {run.path}")
    return 0


def _describe(summary):
    last = summary["last_100_mean"]
    return (
        f"solved {summary['solved']}/{summary['seeds']}, last-100 mean "
        f"{last['mean']:.1f} +- {last['std']:.1f} (min {last['min']:.1f}, max "
        f"{last['max']:.1f}), {summary['env_steps_per_second']:.0f} env steps/s"
    )


if __name__ == "__main__":
    flags.entry_point(main)
