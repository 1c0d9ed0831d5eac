"""experiments.ps: a 1-ps, 2-worker cluster in a private network trains, survives a killed
worker and a killed chief; SIGTERM stops it in order and --resume goes on; kill -9 of the
launcher, a dead ps and a NaN loss leave nothing running and name what failed; --expose
retries a port clash; bad flags, cluster specs and worker counts fail fast."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from experiments import ps
from experiments.bench import gradients as bench_gradients
from experiments.harness import cluster
from layers import ZooError
from tests import forkserver
from zoo.parallel import cluster_spec

WAIT_S = 240  # bound of every wait on the cluster: never a hang, however loaded the machine


@pytest.fixture(autouse=True)
def forked_tasks(monkeypatch):
    """The tasks of a launcher run here (ps.main) forked from the test's fork server."""
    forkserver.fork_cluster_tasks(monkeypatch)


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


def running(pid):
    """True while process ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def cluster_pids(out):
    with open(out / "cluster.json") as f:
        return json.load(f)["pids"]


def tcp_listening(pid="self"):
    """``{(socket inode, hex address, port)}`` listening in the network of ``pid``."""
    found = set()
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # LISTEN
                    address, port = fields[1].split(":")
                    found.add((fields[9], address, int(port, 16)))
    return found


def listening(pid):
    """``[(hex address, port)]`` of the TCP sockets process ``pid`` listens on."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return [
        (address, port) for inode, address, port in tcp_listening(pid) if inode in inodes
    ]


def ports_of(out):
    with open(out / "cluster.json") as f:
        cluster = json.load(f)["cluster"]
    return [int(a.rsplit(":", 1)[1]) for job in cluster.values() for a in job]


def assert_nothing_left(out, pids):
    """Every task (and the namespace holder) gone; no port of the cluster listening."""
    wait_for(lambda: not any(running(p) for p in pids), "the tasks to exit")
    assert forkserver.processes_naming(out) == []
    assert not set(ports_of(out)) & {port for _, _, port in tcp_listening()}


def in_thread(argv):
    """Runs ``ps.main(argv)`` in a thread; returns the thread and its outcome dict."""
    outcome = {}

    def launch():
        try:
            outcome["code"] = ps.main(argv)
        except BaseException as err:  # reported by the main thread
            outcome["error"] = err

    launcher = threading.Thread(target=launch)
    launcher.start()
    return launcher, outcome


def flags(data_dir, out, steps, *more):
    return [
        "--data-dir", data_dir, "--out", str(out), "--steps", str(steps),
        "--hidden", "64", "--log-every", "10", "--timeout", str(WAIT_S),
        "--startup-timeout", "60", *more,
    ]  # fmt: skip


def step_of(checkpoint):
    return int(tf.train.load_variable(checkpoint, "global_step"))


@pytest.mark.slow
def test_cluster_trains_in_a_private_network_and_killed_workers_rejoin(
    tiny_data_dir, tmp_path
):
    out = tmp_path / "run"
    argv = flags(tiny_data_dir, out, 1000, "--workers", "2", "--checkpoint-every", "50")
    launcher, outcome = in_thread(argv)
    seen = set()
    try:
        wait_for(
            lambda: (
                logged_steps(out / "logs" / "worker-1.log") > 0 or not launcher.is_alive()
            ),
            "worker 1 training",
        )
        pids = cluster_pids(out)
        seen.update(pids.values())
        ports = {}
        for name in ("ps-0", "worker-0", "worker-1"):  # each task: its own socket...
            (address, port), *others = listening(pids[name])
            assert others == [] and set(address) == {"0"}  # ...on [::] (every interface)
            assert os.readlink(f"/proc/{pids[name]}/ns/net") != os.readlink(
                "/proc/self/ns/net"
            )  # ...but in a network namespace of its own
            with open(f"/proc/{pids[name]}/net/dev") as f:
                assert [line.split(":")[0].strip() for line in f.readlines()[2:]] == ["lo"]
            ports[name] = port
        for port in ports.values():  # unreachable from the machine's own network
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
        os.kill(pids["worker-1"], signal.SIGKILL)
        checkpoints = out / "checkpoints"
        wait_for(lambda: tf.train.latest_checkpoint(checkpoints), "a chief checkpoint")
        at_kill = step_of(tf.train.latest_checkpoint(checkpoints))
        os.kill(pids["worker-0"], signal.SIGKILL)
        launcher.join(WAIT_S)
    finally:
        if (out / "cluster.json").exists():
            seen.update(cluster_pids(out).values())
        for pid in seen:  # no-op when the launcher cleaned up, as it should
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        launcher.join(10)
    assert "error" not in outcome, outcome.get("error")
    with open(out / "results.json") as f:
        results = json.load(f)
    assert results["workers"] == 2 and results["network"] == "private, loopback only"
    assert results["restarts"] == {"worker-1": 1, "worker-0": 1}
    assert results["global_steps"] >= 1000
    assert len(results["examples_per_second_per_worker"]) == 2
    with open(out / "logs" / "worker-0.log") as f:  # both chiefs' lines
        losses = [float(line.split()[-1]) for line in f if "global step" in line]
    assert results["test_accuracy"] > 0.9 and losses[-1] < losses[0] / 5
    # the restarted chief restored the last checkpoint and went on from its step
    assert step_of(str(checkpoints / results["restored_from"])) >= at_kill
    assert results["chief_losses"][0][0] >= at_kill
    with open(out / "workers" / "worker-1.json") as f:
        restarted = json.load(f)
    if restarted["losses"]:  # it rejoined a running job: its global step did not restart
        assert restarted["losses"][0][0] > 0
    assert not any(running(pid) for pid in seen)


def subprocess_launcher(argv):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}  # PYTHONPATH: tests/conftest.py
    return forkserver.popen(
        [sys.executable, "-m", "experiments.ps", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.mark.slow
def test_sigterm_stops_in_order_and_resume_goes_on_to_more_steps(tiny_data_dir, tmp_path):
    out = tmp_path / "run"
    argv = flags(
        tiny_data_dir, out, 100_000, "--workers", "1", "--checkpoint-every", "1000"
    )
    launcher = subprocess_launcher(argv)
    try:
        wait_for(lambda: logged_steps(out / "logs" / "worker-0.log") > 1, "training")
        pids = cluster_pids(out)
        launcher.send_signal(signal.SIGTERM)
        _, stderr = launcher.communicate(timeout=WAIT_S)
    finally:
        launcher.kill()
    assert launcher.returncode == 128 + signal.SIGTERM
    last = stderr.strip().splitlines()[-1]
    assert f"--resume {out}" in last and "resume with: python -m experiments.ps" in last
    assert_nothing_left(out, pids.values())
    checkpoint = tf.train.latest_checkpoint(out / "checkpoints")
    step = step_of(checkpoint)  # written on SIGTERM: no period of 1000 was reached
    assert 10 <= step < 1000
    assert os.path.basename(checkpoint) in last

    assert ps.main(resumed_argv(argv, step)) == 0
    with open(out / "results.json") as f:
        results = json.load(f)
    assert results["restored_from"] == os.path.basename(checkpoint)
    # one worker: its logged steps start where the restore left it, 10 (--log-every) apart
    logged = [logged_step for logged_step, _ in results["chief_losses"]]
    assert logged == list(range(step, step + 10 * len(logged), 10))
    assert results["global_steps"] >= step + 50


def resumed_argv(argv, step):
    """``argv`` with ``--steps step + 50`` and ``--resume`` in place of ``--out``."""
    args = list(argv)
    args[args.index("--steps") + 1] = str(step + 50)
    args[args.index("--out")] = "--resume"
    return args


@pytest.mark.slow
def test_killed_launcher_leaves_no_task_running(tiny_data_dir, tmp_path):
    out = tmp_path / "run"
    launcher = subprocess_launcher(flags(tiny_data_dir, out, 100_000, "--workers", "1"))
    try:
        wait_for(lambda: logged_steps(out / "logs" / "worker-0.log") > 0, "training")
        pids = cluster_pids(out)
        assert all(running(pid) for pid in pids.values())
        launcher.kill()
        launcher.wait(WAIT_S)
        assert_nothing_left(out, pids.values())
    finally:
        launcher.kill()


@pytest.mark.slow
def test_dead_ps_fails_the_run_naming_its_log(tiny_data_dir, tmp_path):
    out = tmp_path / "run"
    launcher, outcome = in_thread(flags(tiny_data_dir, out, 100_000, "--workers", "1"))
    try:
        wait_for(lambda: logged_steps(out / "logs" / "worker-0.log") > 0, "training")
        pids = cluster_pids(out)
        os.kill(pids["ps-0"], signal.SIGKILL)
        launcher.join(WAIT_S)
        assert not launcher.is_alive()
    finally:
        for pid in cluster_pids(out).values():
            if running(pid):
                os.kill(pid, signal.SIGKILL)
    assert isinstance(outcome.get("error"), ZooError)
    assert f"{out}/logs/ps-0.log: expected ps-0 to run to the end, found the ps exited" in (
        str(outcome["error"])
    )
    assert_nothing_left(out, pids.values())


@pytest.mark.slow
def test_nan_loss_stops_the_run_and_keeps_the_last_finite_checkpoint(
    tiny_data_dir, tmp_path
):
    out = tmp_path / "run"
    argv = flags(tiny_data_dir, out, 1000, "--workers", "1", "--checkpoint-every", "1")
    argv += ["--learning-rate", "1e30"]  # Adam: weights ~1e30 after one step, then NaN
    with pytest.raises(ZooError) as raised:
        ps.main(argv)
    message = str(raised.value)
    assert (
        "worker-0 exited with 2: error: worker:0: expected a finite loss, found" in message
    )
    checkpoint = tf.train.latest_checkpoint(out / "checkpoints")
    assert f"last good checkpoint {checkpoint} left intact" in message
    reader = tf.train.load_checkpoint(checkpoint)
    for name in reader.get_variable_to_shape_map():
        value = reader.get_tensor(name)
        assert np.all(np.isfinite(value)), name
    assert not (out / "results.json").exists()


@pytest.mark.slow
def test_expose_says_so_and_retries_a_port_clash(tiny_data_dir, tmp_path, monkeypatch):
    taken = socket.socket()
    taken.bind(("", 0))
    taken.listen()
    port = taken.getsockname()[1]
    clusters = []
    real = cluster_spec.local_cluster

    def local_cluster(workers, ps=1):
        jobs = real(workers, ps)
        if not clusters:  # the first cluster's ps gets the taken port
            jobs["ps"] = [f"127.0.0.1:{port}"]
        clusters.append(jobs)
        return jobs

    monkeypatch.setattr(cluster_spec, "local_cluster", local_cluster)
    out = tmp_path / "run"
    try:
        ps.main(flags(tiny_data_dir, out, 30, "--workers", "1", "--expose"))
    finally:
        taken.close()
    assert len(clusters) == 2
    with open(out / "logs" / "ps-0.log") as f:
        log = f.read()
    assert f"ps:0: expected port {port} of 127.0.0.1:{port} to be free" in log
    assert "on every interface, no authentication (--expose)" in log
    with open(out / "results.json") as f:
        results = json.load(f)
    assert results["network"] == "exposed" and results["global_steps"] >= 30


def test_worker_counts_memory_cannot_hold_are_refused(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 16000000 kB\nMemAvailable: 8000000 kB\n")
    cluster.check_memory(4, str(meminfo))
    with pytest.raises(ZooError, match=r"--workers 100 --ps 1: expected a cluster that "):
        cluster.check_memory(100, str(meminfo))
    with pytest.raises(ZooError, match=r"--workers 2 --ps 50: .*\(2 workers x 1050 MiB \+ "
                       r"50 ps x 680 MiB\) against 7.6 GiB"):  # fmt: skip
        cluster.check_memory(2, str(meminfo), ps=50)
    with pytest.raises(ZooError, match="--workers 1000 --ps 1: .*pass --no-memory-check"):
        ps.main(["--workers", "1000"])  # refused before anything starts
    with pytest.raises(ZooError, match="--workers 2 --ps 1000: .*pass --no-memory-check"):
        ps.main(["--ps", "1000"])


def test_cluster_spec_without_ps_job():
    with pytest.raises(ZooError, match="cluster: expected a 'ps' job"):
        ps.main(["--cluster", "worker=127.0.0.1:2", "--job-name", "worker"])


def test_garbage_cluster_spec():
    with pytest.raises(ZooError, match="cluster: expected 'ps=host:port;worker="):
        ps.main(["--cluster", "nonsense", "--job-name", "worker"])


def answer_without_tensorflow(*argv, tf_config=None):
    """Runs ``python -m experiments.ps ARGV`` (with ``TF_CONFIG`` if given); returns
    its output and whether it had imported TensorFlow by the time it exited."""
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['ps', *{list(argv)!r}]\n"
        "try:\n"
        "    runpy.run_module('experiments.ps', run_name='__main__')\n"
        "except SystemExit as exit:\n"
        "    print('exit:', exit.code, 'imported:', 'tensorflow' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    env.update({"TF_CONFIG": tf_config} if tf_config else {})
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout, done.stderr


TASK = ["--job-name", "worker", "--task-index", "0"]


@pytest.mark.parametrize(
    ("argv", "tf_config", "message"),
    [
        (["--cluster", "BAD", *TASK], None, "cluster: expected 'ps=host:port;worker="),
        (["--cluster", "ps=h:1;worker=h:99999", *TASK], None,
         "cluster job 'worker': expected the port of 'h:99999' to be an int in [1, 65535]"),
        (["--cluster", "ps=h:1;worker=h:2", "--job-name", "worker", "--task-index", "1"],
         None, "cluster: expected a task in {'ps': 1, 'worker': 1}"),
        ([], '{"cluster": {}}', "TF_CONFIG: expected JSON with 'cluster' and 'task'"),
        ([], '{"cluster": {"ps": ["h:1"]}, "task": {"type": "worker", "index": 0}}',
         "cluster: expected a 'worker' job"),
    ],
)  # fmt: skip
def test_bad_cluster_and_tf_config_fail_in_one_line_before_tensorflow(
    argv, tf_config, message
):
    out, err = answer_without_tensorflow(*argv, tf_config=tf_config)
    assert out == "exit: 2 imported: False\n"
    assert len(err.strip().splitlines()) == 1 and "error: " in err, err
    assert message in err, err


def test_cluster_without_job_name():
    with pytest.raises(ZooError, match="--cluster/--job-name: expected both or neither"):
        ps.main(["--cluster", "ps=127.0.0.1:1;worker=127.0.0.1:2"])


def test_worker_with_unreachable_ps_fails_fast(tiny_data_dir):
    ps_port, worker_port = cluster_spec.free_ports(2)
    spec = f"ps=127.0.0.1:{ps_port};worker=127.0.0.1:{worker_port}"
    with pytest.raises(ZooError, match=f"ps 127.0.0.1:{ps_port}: expected a parameter"):
        ps.main(
            ["--cluster", spec, "--job-name", "worker", "--startup-timeout", "0.5",
             "--data-dir", tiny_data_dir]
        )  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--workers", "0"], r"--workers: expected an int in \[1, "),
        (["--hidden", "a"], "--hidden: expected comma-separated integers >= 1"),
    ],
)
def test_bad_flags(flags, message):
    with pytest.raises(ZooError, match=message):
        ps.main(flags)


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


def test_a_task_refuses_another_experiments_run_directory(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"experiment": "experiments.sweep"}))
    ports = cluster_spec.free_ports(2)
    spec = f"ps=127.0.0.1:{ports[0]};worker=127.0.0.1:{ports[1]}"
    with pytest.raises(ZooError, match=r"run: expected a run of experiments.ps, found a "):
        ps.main(["--cluster", spec, "--job-name", "worker", "--out", str(out)])


def test_resume_check_reads_the_step_through_the_library_and_refuses_foreign(tmp_path):
    directory = tmp_path / "checkpoints"
    directory.mkdir()
    cluster.check_resume(5, str(directory))  # none yet: step 0
    with tf.Graph().as_default():
        global_step = tf.compat.v1.train.get_or_create_global_step()
        with tf.compat.v1.Session() as session:
            session.run(global_step.initializer)
            session.run(global_step.assign(5))
            saver = tf.compat.v1.train.Saver([global_step])
            saver.save(session, str(directory / "model.ckpt"), global_step=5)
    with pytest.raises(ZooError, match=r"model.ckpt-5: expected --steps above .* step 5"):
        cluster.check_resume(5, str(directory))
    cluster.check_resume(6, str(directory))
    (directory / "checkpoint").write_text('model_checkpoint_path: "/etc/model.ckpt-9"\n')
    with pytest.raises(ZooError, match=r"checkpoint: expected checkpoints inside"):
        cluster.check_resume(6, str(directory))
