"""A parameter-server cluster as plain data: read, checked, without TensorFlow.

A cluster is ``{"ps": ["host:port", ...], "worker": ["host:port", ...]}``, given
as that dict, the same as JSON, a ``TF_CONFIG`` environment variable, or a
``--cluster`` string of ``host:port`` lists::

    ps=10.0.0.1:2222;worker=10.0.0.2:2222,10.0.0.3:2222

Nothing here imports TensorFlow, so a command checks its cluster flags before
TensorFlow starts; :mod:`zoo.parallel.distributed` makes the ``tf.train.ClusterSpec`` of
such a dict and runs the tasks.

Usage::

    jobs = parse("ps=127.0.0.1:2222;worker=127.0.0.1:2223")
    check_task(jobs, "worker", 0)
    task = from_tf_config()  # (jobs, job, index), or None without TF_CONFIG
"""

import json
import os
import socket

from layers.checks import int_problem, require
from layers.errors import ZooError

JOBS = ("ps", "worker")


def parse(spec, required=JOBS):
    """Returns the cluster that ``spec`` describes, as ``{job: [address, ...]}``.

    Args:
        spec: ``{"ps": ["host:port", ...], "worker": [...]}``, the same as a JSON
            string, or ``"ps=host:port,...;worker=host:port,..."``.
        required: the jobs that must have a task (``("worker",)``: synchronous
            workers, no ps).

    Returns:
        A new dict with the jobs of :data:`JOBS`, in that order, each a list of
        ``host:port`` strings (empty for a job not given).

    Raises:
        ZooError: the spec cannot be read, lacks a ``required`` job, has an
            unknown job, or an address that is not ``host:port``. A ``chief``
            job of one task becomes worker 0; an ``evaluator`` job is refused
            with the reason.
    """
    jobs = _with_chief_as_worker_0(_jobs_of(spec))
    for job in required:
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
    return {job: list(jobs.get(job) or []) for job in JOBS}


def _with_chief_as_worker_0(jobs):
    """``jobs`` with TF_CONFIG's ``chief`` job as worker 0 (this runtime's chief is
    worker 0; TF_CONFIG's workers follow it), and ``evaluator`` refused.

    Raises:
        ZooError: an ``evaluator`` job, or a ``chief`` job of more than one task.
    """
    if "evaluator" in jobs:
        raise ZooError(
            "cluster: expected the training jobs ps, worker (and chief), found an "
            "'evaluator' job: an evaluator does not train, and this runtime has none; "
            "remove it and evaluate the chief's checkpoints in a process of its own "
            "(the experiment's --resume RUN_DIR reads them)"
        )
    if "chief" not in jobs:
        return jobs
    chief = jobs["chief"]
    if not isinstance(chief, list) or len(chief) != 1:
        raise ZooError(
            f"cluster: expected one 'chief' task, found {chief!r}; give chief one "
            "host:port, or name every trainer a worker (worker 0 is the chief)"
        )
    rest = {job: tasks for job, tasks in jobs.items() if job != "chief"}
    return {**rest, "worker": chief + list(rest.get("worker") or [])}


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
    problem = int_problem(int(port), 1, 65535, name=f"the port of {address!r}")
    require(owner, problem, "pick another port")
    return host, int(port)


def from_tf_config(environ=None, required=JOBS):
    """Reads the cluster and this process's task from ``TF_CONFIG``.

    ``TF_CONFIG`` is ``{"cluster": {...}, "task": {"type": "worker", "index": 1}}``.
    A ``chief`` job (as Estimator and MultiWorkerMirroredStrategy clusters have)
    is worker 0 here, and TF_CONFIG's worker ``i`` is worker ``i + 1``.

    Args:
        environ: mapping to read instead of ``os.environ``.
        required: as :func:`parse`.

    Returns:
        ``(jobs, job name, task index)`` with ``jobs`` as :func:`parse` returns
        it, or None when ``TF_CONFIG`` is unset.

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
    jobs = parse(cluster, required)
    if isinstance(cluster, dict) and "chief" in cluster:  # chief is worker 0
        job, index = ("worker", 0) if job == "chief" else (job, index + (job == "worker"))
    check_task(jobs, job, index)
    return jobs, job, index


def check_task(jobs, job, index):
    """Raises ZooError unless ``jobs`` (see :func:`parse`) has task ``index`` of ``job``."""
    tasks = {j: len(jobs.get(j, ())) for j in JOBS}
    if job not in JOBS or not 0 <= index < tasks[job]:
        raise ZooError(
            f"cluster: expected a task in {tasks} (job: number of tasks), found "
            f"job {job!r} index {index}; pass --job-name ps|worker and an index below "
            "the number of tasks"
        )


def check_split(batch_size, workers):
    """Raises unless ``batch_size`` splits evenly over ``workers`` (before any process
    starts): :func:`zoo.parallel.sync.train` splits each batch over them.

    Raises:
        ZooError: ``workers`` is not a positive int, or does not divide ``batch_size``.
    """
    if not isinstance(workers, int) or workers < 1 or batch_size % workers:
        raise ZooError(
            f"sync: expected a worker count that divides the batch size {batch_size}, "
            f"found {workers!r} workers; pass a batch size that is a multiple of the "
            "worker count, or another worker count"
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
    """Returns the cluster of ``ps`` + ``workers`` tasks on free ports of ``host``."""
    ports = free_ports(ps + workers, host)
    return {
        "ps": [f"{host}:{port}" for port in ports[:ps]],
        "worker": [f"{host}:{port}" for port in ports[ps:]],
    }


def network_interfaces():
    """Returns the sorted names of this process's network interfaces (Linux), or []."""
    try:
        with open("/proc/self/net/dev") as f:
            lines = f.readlines()[2:]
    except OSError:
        return []
    return sorted(line.split(":", 1)[0].strip() for line in lines)
