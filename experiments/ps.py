"""Parameter-server training, asynchronous (1 ps and N workers as separate processes)
or synchronous (``--mode sync``: N workers on TensorFlow's collectives, no ps).

Without ``--job-name`` (and without ``TF_CONFIG``) this script is the launcher:
it checks that memory holds ``--workers`` tasks, starts one ps process and
``--workers`` worker processes (this same script with ``--job-name``) in a
private network namespace where loopback is the only interface (TensorFlow's
gRPC server listens on every interface; ``--expose`` runs them on the
machine's network instead), restarts a worker that dies (up to
``--max-restarts`` times; it rejoins and the ps keeps the state), stops the ps
when every worker is done, and writes ``results.json``. SIGINT/SIGTERM stop it
in order: workers first (the chief writes its checkpoint), then the ps; it
prints the command that resumes. Every task ends when the launcher does, even
after ``kill -9``. ``--resume RUN_DIR`` starts a new cluster from that run's
last checkpoint. With ``--job-name ps|worker --task-index I --cluster SPEC`` (or
``TF_CONFIG``) it runs one task, which is how the same code runs across
machines (docs/distributed.md).

``--mode sync`` runs the workers of :func:`zoo.parallel.sync.train` instead: each
takes ``--batch-size / --workers`` examples of every global batch and all apply
the all-reduced gradient, so the run is one process on the whole batch; a dead or
silent worker (past --operation-timeout) restarts every worker from the chief's last
checkpoint (a synchronous step needs them all), and the launcher trains that one
process itself at the end, with the workers' arithmetic and on whole batches, to
record ``max_diff_vs_one_process`` and ``max_diff_vs_whole_batch`` in results.json.

Usage::

    python -m experiments.ps --workers 2 --data-dir DIR --out runs/ps/two
    python -m experiments.ps --mode sync --workers 2 --data-dir DIR --steps-per-run 8
    python -m experiments.ps --job-name worker --task-index 1 --expose \
        --cluster "ps=10.0.0.1:2222;worker=10.0.0.2:2222,10.0.0.3:2222" --data-dir DIR

The run directory holds ``cluster.json`` (addresses and process ids),
``logs/<job>-<index>.log``, ``workers/worker-<index>.json``, the chief's
checkpoints under ``checkpoints/`` and ``results.json`` with ``test_accuracy``,
``workers``, ``examples_per_second_per_worker`` and ``global_steps`` (sync: also
the two differences; docs/distributed.md).
"""

import json
import os
import sys
import time

import numpy as np

from experiments.harness import (
    classifiers,
    cluster,
    datasets,
    entry,
    flags,
    rundir,
    startup,
)
from layers.errors import ZooError
from zoo.constants import BATCH_WINDOW
from zoo.parallel import cluster_spec, launcher

FLOAT32_MAX = float(np.finfo(np.float32).max)
MODES = ("async", "sync")
# The launcher's flags that its tasks are started with.
TASK_FLAGS = (
    "steps", "batch_size", "seed", "model", "hidden", "learning_rate", "checkpoint_every",
    "log_every", "startup_timeout", "dataset", "data_dir", "expose", "precision", "mode",
    "steps_per_run", "operation_timeout",
)  # fmt: skip


def build_parser():
    """Returns the argument parser: shared flags plus cluster and model flags."""
    p = flags.parser(
        "Asynchronous parameter-server training (between-graph replication) of the "
        "MLP or the Deep MNIST conv net on TensorFlow's distributed runtime.",
        steps=2000,
        batch_size=50,
        quick_steps=200,
    )
    p.add_argument("--workers", type=int, default=2, help="worker processes to launch")
    p.add_argument(
        "--ps",
        type=int,
        default=1,
        help="--mode async: ps tasks to launch; the variables are spread over them (a "
        "partitioned variable's shards too)",
    )
    p.add_argument(
        "--mode",
        choices=MODES,
        default="async",
        help="async: a ps, each worker applies its own gradients; sync: no ps, every "
        "step all-reduces the workers' gradients (MultiWorkerMirroredStrategy)",
    )
    p.add_argument(
        "--model",
        choices=(*classifiers.MODELS, classifiers.BATCH_NORM_MODEL),
        default="mlp",
        help=f"network to train ({classifiers.BATCH_NORM_MODEL}: the conv net with "
        "batch norm, --mode sync only)",
    )
    p.add_argument(
        "--steps-per-run",
        type=int,
        default=1,
        metavar="K",
        check=flags.integer(1, BATCH_WINDOW),
        may_differ_on_resume=True,
        help="--mode sync: synchronous steps inside one session.run (a tf.while_loop "
        "around the strategy's step); the results do not depend on it",
    )
    flags.add_hidden_flag(p, "625,625", "the MLP's hidden layers")
    flags.add_precision_flag(p)
    p.add_argument(
        "--learning-rate",
        type=float,
        default=1e-3,
        check=flags.real(0.0, maximum=FLOAT32_MAX),  # a huge one tests the NaN guard
        help="Adam learning rate",
    )
    cluster.add_flags(p)
    p.add_argument(
        "--log-every", type=int, default=50, help="period in local steps of the logged loss"
    )
    p.add_argument(
        "--startup-timeout",
        type=float,
        default=60.0,
        help="seconds a worker waits for the ps and for the chief's init (sync: for "
        "the other workers' initialization and first run)",
    )
    flags.may_differ_on_resume(p, "startup_timeout")
    p.add_check(check_cluster_flags)
    return p


def main(argv=None):
    """Launches a local cluster, or runs one task of a given cluster."""
    args = flags.parse_args(build_parser(), argv)
    startup.import_tensorflow()
    task = task_of(args)
    if task:
        jobs, job, index = task
        return run_task(args, flags.integers(args.hidden), jobs, job, index)
    return launch(args)


def check_cluster_flags(args):
    """Checks what one flag cannot: a task's --cluster, --job-name and --task-index
    (or TF_CONFIG), the launcher's --workers against the memory (unless
    --no-memory-check), what --mode sync allows.

    Raises:
        ZooError: --cluster without --job-name or the reverse; a cluster spec or
            TF_CONFIG that cannot be read, or a task outside it (:func:`task_of`);
            more workers than memory holds
            (:func:`experiments.harness.cluster.check_memory`); the batch norm
            model in async mode; in sync mode a --precision other than float32 or
            a worker count that does not divide --batch-size.
    """
    if bool(args.cluster) != bool(args.job_name):
        raise ZooError(
            "--cluster/--job-name: expected both or neither, found only one; pass "
            "--cluster SPEC --job-name ps|worker --task-index I"
        )
    if args.mode == "async" and args.model == classifiers.BATCH_NORM_MODEL:
        raise ZooError(
            f"--model: expected mlp or conv with --mode async, found "
            f"{args.model}; the asynchronous workers do not run batch norm's updates: "
            "pass --mode sync"
        )
    if args.mode == "sync":
        check_sync(args)
    elif args.steps_per_run != 1:
        raise ZooError(
            f"--steps-per-run: expected 1 with --mode async, found {args.steps_per_run}; "
            "an asynchronous worker takes one step per run: pass --mode sync"
        )
    launcher = task_of(args) is None
    if launcher and not args.no_memory_check:
        cluster.check_memory(args.workers, ps=0 if args.mode == "sync" else args.ps)


def check_sync(args):
    """Raises ZooError unless the synchronous mode can train these flags."""
    if args.precision != "float32":
        raise ZooError(
            f"--precision: expected float32 with --mode sync, found {args.precision}; "
            "the synchronous mode is checked against one process to 1e-5 in float32"
        )
    if args.ps != 1:
        raise ZooError(
            f"--ps: expected none with --mode sync, found --ps {args.ps}; the "
            "synchronous workers mirror the variables and need no ps: drop --ps"
        )
    if args.job_name is None:  # the launcher: before any process starts
        cluster_spec.check_split(args.batch_size, args.workers)


def task_of(args):
    """Returns ``(jobs, job, index)`` from --cluster/--job-name or TF_CONFIG, or None.

    ``jobs`` is ``{job: [address]}`` (:func:`zoo.parallel.cluster_spec.parse`); nothing
    here imports TensorFlow.

    Raises:
        ZooError: a cluster spec (or TF_CONFIG) that cannot be read, or a task
            outside it.
    """
    required = ("worker",) if args.mode == "sync" else cluster_spec.JOBS
    if args.cluster:  # with --job-name (check_cluster_flags)
        jobs = cluster_spec.parse(args.cluster, required)
        cluster_spec.check_task(jobs, args.job_name, args.task_index)
        return jobs, args.job_name, args.task_index
    return cluster_spec.from_tf_config(required=required)


def run_task(args, hidden, jobs, job, index):
    """Runs one task: a ps serves until it is stopped; a worker trains, writes its stats.

    ``jobs`` is the cluster as :func:`task_of` returns it.

    Returns:
        0, or :data:`zoo.parallel.launcher.PORT_IN_USE_EXIT` when the task's port
        was taken (the launcher then retries on other ports).
    """
    from zoo.parallel import distributed

    if args.parent_pid is not None:  # started by the launcher: end with it
        needs = jobs["ps"] if job == "worker" and args.mode == "async" else ()
        distributed.exit_with_parent(args.parent_pid, launcher.STOP_GRACE_S, needs=needs)
    run = data = None
    if job == "worker":  # fail fast, before anything starts
        args, run = rundir.join_run(args, "ps")
        data = datasets.load(args, validation=0)
    train = train_sync if args.mode == "sync" else train_async
    stats = train(args, hidden, jobs, job, index, run, data)
    if not isinstance(stats, dict):
        return stats  # the ps served until stopped, or an exit status
    if index == 0:
        stats.update(evaluate(args, hidden, run.file("checkpoints"), data.test))
    os.makedirs(run.file("workers"), exist_ok=True)
    run.write_json(os.path.join("workers", f"worker-{index}.json"), stats)
    return 0


def train_async(args, hidden, jobs, job, index, run, data):
    """Serves as a ps until stopped, or trains as a worker against the ps.

    Returns:
        The worker's stats, or :data:`zoo.parallel.launcher.PORT_IN_USE_EXIT`.
    """
    import tensorflow as tf

    from experiments.harness.train import loss_scaled
    from zoo.parallel import distributed
    from zoo.training import precision

    v1 = tf.compat.v1
    cluster = distributed.parse_cluster(jobs)
    if job == "worker":
        distributed.wait_for_ps(cluster, args.startup_timeout)
    address = cluster.task_address(job, index)
    try:
        server = distributed.start_server(cluster, job, index, expose=args.expose)
    except distributed.PortInUseError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        return launcher.PORT_IN_USE_EXIT
    where = "on every interface, no authentication (--expose)" if args.expose else ""
    print(f"{job}:{index} serving at {address} {where}".strip(), flush=True)
    if job == "ps":
        while True:  # until SIGTERM/SIGKILL; the server's threads do the work
            time.sleep(3600)
    data.train.seed = args.seed + index  # every worker its own batch order
    checkpoint_dir = run.file("checkpoints")  # train_worker refuses a foreign `checkpoint`

    def build():  # the variables float32 on the ps, read in --precision by the worker
        x = v1.placeholder(tf.float32, [None, data.train.images.shape[1]], name="x")
        y = v1.placeholder(tf.float32, [None, data.train.labels.shape[1]], name="y")
        with precision.policy(args.precision):
            model = classifiers.build(args.model, x, y, hidden, keep_prob=0.5)
        return model.loss, lambda: dict(
            zip((x, y), data.train.next_batch(args.batch_size), strict=True)
        )

    return distributed.train_worker(
        server,
        cluster,
        index,
        build,
        loss_scaled(v1.train.AdamOptimizer(args.learning_rate), args),
        batch_size=args.batch_size,
        last_step=args.steps,
        checkpoint_dir=checkpoint_dir,
        checkpoint_every=args.checkpoint_every,
        startup_timeout=args.startup_timeout,
        operation_timeout=args.operation_timeout,
        log_every=args.log_every,
        on_log=lambda step, loss: print(
            f"worker:{index} global step {step} loss {loss:.4f}", flush=True
        ),
    )


def train_sync(args, hidden, jobs, job, index, run, data):
    """Trains synchronous worker ``index`` (:func:`zoo.parallel.sync.train`).

    Returns:
        The worker's stats, as the asynchronous worker's.
    """
    from zoo.parallel import sync
    from zoo.training import checkpoints

    checkpoint_dir = run.file("checkpoints")
    os.makedirs(checkpoint_dir, exist_ok=True)
    restored = checkpoints.latest_tf_checkpoint(checkpoint_dir)
    print(f"worker:{index} synchronous, {len(jobs['worker'])} workers", flush=True)
    loss = classifiers.batch_loss(args.model, args.batch_size, hidden)
    try:
        result = sync.train(
            index, jobs["worker"], loss, optimizer(args), data.train.images,
            data.train.labels, args.batch_size, args.steps, checkpoint_dir,
            args.checkpoint_every, args.steps_per_run, args.operation_timeout,
            args.startup_timeout,
        )  # fmt: skip
    except sync.LostWorkerError as err:  # the launcher restarts every worker
        return cluster.lost_worker_exit(err)
    first = args.steps - len(result.losses)
    share = args.batch_size // len(jobs["worker"])
    return {
        "examples_per_second": result.steps_per_second * share,  # as async counts
        "local_steps": len(result.losses),
        "losses": [[first + i, loss] for i, loss in enumerate(result.losses)][
            :: args.log_every
        ],
        "restored_from": restored and os.path.basename(restored),
    }


def optimizer(args):
    """Returns ``() -> Adam`` at --learning-rate."""
    import tensorflow as tf

    return lambda: tf.compat.v1.train.AdamOptimizer(args.learning_rate)


def evaluate(args, hidden, checkpoint_dir, test):
    """Restores the chief's last checkpoint in a local graph built under
    ``--precision``; returns test figures."""
    import tensorflow as tf

    from zoo.training import checkpoints, precision

    v1 = tf.compat.v1
    checkpoint, _ = checkpoints.open_tf_checkpoint(checkpoint_dir)
    with tf.Graph().as_default(), precision.policy(args.precision):
        x = v1.placeholder(tf.float32, [None, test.images.shape[1]])
        y = v1.placeholder(tf.float32, [None, test.labels.shape[1]])
        model = classifiers.build(args.model, x, y, hidden, training=False)
        saver = v1.train.Saver(v1.global_variables())  # batch norm's statistics too
        with v1.Session() as sess:
            saver.restore(sess, checkpoint)
            accuracy = sess.run(model.accuracy, {x: test.images, y: test.labels})
    return {
        "test_accuracy": float(accuracy),
        "global_steps": checkpoints.tf_checkpoint_step(checkpoint),
        "checkpoint": os.path.basename(checkpoint),
    }


def launch(args):
    """Starts the cluster of --mode, supervises it, writes ``results.json``.

    Async: 1 ps + ``--workers`` workers, a dead worker restarted alone. Sync:
    ``--workers`` workers, a dead one restarts them all from the chief's last
    checkpoint, then the one-process reference. With ``--resume RUN_DIR`` the
    chief restores the last checkpoint of that run and training goes on to
    ``--steps``.

    Raises:
        ZooError: as :func:`experiments.harness.cluster.launch`.
        RunInterrupted: SIGINT/SIGTERM stopped the run; the message holds the
            command that resumes.
    """
    run = rundir.run_dir(args, "ps")
    if args.resume:
        cluster.check_resume(args.steps, run.file("checkpoints"))
    sync = args.mode == "sync"
    children, restarts = cluster.launch(
        args,
        run,
        lambda: cluster_spec.local_cluster(args.workers, ps=0 if sync else args.ps),
        cluster.task_command("experiments.ps", args, run.path, TASK_FLAGS),
        whole=sync,
    )
    results = results_of(args, run)
    results["restarts"] = {"cluster": restarts} if sync else children.restarts
    results["cluster"] = children.jobs
    if sync:
        results.update(compare_one_process(args, run))
    run.write_results(results)
    return 0


def results_of(args, run):
    """Returns the figures of results.json the workers' stats give."""
    stats = []
    for index in range(args.workers):
        with open(run.file(os.path.join("workers", f"worker-{index}.json"))) as f:
            stats.append(json.load(f))
    chief = stats[0]
    return {
        "mode": args.mode,
        "test_accuracy": chief["test_accuracy"],
        "workers": args.workers,
        "examples_per_second_per_worker": [s["examples_per_second"] for s in stats],
        "global_steps": chief["global_steps"],
        "local_steps_per_worker": [s["local_steps"] for s in stats],
        "chief_losses": chief["losses"],
        "restored_from": chief["restored_from"],
        "model": args.model,
        "steps": args.steps,
        "batch_size": args.batch_size,
        "network": "exposed" if args.expose else "private, loopback only",
    }


def compare_one_process(args, run):
    """Returns ``max_diff_vs_one_process`` and ``max_diff_vs_whole_batch`` of the
    chief's last checkpoint (:func:`zoo.parallel.sync.compare_to_one_process`) and the
    whole-batch process's figures."""
    from zoo.parallel import sync

    data = datasets.load(args, validation=0)
    loss = classifiers.batch_loss(args.model, args.batch_size, flags.integers(args.hidden))
    differences, whole = sync.compare_to_one_process(
        run.file("checkpoints"), loss, optimizer(args), data.train.images,
        data.train.labels, args.batch_size, args.steps, args.workers, args.steps_per_run,
    )  # fmt: skip
    return {
        **{f"max_diff_vs_{name}": value for name, value in differences.items()},
        "one_process_examples_per_second": whole.steps_per_second * args.batch_size,
        "one_process_last_loss": whole.losses[-1],
    }


if __name__ == "__main__":
    entry.entry_point(main)
