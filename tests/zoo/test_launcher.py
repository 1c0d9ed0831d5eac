"""zoo.parallel.launcher: a local cluster's tasks started, restarted, stopped in order.

The tasks here are small Python commands (no TensorFlow): a ps that waits to be
stopped, workers that exit as each test needs.
"""

import json
import os
import signal
import sys
import time

import pytest

from layers.errors import ZooError
from zoo.parallel.launcher import (
    PORT_IN_USE_EXIT,
    STOP_GRACE_S,
    LocalCluster,
    memory_available,
    stopped,
)

JOBS = {"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"]}
SERVE = "import time; print('serving', flush=True); time.sleep(600)"


def cluster_of(tmp_path, worker_code):
    """A cluster whose ps serves until stopped and whose workers run ``worker_code``."""

    def command(job, index):
        code = SERVE if job == "ps" else worker_code.format(index=index, tmp=str(tmp_path))
        return [sys.executable, "-c", code]

    return LocalCluster(command, str(tmp_path), JOBS)


def run(cluster, timeout=60, max_restarts=2):
    try:
        cluster.start("ps", 0)
        for index in range(len(JOBS["worker"])):
            cluster.start("worker", index)
        cluster.supervise([], timeout, max_restarts)
    finally:
        cluster.close()


def test_workers_that_finish_end_the_run_and_the_ps_is_stopped(tmp_path):
    cluster = cluster_of(tmp_path, "print('worker {index} done')")
    run(cluster)
    assert cluster.processes["ps-0"].returncode is not None  # stopped by close()
    record = json.loads((tmp_path / "cluster.json").read_text())
    assert record["cluster"] == JOBS and set(record["pids"]) == {
        "ps-0", "worker-0", "worker-1",
    }  # fmt: skip
    assert (tmp_path / "logs" / "worker-1.log").read_text() == "worker 1 done\n"


def test_a_dead_worker_is_restarted_then_the_run_fails_naming_its_log(tmp_path):
    # worker 1 fails on its first start only (a marker file says it ran before)
    code = (
        "import os, sys; marker = os.path.join({tmp!r}, 'ran-{index}'); "
        "again = os.path.exists(marker); open(marker, 'w').close(); "
        "sys.exit(0 if again or {index} == 0 else 1)"
    )
    cluster = cluster_of(tmp_path, code)
    run(cluster)
    assert cluster.restarts == {"worker-1": 1}
    failing = cluster_of(tmp_path / "failing", "print('gave up'); raise SystemExit(1)")
    message = r"worker-\d.log: expected worker-\d to run to the end, found worker-\d exited"
    with pytest.raises(ZooError, match=message + " with 1: gave up; see log"):
        run(failing, max_restarts=1)
    assert max(failing.restarts.values()) == 1


def test_a_task_whose_port_was_taken_raises_port_in_use(tmp_path):
    from zoo.parallel.distributed import PortInUseError

    cluster = cluster_of(tmp_path, f"raise SystemExit({PORT_IN_USE_EXIT})")
    with pytest.raises(PortInUseError):
        run(cluster)


def test_memory_available_reads_meminfo(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 100 kB\nMemAvailable:    2048 kB\n")
    assert memory_available(str(meminfo)) == 2048 * 1024
    assert memory_available(str(tmp_path / "absent")) is None


TWO_PS = {"ps": ["127.0.0.1:1", "127.0.0.1:4"], "worker": ["127.0.0.1:2"]}


def test_every_ps_is_supervised_a_dead_one_restarted_when_allowed(tmp_path):
    # ps-1 dies on its first start (a marker file says it ran before); the worker
    # finishes once ps-1 has started twice
    ps_code = (
        "import os, sys, time; marker = os.path.join({tmp!r}, 'ps-{index}'); "
        "again = os.path.exists(marker); open(marker, 'a').write('x'); "
        "sys.exit(1) if {index} == 1 and not again else time.sleep(600)"
    )
    worker_code = (
        "import os, time\npath = os.path.join({tmp!r}, 'ps-1')\n"
        "while not os.path.exists(path) or len(open(path).read()) < 2: time.sleep(0.05)"
    )

    def cluster(directory):
        def command(job, index):
            code = ps_code if job == "ps" else worker_code
            return [sys.executable, "-c", code.format(index=index, tmp=str(directory))]

        return LocalCluster(command, str(directory), TWO_PS)

    allowed = cluster(tmp_path / "allowed")
    try:
        allowed.start_all()
        allowed.supervise([], 60, max_restarts=0, max_ps_restarts=1)
    finally:
        allowed.close()
    assert allowed.restarts == {"ps-1": 1}
    assert all(p.returncode is not None for p in allowed.processes.values())
    refused = cluster(tmp_path / "refused")
    with pytest.raises(
        ZooError, match=r"ps-1.log: expected ps-1 to run to the end, found the ps exited"
    ):
        try:
            refused.start_all()
            refused.supervise([], 60, max_restarts=0)
        finally:
            refused.close()


def test_close_continues_a_stopped_ps_and_does_not_wait_for_the_workers(tmp_path):
    """A ps stopped (SIGSTOP) as in a network partition: the chief's checkpoint cannot
    reach it, so the workers are killed at once and the ps is continued to end."""
    cluster = cluster_of(tmp_path, "import time; time.sleep(600)")
    cluster.start_all()
    ps = cluster.processes["ps-0"]
    os.kill(ps.pid, signal.SIGSTOP)
    while not stopped(ps.pid):
        time.sleep(0.01)
    start = time.monotonic()
    cluster.close()
    assert time.monotonic() - start < STOP_GRACE_S / 2
    assert ps.returncode == -signal.SIGTERM  # continued, it took its SIGTERM
    assert all(p.returncode is not None for p in cluster.processes.values())
