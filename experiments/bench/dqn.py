"""Benchmark: environment steps/s of a whole DQN run, ours vs a plain TF2 agent.

Both run rl-baselines3-zoo's CartPole-v1 recipe (the defaults of
``experiments.dqn``: a 4-256-256-2 network, Adam 2.3e-3, gradients clipped at a
global norm of 10, batch 64, a burst of 128 updates after every 256 environment
steps, the hard target copied after each burst, epsilon-greedy acting):

* ``ours``: ``python -m experiments.dqn --variant hard --seeds 1`` in a child
  process, the script as a user runs it (graph mode, the burst in one
  ``session.run`` through :func:`zoo.training.repeat_step`, checkpoints,
  TensorBoard); its ``env_steps_per_second`` from results.json (the training
  loop; the greedy evaluation after it is not counted);
* ``plain``: the same agent written here as one would in TF2: a Keras 3
  ``Sequential`` online and target network, Keras' Adam (``global_clipnorm``),
  the burst as one ``tf.function`` looping over the K batches, acting through a
  ``tf.function``, the numpy replay buffer of :mod:`zoo.rl.replay`; timed over the
  same loop (XLA on and off, the faster counts: its best settings).

The rounds alternate (plain without XLA, plain with XLA, ours), and each
contender's fastest round counts. Two speeds per run: environment steps per second
of wall time, and per CPU second of the process (all its threads) in the loop,
which other jobs on a shared machine barely change (a loaded machine gives a
process more CPU the more threads it runs: ours runs TensorFlow on one thread,
``--threads 1``, the plain agent on TensorFlow's default pool). ``ratio`` is ours /
plain in wall time, ``cpu_ratio`` in CPU time (the faster plain setting each):
above 1.0 ours is faster. Timings depend on the machine and its load (recorded as
``machine``): results, never test assertions.

Usage::

    make bench-dqn ARGS="--json runs/bench_dqn.json"
    python -m experiments.bench.dqn --steps 2048 --rounds 1 --json /tmp/bench_dqn.json
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from experiments.harness import entry, flags, rundir, startup

RECIPE = {
    "hidden": (256, 256),
    "learning_rate": 2.3e-3,
    "max_grad_norm": 10.0,
    "batch_size": 64,
    "buffer_size": 100000,
    "learning_starts": 1000,
    "train_every": 256,
    "updates_per_run": 128,
    "gamma": 0.99,
    "epsilon": (1.0, 0.04, 8000),
}
"""``experiments.dqn``'s defaults, which ``ours`` runs with."""
ENV = "CartPole-v1"


def build_parser():
    """Returns the benchmark's parser."""
    p = flags.bare_parser(
        "Environment steps/s of a whole DQN run on CartPole-v1: experiments.dqn vs the "
        "same recipe in a plain TF2 agent (Keras 3 networks, tf.function)."
    )
    p.add_argument(
        "--json",
        default=None,
        check=flags.new_file,
        help="output file (default: results.json in a new run directory, "
        "runs/bench_dqn/<timestamp>-<random>)",
    )
    p.add_argument(
        "--steps",
        type=int,
        default=24576,
        help="updates per run (the default: 192 bursts, 50,152 environment steps)",
    )
    p.add_argument("--rounds", type=int, default=2, help="timed runs per contender")
    p.add_argument("--seed", type=int, default=0, check=flags.integer(0), help="run seed")
    return p


def ours(steps, seed):
    """Runs ``experiments.dqn`` (hard target, one seed) in a child process.

    Returns:
        ``(env steps per wall second, env steps per CPU second, env steps)`` of its
        training loop.
    """
    with tempfile.TemporaryDirectory() as directory:
        out = os.path.join(directory, "run")
        argv = ["--variant", "hard", "--seeds", "1", "--seed", str(seed)]
        argv += ["--steps", str(steps), "--profile-calls", "0", "--eval-episodes", "1"]
        subprocess.run(
            [sys.executable, "-m", "experiments.dqn", *argv, "--out", out],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        with open(os.path.join(out, "results.json"), encoding="utf-8") as file:
            (run,) = json.load(file)["variants"]["hard"]["runs"]
    return (
        run["env_steps_per_second"],
        run["env_steps"] / run["loop_cpu_s"],
        run["env_steps"],
    )


def plain(steps, seed, jit_compile):
    """Trains the recipe's agent written plainly in TF2 (see the module docstring).

    Returns:
        ``(env steps per wall second, env steps per CPU second, env steps)`` of its
        training loop.
    """
    import gymnasium
    import keras
    import tensorflow as tf

    from zoo.rl.replay import ReplayBuffer

    r = RECIPE
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    env = gymnasium.make(ENV)
    n_observations, n_actions = env.observation_space.shape[0], int(env.action_space.n)

    def network():
        return keras.Sequential(
            [
                keras.Input((n_observations,)),
                *(keras.layers.Dense(width, activation="relu") for width in r["hidden"]),
                keras.layers.Dense(n_actions),
            ]
        )

    online, target = network(), network()
    optimizer = keras.optimizers.Adam(
        r["learning_rate"], global_clipnorm=r["max_grad_norm"]
    )
    optimizer.build(online.trainable_variables)
    huber = keras.losses.Huber()

    stack = [None, r["batch_size"]]
    specs = [
        tf.TensorSpec([*stack, n_observations], tf.float32),
        tf.TensorSpec(stack, tf.int64),
        tf.TensorSpec(stack, tf.float32),
        tf.TensorSpec([*stack, n_observations], tf.float32),
        tf.TensorSpec(stack, tf.float32),
    ]

    @tf.function(jit_compile=jit_compile, input_signature=specs)
    def burst(observations, actions, rewards, next_observations, terminated):
        for i in tf.range(tf.shape(observations)[0]):
            next_q = tf.reduce_max(target(next_observations[i]), axis=1)
            y = rewards[i] + r["gamma"] * (1.0 - terminated[i]) * next_q
            with tf.GradientTape() as tape:
                q = online(observations[i])
                taken = tf.reduce_sum(q * tf.one_hot(actions[i], n_actions), axis=1)
                loss = huber(y, taken)
            gradients = tape.gradient(loss, online.trainable_variables)
            optimizer.apply_gradients(
                zip(gradients, online.trainable_variables, strict=True)
            )

    @tf.function
    def sync():
        for t, o in zip(target.variables, online.variables, strict=True):
            t.assign(o)

    @tf.function(input_signature=[tf.TensorSpec([1, n_observations], tf.float32)])
    def greedy(observation):
        return tf.argmax(online(observation), axis=1)[0]

    sync()
    for function in (burst, greedy, sync):  # traced before the clock starts, as our
        function.get_concrete_function()  # graph is built before its loop
    replay = ReplayBuffer(r["buffer_size"], n_observations)
    start, end, decay = r["epsilon"]
    observation, _ = env.reset(seed=seed)
    env_steps, episode = 0, 0
    began, cpu = time.perf_counter(), time.process_time()
    for update in range(0, steps, r["updates_per_run"]):
        warm_up = max(r["learning_starts"] - env_steps, 0)
        for _ in range(warm_up + r["train_every"]):
            epsilon = end + (start - end) * max(0.0, 1.0 - env_steps / decay)
            if rng.random() < epsilon:
                action = int(rng.integers(n_actions))
            else:
                action = int(greedy(observation[None].astype(np.float32)))
            next_observation, reward, terminated, truncated, _ = env.step(action)
            replay.add(observation, action, reward, next_observation, terminated)
            env_steps += 1
            observation = next_observation
            if terminated or truncated:
                episode += 1
                observation, _ = env.reset(seed=seed * 100003 + episode)
        count = min(r["updates_per_run"], steps - update)
        batch = replay.sample(rng, count * r["batch_size"])
        burst(*(a.reshape(count, r["batch_size"], *a.shape[1:]) for a in batch))
        sync()
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    env.close()
    return env_steps / seconds, env_steps / cpu, env_steps


def main(argv=None):
    """Runs the benchmark; see ``--help``."""
    args = flags.parse_args(build_parser(), argv)
    startup.import_tensorflow()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    run = None if args.json else rundir.run_dir(args, "bench_dqn")
    contenders = {
        "plain": lambda: plain(args.steps, args.seed, jit_compile=False),
        "plain_xla": lambda: plain(args.steps, args.seed, jit_compile=True),
        "ours": lambda: ours(args.steps, args.seed),
    }
    rounds = {clock: {name: [] for name in contenders} for clock in ("wall", "cpu")}
    env_steps = {}
    for _ in range(args.rounds):
        for name, contender in contenders.items():
            wall, cpu, env_steps[name] = contender()
            rounds["wall"][name].append(wall)
            rounds["cpu"][name].append(cpu)
            print(f"{name}: {wall:.0f} env steps/s, {cpu:.0f} per CPU second")
    best = {
        clock: {name: max(speeds) for name, speeds in by_name.items()}
        for clock, by_name in rounds.items()
    }
    peers = {clock: max(("plain", "plain_xla"), key=best[clock].get) for clock in best}
    results = {
        "env": ENV,
        "recipe": {**RECIPE, "hidden": list(RECIPE["hidden"])},
        "updates": args.steps,
        "env_steps": env_steps,
        "rounds_env_steps_per_second": rounds["wall"],
        "rounds_env_steps_per_cpu_second": rounds["cpu"],
        "best_env_steps_per_second": best["wall"],
        "best_env_steps_per_cpu_second": best["cpu"],
        "peer": peers["wall"],
        "cpu_peer": peers["cpu"],
        "ratio": best["wall"]["ours"] / best["wall"][peers["wall"]],
        "cpu_ratio": best["cpu"]["ours"] / best["cpu"][peers["cpu"]],
        "goal": ">= 1.0 (ours at least as fast as the plain agent at its best setting)",
    }
    path = rundir.write_bench_results(run, results, args.json)
    print(
        f"ours / {peers['wall']}: {results['ratio']:.2f}x in wall time, ours / "
        f"{peers['cpu']}: {results['cpu_ratio']:.2f}x in CPU time; results in {path}"
    )
    return 0


if __name__ == "__main__":
    entry.entry_point(main)
