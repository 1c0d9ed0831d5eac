"""A local cluster of task processes: started, watched, restarted, stopped in order.

The launcher of ``experiments.ps`` runs its ps and its workers through it; a
launcher of your own can too. ``command(job, index)`` gives each task's command
line (a script that calls :func:`zoo.parallel.distributed.start_server` and,
for a worker, :func:`zoo.parallel.distributed.train_worker`)::

    cluster = LocalCluster(command, "runs/mine", cluster_spec.local_cluster(2, ps=2))
    try:
        cluster.start_all()  # every ps, then every worker
        cluster.supervise(caught=[], timeout=1800, max_restarts=2)
    finally:
        cluster.close()  # workers first (the chief checkpoints), then the ps tasks

Each task writes its output to ``<directory>/logs/<job>-<index>.log``;
``<directory>/cluster.json`` holds the addresses, the process ids, the restarts
and the network. :func:`memory_available` tells whether the tasks fit. A task
whose port was taken exits with
:data:`PORT_IN_USE_EXIT`, which :meth:`LocalCluster.supervise` raises as
:class:`zoo.parallel.distributed.PortInUseError`. No TensorFlow is imported here.
"""

import os
import signal
import subprocess
import time

from layers.errors import ZooError
from zoo.training.files import write_json

PORT_IN_USE_EXIT = 3  # a task's exit status when its port was taken
STOP_GRACE_S = 15  # seconds a task has to stop after SIGTERM (the chief checkpoints)


class LocalCluster:
    """A launcher's task processes: started, supervised, and stopped in order.

    Args:
        command: ``(job, index) -> argv`` of one task.
        directory: where ``logs/`` and ``cluster.json`` are written.
        jobs: the tasks, ``{job: [address]}`` (:mod:`zoo.parallel.cluster_spec`).
        network: the :class:`zoo.parallel.loopback.PrivateNetwork` the tasks run
            in, or None (the machine's network).
        popen: how a task process is started, with ``subprocess.Popen``'s
            signature (``popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)``,
            returning an object with ``pid``, ``poll``, ``wait``, ``terminate``
            and ``kill``); ``subprocess.Popen`` by default.

    Attributes:
        jobs: as given.
        restarts: ``{task name: times restarted}``.
    """

    def __init__(self, command, directory, jobs, network=None, popen=subprocess.Popen):
        self.command, self.directory, self.jobs, self.network, self.popen = (
            command, directory, jobs, network, popen,
        )  # fmt: skip
        self.processes = {}
        self.restarts = {}
        os.makedirs(os.path.join(directory, "logs"), exist_ok=True)

    def start(self, job, index):
        """Starts (or restarts) one task with its output in ``logs/<job>-<index>.log``."""
        name = f"{job}-{index}"
        argv = self.command(job, index)
        with open(self.log(name), "a") as log:
            self.processes[name] = self.popen(
                self.network.command(argv) if self.network else argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
            )
        pids = {n: p.pid for n, p in self.processes.items()}
        if self.network:
            pids["network"] = self.network.pid
        write_json(
            os.path.join(self.directory, "cluster.json"),
            {
                "cluster": self.jobs,
                "pids": pids,
                "restarts": self.restarts,
                "network": "private, loopback only" if self.network else "exposed",
            },
        )

    def start_all(self):
        """Starts every ps task of ``jobs``, then every worker."""
        for job in ("ps", "worker"):
            for index in range(len(self.jobs[job])):
                self.start(job, index)

    def log(self, name):
        """Returns the path of task ``name``'s log."""
        return os.path.join(self.directory, "logs", f"{name}.log")

    def supervise(self, caught, timeout, max_restarts, max_ps_restarts=0):
        """Waits for every worker, restarting dead tasks, until done or a signal.

        A restarted ps holds no variables: the chief's session fails, and the
        chief restores the last checkpoint into every ps before any worker
        steps again (:func:`zoo.parallel.distributed.train_worker`).

        Args:
            caught: the list that collects SIGINT/SIGTERM; supervision stops
                as soon as it holds one.
            timeout: seconds before the run is stopped as failed.
            max_restarts: times each dead worker is restarted.
            max_ps_restarts: times each dead ps task is restarted (0: a ps
                that exits fails the run).

        Raises:
            ZooError: a ps exited more than ``max_ps_restarts`` times, a worker
                failed with a zoo error (exit status 2) or more than
                ``max_restarts`` times, or ``timeout`` passed; the message names
                the task's log.
            PortInUseError: a task's port was taken.
        """
        from zoo.parallel.distributed import PortInUseError

        deadline = time.monotonic() + timeout
        workers = {f"worker-{i}": i for i in range(len(self.jobs["worker"]))}
        while workers and not caught:
            for name, code in [(n, p.poll()) for n, p in self.processes.items()]:
                if code == PORT_IN_USE_EXIT:
                    job, index = name.split("-")
                    raise PortInUseError(job, int(index), self.jobs[job][int(index)])
            for index in range(len(self.jobs["ps"])):
                self.restart_if_dead("ps", index, max_ps_restarts, "the ps exited")
            for name, index in list(workers.items()):
                if self.processes[name].poll() == 0:
                    del workers[name]
                else:
                    self.restart_if_dead("worker", index, max_restarts)
            if time.monotonic() > deadline:
                raise ZooError(
                    f"{self.directory}: expected the workers to finish within "
                    f"{timeout:g} s, found {sorted(workers)} still running; allow "
                    "more time or train fewer steps"
                )
            time.sleep(0.2)

    def restart_if_dead(self, job, index, max_restarts, why=None):
        """Restarts task ``index`` of ``job`` if it exited (a worker that exited
        with status 0 is done: :meth:`supervise` asks no more).

        Raises:
            ZooError: it exited with a zoo error (status 2) or had been
                restarted ``max_restarts`` times; ``why`` (default: its exit
                status) and the last line of its log say what happened.
        """
        name = f"{job}-{index}"
        code = self.processes[name].poll()
        if code is None:
            return
        if code == 2 or self.restarts.get(name, 0) >= max_restarts:
            raise ZooError(self.failure(name, why or f"{name} exited with {code}"))
        self.restarts[name] = self.restarts.get(name, 0) + 1
        self.start(job, index)

    def failure(self, name, what):
        """Returns an error message with the last line of the task's log."""
        log = self.log(name)
        with open(log) as f:
            lines = [line.strip() for line in f if line.strip()]
        last = lines[-1] if lines else "(empty log)"
        return f"{log}: expected {name} to run to the end, found {what}: {last}; see log"

    def close(self):
        """Stops the workers (SIGTERM: the chief checkpoints), then the ps tasks.

        A task still there :data:`STOP_GRACE_S` seconds after its SIGTERM is
        killed; a stopped one (SIGSTOP) is continued to receive it. When a ps has
        exited (it died, or its port was taken) or is stopped, the chief's
        checkpoint cannot reach the variables, so the workers are killed at once
        rather than left to wait out the grace on a ps that will not answer.
        """
        workers = [p for n, p in self.processes.items() if n.startswith("worker")]
        ps = [p for n, p in self.processes.items() if n.startswith("ps")]
        ps_gone = any(process.poll() is not None or stopped(process.pid) for process in ps)
        for group, grace in ((workers, 0 if ps_gone else STOP_GRACE_S), (ps, STOP_GRACE_S)):
            for process in group:
                if process.poll() is None:
                    process.terminate()
                    if stopped(process.pid):
                        os.kill(process.pid, signal.SIGCONT)
            deadline = time.monotonic() + grace
            for process in group:
                try:
                    process.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def stopped(pid):
    """Whether process ``pid`` is stopped (SIGSTOP: state T in ``/proc/<pid>/stat``)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("T", "t")
    except (OSError, IndexError):
        return False


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
