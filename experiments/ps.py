"""Asynchronous parameter-server training: 1 ps and N workers as separate processes.

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

Usage::

    python -m experiments.ps --workers 2 --data-dir DIR --out runs/ps/two
    python -m experiments.ps --job-name worker --task-index 1 --expose \
        --cluster "ps=10.0.0.1:2222;worker=10.0.0.2:2222,10.0.0.3:2222" --data-dir DIR

The run directory holds ``cluster.json`` (addresses and process ids),
``logs/<job>-<index>.log``, ``workers/worker-<index>.json``, the chief's
checkpoints under ``checkpoints/`` and ``results.json`` with ``test_accuracy``,
``workers``, ``examples_per_second_per_worker`` and ``global_steps``.
"""

import argparse
import functools
import json
import os
import signal
import sys
import time

import numpy as np

from experiments.harness import classifiers, datasets, entry, flags, rundir, startup
from layers.errors import RunInterrupted, ZooError
from zoo.parallel import cluster_spec, launcher

FLOAT32_MAX = float(np.finfo(np.float32).max)
PORT_ATTEMPTS = 3  # clusters started on fresh ports before a port clash is an error
# Peak memory (VmHWM) of each task, measured with the full 70,000-example data and the
# default MLP (docs/distributed.md); shared library pages count in each, so the sum
# errs on the safe side.
PS_BYTES = 680 << 20
WORKER_BYTES = 1050 << 20
# The launcher's flags that its tasks are started with.
TASK_FLAGS = (
    "steps", "batch_size", "seed", "model", "hidden", "learning_rate", "checkpoint_every",
    "log_every", "startup_timeout", "dataset", "data_dir", "expose", "precision",
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
        help="ps tasks to launch; the variables are spread "
        "over them (a partitioned variable's shards too)",
    )
    p.add_argument(
        "--model", choices=classifiers.MODELS, default="mlp", help="network to train"
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
    p.add_argument(
        "--cluster",
        default=None,
        help="run one task of this cluster: 'ps=host:port;worker=host:port,host:port' "
        'or JSON {"ps": [...], "worker": [...]}; TF_CONFIG works too',
    )
    p.add_argument(
        "--job-name",
        choices=cluster_spec.JOBS,
        default=None,
        help="this task's job (with --cluster)",
    )
    p.add_argument(
        "--task-index",
        type=int,
        default=0,
        help="this task's index in its job; worker 0 is the chief",
    )
    p.add_argument(
        "--expose",
        action="store_true",
        help="let the tasks listen on every network interface (TensorFlow's gRPC "
        "server has no loopback-only mode and no authentication): needed with "
        "--cluster across machines, and by the launcher where no private network "
        "namespace can be made; keep the machines behind a firewall",
    )
    p.add_argument(
        "--no-memory-check",
        action="store_true",
        help="launcher: start --workers tasks even when MemAvailable cannot hold them",
    )
    p.add_argument("--parent-pid", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument(
        "--log-every", type=int, default=50, help="period in local steps of the logged loss"
    )
    p.add_argument(
        "--startup-timeout",
        type=float,
        default=60.0,
        help="seconds a worker waits for the ps and for the chief's init",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        help="launcher: seconds before the whole run is stopped as failed",
    )
    flags.add_count_flag(
        p, "--max-restarts", 2, "launcher: times a dead worker is restarted"
    )
    flags.may_differ_on_resume(
        p,
        "cluster",
        "job_name",
        "task_index",
        "startup_timeout",
        "timeout",
        "max_restarts",
        "parent_pid",
        "no_memory_check",
    )
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
    --no-memory-check).

    Raises:
        ZooError: --cluster without --job-name or the reverse; a cluster spec or
            TF_CONFIG that cannot be read, or a task outside it (:func:`task_of`);
            more workers than memory holds (:func:`check_memory`).
    """
    if bool(args.cluster) != bool(args.job_name):
        raise ZooError(
            "--cluster/--job-name: expected both or neither, found only one; pass "
            "--cluster SPEC --job-name ps|worker --task-index I"
        )
    launcher = task_of(args) is None
    if launcher and not args.no_memory_check:
        check_memory(args.workers, ps=args.ps)


def memory_needed(workers, ps=1):
    """Returns the bytes that ``ps`` ps tasks and ``workers`` workers need (estimate)."""
    return ps * PS_BYTES + workers * WORKER_BYTES


def check_memory(workers, meminfo="/proc/meminfo", ps=1):
    """Refuses a cluster that the available memory cannot hold.

    Raises:
        ZooError: the estimate of :func:`memory_needed` exceeds MemAvailable.
    """
    available = launcher.memory_available(meminfo)
    need = memory_needed(workers, ps)
    if available is not None and need > available:
        raise ZooError(
            f"--workers {workers} --ps {ps}: expected a cluster that fits in memory, found "
            f"an estimated {need / 2**30:.1f} GiB ({workers} workers x "
            f"{WORKER_BYTES >> 20} MiB + {ps} ps x {PS_BYTES >> 20} MiB) against "
            f"{available / 2**30:.1f} GiB available (MemAvailable); lower --workers or "
            "--ps, or pass --no-memory-check to start them anyway"
        )


def task_of(args):
    """Returns ``(jobs, job, index)`` from --cluster/--job-name or TF_CONFIG, or None.

    ``jobs`` is ``{job: [address]}`` (:func:`zoo.parallel.cluster_spec.parse`); nothing
    here imports TensorFlow.

    Raises:
        ZooError: a cluster spec (or TF_CONFIG) that cannot be read, or a task
            outside it.
    """
    if args.cluster:  # with --job-name (check_cluster_flags)
        jobs = cluster_spec.parse(args.cluster)
        cluster_spec.check_task(jobs, args.job_name, args.task_index)
        return jobs, args.job_name, args.task_index
    return cluster_spec.from_tf_config()


def run_task(args, hidden, jobs, job, index):
    """Runs one task: a ps serves until it is stopped; a worker trains, writes its stats.

    ``jobs`` is the cluster as :func:`task_of` returns it.

    Returns:
        0, or :data:`zoo.parallel.launcher.PORT_IN_USE_EXIT` when the task's port
        was taken (the launcher then retries on other ports).
    """
    import tensorflow as tf

    from experiments.harness.train import loss_scaled
    from zoo.parallel import distributed
    from zoo.training import precision

    v1 = tf.compat.v1
    cluster = distributed.parse_cluster(jobs)
    if args.parent_pid is not None:  # started by the launcher: end with it
        distributed.exit_with_parent(args.parent_pid, launcher.STOP_GRACE_S)
    if job == "worker":  # fail fast, before anything starts
        args, run = rundir.join_run(args, "ps")
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
    data = datasets.load(args, validation=0)
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

    stats = distributed.train_worker(
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
        log_every=args.log_every,
        on_log=lambda step, loss: print(
            f"worker:{index} global step {step} loss {loss:.4f}", flush=True
        ),
    )
    if index == 0:
        stats.update(evaluate(args, hidden, checkpoint_dir, data.test))
    os.makedirs(run.file("workers"), exist_ok=True)
    run.write_json(os.path.join("workers", f"worker-{index}.json"), stats)
    return 0


def evaluate(args, hidden, checkpoint_dir, test):
    """Restores the chief's last checkpoint in a local graph built under
    ``--precision``; returns test figures."""
    import tensorflow as tf

    from zoo.training import checkpoints, precision

    v1 = tf.compat.v1
    checkpoint, reader = checkpoints.open_tf_checkpoint(checkpoint_dir)
    with tf.Graph().as_default(), precision.policy(args.precision):
        x = v1.placeholder(tf.float32, [None, test.images.shape[1]])
        y = v1.placeholder(tf.float32, [None, test.labels.shape[1]])
        model = classifiers.build(args.model, x, y, hidden)
        saver = v1.train.Saver(v1.trainable_variables())
        with v1.Session() as sess:
            saver.restore(sess, checkpoint)
            accuracy = sess.run(model.accuracy, {x: test.images, y: test.labels})
    return {
        "test_accuracy": float(accuracy),
        "global_steps": int(reader.get_tensor("global_step")),
        "checkpoint": os.path.basename(checkpoint),
    }


def task_argv(args, out, jobs, job, index):
    """Returns the command line of one task of the local cluster ``jobs`` in run ``out``."""
    return [
        sys.executable, "-m", "experiments.ps", "--cluster", json.dumps(jobs),
        "--job-name", job, "--task-index", str(index), "--out", out,
        "--parent-pid", str(os.getpid()), *flags.argv_of(args, TASK_FLAGS),
    ]  # fmt: skip


def open_network(args):
    """Returns the private network of the tasks, or None with ``--expose``.

    Raises:
        ZooError: no private network namespace can be made here.
    """
    from zoo.parallel.loopback import PrivateNetwork

    if args.expose:
        print(
            "ps: the tasks listen on every network interface without authentication "
            "(--expose); keep this machine behind a firewall",
            flush=True,
        )
        return None
    try:
        return PrivateNetwork()
    except OSError as err:
        raise ZooError(
            f"--expose: expected a private network namespace (loopback only) for the "
            f"tasks, found none can be made here ({err}); TensorFlow's gRPC server "
            "listens on every interface without authentication: pass --expose to run "
            "anyway behind a firewall, or allow unprivileged user namespaces"
        ) from None


def check_resume(args, checkpoint_dir):
    """Refuses ``--resume`` to ``--steps`` the last checkpoint has already reached."""
    from zoo.training import checkpoints

    checkpoint = checkpoints.latest_tf_checkpoint(checkpoint_dir)
    step = 0
    if checkpoint:
        _, reader = checkpoints.open_tf_checkpoint(checkpoint)
        step = int(reader.get_tensor("global_step"))
    if step >= args.steps:
        raise ZooError(
            f"{checkpoint}: expected --steps above the checkpoint's global step {step}, "
            f"found {args.steps}; resume with a larger --steps"
        )


def launch(args):
    """Starts 1 ps + ``--workers`` workers, supervises them, writes ``results.json``.

    With ``--resume RUN_DIR`` the chief restores the last checkpoint of that run
    and training goes on to ``--steps``. A port clash (``--expose``) starts the
    cluster again on other ports, up to :data:`PORT_ATTEMPTS` times.

    Raises:
        ZooError: as :meth:`Cluster.supervise`, or as :func:`open_network`.
        RunInterrupted: SIGINT/SIGTERM stopped the run (after the chief's
            checkpoint); the message holds the command that resumes.
    """
    from zoo.parallel import distributed
    from zoo.training import signals_caught

    run = rundir.run_dir(args, "ps")
    if args.resume:
        check_resume(args, run.file("checkpoints"))
    network = open_network(args)
    try:
        with signals_caught(enabled=True) as caught:
            for attempt in range(1, PORT_ATTEMPTS + 1):
                jobs = cluster_spec.local_cluster(args.workers, ps=args.ps)
                command = functools.partial(task_argv, args, run.path, jobs)
                children = launcher.LocalCluster(command, run.path, jobs, network)
                try:
                    children.start_all()
                    children.supervise(caught, args.timeout, args.max_restarts)
                    break
                except distributed.PortInUseError as err:
                    if attempt == PORT_ATTEMPTS:
                        raise
                    print(
                        f"ps: {err}; starting the cluster again on other ports", flush=True
                    )
                finally:
                    children.close()
    finally:
        if network:
            network.close()
    if caught:
        raise interrupted(run, caught[0])
    return write_results(args, run, children)


def interrupted(run, signum):
    """Returns the :class:`RunInterrupted` of a launcher stopped by ``signum``."""
    from zoo.training import checkpoints

    checkpoint = checkpoints.latest_tf_checkpoint(run.file("checkpoints"))
    command = run.checkpointer.command
    return RunInterrupted(
        f"{run.path}: interrupted by {signal.Signals(signum).name}; workers and ps "
        f"stopped, chief checkpoint {checkpoint}; resume with: {command}",
        signum,
        command,
    )


def write_results(args, run, children):
    """Writes ``results.json`` from the workers' stats; returns 0."""
    stats = []
    for index in range(args.workers):
        with open(run.file(os.path.join("workers", f"worker-{index}.json"))) as f:
            stats.append(json.load(f))
    chief = stats[0]
    run.write_results(
        {
            "test_accuracy": chief["test_accuracy"],
            "workers": args.workers,
            "examples_per_second_per_worker": [s["examples_per_second"] for s in stats],
            "global_steps": chief["global_steps"],
            "local_steps_per_worker": [s["local_steps"] for s in stats],
            "restarts": children.restarts,
            "chief_losses": chief["losses"],
            "restored_from": chief["restored_from"],
            "model": args.model,
            "steps": args.steps,
            "batch_size": args.batch_size,
            "cluster": children.jobs,
            "network": "exposed" if args.expose else "private, loopback only",
        },
    )
    return 0


if __name__ == "__main__":
    entry.entry_point(main)
