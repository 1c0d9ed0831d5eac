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
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

from experiments.harness import classifiers, datasets, entry, flags, rundir, startup
from layers.errors import RunInterrupted, ZooError
from zoo.parallel import cluster_spec

FLOAT32_MAX = float(np.finfo(np.float32).max)
STOP_GRACE_S = 15  # seconds a task has to stop after SIGTERM (the chief checkpoints)
PORT_IN_USE_EXIT = 3  # a task's exit status when its port was taken
PORT_ATTEMPTS = 3  # clusters started on fresh ports before a port clash is an error
# Peak memory (VmHWM) of each task, measured with the full 70,000-example data and the
# default MLP (docs/distributed.md); shared library pages count in each, so the sum
# errs on the safe side.
PS_BYTES = 680 << 20
WORKER_BYTES = 1050 << 20
# The launcher's flags that its tasks are started with.
TASK_FLAGS = (
    "steps", "batch_size", "seed", "model", "hidden", "learning_rate", "checkpoint_every",
    "log_every", "startup_timeout", "dataset", "data_dir", "expose",
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
        "--model", choices=classifiers.MODELS, default="mlp", help="network to train"
    )
    flags.add_hidden_flag(p, "625,625", "the MLP's hidden layers")
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
        check=flags.integer(0),
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
    p.add_argument(
        "--max-restarts",
        type=int,
        default=2,
        help="launcher: times a dead worker is restarted",
        check=flags.integer(0),
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
        check_memory(args.workers)


def memory_available(meminfo="/proc/meminfo"):
    """Returns MemAvailable in bytes, or None where ``meminfo`` cannot be read."""
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def memory_needed(workers):
    """Returns the bytes that 1 ps and ``workers`` workers need (estimate)."""
    return PS_BYTES + workers * WORKER_BYTES


def check_memory(workers, meminfo="/proc/meminfo"):
    """Refuses a cluster that the available memory cannot hold.

    Raises:
        ZooError: the estimate of :func:`memory_needed` exceeds MemAvailable.
    """
    available = memory_available(meminfo)
    need = memory_needed(workers)
    if available is not None and need > available:
        raise ZooError(
            f"--workers {workers}: expected a cluster that fits in memory, found an "
            f"estimated {need / 2**30:.1f} GiB ({workers} workers x "
            f"{WORKER_BYTES >> 20} MiB + the ps {PS_BYTES >> 20} MiB) against "
            f"{available / 2**30:.1f} GiB available (MemAvailable); lower --workers, or "
            "pass --no-memory-check to start them anyway"
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
        0, or :data:`PORT_IN_USE_EXIT` when the task's port was taken (the
        launcher then retries on other ports).
    """
    import tensorflow as tf

    from zoo.parallel import distributed

    v1 = tf.compat.v1
    cluster = distributed.parse_cluster(jobs)
    if args.parent_pid is not None:  # started by the launcher: end with it
        distributed.exit_with_parent(args.parent_pid, STOP_GRACE_S)
    if job == "worker":  # fail fast, before anything starts
        args, run = rundir.join_run(args, "ps")
        distributed.wait_for_ps(cluster, args.startup_timeout)
    address = cluster.task_address(job, index)
    try:
        server = distributed.start_server(cluster, job, index, expose=args.expose)
    except distributed.PortInUseError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        return PORT_IN_USE_EXIT
    where = "on every interface, no authentication (--expose)" if args.expose else ""
    print(f"{job}:{index} serving at {address} {where}".strip(), flush=True)
    if job == "ps":
        while True:  # until SIGTERM/SIGKILL; the server's threads do the work
            time.sleep(3600)
    data = datasets.load(args, validation=0)
    data.train.seed = args.seed + index  # every worker its own batch order
    checkpoint_dir = run.file("checkpoints")  # train_worker refuses a foreign `checkpoint`

    def build():
        x = v1.placeholder(tf.float32, [None, data.train.images.shape[1]], name="x")
        y = v1.placeholder(tf.float32, [None, data.train.labels.shape[1]], name="y")
        model = classifiers.build(args.model, x, y, hidden, keep_prob=0.5)
        return model.loss, lambda: dict(
            zip((x, y), data.train.next_batch(args.batch_size), strict=True)
        )

    stats = distributed.train_worker(
        server,
        cluster,
        index,
        build,
        v1.train.AdamOptimizer(args.learning_rate),
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
    """Restores the chief's last checkpoint in a local graph; returns test figures."""
    import tensorflow as tf

    from zoo.training import checkpoints

    v1 = tf.compat.v1
    checkpoint, reader = checkpoints.open_tf_checkpoint(checkpoint_dir)
    with tf.Graph().as_default():
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


class Cluster:
    """The launcher's child processes: started, supervised, and stopped in order.

    Args:
        args: the launcher's flags.
        run: the :class:`rundir.RunDir`.
        cluster: the tasks, ``{job: [address]}`` (:mod:`zoo.parallel.cluster_spec`).
        network: the :class:`PrivateNetwork` the tasks run in, or None
            (``--expose``: the machine's network).
    """

    def __init__(self, args, run, cluster, network):
        self.args, self.run, self.cluster, self.network = args, run, cluster, network
        self.processes = {}
        self.restarts = {}
        os.makedirs(run.file("logs"), exist_ok=True)

    def start(self, job, index):
        """Starts (or restarts) one task with its output in ``logs/<job>-<index>.log``."""
        name = f"{job}-{index}"
        argv = task_argv(self.args, self.run.path, self.cluster, job, index)
        with open(self.log(name), "a") as log:
            self.processes[name] = subprocess.Popen(
                self.network.command(argv) if self.network else argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
            )
        pids = {n: p.pid for n, p in self.processes.items()}
        if self.network:
            pids["network"] = self.network.pid
        self.run.write_json(
            "cluster.json",
            {
                "cluster": self.cluster,
                "pids": pids,
                "restarts": self.restarts,
                "network": "private, loopback only" if self.network else "exposed",
            },
        )

    def log(self, name):
        """Returns the path of task ``name``'s log."""
        return self.run.file(os.path.join("logs", f"{name}.log"))

    def supervise(self, caught):
        """Waits for every worker, restarting dead ones, until done or a signal.

        Args:
            caught: the list that collects SIGINT/SIGTERM; supervision stops
                as soon as it holds one.

        Raises:
            ZooError: the ps exited, a worker failed with a zoo error or too
                often, or ``--timeout`` passed; the message names the task's log.
            PortInUseError: a task's port was taken.
        """
        from zoo.parallel.distributed import PortInUseError

        deadline = time.monotonic() + self.args.timeout
        workers = {f"worker-{i}": i for i in range(self.args.workers)}
        while workers and not caught:
            for name, code in [(n, p.poll()) for n, p in self.processes.items()]:
                if code == PORT_IN_USE_EXIT:
                    job, index = name.split("-")
                    address = self.cluster[job][int(index)]
                    raise PortInUseError(job, int(index), address)
            if self.processes["ps-0"].poll() is not None:
                raise ZooError(self.failure("ps-0", "the ps exited"))
            for name, index in list(workers.items()):
                code = self.processes[name].poll()
                if code == 0:
                    del workers[name]
                elif code is not None:
                    if code == 2 or self.restarts.get(name, 0) >= self.args.max_restarts:
                        raise ZooError(self.failure(name, f"{name} exited with {code}"))
                    self.restarts[name] = self.restarts.get(name, 0) + 1
                    self.start("worker", index)
            if time.monotonic() > deadline:
                raise ZooError(
                    f"{self.run.path}: expected the workers to finish within "
                    f"{self.args.timeout:g} s, found {sorted(workers)} still running; "
                    "raise --timeout or lower --steps"
                )
            time.sleep(0.2)

    def failure(self, name, what):
        """Returns an error message with the last line of the task's log."""
        log = self.log(name)
        with open(log) as f:
            lines = [line.strip() for line in f if line.strip()]
        last = lines[-1] if lines else "(empty log)"
        return f"{log}: expected {name} to run to the end, found {what}: {last}; see log"

    def close(self):
        """Stops the workers (SIGTERM: the chief checkpoints), then the ps.

        A task still there ``STOP_GRACE_S`` seconds after its SIGTERM is killed.
        When a ps has exited (it died, or its port was taken) the chief's
        checkpoint cannot reach the variables, so the workers are killed at once
        rather than left to wait out the grace on a ps that will not answer.
        """
        workers = [p for n, p in self.processes.items() if n.startswith("worker")]
        ps = [p for n, p in self.processes.items() if n.startswith("ps")]
        ps_gone = any(process.poll() is not None for process in ps)
        for group, grace in ((workers, 0 if ps_gone else STOP_GRACE_S), (ps, STOP_GRACE_S)):
            for process in group:
                if process.poll() is None:
                    process.terminate()
            deadline = time.monotonic() + grace
            for process in group:
                try:
                    process.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


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
                children = Cluster(
                    args, run, cluster_spec.local_cluster(args.workers), network
                )
                try:
                    children.start("ps", 0)
                    for index in range(args.workers):
                        children.start("worker", index)
                    children.supervise(caught)
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
            "cluster": children.cluster,
            "network": "exposed" if args.expose else "private, loopback only",
        },
    )
    return 0


if __name__ == "__main__":
    entry.entry_point(main)
