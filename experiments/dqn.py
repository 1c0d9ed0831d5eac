"""DQN on CartPole-v1 with and without a target network (hard copy, Polyak, none, double).

The target network is seed 002's "past network": :func:`zoo.rl.dqn.dqn_update`
builds the Q-network under ``dqn/online`` and a frozen copy under ``dqn/target``
whose values form the TD target, synced inside the training step. Variants: ``none``
(the TD target reads the online network), ``hard`` (target := online every
``--target-period`` C updates, Mnih et al. 2015), ``polyak`` (target := tau * online +
(1 - tau) * target after every update), ``double`` (double DQN, hard copy); several
seeds each (``--jobs``: in worker processes). A run trains with
:class:`zoo.rl.bursts.BurstRunner`, then its final network plays greedy episodes.

Usage::

    make experiment-dqn
    python -m experiments.dqn --quick --out runs/dqn/quick
    python -m experiments.dqn --resume runs/dqn/RUN

Writes ``results.json`` (per variant and seed: episode returns, mean of the last
100, environment steps to a 100-episode mean of 475, greedy evaluation, speed),
``returns.png``, ``run.json``, TensorBoard events under ``tensorboard/<variant>-seed<N>/``
and checkpoints (networks, optimizer, replay buffer, RNG and environment state).
"""

import functools
import time
import warnings

import numpy as np

from experiments.harness import entry, figures, flags, processes, record, rundir, startup
from zoo.rl.envs import env_problem

VARIANTS = ("none", "hard", "polyak", "double")
PROBABILITY = flags.real(0.0, inclusive=True, maximum=1.0)
QUICK = {"--seeds": 2, "--learning-starts": 200, "--epsilon-decay": 300,
         "--eval-episodes": 5, "--profile-calls": 5}  # fmt: skip
"""The caps of ``--quick`` (beside its 256 steps)."""
FLAGS = (  # flag, default (its type is the flag's), check (None: from the default), help
    ("--seeds", 5, None, "runs per variant: seeds --seed, --seed+1, ..."),
    ("--learning-rate", 2.3e-3, None, "Adam learning rate"),
    ("--learning-rate-end", 0.0, flags.real(0.0, inclusive=True), "the learning rate "
     "falls linearly to this over the run's updates, set before each burst "
     "(rl-baselines3-zoo's recipe keeps it constant: pass --learning-rate-end equal to "
     "--learning-rate)"),
    ("--gamma", 0.99, PROBABILITY, "discount factor"),
    ("--buffer-size", 100000, None, "replay buffer capacity"),
    ("--learning-starts", 1000, flags.integer(0), "environment steps before the first "
     "burst's (a warm-up that fills the buffer)"),
    ("--train-every", 256, None, "environment steps of a burst (SB3's train_freq)"),
    ("--updates-per-run", 128, None, "updates of a burst, in one session.run after its "
     "environment steps (SB3's gradient_steps)"),
    ("--max-grad-norm", 10.0, flags.real(0.0), "clip each update's gradients to this "
     "global norm"),
    ("--epsilon-start", 1.0, PROBABILITY, "initial epsilon"),
    ("--epsilon-end", 0.04, PROBABILITY, "final epsilon"),
    ("--epsilon-decay", 8000, None, "environment steps over which epsilon decays"),
    ("--target-period", 128, None, "C: updates between hard copies (hard, double); "
     "--updates-per-run copies once a burst, after its last update"),
    ("--tau", 0.01, flags.real(0.0, maximum=1.0), "Polyak step, every update"),
    ("--eval-episodes", 20, None, "greedy episodes that evaluate each run's final "
     "network, on reset seeds training never used"),
    ("--profile-calls", 200, flags.integer(0), "calls per timed batch of the step "
     "profile (first seed of each variant); 0 skips it"),
    ("--jobs", 1, None, "runs trained at once, each in its own process"),
    ("--threads", 1, None, "TensorFlow intra- and inter-op threads (a small network runs "
     "fastest on one)"),
)  # fmt: skip


def build_parser():
    """Returns the parser: the shared flags and DQN's, with their ``--quick`` caps."""
    p = flags.parser(
        "DQN on a gymnasium environment with no target network, a hard copy every C "
        "updates, Polyak averaging, or double DQN; several seeds each. The defaults "
        "are rl-baselines3-zoo's CartPole-v1 recipe.",
        steps=24576, batch_size=64, quick_steps=256, data=False,
    )  # fmt: skip
    p.set_defaults(checkpoint_every=4096)
    env_check = functools.partial(env_problem, threshold=True)  # imports no TensorFlow
    p.add_argument("--env", default="CartPole-v1", check=env_check, help="gymnasium "
                   "environment id (flat Box observations, Discrete actions, a "
                   "reward_threshold)")  # fmt: skip
    flags.add_variant_flag(p, VARIANTS, help="which target to use", every="all")
    for flag, default, check, help_text in FLAGS:
        p.add_argument(flag, type=type(default), default=default, check=check,
                       quick=QUICK.get(flag), help=help_text)  # fmt: skip
    flags.add_hidden_flag(p, "256,256")
    flags.add_precision_flag(p)
    flags.may_differ_on_resume(p, "jobs", "profile_calls")  # they change no number
    return p


def parse_then_start_tensorflow(argv):
    """Parses and checks every flag (:func:`flags.parse_args`: ZooError on a bad one,
    ``--env`` included, or a --resume conflict), then starts TensorFlow; returns the
    run's :class:`experiments.harness.flags.Settings`."""
    settings = flags.parse_args(build_parser(), argv)
    startup.import_tensorflow()
    return settings


def settings(args):
    """The flags that shape the numbers (``settings`` in results.json): every recorded
    flag but those that may differ on resume, of which only ``--steps`` counts."""
    names = [name for name in args.recorded if name not in args.may_differ - {"steps"}]
    return {**{name: getattr(args, name) for name in names},
            "hidden": list(flags.integers(args.hidden))}  # fmt: skip


SYNC = ("target_network", "double", "period", "tau")
"""The :func:`zoo.rl.dqn.dqn_update` arguments that make the variants."""


def variant_sync(variant, args):
    """Returns the :data:`SYNC` arguments of a variant (``sync`` in results.json)."""
    return dict(zip(SYNC, {
        "none": (False, False, 1, 1.0),
        "hard": (True, False, args.target_period, 1.0),
        "polyak": (True, False, 1, args.tau),
        "double": (True, True, args.target_period, 1.0),
    }[variant], strict=True))  # fmt: skip


def build(variant, args, spec, seed):
    """Builds one run's graph under ``--precision``: ``(graph, agent, probes, init)``,
    the ``probes`` of :func:`zoo.rl.profile.profile_update`."""
    import tensorflow as tf

    from experiments.harness.train import loss_scaled
    from zoo.models import q_network
    from zoo.rl.dqn import dqn_update
    from zoo.rl.profile import update_probes
    from zoo.training import precision

    graph = tf.Graph()
    with graph.as_default(), precision.policy(args.precision):
        tf.compat.v1.set_random_seed(seed)
        network = functools.partial(q_network, hidden=flags.integers(args.hidden))
        agent = dqn_update(
            spec.n_observations, spec.n_actions, network=network,
            updates_per_run=args.updates_per_run, gamma=args.gamma,
            learning_rate=args.learning_rate, max_grad_norm=args.max_grad_norm,
            optimizer=lambda rate: loss_scaled(
                tf.compat.v1.train.AdamOptimizer(rate), args),  # float16: scaled
            **variant_sync(variant, args),
        )  # fmt: skip
        probes = update_probes(agent)
        init = tf.compat.v1.global_variables_initializer()
    return graph, agent, probes, init


def run_seed(args, spec, run, variant, seed, path, timed=False):
    """Trains ``variant`` with ``seed`` (weights, exploration, replay draws, episode
    resets) on the environment of ``spec`` (an :class:`zoo.rl.envs.EnvSpec`),
    checkpointing to ``path``, in this process or a worker's; with ``timed``, times
    the parts of a step afterwards. Returns ``(result dict, step profile or None)``."""
    import tensorflow as tf
    from tqdm import tqdm

    from zoo.rl import bursts, profile, replay, returns

    desc = f"{variant}-seed{seed}"
    print(f"Training {variant}, seed {seed}...")
    graph, agent, probes, init = build(variant, args, spec, seed)
    with graph.as_default():
        writer = run.summary_writer(desc, graph=graph)
    graph.finalize()
    epsilon = (args.epsilon_start, args.epsilon_end, args.epsilon_decay)
    rollout = replay.Rollout(args.env, seed, args.buffer_size, epsilon, desc, writer)
    threads = {"intra_op_parallelism_threads": args.threads}
    config = tf.compat.v1.ConfigProto(**threads, inter_op_parallelism_threads=args.threads)
    with tf.compat.v1.Session(graph=graph, config=config) as session:
        session.run(init)
        session.run(agent.start_op)
        rate = bursts.linear_decay(args.learning_rate, args.learning_rate_end, args.steps)
        runner = bursts.BurstRunner(session, agent, rollout, batch_size=args.batch_size,
                                    train_every=args.train_every, learning_rate=rate,
                                    learning_starts=args.learning_starts)  # fmt: skip
        checkpoints = replay.RolloutCheckpoint(
            run.checkpointer, path, session, rollout, desc, args.steps, args.batch_size
        )
        log_every, cpu = entry.log_period(args.steps), time.process_time()
        logged, updates_per_second = runner.train(
            args.steps, checkpoints, before_run=processes.stop_if_asked,
            log_every=log_every, desc=desc, writer=writer,
            on_log=lambda step, loss: tqdm.write(
                f"  {desc} update {step:6d}: loss {loss:8.4f}, {rollout.describe()}"),
        )  # fmt: skip
        wall, cpu = args.steps / updates_per_second, time.process_time() - cpu
        evaluation = replay.evaluate(args.env, runner.act, args.eval_episodes, seed)
        tqdm.write(f"  {desc}: greedy evaluation, mean return {np.mean(evaluation):.1f} "
                   f"over {len(evaluation)} episodes")  # fmt: skip
        parts = timed and profile.profile_update(
            session, agent, probes, rollout.replay, args.batch_size, args.profile_calls
        )
    writer.close()
    rollout.close()
    return {
        "seed": seed,
        **returns.summarize_returns(rollout.returns, rollout.ends, spec.reward_threshold),
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
    }, parts or None


def plot(results, threshold, env_id):
    """Returns a figure: mean over seeds of the 100-episode mean return vs env steps,
    with a band from the lowest to the highest seed, and each run's greedy
    evaluation mean (x) at its last step."""
    from zoo.rl.returns import WINDOW, curve

    figure, axes = figures.pyplot().subplots(figsize=(8, 4.5))
    for variant, result in results.items():
        runs = result["runs"]
        grid = np.linspace(0, max(r["env_steps"] for r in runs), 400)
        curves = [curve(r["episode_returns"], r["episode_end_steps"], grid) for r in runs]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
            mean = np.nanmean(curves, axis=0)
            low, high = np.nanmin(curves, axis=0), np.nanmax(curves, axis=0)
        line = axes.plot(grid, mean, label=f"{variant} ({len(runs)} seeds)")
        color = line[0].get_color()
        axes.fill_between(grid, low, high, color=color, alpha=0.2)
        axes.scatter([r["env_steps"] for r in runs], [r["eval_mean"] for r in runs],
                     color=color, marker="x", zorder=3)  # fmt: skip
    axes.axhline(threshold, color="gray", linestyle="--", lw=0.8, label=f"{threshold:g}")
    axes.set_xlabel("environment steps")
    axes.set_ylabel(f"mean return of the last {WINDOW} episodes")
    axes.set_title(f"DQN on {env_id}: training (mean over seeds, band = lowest..highest "
                   "seed);\nx: each run's greedy evaluation of its final network",
                   fontsize=10)  # fmt: skip
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
    args = parse_then_start_tensorflow(argv)
    import gymnasium  # after the flags: --help answers without it

    from zoo.rl.envs import check_env
    from zoo.rl.returns import WINDOW, summarize_runs

    spec, run = check_env(args.env), rundir.run_dir(args, "dqn")
    variants = flags.chosen_variants(args, VARIANTS)
    tasks = [
        (variant, seed, run.checkpointer.next_path(f"{variant}-seed{seed}"),
         seed == args.seed and args.profile_calls > 0)
        for variant in variants
        for seed in range(args.seed, args.seed + args.seeds)
    ]  # fmt: skip
    began = time.perf_counter()
    train = functools.partial(run_seed, args, spec, run)
    outcomes = processes.run_in_processes(train, tasks, args.jobs, "dqn", run.command)
    results, pairs = {}, list(zip(tasks, outcomes, strict=True))
    for variant in variants:
        done = [outcome for task, outcome in pairs if task[0] == variant]
        runs = [result for result, _ in done]
        speed = float(np.mean([r["env_steps_per_second"] for r in runs]))
        summary = summarize_runs(runs, spec.reward_threshold)
        summary["env_steps_per_second"] = speed
        results[variant] = {"sync": variant_sync(variant, args), "summary": summary,
                            "step_profile_ms": next((p for _, p in done if p), None),
                            "runs": runs}  # fmt: skip
        last = summary["last_100_mean"]
        print(f"{variant}: greedy evaluation mean {summary['eval_mean']:.1f} "
              f"({summary['eval_solved']}/{summary['seeds']} at 475 or more); training "
              f"last-100 mean {last['mean']:.1f} +- {last['std']:.1f}; {speed:.0f} env "
              "steps/s")  # fmt: skip
    run.write_results({
        "experiment": "dqn", "env": args.env, "gymnasium": gymnasium.__version__,
        "reward_threshold": spec.reward_threshold, "window": WINDOW,
        "settings": settings(args), "command": record.command(args.argv),
        "wall_time_s": time.perf_counter() - began, "jobs": args.jobs, "variants": results,
    })  # fmt: skip
    run.save_figure("returns.png", plot(results, spec.reward_threshold, args.env))
    print(f"results in {run.path}")
    return 0


if __name__ == "__main__":
    entry.entry_point(main)
