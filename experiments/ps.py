"""Asynchronous parameter-server training: 1 ps and N workers as separate processes.

Without ``--job-name`` (and without ``TF_CONFIG``) this script is the launcher:
it picks free loopback ports, starts one ps process and ``--workers`` worker
processes (this same script with ``--job-name``), restarts a worker that dies
(up to ``--max-restarts`` times; it rejoins and the ps keeps the state), stops
the ps when every worker is done, and writes ``results.json``. ``--resume
RUN_DIR`` starts a new cluster from that run's last checkpoint. With
``--job-name ps|worker --task-index I --cluster SPEC`` (or ``TF_CONFIG``) it runs
one task, which is how the same code runs across machines (docs/distributed.md).

Usage::

    python -m experiments.ps --workers 2 --data-dir DIR --out runs/ps/two
    python -m experiments.ps --job-name worker --task-index 1 \
        --cluster "ps=10.0.0.1:2222;worker=10.0.0.2:2222,10.0.0.3:2222" --data-dir DIR

The run directory holds ``cluster.json`` (addresses and process ids),
``logs/<job>-<index>.log``, ``workers/worker-<index>.json``, the chief's
checkpoints under ``checkpoints/`` and ``results.json`` with ``test_accuracy``,
``workers``, ``examples_per_second_per_worker`` and ``global_steps``.
"""

import json
import os
import subprocess
import sys
import time

import tensorflow as tf

from experiments import rundir, runner
from layers.errors import ZooError
from zoo import checkpoints, distributed
from zoo.models.conv import conv_classifier
from zoo.models.mlp import mlp_classifier

v1 = tf.compat.v1
MODELS = ("mlp", "conv")
KILL_WAIT_S = 5


def build_parser():
    """Returns the argument parser: shared flags plus cluster and model flags."""
    p = runner.parser(
        "Asynchronous parameter-server training (between-graph replication) of the "
        "MLP or the Deep MNIST conv net on TensorFlow's distributed runtime.",
        steps=2000,
        batch_size=50,
        quick_steps=200,
    )
    p.add_argument("--workers", type=int, default=2, help="worker processes to launch")
    p.add_argument("--model", choices=MODELS, default="mlp", help="network to train")
    p.add_argument("--hidden", default="625,625", help="MLP hidden widths, comma separated")
    p.add_argument("--learning-rate", type=float, default=1e-3, help="Adam learning rate")
    p.add_argument(
        "--cluster",
        default=None,
        help="run one task of this cluster: 'ps=host:port;worker=host:port,host:port' "
        'or JSON {"ps": [...], "worker": [...]}; TF_CONFIG works too',
    )
    p.add_argument(
        "--job-name",
        choices=distributed.JOBS,
        default=None,
        help="this task's job (with --cluster)",
    )
    p.add_argument(
        "--task-index",
        type=int,
        default=0,
        check=runner.integer(0),
        help="this task's index in its job; worker 0 is the chief",
    )
    p.add_argument(
        "--save-steps",
        type=int,
        default=100,
        help="chief checkpoint period in global steps",
    )
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
        check=runner.integer(0),
    )
    runner.may_differ_on_resume(
        p, "cluster", "job_name", "task_index", "startup_timeout", "timeout", "max_restarts"
    )
    return p


def main(argv=None):
    """Launches a local cluster, or runs one task of a given cluster."""
    args = runner.parse_args(build_parser(), argv)
    if args.workers <= 0:
        raise ZooError(
            f"--workers: expected a positive integer, found {args.workers}; pass 1 or more"
        )
    hidden = parse_hidden(args.hidden)
    task = task_of(args)
    if task:
        cluster, job, index = task
        return run_task(args, hidden, cluster, job, index)
    return launch(args)


def parse_hidden(text):
    """Returns the MLP hidden widths of ``--hidden`` ("625,625")."""
    try:
        widths = tuple(int(w) for w in text.split(","))
    except ValueError:
        widths = ()
    if not widths or min(widths) <= 0:
        raise ZooError(
            f"--hidden: expected positive widths like 625,625, found {text!r}; fix it"
        )
    return widths


def task_of(args):
    """Returns ``(cluster, job, index)`` from --cluster/--job-name or TF_CONFIG, or None."""
    if args.cluster or args.job_name:
        if not (args.cluster and args.job_name):
            raise ZooError(
                "--cluster/--job-name: expected both or neither, found only one; pass "
                "--cluster SPEC --job-name ps|worker --task-index I"
            )
        cluster = distributed.parse_cluster(args.cluster)
        distributed.check_task(cluster, args.job_name, args.task_index)
        return cluster, args.job_name, args.task_index
    return distributed.cluster_from_tf_config()


def run_task(args, hidden, cluster, job, index):
    """Runs one task: a ps serves until killed; a worker trains and writes its stats."""
    if job == "worker":  # fail fast, before anything starts
        run = rundir.run_dir(args, "ps", join=True)
        distributed.wait_for_ps(cluster, args.startup_timeout)
    server = distributed.start_server(cluster, job, index)
    if job == "ps":
        print(f"ps:{index} serving at {cluster.task_address(job, index)}", flush=True)
        server.join()
        return 0
    data = runner.load_data(args, validation=0)
    data.train.seed = args.seed + index  # every worker its own batch order
    checkpoint_dir = run.file("checkpoints")
    checkpoints.latest_tf_checkpoint(checkpoint_dir)  # refuses a foreign `checkpoint`

    def build():
        x = v1.placeholder(tf.float32, [None, data.train.images.shape[1]], name="x")
        y = v1.placeholder(tf.float32, [None, data.train.labels.shape[1]], name="y")
        model = build_model(args, hidden, x, y, keep_prob=0.5)
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
        save_steps=args.save_steps,
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


def build_model(args, hidden, x, y, keep_prob=None):
    """Builds ``--model`` on ``x``, ``y`` (the conv net with dropout while training)."""
    if args.model == "conv":
        return conv_classifier(x, y, scope="conv", keep_prob=keep_prob)
    return mlp_classifier(x, y, scope="mlp", hidden=hidden)


def evaluate(args, hidden, checkpoint_dir, test):
    """Restores the chief's last checkpoint in a local graph; returns test figures."""
    checkpoint = checkpoints.latest_tf_checkpoint(checkpoint_dir)
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, test.images.shape[1]])
        y = v1.placeholder(tf.float32, [None, test.labels.shape[1]])
        model = build_model(args, hidden, x, y)
        saver = v1.train.Saver(v1.trainable_variables())
        with v1.Session() as sess:
            saver.restore(sess, checkpoint)
            accuracy = sess.run(model.accuracy, {x: test.images, y: test.labels})
    return {
        "test_accuracy": float(accuracy),
        "global_steps": int(tf.train.load_variable(checkpoint, "global_step")),
        "checkpoint": os.path.basename(checkpoint),
    }


def task_argv(args, cluster, job, index):
    """Returns the command line of one task of the local cluster."""
    spec = json.dumps(cluster.as_dict())
    argv = [
        sys.executable, "-m", "experiments.ps", "--cluster", spec,
        "--job-name", job, "--task-index", str(index), "--out", args.out,
        "--steps", str(args.steps), "--batch-size", str(args.batch_size),
        "--seed", str(args.seed), "--model", args.model,
        "--hidden", args.hidden, "--learning-rate", str(args.learning_rate),
        "--save-steps", str(args.save_steps), "--log-every", str(args.log_every),
        "--startup-timeout", str(args.startup_timeout),
    ]  # fmt: skip
    argv += ["--dataset", args.dataset] if args.dataset else []
    return argv + (["--data-dir", args.data_dir] if args.data_dir else [])


class Cluster:
    """The launcher's child processes; every one is killed on ``close``."""

    def __init__(self, args, run, cluster):
        self.args, self.run, self.cluster = args, run, cluster
        self.processes = {}
        self.restarts = {}
        os.makedirs(run.file("logs"), exist_ok=True)

    def start(self, job, index):
        """Starts (or restarts) one task with its output in ``logs/<job>-<index>.log``."""
        name = f"{job}-{index}"
        with open(self.run.file(os.path.join("logs", f"{name}.log")), "a") as log:
            self.processes[name] = subprocess.Popen(
                task_argv(self.args, self.cluster, job, index),
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
            )
        self.run.write_json(
            "cluster.json",
            {
                "cluster": self.cluster.as_dict(),
                "pids": {n: p.pid for n, p in self.processes.items()},
                "restarts": self.restarts,
            },
        )

    def supervise(self):
        """Waits for every worker; restarts dead ones; raises on failure or timeout."""
        deadline = time.monotonic() + self.args.timeout
        workers = {f"worker-{i}": i for i in range(self.args.workers)}
        while workers:
            if self.processes["ps-0"].poll() is not None:
                raise ZooError(self.failure("ps-0", "the ps exited"))
            for name, index in list(workers.items()):
                code = self.processes[name].poll()
                if code == 0:
                    del workers[name]
                elif code is not None:
                    if self.restarts.get(name, 0) >= self.args.max_restarts:
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
        log = self.run.file(os.path.join("logs", f"{name}.log"))
        with open(log) as f:
            lines = [line.strip() for line in f if line.strip()]
        last = lines[-1] if lines else "(empty log)"
        return f"{log}: expected {name} to run to the end, found {what}: {last}; see log"

    def close(self):
        """Terminates every child, then kills those that do not exit."""
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(KILL_WAIT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def launch(args):
    """Starts 1 ps + ``--workers`` workers on loopback, supervises them, writes results.

    With ``--resume RUN_DIR`` the chief restores the last checkpoint of that run
    and training goes on to ``--steps``.
    """
    run = rundir.run_dir(args, "ps")
    args.out = run.path
    cluster = distributed.local_cluster(args.workers)
    children = Cluster(args, run, cluster)
    try:
        children.start("ps", 0)
        for index in range(args.workers):
            children.start("worker", index)
        children.supervise()
    finally:
        children.close()
    stats = []
    for index in range(args.workers):
        with open(run.file(os.path.join("workers", f"worker-{index}.json"))) as f:
            stats.append(json.load(f))
    chief = stats[0]
    run.write_json(
        "results.json",
        {
            "test_accuracy": chief["test_accuracy"],
            "workers": args.workers,
            "examples_per_second_per_worker": [s["examples_per_second"] for s in stats],
            "global_steps": chief["global_steps"],
            "local_steps_per_worker": [s["local_steps"] for s in stats],
            "restarts": children.restarts,
            "chief_losses": chief["losses"],
            "model": args.model,
            "steps": args.steps,
            "batch_size": args.batch_size,
            "cluster": cluster.as_dict(),
        },
    )
    return 0


if __name__ == "__main__":
    runner.entry_point(main)
