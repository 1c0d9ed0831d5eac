"""A script's local cluster: the task processes in a private network, started,
supervised, started again, stopped in order (``experiments.ps``, both modes).

Usage::

    command = task_command("experiments.ps", args, run.path, TASK_FLAGS)
    children, restarts = launch(args, run, lambda: local_cluster(2), command,
                                whole=True)  # a dead task restarts every task

Without ``whole`` a dead worker alone is started again (the asynchronous ps keeps
the state); with it every task stops and the cluster starts again on fresh ports,
its workers from the chief's last checkpoint (a synchronous step needs them all).
Nothing here imports TensorFlow until :func:`launch` runs.
"""

import argparse
import functools
import json
import os
import shlex
import signal
import subprocess
import sys

from experiments.harness import flags
from layers.errors import RunInterrupted, ZooError
from zoo.parallel import cluster_spec, launcher

PORT_ATTEMPTS = 3  # clusters started on fresh ports before a port clash is an error
ZOO_ERROR_EXIT = 2  # a task that failed this way is not started again
LOST_WORKER_EXIT = 4  # a synchronous worker that lost another: every worker starts again
# Peak memory (VmHWM) of each task, measured with the full 70,000-example data and the
# default MLP (docs/distributed.md); shared library pages count in each, so the sum
# errs on the safe side.
PS_BYTES = 680 << 20
WORKER_BYTES = 1050 << 20


def add_flags(p):
    """Adds a cluster script's flags: one task's (--cluster, --job-name,
    --task-index, --expose, --operation-timeout) and the launcher's
    (--no-memory-check, --timeout, --max-restarts); none of them has to match on
    --resume."""
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
        "--timeout",
        type=float,
        default=1800.0,
        help="launcher: seconds before the whole run is stopped as failed",
    )
    flags.add_count_flag(
        p, "--max-restarts", 2, "launcher: times a dead worker is restarted"
    )
    p.add_argument(
        "--operation-timeout",
        type=float,
        default=60.0,
        check=flags.real(0.0),
        help="seconds one session.run of a worker may take (async: a step; sync: "
        "--steps-per-run steps) before the silent ps or worker is named and the worker "
        "ends (sync: every worker is started again from the last checkpoint)",
    )
    flags.may_differ_on_resume(
        p, "cluster", "job_name", "task_index", "timeout", "max_restarts", "parent_pid",
        "no_memory_check", "operation_timeout",
    )  # fmt: skip


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
            f"--workers {workers} --ps {ps}: expected a cluster that fits in memory, "
            f"found an estimated {need / 2**30:.1f} GiB ({workers} workers x "
            f"{WORKER_BYTES >> 20} MiB + {ps} ps x {PS_BYTES >> 20} MiB) against "
            f"{available / 2**30:.1f} GiB available (MemAvailable); lower --workers or "
            "--ps, or pass --no-memory-check to start them anyway"
        )


def run_launcher(module, out, argv):
    """Runs ``python -m module --out OUT ARGV`` (a launcher) to its end; returns its
    ``results.json``. Its stderr passes through without TensorFlow's start-up lines.

    Raises:
        ZooError: the run did not finish (its own error is on stderr above).
    """
    from experiments.harness import startup

    command = [sys.executable, "-m", module, "--out", out, *argv]
    done = subprocess.run(command, stderr=subprocess.PIPE, text=True, check=False)
    # (this process's TF_CPP_MIN_LOG_LEVEL, which it inherits, keeps it from dropping them)
    lines = done.stderr.splitlines(keepends=True)
    sys.stderr.write("".join(s for s in lines if not startup.is_startup_line(s)))
    if done.returncode:
        raise ZooError(
            f"{out}: expected {shlex.join(command[2:])} to finish, found exit status "
            f"{done.returncode}; see its error above and its logs in {out}"
        )
    with open(os.path.join(out, "results.json")) as f:
        return json.load(f)


def task_command(module, args, out, task_flags):
    """Returns ``command(jobs, job, index)``: the argv of one task of ``module``.

    Args:
        module: the script the tasks run (``python -m module``).
        args: the launcher's settings; ``task_flags`` of them reach every task.
        out: the run directory the tasks join.
        task_flags: the flags' destinations.
    """

    def command(jobs, job, index):
        return [
            sys.executable, "-m", module, "--cluster", json.dumps(jobs),
            "--job-name", job, "--task-index", str(index), "--out", out,
            "--parent-pid", str(os.getpid()), *flags.argv_of(args, task_flags),
        ]  # fmt: skip

    return command


def open_network(expose):
    """Returns the private network of the tasks, or None with ``expose``.

    Raises:
        ZooError: no private network namespace can be made here.
    """
    from zoo.parallel.loopback import PrivateNetwork

    if expose:
        print(
            "cluster: the tasks listen on every network interface without "
            "authentication (--expose); keep this machine behind a firewall",
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


def launch(args, run, new_jobs, command, whole=False):
    """Starts the tasks of ``new_jobs()`` (ps first), supervises them to the end.

    A port clash (``--expose``) starts the cluster again on other ports, up to
    :data:`PORT_ATTEMPTS` times.

    Args:
        args: the launcher's settings (``expose``, ``timeout``, ``max_restarts``).
        run: the :class:`experiments.harness.rundir.RunDir`.
        new_jobs: ``() -> {job: [address]}``, fresh ports on each call.
        command: ``(jobs, job, index) -> argv`` (:func:`task_command`).
        whole: a dead worker restarts every task, on fresh ports (up to
            ``--max-restarts`` times) instead of itself alone.

    Returns:
        ``(cluster, restarts)``: the finished
        :class:`zoo.parallel.launcher.LocalCluster` and how many times the whole
        cluster was started again.

    Raises:
        ZooError: as :meth:`LocalCluster.supervise`, or as :func:`open_network`.
        RunInterrupted: SIGINT/SIGTERM stopped the run; the message holds the
            command that resumes.
    """
    from zoo.parallel.distributed import PortInUseError
    from zoo.training import signals_caught

    network = open_network(args.expose)
    clashes = restarts = 0
    try:
        with signals_caught(enabled=True) as caught:
            while True:
                jobs = new_jobs()
                children = launcher.LocalCluster(
                    functools.partial(command, jobs), run.path, jobs, network
                )
                try:
                    children.start_all()
                    children.supervise(
                        caught, args.timeout, 0 if whole else args.max_restarts
                    )
                    break
                except PortInUseError as err:
                    clashes += 1
                    if clashes == PORT_ATTEMPTS:
                        raise
                    print(f"cluster: {err}; starting again on other ports", flush=True)
                except ZooError:
                    if not (whole and restarts < args.max_restarts and died(children)):
                        raise
                    restarts += 1
                    print(
                        "cluster: a worker died; every task starts again from the "
                        "chief's last checkpoint",
                        flush=True,
                    )
                finally:
                    children.close()
    finally:
        if network:
            network.close()
    if caught:
        raise interrupted(run, caught[0])
    return children, restarts


def lost_worker_exit(err):
    """Prints a synchronous worker's ``LostWorkerError`` as the entry point prints a zoo
    error; returns :data:`LOST_WORKER_EXIT`, which :func:`died` counts as a death."""
    print(f"error: {err}", file=sys.stderr, flush=True)
    return LOST_WORKER_EXIT


def died(cluster):
    """True when a worker of ``cluster`` ended otherwise than done or by a zoo error
    (:data:`LOST_WORKER_EXIT` is a death: the worker lost another)."""
    return any(
        process.poll() not in (None, 0, ZOO_ERROR_EXIT)
        for name, process in cluster.processes.items()
        if name.startswith("worker")
    )


def interrupted(run, signum):
    """Returns the :class:`RunInterrupted` of a launcher stopped by ``signum``."""
    from zoo.training import checkpoints

    checkpoint = checkpoints.latest_tf_checkpoint(run.file("checkpoints"))
    command = run.checkpointer.command
    return RunInterrupted(
        f"{run.path}: interrupted by {signal.Signals(signum).name}; tasks stopped in "
        f"order, chief checkpoint {checkpoint}; resume with: {command}",
        signum,
        command,
    )


def check_resume(steps, checkpoint_dir):
    """Refuses ``--resume`` to ``steps`` the last checkpoint has already reached.

    Raises:
        ZooError: the latest checkpoint of ``checkpoint_dir`` names ``steps`` or more.
    """
    from zoo.training import checkpoints

    checkpoint = checkpoints.latest_tf_checkpoint(checkpoint_dir)
    step = checkpoints.tf_checkpoint_step(checkpoint) if checkpoint else 0
    if step >= steps:
        raise ZooError(
            f"{checkpoint}: expected --steps above the checkpoint's global step {step}, "
            f"found {steps}; resume with a larger --steps"
        )
