"""ClusterSpecs, ports, the loopback-only rule and the ps wait: every error, no server
started (the specs themselves: tests/zoo/test_cluster_spec.py)."""

import os
import pathlib
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
import tensorflow as tf

from layers import ZooError
from tests import forkserver
from zoo.parallel import cluster_spec, distributed

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_parse_cluster_makes_the_clusterspec_of_the_checked_spec():
    text = "ps=127.0.0.1:2222;worker=127.0.0.1:2223,127.0.0.1:2224"
    cluster = distributed.parse_cluster(text)
    assert isinstance(cluster, tf.train.ClusterSpec)
    assert cluster.job_tasks("worker") == ["127.0.0.1:2223", "127.0.0.1:2224"]
    assert distributed.parse_cluster(cluster.as_dict()).as_dict() == cluster.as_dict()
    with pytest.raises(ZooError, match="cluster: expected a 'ps' job"):
        distributed.parse_cluster("worker=127.0.0.1:2")


@pytest.fixture
def listening():
    """A socket listening on a free loopback port; closed after the test."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    yield sock.getsockname()[1]
    sock.close()


def test_port_in_use_is_a_clear_error(listening):
    cluster = distributed.parse_cluster(f"ps=127.0.0.1:{listening};worker=127.0.0.1:1")
    with pytest.raises(
        distributed.PortInUseError, match=f"ps:0: expected port {listening} .*found it in"
    ):
        distributed.start_server(cluster, "ps", 0, expose=True)


def test_no_server_on_a_network_with_more_than_loopback_unless_exposed(listening):
    interfaces = cluster_spec.network_interfaces()
    if interfaces == ["lo"]:
        pytest.skip("this test already runs where loopback is the only interface")
    cluster = distributed.parse_cluster(f"ps=127.0.0.1:{listening};worker=127.0.0.1:1")
    with pytest.raises(
        ZooError,
        match=r"ps:0: expected a network with only the loopback interface, since "
        rf"TensorFlow's gRPC server listens on every interface \(\[::\]:{listening}\) "
        rf"without authentication, found interfaces \[.*'lo'.*\]; pass --expose",
    ):
        distributed.start_server(cluster, "ps", 0)  # checked before the port


def test_tensorflow_s_own_message_is_kept_when_the_port_is_free(monkeypatch):
    (port,) = cluster_spec.free_ports(1)
    cluster = distributed.parse_cluster(f"ps=127.0.0.1:{port};worker=127.0.0.1:1")

    def server(*args, **kwargs):
        raise tf.errors.InvalidArgumentError(None, None, "no such device")

    monkeypatch.setattr(tf.distribute, "Server", server)
    with pytest.raises(
        ZooError,
        match=f"ps:0: expected TensorFlow's server to start at 127.0.0.1:{port}, found "
        "InvalidArgumentError: no such device",
    ):
        distributed.start_server(cluster, "ps", 0, expose=True)


def test_a_session_is_created_only_once_the_ps_listens():
    (port,) = cluster_spec.free_ports(1)
    cluster = distributed.parse_cluster(f"ps=127.0.0.1:{port};worker=127.0.0.1:1")

    class Creator:
        def create_session(self):
            raise AssertionError("created a session without a ps")

    creator = distributed._PsCheckingSessionCreator(Creator(), cluster, timeout=0.5)
    with pytest.raises(
        ZooError,
        match=rf"ps 127.0.0.1:{port}: expected a parameter server answering, found none "
        r"after 0.5 s; see the ps task's log \(logs/ps-0.log",
    ):
        creator.create_session()


def test_task_outside_the_cluster(listening):
    cluster = distributed.parse_cluster("ps=127.0.0.1:1;worker=127.0.0.1:2")
    with pytest.raises(ZooError, match="found job 'worker' index 5"):
        distributed.start_server(cluster, "worker", 5)


def test_unreachable_ps_fails_within_the_timeout():
    (port,) = cluster_spec.free_ports(1)
    cluster = distributed.parse_cluster(f"ps=127.0.0.1:{port};worker=127.0.0.1:1")
    with pytest.raises(ZooError, match=f"ps 127.0.0.1:{port}: expected a parameter server"):
        distributed.wait_for_ps(cluster, timeout=0.5)


@pytest.fixture
def answering():
    """A loopback port whose listener answers HTTP/2's preface with a SETTINGS frame,
    as a gRPC server does (and nothing more)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()

    def serve():
        while True:
            try:
                connection, _ = sock.accept()
            except OSError:
                return  # closed
            with connection:
                connection.recv(len(distributed.HTTP2_PREFACE))
                settings = [0, 0, 0, distributed.HTTP2_SETTINGS, 0, 0, 0, 0, 0]
                connection.sendall(bytes(settings))

    threading.Thread(target=serve, daemon=True).start()
    yield sock.getsockname()[1]
    sock.close()


def test_a_ps_that_answers_is_ready(answering):
    assert distributed.grpc_answers("127.0.0.1", answering, timeout=5) == "answers"
    cluster = distributed.parse_cluster(f"ps=127.0.0.1:{answering};worker=127.0.0.1:1")
    distributed.wait_for_ps(cluster, timeout=5)


def test_a_task_whose_ps_is_gone_ends_with_its_launcher_at_once(answering):
    """``exit_with_parent(needs=...)``: a worker whose ps no longer listens has nothing
    to save to and exits at once; one whose ps answers keeps its grace (here SIGTERM
    is ignored: a step that does not end)."""
    launcher = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    (gone,) = cluster_spec.free_ports(1)
    code = (
        "import signal, sys, time; from zoo.parallel import distributed\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "distributed.exit_with_parent(int(sys.argv[1]), 60, 0.2, [sys.argv[2]])\n"
        "time.sleep(60)"
    )
    tasks = {
        port: forkserver.popen(
            [sys.executable, "-c", code, str(launcher.pid), f"127.0.0.1:{port}"]
        )
        for port in (gone, answering)
    }
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            tasks[gone].wait(1)  # the launcher runs
        launcher.kill()
        launcher.wait()
        assert tasks[gone].wait(30) == 128 + signal.SIGTERM
        with pytest.raises(subprocess.TimeoutExpired):
            tasks[answering].wait(1)
    finally:
        launcher.kill()
        for task in tasks.values():
            task.kill()


def test_a_needed_task_that_is_no_address_is_refused_before_any_watch():
    with pytest.raises(
        ZooError,
        match=r"exit_with_parent needs: expected an address host:port, found 'ps-0'",
    ):
        distributed.exit_with_parent(os.getpid(), 1, needs=["ps-0"])
    assert "exit-with-parent" not in {thread.name for thread in threading.enumerate()}


def test_a_listener_that_never_answers_is_no_ps(listening):
    """What a SIGSTOPped ps looks like from outside: the kernel accepts, nobody answers."""
    assert distributed.grpc_answers("127.0.0.1", listening, timeout=0.3) == "silent"
    cluster = distributed.parse_cluster(f"ps=127.0.0.1:{listening};worker=127.0.0.1:1")
    start = time.monotonic()
    with pytest.raises(
        ZooError,
        match=rf"ps 127.0.0.1:{listening}: expected a parameter server answering, found a "
        r"process that accepts connections but does not answer \(stopped, hung, or cut "
        r"off\) after 1 s; .*start or resume \(SIGCONT\) the ps task",
    ):
        distributed.wait_for_ps(cluster, timeout=1, poll=0.2)
    assert time.monotonic() - start < 3


def wait_for_state(pid, state, timeout=10):
    """Waits until process ``pid``'s state (``/proc/<pid>/status``) is ``state``."""
    deadline = time.monotonic() + timeout
    with open(f"/proc/{pid}/status") as status:
        while status.seek(0) == 0 and f"State:\t{state}" not in status.read():
            assert time.monotonic() < deadline, f"process {pid} never reached {state}"
            time.sleep(0.05)


@pytest.mark.slow
def test_a_stopped_ps_is_seen_as_stopped_and_a_resumed_one_as_ready():
    """TensorFlow's own ps server: SIGSTOP makes it silent (a TCP connect still
    succeeds), SIGCONT brings its answer back."""
    (port,) = cluster_spec.free_ports(1)
    spec = f"ps=127.0.0.1:{port};worker=127.0.0.1:1"
    code = (
        "from zoo.parallel import distributed\n"
        f"cluster = distributed.parse_cluster({spec!r})\n"
        "distributed.start_server(cluster, 'ps', 0, expose=True).join()\n"
    )
    ps = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    try:
        cluster = distributed.parse_cluster(spec)
        distributed.wait_for_ps(cluster, timeout=120)
        os.kill(ps.pid, signal.SIGSTOP)
        wait_for_state(ps.pid, "T")  # the signal is delivered when it is scheduled
        socket.create_connection(("127.0.0.1", port), timeout=1).close()  # still accepts
        assert distributed.grpc_answers("127.0.0.1", port, timeout=1) == "silent"
        with pytest.raises(ZooError, match="accepts connections but does not answer"):
            distributed.wait_for_ps(cluster, timeout=1)
        os.kill(ps.pid, signal.SIGCONT)
        distributed.wait_for_ps(cluster, timeout=10)
    finally:
        ps.kill()
        ps.wait()
