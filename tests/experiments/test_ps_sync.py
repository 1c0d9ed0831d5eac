"""experiments.ps --mode sync: synchronous workers through the same launcher equal one
process on the whole batch (results.json's max_diff_vs_one_process), a killed worker
restarts every worker (an asynchronous one restarts alone); bad flags are refused before
any process starts."""

import json
import os
import sys
import types

import pytest

from experiments import ps
from experiments.harness import classifiers, cluster
from layers import ZooError
from tests import forkserver
from zoo.parallel import cluster_spec

WAIT_S = 240


@pytest.fixture(autouse=True)
def forked_tasks(monkeypatch):
    """The tasks of a launcher run here (ps.main) forked from the test's fork server."""
    forkserver.fork_cluster_tasks(monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["mlp", classifiers.BATCH_NORM_MODEL])
def test_sync_workers_through_the_launcher_equal_one_process(
    model, tiny_data_dir, tmp_path
):
    """Two workers, no ps, 4 steps per session.run: the chief's last checkpoint equals
    one process with the workers' arithmetic (sync.one_process with 2 shards), trained
    on the same batches from the same initial weights: the default MLP
    (784-625-625-10, Adam) after 100 steps, the conv net with batch norm (statistics
    over the workers) after 20. The whole-batch process is recorded beside it. (A
    killed worker: test_a_dead_sync_worker_restarts_every_worker here, and
    tests/zoo/test_sync.py, both workers killed and resumed, equal again.)"""
    out, steps = tmp_path / "run", 100 if model == "mlp" else 20
    argv = [
        "--mode", "sync", "--workers", "2", "--data-dir", tiny_data_dir, "--out", str(out),
        "--steps", str(steps), "--batch-size", "50", "--model", model,
        "--checkpoint-every", "50", "--steps-per-run", "4", "--log-every", "5",
        "--timeout", str(WAIT_S),
    ]  # fmt: skip
    assert ps.main(argv) == 0
    with open(out / "results.json") as f:
        results = json.load(f)
    assert results["cluster"]["ps"] == [] and len(results["cluster"]["worker"]) == 2
    assert results["restarts"] == {"cluster": 0} and results["global_steps"] == steps
    assert results["local_steps_per_worker"] == [steps, steps]
    # The claim is 1e-5; the runs are equal bit for bit (a sum of two is order-free), and
    # only that catches in 20 steps an op that rounds apart (an all-reduced count, which
    # Grappler folds in one process only, was 1.5e-4 off in one run, under 1e-5 in another).
    assert results["max_diff_vs_one_process"] == 0.0
    assert results["max_diff_vs_whole_batch"] >= 0.0  # recorded: float32 round-off
    losses = [loss for _, loss in results["chief_losses"]]
    assert losses[-1] < losses[0] / 2


FAKE_TASK = """
import os, sys
directory, code = sys.argv[1], int(sys.argv[2])
os.makedirs(directory, exist_ok=True)
starts = len(os.listdir(directory))
open(os.path.join(directory, str(starts)), "w").close()
sys.exit(code if starts == 0 else 0)
"""


def fake_launch(tmp_path, whole, worker_1_exit):
    """Runs :func:`cluster.launch` on tasks that only record their starts; worker 1's
    first start exits with ``worker_1_exit``. Returns the restarts, the cluster and
    ``{task: starts}``."""
    run = types.SimpleNamespace(path=str(tmp_path / "run"), file=None)
    args = types.SimpleNamespace(expose=True, timeout=60, max_restarts=2)

    def command(jobs, job, index):
        code = worker_1_exit if (job, index) == ("worker", 1) else 0
        starts = tmp_path / "starts" / f"{job}-{index}"
        return [sys.executable, "-c", FAKE_TASK, str(starts), str(code)]

    children, restarts = cluster.launch(
        args, run, lambda: cluster_spec.local_cluster(2, ps=0), command, whole=whole
    )
    names = children.processes
    return restarts, children, {n: len(os.listdir(tmp_path / "starts" / n)) for n in names}


@pytest.mark.parametrize("status", [1, cluster.LOST_WORKER_EXIT])
def test_a_dead_sync_worker_restarts_every_worker(status, tmp_path):
    """A crash (1), or a worker that lost another (sync.LostWorkerError)."""
    restarts, children, starts = fake_launch(tmp_path, whole=True, worker_1_exit=status)
    assert restarts == 1 and children.restarts == {}
    assert starts == {"worker-0": 2, "worker-1": 2}  # both again, not worker 1 alone


def test_a_dead_async_worker_restarts_alone(tmp_path):
    restarts, children, starts = fake_launch(tmp_path, whole=False, worker_1_exit=1)
    assert restarts == 0 and children.restarts == {"worker-1": 1}
    assert starts == {"worker-0": 1, "worker-1": 2}


def test_a_sync_worker_failing_with_a_zoo_error_is_not_restarted(tmp_path):
    with pytest.raises(ZooError, match=r"worker-1.log: expected worker-1 to run to the"):
        fake_launch(tmp_path, whole=True, worker_1_exit=cluster.ZOO_ERROR_EXIT)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--mode", "sync", "--workers", "3", "--batch-size", "50"],
         "sync: expected a worker count that divides the batch size 50, found 3 workers"),
        (["--mode", "sync", "--precision", "mixed_bfloat16"],
         "--precision: expected float32 with --mode sync, found mixed_bfloat16"),
        (["--model", "bn_conv"],
         "--model: expected mlp or conv with --mode async, found bn_conv; the asynch"),
        (["--mode", "sync", "--ps", "2"],
         "--ps: expected none with --mode sync, found --ps 2; .* drop --ps"),
    ],
)  # fmt: skip
def test_sync_flags_refused_before_any_process(flags, message):
    with pytest.raises(ZooError, match=message):
        ps.main(flags)


def test_sync_tasks_need_no_ps_but_async_ones_do():
    spec = '{"worker": ["127.0.0.1:1", "127.0.0.1:2"]}'
    assert cluster_spec.parse(spec, ("worker",)) == {
        "ps": [], "worker": ["127.0.0.1:1", "127.0.0.1:2"]
    }  # fmt: skip
    with pytest.raises(ZooError, match="cluster: expected a 'ps' job"):
        cluster_spec.parse(spec)
