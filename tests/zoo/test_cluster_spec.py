"""Cluster specs, TF_CONFIG, tasks and free ports as plain data, without TensorFlow."""

import json
import subprocess
import sys

import pytest

from layers import ZooError
from zoo.parallel import cluster_spec


def test_parse_accepts_string_json_and_dict():
    text = "ps=127.0.0.1:2222;worker=127.0.0.1:2223,127.0.0.1:2224"
    as_json = json.dumps({"worker": ["127.0.0.1:2223"], "ps": ["127.0.0.1:2222"]})
    jobs = cluster_spec.parse(text)
    assert jobs == {
        "ps": ["127.0.0.1:2222"],
        "worker": ["127.0.0.1:2223", "127.0.0.1:2224"],
    }
    assert list(cluster_spec.parse(as_json)) == ["ps", "worker"]
    assert cluster_spec.parse(jobs) == jobs and cluster_spec.parse(jobs) is not jobs


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("worker=127.0.0.1:2", r"cluster: expected a 'ps' job .*found jobs \['worker'\]"),
        ({"ps": ["h:1"]}, "expected a 'worker' job"),
        ("complete garbage", "expected 'ps=host:port;worker=host:port,...', found"),
        ("{not json", "cluster: expected JSON like"),
        ('["ps", "worker"]', "expected a mapping job -> list of host:port"),
        ("ps=h:1;worker=nohost", r"cluster job 'worker': expected an address host:port"),
        ("ps=h:99999;worker=h:2", r"expected the port of .* in \[1, 65535\], found 99999"),
        ("ps=h:1;worker=h:2;other=h:3", r"expected only the jobs .*found \['other'\]"),
        ("ps=h:1;worker=h:2;chief=h:3,h:4", r"expected one 'chief' task, found \['h:3'"),
        (
            "ps=h:1;worker=h:2;evaluator=h:3",
            r"found an 'evaluator' job: an evaluator does not train, and this runtime "
            r"has none; remove it and evaluate the chief's checkpoints",
        ),
    ],
)
def test_bad_cluster_specs(spec, message):
    with pytest.raises(ZooError, match=message):
        cluster_spec.parse(spec)


def test_tf_config():
    config = {
        "cluster": {"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"]},
        "task": {"type": "worker", "index": 1},
    }
    environ = {"TF_CONFIG": json.dumps(config)}
    jobs, job, index = cluster_spec.from_tf_config(environ)
    assert (job, index, jobs) == ("worker", 1, config["cluster"])
    assert cluster_spec.from_tf_config({}) is None
    with pytest.raises(ZooError, match="TF_CONFIG: expected JSON with 'cluster' and"):
        cluster_spec.from_tf_config({"TF_CONFIG": '{"cluster": {}}'})
    config["task"]["index"] = 2
    with pytest.raises(
        ZooError,
        match=r"cluster: expected a task in \{'ps': 1, 'worker': 2\} .*found job "
        "'worker' index 2",
    ):
        cluster_spec.from_tf_config({"TF_CONFIG": json.dumps(config)})


def test_a_chief_job_is_worker_0_and_tf_config_s_workers_follow_it():
    cluster = {"chief": ["h:3"], "ps": ["h:1"], "worker": ["h:4", "h:5"]}
    assert cluster_spec.parse(cluster) == {"ps": ["h:1"], "worker": ["h:3", "h:4", "h:5"]}
    tasks = {
        cluster_spec.from_tf_config(
            {"TF_CONFIG": json.dumps({"cluster": cluster, "task": task})}
        )[1:]
        for task in ({"type": "chief", "index": 0}, {"type": "worker", "index": 1})
    }
    assert tasks == {("worker", 0), ("worker", 2)}


def test_task_outside_the_cluster():
    jobs = cluster_spec.parse("ps=127.0.0.1:1;worker=127.0.0.1:2")
    cluster_spec.check_task(jobs, "worker", 0)
    for job, index in (("worker", 1), ("ps", -1), ("chief", 0)):
        with pytest.raises(ZooError, match=f"found job '{job}' index {index}"):
            cluster_spec.check_task(jobs, job, index)


def test_local_cluster_uses_distinct_loopback_ports():
    jobs = cluster_spec.local_cluster(3)
    addresses = jobs["ps"] + jobs["worker"]
    assert len(jobs["worker"]) == 3 and len(set(addresses)) == 4
    assert all(a.startswith("127.0.0.1:") for a in addresses)


def test_importing_it_does_not_start_tensorflow():
    probe = "import sys, zoo.parallel.cluster_spec\nprint('tensorflow' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"
