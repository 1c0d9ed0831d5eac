"""Cluster specs, TF_CONFIG, ports, the loopback-only rule and the ps wait: every error,
no server started."""

import json
import socket

import pytest
import tensorflow as tf

from layers import ZooError
from zoo import distributed


def test_parse_cluster_accepts_string_json_and_dict():
    text = "ps=127.0.0.1:2222;worker=127.0.0.1:2223,127.0.0.1:2224"
    as_json = json.dumps({"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"]})
    cluster = distributed.parse_cluster(text)
    assert cluster.job_tasks("worker") == ["127.0.0.1:2223", "127.0.0.1:2224"]
    assert distributed.parse_cluster(as_json).num_tasks("worker") == 1
    assert distributed.parse_cluster(cluster.as_dict()).as_dict() == cluster.as_dict()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("worker=127.0.0.1:2", r"cluster: expected a 'ps' job .*found jobs \['worker'\]"),
        ({"ps": ["h:1"]}, "expected a 'worker' job"),
        ("complete garbage", "expected 'ps=host:port;worker=host:port,...', found"),
        ("{not json", "cluster: expected JSON like"),
        ('["ps", "worker"]', "expected a mapping job -> list of host:port"),
        ("ps=h:1;worker=nohost", r"cluster job 'worker': expected an address host:port"),
        ("ps=h:99999;worker=h:2", "expected a port in 1..65535, found 99999"),
        ("ps=h:1;worker=h:2;chief=h:3", r"expected only the jobs .*found \['chief'\]"),
    ],
)
def test_bad_cluster_specs(spec, message):
    with pytest.raises(ZooError, match=message):
        distributed.parse_cluster(spec)


def test_tf_config():
    config = {
        "cluster": {"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"]},
        "task": {"type": "worker", "index": 1},
    }
    environ = {"TF_CONFIG": json.dumps(config)}
    cluster, job, index = distributed.cluster_from_tf_config(environ)
    assert (job, index, cluster.num_tasks("worker")) == ("worker", 1, 2)
    assert distributed.cluster_from_tf_config({}) is None
    with pytest.raises(ZooError, match="TF_CONFIG: expected JSON with 'cluster' and"):
        distributed.cluster_from_tf_config({"TF_CONFIG": '{"cluster": {}}'})
    config["task"]["index"] = 2
    with pytest.raises(ZooError, match="found job 'worker' index 2"):
        distributed.cluster_from_tf_config({"TF_CONFIG": json.dumps(config)})


def test_local_cluster_uses_distinct_loopback_ports():
    cluster = distributed.local_cluster(3)
    addresses = cluster.job_tasks("ps") + cluster.job_tasks("worker")
    assert len(addresses) == 4 and len(set(addresses)) == 4
    assert all(a.startswith("127.0.0.1:") for a in addresses)


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
    interfaces = distributed.network_interfaces()
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
    (port,) = distributed.free_ports(1)
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
    (port,) = distributed.free_ports(1)
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
    (port,) = distributed.free_ports(1)
    cluster = distributed.parse_cluster(f"ps=127.0.0.1:{port};worker=127.0.0.1:1")
    with pytest.raises(ZooError, match=f"ps 127.0.0.1:{port}: expected a parameter server"):
        distributed.wait_for_ps(cluster, timeout=0.5)


def test_reachable_ps_returns(listening):
    cluster = distributed.parse_cluster(f"ps=127.0.0.1:{listening};worker=127.0.0.1:1")
    distributed.wait_for_ps(cluster, timeout=5)
