"""DQN on CartPole-v1 with and without a target network (hard copy, Polyak, none).

The target network is seed 002's "past network": :func:`zoo.models.dqn` builds the
Q-network under ``dqn/online`` and a frozen copy under ``dqn/target`` whose values
form the TD target, synced by :mod:`zoo.sharing.state` inside the training step. Three
variants, several seeds each:

* ``none``: the TD target reads the online network itself (no target network);
* ``hard``: target := online every ``--target-period`` (C) updates, as Mnih et al. 2015;
* ``polyak``: target := tau * online + (1 - tau) * target after every update.

Each run (a :class:`zoo.rl.replay.Rollout`): ``--learning-starts`` uniformly random
steps into a replay buffer, then one Adam step on a sampled batch after every
``--train-every`` environment steps (``--steps`` updates), acting epsilon-greedily
(epsilon decays linearly over ``--epsilon-decay`` environment steps). One
``session.run`` per update (``Session.make_callable``), which also returns the
greedy action for the observation the next environment step starts from
(``DQN.next_action``); steps between updates act with a ``session.run`` of their
own. ``--jobs`` runs seeds in worker processes (:mod:`experiments.harness.processes`).

Usage::

    make experiment-dqn
    python -m experiments.dqn --quick --out runs/dqn/quick
    python -m experiments.dqn --variant hard --seeds 2 --hidden 64,64
    python -m experiments.dqn --resume runs/dqn/RUN

Writes ``results.json`` (per variant and seed: episode returns, mean of the last
100, environment steps to a 100-episode mean of 475, speed), ``returns.png``,
``run.json``, TensorBoard events under ``tensorboard/<variant>-seed<N>/`` and
checkpoints (networks, optimizer, replay buffer, RNG and environment state).
"""

import functools
import time
import warnings

import numpy as np

from experiments.harness import entry, figures, flags, processes, record, rundir, startup
from layers.errors import ZooError

VARIANTS = ("none", "hard", "polyak", "double")
WINDOW = 100
"""Episodes averaged for "solved": CartPole-v1 counts as solved at a 100-episode
mean of its ``reward_threshold`` (475)."""
PROFILE_CALLS = 200
"""Calls per timed batch of the step profile (``--profile-calls``)."""
SETTINGS = (
    "env", "variant", "seed", "seeds", "steps", "batch_size", "learning_rate",
    "learning_rate_end", "gamma", "buffer_size", "learning_starts", "train_every",
    "updates_per_train", "max_grad_norm", "epsilon_start", "epsilon_end",
    "epsilon_decay", "target_period", "tau", "hidden", "eval_episodes",
)  # fmt: skip
"""The flags that shape the numbers (``settings`` in results.json)."""


def build_parser():
    """Returns the experiment's parser: the shared flags plus DQN's, each with its range."""
    p = flags.parser(
        "DQN on a gymnasium environment with no target network, a hard copy every C "
        "updates, Polyak averaging, or double DQN; several seeds each. The defaults "
        "are rl-baselines3-zoo's CartPole-v1 recipe.",
        steps=24576,
        batch_size=64,
        quick_steps=256,
        data=False,
    )
    p.set_defaults(checkpoint_every=4096)
    p.add_argument(
        "--env",
        default="CartPole-v1",
        check=check_env_flag,
        help="gymnasium environment id (flat Box observations, Discrete actions, a "
        "reward_threshold)",
    )
    flags.add_variant_flag(p, VARIANTS, help="which target to use", every="all")
    p.add_argument(
        "--seeds",
        type=int,
        default=5,
        quick=2,
        help="runs per variant: seeds --seed, --seed+1, ...",
    )
    p.add_argument("--learning-rate", type=float, default=2.3e-3, help="Adam learning rate")
    p.add_argument(
        "--learning-rate-end",
        type=float,
        default=0.0,
        check=flags.real(0.0, inclusive=True),
        help="the learning rate falls linearly to this over the run's updates, set "
        "before each burst (rl-baselines3-zoo's recipe keeps it constant: pass "
        "--learning-rate-end equal to --learning-rate)",
    )
    p.add_argument(
        "--gamma",
        type=float,
        default=0.99,
        check=flags.real(0.0, inclusive=True, maximum=1.0),
        help="discount factor",
    )
    p.add_argument("--buffer-size", type=int, default=100000, help="replay buffer capacity")
    p.add_argument(
        "--learning-starts",
        type=int,
        default=1000,
        check=flags.integer(0),
        quick=200,
        help="uniformly random environment steps before the first update",
    )
    p.add_argument(
        "--train-every",
        type=int,
        default=256,
        help="environment steps between bursts of updates (SB3's train_freq)",
    )
    p.add_argument(
        "--updates-per-train",
        type=int,
        default=128,
        help="updates in a burst, one session.run (SB3's gradient_steps)",
    )
    p.add_argument(
        "--max-grad-norm",
        type=float,
        default=10.0,
        check=flags.real(0.0),
        help="clip each update's gradients to this global norm",
    )
    probability = flags.real(0.0, inclusive=True, maximum=1.0)
    p.add_argument(
        "--epsilon-start",
        type=float,
        default=1.0,
        check=probability,
        help="initial epsilon",
    )
    p.add_argument(
        "--epsilon-end", type=float, default=0.04, check=probability, help="final epsilon"
    )
    p.add_argument(
        "--epsilon-decay",
        type=int,
        default=8000,
        quick=300,
        help="environment steps over which epsilon decays linearly",
    )
    p.add_argument(
        "--target-period",
        type=int,
        default=128,
        help="C: updates between hard copies (hard, double); --updates-per-train "
        "copies once a burst, after its last update",
    )
    p.add_argument(
        "--tau",
        type=float,
        default=0.01,
        check=flags.real(0.0, maximum=1.0),
        help="Polyak step, every update",
    )
    flags.add_hidden_flag(p, "256,256")
    p.add_argument(
        "--eval-episodes",
        type=int,
        default=20,
        quick=5,
        help="greedy episodes that evaluate each run's final network, on reset seeds "
        "training never used",
    )
    p.add_argument(
        "--profile-calls",
        type=int,
        default=PROFILE_CALLS,
        metavar="N",
        check=flags.integer(0),
        quick=5,
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


def check_env_flag(env_id):
    """``--env``'s check: an id :func:`zoo.rl.envs.check_env` accepts, with a
    ``reward_threshold`` (what solved means). Imports gymnasium, not TensorFlow."""
    from zoo.rl.envs import check_env

    try:
        spec = check_env(env_id)
    except ZooError as err:
        return str(err).removeprefix(f"{env_id}: ")  # the flag's name stands first
    if spec.reward_threshold is None:
        return (
            f"expected an environment with a reward_threshold (what solved means), found "
            f"none for {env_id}; pick one that has it, such as CartPole-v1"
        )
    return None


def parse(argv):
    """Parses and checks every flag (:func:`flags.parse_args`), then starts TensorFlow.

    Returns:
        The namespace; ``env_spec`` is the environment's :class:`zoo.rl.envs.EnvSpec`;
        ``--quick`` also trims the warm-up, epsilon decay, seeds and profile.

    Raises:
        ZooError: a bad flag (``--env`` included), or a --resume conflict.
    """
    from zoo.rl.envs import check_env

    args = flags.parse_args(build_parser(), argv)
    startup.import_tensorflow()
    return args.with_flags(env_spec=check_env(args.env))


SYNC = ("target_network", "double", "period", "tau")
"""The fields of :func:`variant_settings` (``sync`` in results.json)."""


def variant_settings(variant, args):
    """Returns ``(target_network, double, period, tau)`` of a variant."""
    return {
        "none": (False, False, 1, 1.0),
        "hard": (True, False, args.target_period, 1.0),
        "polyak": (True, False, 1, args.tau),
        "double": (True, True, args.target_period, 1.0),
    }[variant]


def build(variant, args, seed):
    """Builds one run's graph: placeholders, the DQN, the initializer.

    Returns:
        ``(graph, placeholders, model, probes, init)``: the five placeholders of
        a run's batches (stacks of ``--updates-per-train`` batches, [K, batch,
        ...], when K > 1) then the one of the observation to act on after the
        run; ``probes`` holds a ``noop`` and the ``gradients`` (of the first
        batch), for :func:`profile_step`.
    """
    import tensorflow as tf

    from zoo.models import dqn

    v1 = tf.compat.v1
    n_observations, n_actions, _ = args.env_spec
    target_network, double, period, tau = variant_settings(variant, args)
    stack = [None] if args.updates_per_train > 1 else []  # K batches a run
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(seed)
        placeholders = [
            v1.placeholder(tf.float32, [*stack, None, n_observations], "observations"),
            v1.placeholder(tf.int64, [*stack, None], name="actions"),
            v1.placeholder(tf.float32, [*stack, None], name="rewards"),
            v1.placeholder(tf.float32, [*stack, None, n_observations], "next_observations"),
            v1.placeholder(tf.float32, [*stack, None], name="terminated"),
            v1.placeholder(tf.float32, [None, n_observations], name="act_observations"),
            v1.placeholder_with_default(args.learning_rate, [], name="learning_rate"),
        ]
        model = dqn(
            *placeholders[:5],
            n_actions,
            target_network=target_network,
            double=double,
            period=period,
            tau=tau,
            gamma=args.gamma,
            learning_rate=placeholders[6],
            max_grad_norm=args.max_grad_norm,
            updates_per_run=args.updates_per_train,
            hidden=flags.integers(args.hidden),
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


def run_seed(args, run, variant, seed, path, profile=False):
    """Trains one variant with one seed (in this process or a worker's).

    Args:
        args: the parsed flags.
        run: the :class:`experiments.harness.rundir.RunDir`.
        variant: one of :data:`VARIANTS`.
        seed: the run's seed (weights, exploration, replay draws, episode resets).
        path: the run's checkpoint file (from ``Checkpointer.next_path``).
        profile: time the parts of a training step afterwards.

    Returns:
        ``(result dict, step profile or None)``; the profile (:func:`profile_step`)
        when ``profile`` is set.
    """
    import tensorflow as tf
    from tqdm import tqdm

    from zoo import training
    from zoo.rl.replay import Rollout, RolloutCheckpoint, evaluate

    desc = f"{variant}-seed{seed}"
    print(f"Training {variant}, seed {seed}...")
    graph, placeholders, model, probes, init = build(variant, args, seed)
    with graph.as_default():
        writer = run.summary_writer(desc, graph=graph)
    graph.finalize()
    epsilon = (args.epsilon_start, args.epsilon_end, args.epsilon_decay)
    rollout = Rollout(args.env, seed, args.buffer_size, epsilon, desc, writer)
    config = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=args.threads, inter_op_parallelism_threads=args.threads
    )
    with tf.compat.v1.Session(graph=graph, config=config) as session:
        session.run(init)
        session.run(model.start_op)
        greedy = session.make_callable(model.greedy_action, placeholders[:1])
        train = session.make_callable(
            [model.train_op, model.losses, model.next_action],
            [*placeholders, model.count],
        )
        burst = args.updates_per_train
        stacked = burst > 1

        def act(observation):
            return greedy(observation[None, None] if stacked else observation[None])[0]

        done = []  # updates taken: read from the graph at the first call (a resume)

        def train_some(count):
            """``count`` updates of one burst in one run; returns their losses."""
            batch = rollout.sample(count * args.batch_size)
            if stacked:
                batch = [a.reshape(count, args.batch_size, *a.shape[1:]) for a in batch]
            end = args.learning_rate_end
            rate = end + (args.learning_rate - end) * (1 - done[0] / args.steps)
            began = time.perf_counter()
            _, losses, next_action = train(*batch, rollout.observation[None], rate, count)
            rollout.greedy_next = int(next_action[0])  # the next step's greedy action
            rollout.seconds["train"] += time.perf_counter() - began
            return list(losses)

        def run_step(count, with_loss):
            """``count`` updates; a burst's environment steps come before its first."""
            processes.stop_if_asked()
            if not done:
                done.append(int(session.run(model.updates)))
            losses = []
            while len(losses) < count:
                if done[0] % burst == 0:
                    warm_up = max(args.learning_starts - rollout.env_steps, 0)
                    for _ in range(warm_up + args.train_every):
                        rollout.step(act)
                size = min(count - len(losses), burst - done[0] % burst)
                losses += train_some(size)
                done[0] += size
            if not with_loss:
                return None
            recent = rollout.returns[-WINDOW:]
            metrics = {
                "env_steps": rollout.env_steps,
                "episodes": len(rollout.returns),
                "mean_return_100": float(np.mean(recent)) if recent else None,
                "epsilon": rollout.epsilon_now(),
            }
            return losses, {name: [value] * count for name, value in metrics.items()}

        checkpoints = RolloutCheckpoint(
            run.checkpointer, path, session, rollout, desc, args.steps, args.batch_size
        )
        log_every = entry.log_period(args.steps)
        cpu = time.process_time()
        logged, updates_per_second = training.run_steps(
            run_step,
            args.steps,
            checkpoints,
            steps_per_run=burst,
            log_every=log_every,
            desc=desc,
            on_log=lambda step, loss: tqdm.write(
                f"  {desc} update {step:6d}: loss {loss:8.4f}, episodes "
                f"{len(rollout.returns)}, mean return (100) {_mean_tail(rollout.returns)}"
            ),
            writer=writer,
        )
        wall = args.steps / updates_per_second
        cpu = time.process_time() - cpu
        evaluation = evaluate(args.env, act, args.eval_episodes, seed)
        tqdm.write(
            f"  {desc}: greedy evaluation, mean return {np.mean(evaluation):.1f} over "
            f"{len(evaluation)} episodes"
        )
        if profile:
            profile = profile_step(
                session, model, placeholders[:5], probes, rollout.replay, args
            )
    writer.close()
    rollout.close()
    return {
        "seed": seed,
        **summarize_returns(rollout.returns, rollout.ends, args.env_spec.reward_threshold),
        "eval_mean": float(np.mean(evaluation)),
        "eval_returns": evaluation,
        "episode_returns": rollout.returns,
        "episode_end_steps": rollout.ends,
        "env_steps": rollout.env_steps,
        "updates": args.steps,
        "wall_time_s": wall,
        "env_steps_per_second": rollout.env_steps / wall,
        "loop_cpu_s": cpu,
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
    ``train_op`` of one update; ``burst_update`` an update of a run of a whole
    burst (``--updates-per-train`` K updates in one ``session.run``, the time
    divided by K); ``burst_feed`` feeding a burst's K batches (a run that
    computes nothing, beyond ``noop``: what sampling inside the graph from a
    buffer held in a variable could save at most); ``copy`` a full hard copy
    alone. Each fetch is timed in batches
    of ``--profile-calls`` calls, the fetches taking turns, 7 rounds; the fastest
    round counts. ``cpu_ms`` is this process's CPU time (all its threads), which
    other processes on the machine barely disturb; ``wall_ms`` the elapsed time.
    Its updates come after the final checkpoint and change no result.

    Returns:
        ``{"cpu_ms": {part: ms}, "wall_ms": {part: ms}}``.
    """
    rng = np.random.default_rng(0)
    burst = args.updates_per_train

    def stacks(count):
        """``count`` batches as a run takes them (stacked when K > 1) and the count."""
        batch = replay.sample(rng, count * args.batch_size)
        if burst > 1:
            batch = [a.reshape(count, args.batch_size, *a.shape[1:]) for a in batch]
        return [*batch, count]

    batch, bursts = stacks(1), stacks(burst)
    placeholders = [*placeholders, model.count]
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
    train, noop = calls["train"], calls["noop"]
    calls["burst"] = lambda *_: train(*bursts)  # the same fetch, fed a whole burst
    calls["feed"] = lambda *_: noop(*bursts)  # a burst's batches fed, nothing computed
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
        clock: _parts({k: v * 1e3 for k, v in ms.items()}, burst)
        for clock, ms in best.items()
    }


def _parts(ms, burst):
    """The step's parts from the times of the nested fetches (see profile_step)."""
    return {
        "sample": ms["sample"],
        "noop": ms["noop"],
        "forward": ms["forward"] - ms["noop"],
        "backward": ms["gradients"] - ms["forward"],
        "apply": ms["update"] - ms["gradients"],
        "sync": ms["train"] - ms["update"],
        "train_step": ms["train"],
        "burst_update": ms["burst"] / burst,
        "burst_feed": ms["feed"] - ms["noop"],
        "copy": ms["copy"],
    }


def summarize_variant(runs, threshold):
    """Returns the spread over seeds of a variant's runs.

    ``eval_mean`` is the mean over seeds of each run's greedy evaluation mean,
    ``eval_solved`` the runs whose evaluation mean is at least ``threshold``;
    the other figures are of the training episodes (epsilon-greedy).
    """
    last = [r["last_100_mean"] for r in runs if r["last_100_mean"] is not None]
    steps = [r["steps_to_threshold"] for r in runs if r["steps_to_threshold"] is not None]
    evaluations = [r["eval_mean"] for r in runs]
    return {
        "seeds": len(runs),
        "eval_mean": float(np.mean(evaluations)),
        "eval_solved": sum(value >= threshold for value in evaluations),
        "eval_means": evaluations,
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
    with a band from the lowest to the highest seed, and each run's greedy
    evaluation mean (x) at its last step."""
    figure, axes = figures.pyplot().subplots(figsize=(8, 4.5))
    for variant, result in results.items():
        runs = result["runs"]
        grid = np.linspace(0, max(r["env_steps"] for r in runs), 400)
        curves = np.array([curve(r, grid) for r in runs])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
            mean = np.nanmean(curves, axis=0)
            low, high = np.nanmin(curves, axis=0), np.nanmax(curves, axis=0)
        line = axes.plot(grid, mean, label=f"{variant} ({len(runs)} seeds)")
        color = line[0].get_color()
        axes.fill_between(grid, low, high, color=color, alpha=0.2)
        axes.scatter(  # each run's greedy evaluation of its final network
            [r["env_steps"] for r in runs],
            [r["eval_mean"] for r in runs],
            color=color,
            marker="x",
            zorder=3,
        )
    axes.axhline(threshold, color="gray", linestyle="--", lw=0.8, label=f"{threshold:g}")
    axes.set_xlabel("environment steps")
    axes.set_ylabel(f"mean return of the last {WINDOW} episodes")
    axes.set_title(
        f"DQN on {env_id}: training (mean over seeds, band = lowest..highest seed);\n"
        "x: each run's greedy evaluation of its final network",
        fontsize=10,
    )
    axes.legend(loc="upper left")
    axes.grid(alpha=0.3)
    return figure


def main(argv=None):
    """Runs the experiment; see ``--help``.

    Raises:
        ZooError: bad flags, an unknown environment, an existing run directory,
            or a --resume directory of another experiment or other flags.
        RunInterrupted: SIGINT/SIGTERM; checkpoints were written.
    """
    args = parse(argv)
    import gymnasium  # after the flags: --help answers without it

    run = rundir.run_dir(args, "dqn")
    threshold = args.env_spec.reward_threshold
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
    outcomes = processes.run_in_processes(
        functools.partial(run_seed, args, run), tasks, args.jobs, "dqn", run.command
    )
    results = {}
    for variant in variants:
        done = [
            out for task, out in zip(tasks, outcomes, strict=True) if task[0] == variant
        ]
        runs = [result for result, _ in done]
        results[variant] = {
            "sync": dict(zip(SYNC, variant_settings(variant, args), strict=True)),
            "summary": summarize_variant(runs, threshold),
            "step_profile_ms": next((p for _, p in done if p), None),
            "runs": runs,
        }
        print(f"{variant}: {_describe(results[variant]['summary'])}")
    settings = {name: getattr(args, name) for name in SETTINGS}
    run.write_results(
        {
            "experiment": "dqn",
            "env": args.env,
            "gymnasium": gymnasium.__version__,
            "reward_threshold": threshold,
            "window": WINDOW,
            "settings": {**settings, "hidden": list(flags.integers(args.hidden))},
            "command": record.command(args.argv),
            "wall_time_s": time.perf_counter() - began,
            "jobs": args.jobs,
            "variants": results,
        }
    )
    run.save_figure("returns.png", plot(results, threshold, args.env))
    print(f"results in {run.path}")
    return 0


def _describe(summary):
    last = summary["last_100_mean"]
    return (
        f"greedy evaluation: mean {summary['eval_mean']:.1f}, "
        f"{summary['eval_solved']}/{summary['seeds']} at 475 or more; training: "
        f"solved {summary['solved']}/{summary['seeds']}, last-100 mean "
        f"{last['mean']:.1f} +- {last['std']:.1f} (min {last['min']:.1f}, max "
        f"{last['max']:.1f}), {summary['env_steps_per_second']:.0f} env steps/s"
    )


if __name__ == "__main__":
    entry.entry_point(main)
