"""zoo.parallel.launcher: a local cluster's tasks started, restarted, stopped in order.

The tasks here are small Python commands (no TensorFlow): a ps that waits to be
stopped, workers that exit as each test needs.
"""

import json
import sys

import pytest

from layers.errors import ZooError
from zoo.parallel.launcher import PORT_IN_USE_EXIT, LocalCluster, memory_available

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
