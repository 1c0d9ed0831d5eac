"""Benchmark: training steps per second of 1 and N data-parallel towers.

The model of ``experiments/towers.py`` (:func:`zoo.models.bn_conv.bn_conv_classifier`,
filters 8 and 16) trains on a synthetic batch source (random images, in the
graph: :class:`zoo.data.batches.GraphBatches`) with momentum SGD, 16 steps per
``session.run`` (:func:`zoo.training.repeat_step`), as 1 tower and as
N towers (:func:`zoo.parallel.towers.data_parallel`: GPUs when present, else N logical
CPU devices of one session), without batch norm and with synchronized and
per-tower batch norm. Every contender has its own graph and session, built
first; then ``--rounds`` rounds run each contender in turn for at least
``--seconds`` each (interleaved, so the machine's load drifts over all of
them alike). The fastest round of each is reported (and the median), with
``towers_speedup``: N towers' steps/s over one tower's, per batch-norm mode, and
``identical_contenders_ratio``: sync over per-tower with one tower, the same
graph, so its distance from 1 is the measurement's noise. On a CPU the logical
devices share the process's thread pools: expect no speed-up from towers
there; the figure says what the towers cost.

Usage::

    make bench-towers ARGS="--json runs/bench_towers.json"
    python -m experiments.bench.towers --quick --json /tmp/bench_towers.json
"""

import statistics
import time

from experiments.harness import classifiers, entry, flags, rundir, startup
from zoo.data import N_CLASSES, N_PIXELS

MODES = classifiers.BATCH_NORM
FILTERS = (8, 16)
STEPS_PER_RUN = 16
EXAMPLES = 4096


def build_contender(mode, towers, batch_size):
    """Builds one contender in a graph and session of its own.

    Returns:
        ``run(count)``: trains ``count`` runs of ``STEPS_PER_RUN`` steps; and
        the session to close.
    """
    import numpy as np
    import tensorflow as tf

    from zoo import training
    from zoo.data import DataSet
    from zoo.data.batches import GraphBatches
    from zoo.parallel import towers as zoo_towers

    rng = np.random.default_rng(0)
    images = rng.random((EXAMPLES, N_PIXELS), dtype=np.float32)
    labels = np.eye(N_CLASSES, dtype=np.float32)[rng.integers(0, N_CLASSES, EXAMPLES)]

    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(0)
        batches = GraphBatches(DataSet(images, labels, seed=0), batch_size)
        loss_fn = classifiers.towers_loss(mode, towers, FILTERS)
        optimizer = tf.compat.v1.train.MomentumOptimizer(1e-4, 0.9)
        step = training.repeat_step(loss_fn, optimizer, batches, STEPS_PER_RUN)
        init = tf.compat.v1.global_variables_initializer()
    graph.finalize()
    session = tf.compat.v1.Session(graph=graph, config=zoo_towers.session_config(towers))
    zoo_towers.check_devices(session, towers)
    session.run(init)
    batches.initialize(session)
    train = session.make_callable(step.train_op)

    def run(count):
        for _ in range(count):
            batches.next_feed(session, STEPS_PER_RUN)
            train()

    return run, session


def build_parser():
    """Returns the benchmark's argument parser (no shared flag: it loads no data)."""
    p = flags.bare_parser(__doc__.splitlines()[0])
    flags.add_json_flag(p)
    p.add_argument("--towers", type=int, default=2, help="towers of the N-tower contender")
    p.add_argument("--batch-size", type=int, default=64, help="examples per step")
    p.add_argument("--rounds", type=int, default=10, help="interleaved timed rounds")
    p.add_argument(
        "--seconds", type=float, default=1.0, help="least time of one contender's round"
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="1 round of 0.1 s and batch 8: checks the pipeline, for CI",
    )
    p.add_check(check_batch)
    return p


def check_batch(args):
    """Raises ZooError unless ``--towers`` divides ``--batch-size``."""
    classifiers.check_tower_counts([args.towers], args.batch_size)


def main(argv=None):
    """Runs the benchmark; see ``--help``."""
    args = flags.parse_args(build_parser(), argv)
    startup.import_tensorflow()
    run_dir = None if args.json else rundir.run_dir(args, "bench_towers")
    rounds, seconds = (1, 0.1) if args.quick else (args.rounds, args.seconds)
    batch_size = args.towers * 4 if args.quick else args.batch_size
    counts = sorted({1, args.towers})
    contenders = {
        (mode, n): build_contender(mode, n, batch_size) for mode in MODES for n in counts
    }
    speeds = {key: [] for key in contenders}
    for run, _ in contenders.values():
        run(1)  # warm-up
    for _ in range(rounds):
        for key, (run, _) in contenders.items():
            runs, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                run(1)
                runs += 1
            speeds[key].append(runs * STEPS_PER_RUN / (time.perf_counter() - start))
    for _, session in contenders.values():
        session.close()
    best = {key: max(values) for key, values in speeds.items()}
    results = {
        "quick": args.quick,
        "batch_size": batch_size,
        "steps_per_run": STEPS_PER_RUN,
        "rounds": rounds,
        "filters": list(FILTERS),
        "devices": "GPU" if _has_gpu() else "logical CPU",
        "steps_per_second": {m: {str(n): best[m, n] for n in counts} for m in MODES},
        "median_steps_per_second": {
            m: {str(n): statistics.median(speeds[m, n]) for n in counts} for m in MODES
        },
        "towers_speedup": {m: best[m, counts[-1]] / best[m, 1] for m in MODES},
        # One tower builds the same graph in both modes: their ratio is the noise.
        "identical_contenders_ratio": best["sync", 1] / best["per-tower", 1],
    }
    path = rundir.write_bench_results(run_dir, results, args.json)
    for mode in MODES:
        speeds = ", ".join(f"{n} tower(s) {best[mode, n]:.1f}" for n in counts)
        print(f"{mode}: steps/s {speeds}")
    print(f"results in {path}")


def _has_gpu():
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU"))


if __name__ == "__main__":
    entry.entry_point(main)
