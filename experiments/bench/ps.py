"""Benchmark: synchronous vs asynchronous workers vs one process at equal global batch.

For each worker count N of ``--workers``, three contenders train the MLP of
``experiments.ps`` (Adam, ``--steps`` global steps of ``--batch-size`` B examples):

- ``sync``: ``python -m experiments.ps --mode sync --workers N``, each worker on
  B / N examples per step, the gradients all-reduced (TensorFlow's collectives);
- ``async``: ``python -m experiments.ps --mode async --workers N --batch-size B/N``,
  1 ps, each worker applying its own step on B / N examples: B examples per N
  global steps, the same examples per second when nothing waits;
- ``one_process``: :func:`zoo.parallel.sync.one_process` in this process, on B
  and on B / N (the compute of one worker's share, for docs/distributed.md's
  model of throughput against N).

Each launcher runs its tasks in a private loopback network (as the experiment);
its time is the workers' training loop only (start-up and evaluation left out; sync
and one process also leave out their first ``session.run``, TensorFlow's graph
optimization).
``--rounds`` rounds run every contender in turn; the fastest round of each is
reported: examples/s and global steps/s of each, the ratios sync / one process,
async / one process and sync / async, the bytes of the model's variables (what
an all-reduce or a ps exchange moves per step), the machine and the command.

Usage::

    make bench-ps DATA_DIR=/usr/share/datasets/fashion-mnist
    python -m experiments.bench.ps --workers 1,2 --steps 100 --data-dir DIR \\
        --json /tmp/bench_ps.json
"""

import sys

from experiments.harness import (
    classifiers,
    cluster,
    datasets,
    entry,
    flags,
    record,
    rundir,
    startup,
)
from zoo.parallel.cluster_spec import check_split

LEARNING_RATE = 1e-3  # experiments.ps' default


def build_parser():
    """Returns the benchmark's argument parser."""
    p = flags.parser(
        __doc__.splitlines()[0], steps=300, batch_size=96, quick_steps=20, resumable=False
    )
    flags.add_json_flag(p)
    p.add_argument(
        "--workers",
        default="1,2,3,4",
        check=flags.int_list(1),
        help="worker counts, comma separated; each divides --batch-size",
    )
    flags.add_hidden_flag(p, "625,625", "the MLP's hidden layers")
    p.add_argument(
        "--steps-per-run",
        type=int,
        default=1,
        check=flags.integer(1, 1000),
        help="steps per session.run of sync and one_process (async takes 1)",
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=2,
        check=flags.integer(1, 100),
        help="rounds over every contender (interleaved); the fastest of each is reported",
    )
    p.add_check(check_workers)
    return p


def check_workers(args):
    """Raises ZooError unless every worker count divides ``--batch-size``."""
    for workers in flags.integers(args.workers):
        check_split(args.batch_size, workers)


def one_process_speed(args, data, batch_size):
    """Returns examples/s of :func:`zoo.parallel.sync.one_process` on ``batch_size``."""
    import tensorflow as tf

    from zoo.parallel import sync

    result = sync.one_process(
        classifiers.batch_loss("mlp", batch_size, flags.integers(args.hidden)),
        lambda: tf.compat.v1.train.AdamOptimizer(LEARNING_RATE),
        data.train.images, data.train.labels, batch_size, args.steps,
        steps_per_run=args.steps_per_run,
    )  # fmt: skip
    return result.steps_per_second * batch_size


def cluster_speed(args, run, mode, workers):
    """Runs ``experiments.ps --mode MODE``; returns its examples/s (all workers)."""
    batch = args.batch_size // workers if mode == "async" else args.batch_size
    argv = [
        "--mode", mode, "--workers", str(workers), "--batch-size", str(batch),
        "--steps", str(args.steps), "--hidden", args.hidden, "--overwrite",
        "--steps-per-run", str(args.steps_per_run if mode == "sync" else 1),
        *flags.argv_of(args, ("seed", "dataset", "data_dir")),
    ]  # fmt: skip
    results = cluster.run_launcher("experiments.ps", run.file(f"{mode}-{workers}"), argv)
    return sum(results["examples_per_second_per_worker"])


def model_bytes(hidden):
    """Returns the bytes of the MLP's trainable float32 variables."""
    from zoo.data import N_CLASSES, N_PIXELS

    widths = [N_PIXELS, *hidden, N_CLASSES]
    return 4 * sum(n * m + m for n, m in zip(widths, widths[1:], strict=False))


def main(argv=None):
    """Runs the benchmark; see ``--help``."""
    args = flags.parse_args(build_parser(), argv)
    startup.import_tensorflow()
    run = rundir.run_dir(args, "bench_ps")
    data = datasets.load(args, validation=0)
    batch = args.batch_size
    counts = flags.integers(args.workers)
    contenders = {
        "sync": lambda n: cluster_speed(args, run, "sync", n),
        "async": lambda n: cluster_speed(args, run, "async", n),
        "one_process": lambda n: one_process_speed(args, data, batch),
        "one_process_share": lambda n: one_process_speed(args, data, batch // n),
    }
    best = {}  # (workers, contender) -> the fastest round's examples/s
    for _ in range(1 if args.quick else args.rounds):
        for workers in counts:  # each contender beside the others of its count
            for name, speed in contenders.items():
                key = workers, name
                best[key] = max(best.get(key, 0.0), speed(workers))
            figures = ", ".join(f"{c} {best[workers, c]:.0f}" for c in contenders)
            print(f"{workers} workers: examples/s {figures}", flush=True)
    rows = {}
    for workers in counts:
        speeds = {name: best[workers, name] for name in contenders}
        rows[str(workers)] = {
            "examples_per_second": speeds,
            "global_steps_per_second": {
                "sync": speeds["sync"] / batch,
                "async": speeds["async"] / (batch // workers),
                "one_process": speeds["one_process"] / batch,
            },
            "sync_over_one_process": speeds["sync"] / speeds["one_process"],
            "async_over_one_process": speeds["async"] / speeds["one_process"],
            "sync_over_async": speeds["sync"] / speeds["async"],
        }
    results = {
        "quick": args.quick,
        "batch_size": batch,
        "steps": args.steps,
        "steps_per_run": args.steps_per_run,
        "rounds": 1 if args.quick else args.rounds,
        "hidden": flags.integers(args.hidden),
        "model_bytes": model_bytes(flags.integers(args.hidden)),
        "network": "private, loopback only",
        "command": record.command(sys.argv[1:] if argv is None else argv),
        "workers": rows,
    }
    path = rundir.write_bench_results(run, results, args.json)
    print(f"results in {path}")
    return 0


if __name__ == "__main__":
    entry.entry_point(main)
