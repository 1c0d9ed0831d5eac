"""ClusterSpecs, ports, the loopback-only rule and the ps wait: every error, no server
started (the specs themselves: tests/zoo/test_cluster_spec.py)."""

import socket

import pytest
import tensorflow as tf

from layers import ZooError
from zoo.parallel import cluster_spec, distributed


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
        match=rf"ps 127.0.0.1:{port}: expected a parameter server listening, found none "
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


def test_reachable_ps_returns(listening):
    cluster = distributed.parse_cluster(f"ps=127.0.0.1:{listening};worker=127.0.0.1:1")
    distributed.wait_for_ps(cluster, timeout=5)
