"""Asynchronous parameter-server training on TensorFlow's own distributed runtime.

Between-graph replication, DistBelief style: every worker process builds its own
graph, ``tf.compat.v1.train.replica_device_setter`` puts the variables on the ps
tasks, and each worker applies its gradients to them without waiting for the
others. The chief (worker 0) initialises the variables and writes checkpoints;
a worker that dies and restarts finds the variables on the ps and goes on.

A cluster is given as a dict, a JSON string, a ``TF_CONFIG`` environment
variable, or a ``--cluster`` string of ``host:port`` lists::

    ps=10.0.0.1:2222;worker=10.0.0.2:2222,10.0.0.3:2222

Usage::

    cluster = parse_cluster("ps=127.0.0.1:2222;worker=127.0.0.1:2223")
    server = start_server(cluster, "worker", 0)         # ps: start_server(...).join()
    wait_for_ps(cluster, timeout=60)
    stats = train_worker(server, cluster, 0, build, optimizer, last_step=1000,
                         batch_size=50, checkpoint_dir="runs/ps/ckpt")
"""

import json
import os
import socket
import time

import tensorflow as tf

from layers.errors import ZooError

v1 = tf.compat.v1
JOBS = ("ps", "worker")


def parse_cluster(spec):
    """Returns the ``tf.train.ClusterSpec`` that ``spec`` describes.

    Args:
        spec: ``{"ps": ["host:port", ...], "worker": [...]}``, the same as a JSON
            string, or ``"ps=host:port,...;worker=host:port,..."``.

    Raises:
        ZooError: the spec cannot be read, has no ``ps`` or no ``worker`` job, an
            unknown job, or an address that is not ``host:port``.
    """
    jobs = _jobs_of(spec)
    for job in JOBS:
        if not jobs.get(job):
            raise ZooError(
                f"cluster: expected a {job!r} job with at least one host:port, found "
                f"jobs {sorted(jobs)}; add {job}=host:port to the cluster spec"
            )
    unknown = sorted(set(jobs) - set(JOBS))
    if unknown:
        raise ZooError(
            f"cluster: expected only the jobs {list(JOBS)}, found {unknown}; remove them"
        )
    for job, addresses in jobs.items():
        for address in addresses:
            split_address(address, f"cluster job {job!r}")
    return tf.train.ClusterSpec({job: list(jobs[job]) for job in JOBS})


def _jobs_of(spec):
    """Turns a dict, JSON or ``job=a,b;job=c`` string into ``{job: [address]}``."""
    if isinstance(spec, str):
        text = spec.strip()
        if text.startswith(("{", "[")):
            try:
                spec = json.loads(text)
            except json.JSONDecodeError as err:
                raise ZooError(
                    f'cluster: expected JSON like {{"ps": ["host:port"]}}, found '
                    f"{text!r} ({err.msg}); fix the JSON"
                ) from None
        else:
            spec = {}
            for part in filter(None, text.split(";")):
                job, sep, addresses = part.partition("=")
                if not sep:
                    raise ZooError(
                        f"cluster: expected 'ps=host:port;worker=host:port,...', found "
                        f"{part!r}; name the job before '='"
                    )
                spec[job.strip()] = [a.strip() for a in addresses.split(",") if a.strip()]
    if not isinstance(spec, dict) or not all(
        isinstance(v, list | tuple) for v in spec.values()
    ):
        raise ZooError(
            f"cluster: expected a mapping job -> list of host:port, found {spec!r}; pass "
            "e.g. 'ps=127.0.0.1:2222;worker=127.0.0.1:2223'"
        )
    return spec


def split_address(address, owner="cluster"):
    """Returns ``(host, port)`` of ``"host:port"``.

    Raises:
        ZooError: not a string ``host:port`` with a port in 1..65535.
    """
    host, _, port = str(address).rpartition(":")
    if not isinstance(address, str) or not host or not port.isdigit():
        raise ZooError(
            f"{owner}: expected an address host:port, found {address!r}; write it like "
            "127.0.0.1:2222"
        )
    if not 0 < int(port) < 65536:
        raise ZooError(
            f"{owner}: expected a port in 1..65535, found {port} in {address!r}; pick "
            "another port"
        )
    return host, int(port)


def cluster_from_tf_config(environ=None):
    """Reads the cluster and this process's task from ``TF_CONFIG``.

    ``TF_CONFIG`` is ``{"cluster": {...}, "task": {"type": "worker", "index": 1}}``.

    Args:
        environ: mapping to read instead of ``os.environ``.

    Returns:
        ``(ClusterSpec, job name, task index)``, or None when ``TF_CONFIG`` is unset.

    Raises:
        ZooError: ``TF_CONFIG`` is not such JSON, or names a task outside the cluster.
    """
    text = (os.environ if environ is None else environ).get("TF_CONFIG")
    if not text:
        return None
    try:
        config = json.loads(text)
        cluster, task = config["cluster"], config["task"]
        job, index = task["type"], int(task["index"])
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        raise ZooError(
            f"TF_CONFIG: expected JSON with 'cluster' and 'task': {{'type', 'index'}}, "
            f"found {text!r}; fix the environment variable"
        ) from None
    spec = parse_cluster(cluster)
    check_task(spec, job, index)
    return spec, job, index


def check_task(cluster, job, index):
    """Raises ZooError unless task ``index`` of ``job`` is in ``cluster``."""
    if job not in JOBS or not 0 <= index < cluster.num_tasks(job):
        tasks = {j: cluster.num_tasks(j) for j in JOBS}
        raise ZooError(
            f"cluster: expected a task in {tasks} (job: number of tasks), found "
            f"job {job!r} index {index}; pass --job-name ps|worker and an index below "
            "the number of tasks"
        )


def free_ports(count, host="127.0.0.1"):
    """Returns ``count`` distinct ports that were free on ``host`` a moment ago."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind((host, 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def local_cluster(workers, ps=1, host="127.0.0.1"):
    """Returns a ClusterSpec of ``ps`` + ``workers`` tasks on free ports of ``host``."""
    ports = free_ports(ps + workers, host)
    return tf.train.ClusterSpec(
        {
            "ps": [f"{host}:{port}" for port in ports[:ps]],
            "worker": [f"{host}:{port}" for port in ports[ps:]],
        }
    )


def start_server(cluster, job, index):
    """Starts this task's ``tf.distribute.Server``.

    Args:
        cluster: a ``tf.train.ClusterSpec`` (see :func:`parse_cluster`).
        job: ``"ps"`` or ``"worker"``.
        index: task index within the job.

    Returns:
        The started server; a ps calls ``server.join()`` and serves until killed.

    Raises:
        ZooError: the task is not in the cluster, or its port is already in use.
    """
    check_task(cluster, job, index)
    address = cluster.task_address(job, index)
    _, port = split_address(address)
    in_use = ZooError(
        f"{job}:{index}: expected port {port} of {address} to be free, found it in use; "
        "stop the process holding it or give this task another port"
    )
    probe = socket.socket()
    # As gRPC does: connections of a killed task in TIME_WAIT do not block a restart.
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind(("", port))
    except OSError:
        raise in_use from None
    finally:
        probe.close()
    try:
        return tf.distribute.Server(cluster, job_name=job, task_index=index, start=True)
    except tf.errors.UnknownError:
        raise in_use from None


def wait_for_ps(cluster, timeout, poll=0.2):
    """Waits until every ps task accepts TCP connections.

    TensorFlow's session creation waits for an absent ps forever, so workers
    call this first.

    Args:
        cluster: a ``tf.train.ClusterSpec``.
        timeout: seconds to wait in all.
        poll: seconds between attempts.

    Raises:
        ZooError: a ps task was still unreachable after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    for address in cluster.job_tasks("ps"):
        host, port = split_address(address)
        while True:
            try:
                socket.create_connection((host, port), timeout=poll).close()
                break
            except OSError:
                if time.monotonic() >= deadline:
                    raise ZooError(
                        f"ps {address}: expected a parameter server listening, found "
                        f"none after {timeout:g} s; start the ps task first, or fix the "
                        "ps address in --cluster/TF_CONFIG"
                    ) from None
                time.sleep(poll)


def session_config(index, timeout_s):
    """Returns the worker's ``ConfigProto``: sees only the ps and itself, ops time out."""
    return v1.ConfigProto(
        device_filters=["/job:ps", f"/job:worker/task:{index}"],
        operation_timeout_in_ms=int(timeout_s * 1000),
    )


class _WorkerSessionCreator(v1.train.SessionCreator):
    """Waits (polling every second, up to a bound) for the chief to initialise."""

    def __init__(self, scaffold, master, config, index, max_wait_secs):
        self._scaffold = scaffold
        self._master = master
        self._config = config
        self._index = index
        self._max_wait_secs = max_wait_secs

    def create_session(self):
        self._scaffold.finalize()
        manager = v1.train.SessionManager(
            local_init_op=self._scaffold.local_init_op,
            ready_op=self._scaffold.ready_op,
            ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
            recovery_wait_secs=1,
        )
        try:
            return manager.wait_for_session(
                self._master, config=self._config, max_wait_secs=self._max_wait_secs
            )
        except tf.errors.DeadlineExceededError:
            raise ZooError(
                f"worker:{self._index}: expected the chief (worker 0) to initialise the "
                f"variables on the ps within {self._max_wait_secs:g} s, found them "
                "uninitialised; start worker 0, or raise --startup-timeout"
            ) from None


def train_worker(
    server,
    cluster,
    index,
    build,
    optimizer,
    *,
    batch_size,
    last_step,
    checkpoint_dir,
    save_steps=100,
    startup_timeout=60.0,
    log_every=50,
    on_log=None,
):
    """Trains asynchronously until the shared global step reaches ``last_step``.

    Args:
        server: this worker's started server (see :func:`start_server`).
        cluster: the ``tf.train.ClusterSpec``.
        index: this worker's task index; 0 is the chief.
        build: ``build() -> (loss, next_feed)``, called under the device setter:
            builds the model and returns its scalar loss and a function that
            returns the feed dict of the next batch.
        batch_size: examples per batch that ``next_feed`` gives.
        optimizer: a ``tf.compat.v1.train.Optimizer``; its slots live on the ps.
        last_step: global step at which every worker stops.
        checkpoint_dir: where the chief writes checkpoints.
        save_steps: chief checkpoint period in global steps.
        startup_timeout: seconds to wait for the ps, and for the chief's
            initialisation; also the operation timeout.
        log_every: period in local steps of the logged loss.
        on_log: optional ``on_log(global_step, loss)`` at each logged step.

    Returns:
        A dict: ``task``, ``local_steps``, ``examples_per_second``, ``seconds``
        and ``losses`` (``[global_step, loss]`` pairs).

    Raises:
        ZooError: a ps is unreachable, or the chief never initialised the variables.
    """
    wait_for_ps(cluster, startup_timeout)
    is_chief = index == 0
    with tf.Graph().as_default():
        setter = v1.train.replica_device_setter(
            cluster=cluster, worker_device=f"/job:worker/task:{index}"
        )
        with v1.device(setter):
            global_step = v1.train.get_or_create_global_step()
            loss, next_feed = build()
            train_op = optimizer.minimize(loss, global_step=global_step)
        scaffold = v1.train.Scaffold()
        config = session_config(index, startup_timeout)
        hooks = [v1.train.StopAtStepHook(last_step=last_step)]
        if is_chief:
            creator = v1.train.ChiefSessionCreator(
                scaffold, server.target, config, checkpoint_dir=checkpoint_dir
            )
            hooks.append(
                v1.train.CheckpointSaverHook(
                    checkpoint_dir, save_steps=save_steps, scaffold=scaffold
                )
            )
        else:
            creator = _WorkerSessionCreator(
                scaffold, server.target, config, index, startup_timeout
            )
        losses, local_steps = [], 0
        with v1.train.MonitoredSession(session_creator=creator, hooks=hooks) as sess:
            start = time.perf_counter()
            while not sess.should_stop():
                _, value, step = sess.run([train_op, loss, global_step], next_feed())
                if local_steps % log_every == 0:
                    losses.append([int(step), float(value)])
                    if on_log:
                        on_log(int(step), float(value))
                local_steps += 1
            seconds = time.perf_counter() - start
    return {
        "task": index,
        "local_steps": local_steps,
        "examples_per_second": local_steps * batch_size / seconds if seconds else 0.0,
        "seconds": seconds,
        "losses": losses,
    }
