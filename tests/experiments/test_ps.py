"""experiments.ps: a 1-ps, 2-worker loopback cluster trains, survives a killed worker;
bad flags and cluster specs fail fast with one clear error; the bench counts passes."""

import json
import os
import signal
import threading
import time

import pytest

from experiments import bench_gradients, ps
from layers import ZooError
from zoo import distributed

WAIT_S = 120


def wait_for(condition, what, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.2)


def logged_steps(path):
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return sum("global step" in line for line in f)


def restarted_pid(out):
    with open(out / "cluster.json") as f:
        return json.load(f)["pids"]["worker-1"]


def kill_all(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.slow
def test_cluster_trains_and_a_killed_worker_rejoins(tiny_data_dir, tmp_path):
    out = tmp_path / "run"
    argv = [
        "--workers", "2", "--data-dir", tiny_data_dir, "--out", str(out),
        "--steps", "400", "--hidden", "64", "--log-every", "10", "--save-steps", "200",
        "--timeout", str(3 * WAIT_S), "--startup-timeout", "60",
    ]  # fmt: skip
    outcome = {}

    def launch():
        try:
            outcome["code"] = ps.main(argv)
        except BaseException as err:  # reported by the main thread
            outcome["error"] = err

    launcher = threading.Thread(target=launch)
    launcher.start()
    seen, stopped = set(), None
    try:
        worker_log = out / "logs" / "worker-1.log"

        def worker_1_trains():
            return logged_steps(worker_log) > 0 or not launcher.is_alive()

        wait_for(worker_1_trains, "worker 1 training")
        with open(out / "cluster.json") as f:
            pids = json.load(f)["pids"]
        seen.update(pids.values())
        os.kill(pids["worker-0"], signal.SIGSTOP)  # the job cannot end without worker 1
        stopped = pids["worker-0"]
        os.kill(pids["worker-1"], signal.SIGKILL)
        wait_for(lambda: restarted_pid(out) != pids["worker-1"], "worker 1 restarted")
        before = logged_steps(worker_log)
        wait_for(lambda: logged_steps(worker_log) > before, "restarted worker 1 training")
        os.kill(stopped, signal.SIGCONT)
        stopped = None
        launcher.join(WAIT_S)
    finally:
        if stopped:
            os.kill(stopped, signal.SIGCONT)
        if (out / "cluster.json").exists():
            with open(out / "cluster.json") as f:
                seen.update(json.load(f)["pids"].values())
        kill_all(seen)  # no-op when the launcher cleaned up, as it should
        launcher.join(10)
    assert "error" not in outcome, outcome.get("error")
    with open(out / "results.json") as f:
        results = json.load(f)
    assert results["workers"] == 2 and results["restarts"] == {"worker-1": 1}
    assert results["global_steps"] >= 400
    assert len(results["examples_per_second_per_worker"]) == 2
    losses = [loss for _, loss in results["chief_losses"]]
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3 / 5  # the shared loss fell
    assert results["test_accuracy"] > 0.9
    with open(out / "workers" / "worker-1.json") as f:
        restarted = json.load(f)
    assert restarted["losses"][0][0] > 0  # it rejoined the running job: no restart at 0
    assert os.listdir(out / "checkpoints")
    for pid in seen:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_cluster_spec_without_ps_job():
    with pytest.raises(ZooError, match="cluster: expected a 'ps' job"):
        ps.main(["--cluster", "worker=127.0.0.1:2", "--job-name", "worker"])


def test_garbage_cluster_spec():
    with pytest.raises(ZooError, match="cluster: expected 'ps=host:port;worker="):
        ps.main(["--cluster", "nonsense", "--job-name", "worker"])


def test_cluster_without_job_name():
    with pytest.raises(ZooError, match="--cluster/--job-name: expected both or neither"):
        ps.main(["--cluster", "ps=127.0.0.1:1;worker=127.0.0.1:2"])


def test_worker_with_unreachable_ps_fails_fast(tiny_data_dir):
    ps_port, worker_port = distributed.free_ports(2)
    spec = f"ps=127.0.0.1:{ps_port};worker=127.0.0.1:{worker_port}"
    with pytest.raises(ZooError, match=f"ps 127.0.0.1:{ps_port}: expected a parameter"):
        ps.main(
            ["--cluster", spec, "--job-name", "worker", "--startup-timeout", "0.5",
             "--data-dir", tiny_data_dir]
        )  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--workers", "0"], "--workers: expected a positive"),
        (["--hidden", "a"], "--hidden: expected positive widths"),
    ],
)
def test_bad_flags(flags, message):
    with pytest.raises(ZooError, match=message):
        ps.main(flags)


def test_a_task_refuses_another_experiments_run_directory(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"experiment": "experiments.sweep"}))
    ports = distributed.free_ports(2)
    spec = f"ps=127.0.0.1:{ports[0]};worker=127.0.0.1:{ports[1]}"
    with pytest.raises(ZooError, match=r"run: expected a run of experiments.ps, found a "):
        ps.main(["--cluster", spec, "--job-name", "worker", "--out", str(out)])


def test_bench_counts_one_pass_for_all_gradients_against_one_per_tensor(
    tiny_data_dir, tmp_path
):
    out = tmp_path / "bench"
    argv = ["--quick", "--ps-steps", "0", "--model", "mlp", "--repeats", "1"]
    bench_gradients.main([*argv, "--data-dir", tiny_data_dir, "--out", str(out)])
    with open(out / "bench.json") as f:
        one_run = json.load(f)["one_run"]
    n = one_run["gradients"]
    assert n == 6
    assert one_run["all_in_one_run"]["forward_passes"] == 1
    assert one_run["all_in_one_run"]["backward_passes"] == 1
    assert one_run["per_tensor_eval_loop"]["forward_passes"] == n
    assert one_run["per_tensor_eval_loop"]["backward_passes"] == n
    assert (
        one_run["per_tensor_eval_loop"]["ops_executed"]
        > one_run["all_in_one_run"]["ops_executed"]
    )
