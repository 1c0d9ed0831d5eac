"""Faults as TensorFlow tests its coordinator (fault_tolerance_test_base.py), on a real
local cluster of 2 ps tasks and 2 async workers: a wide model whose embedding table is
too big for one ps task's memory budget, split in 3 shards over the 2 ps tasks.

One cluster lives through every fault in turn (a straggler, a worker killed mid-step,
the same worker again, both workers at once, a ps killed mid-step, between steps and
while a worker recovers, a ps stopped as a short then a long network partition); each
test reads what the run did, how long it took to recover, and that nothing was lost or
left behind. The last checkpoint, written in 3 shards over the 2 ps tasks, restores into
2 shards and into one variable with the same outputs.
"""

import json
import os
import re
import signal
import sys
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from layers import ZooError
from tests import forkserver
from zoo.parallel import cluster_spec, partitioned
from zoo.parallel.launcher import STOP_GRACE_S, LocalCluster
from zoo.parallel.loopback import PrivateNetwork

v1 = tf.compat.v1
VOCAB, WIDTH, IDS_PER_EXAMPLE, BATCH = 3000, 8, 4, 32
SHARDS = 3
# Each ps task may hold this many bytes of variables: the table and its Adagrad
# accumulator (2 x 96,000 bytes) do not fit one task; a third of each does.
PS_BUDGET = 150_000
OPERATION_TIMEOUT_S = 3  # a step longer than this names the silent ps
STARTUP_TIMEOUT_S = 60  # waits for a restarted ps or chief: bounded, however loaded
TASK = """
import sys
from experiments.harness import entry
from tests.zoo.test_faults import run_task
entry.entry_point(lambda argv: run_task(*sys.argv[1:]))
"""


def model(ids, targets, shards):
    """The wide model: the sum of each example's embedding rows, read out to a scalar.

    Returns:
        ``(predictions, loss)``; the table ``wide/table`` in ``shards`` shards.
    """
    partitioner = v1.fixed_size_partitioner(shards) if shards > 1 else None
    with v1.variable_scope(
        "wide", partitioner=partitioner, custom_getter=partitioned.checked_getter
    ):
        table = v1.get_variable(
            "table", [VOCAB, WIDTH], initializer=v1.random_normal_initializer(seed=1)
        )
    with v1.variable_scope("wide"):
        readout = v1.get_variable("readout", [WIDTH, 1], initializer=v1.ones_initializer())
    rows = tf.reduce_sum(partitioned.embedding_lookup(table, ids), axis=1)
    predictions = tf.squeeze(rows @ readout, axis=1)
    return predictions, tf.reduce_mean((predictions - targets) ** 2)


def examples(seed, count=BATCH):
    """``count`` examples: ids and the sum of a fixed teacher's value at each."""
    teacher = np.random.default_rng(0).standard_normal(VOCAB).astype(np.float32)
    ids = np.random.default_rng(seed).integers(0, VOCAB, (count, IDS_PER_EXAMPLE))
    return ids, teacher[ids].sum(axis=1)


def run_task(job, index, spec, directory):
    """One task of the cluster: a ps serves; a worker trains to a far step."""
    from zoo.parallel import distributed

    index = int(index)
    cluster = distributed.parse_cluster(spec)
    server = distributed.start_server(cluster, job, index)
    print(f"{job}:{index} serving", flush=True)
    if job == "ps":
        server.join()
    batches = iter(range(index, 10**9, 2))  # each worker its own examples

    def build():
        ids = v1.placeholder(tf.int64, [None, IDS_PER_EXAMPLE])
        targets = v1.placeholder(tf.float32, [None])

        def feed():
            return dict(zip((ids, targets), examples(next(batches)), strict=True))

        return model(ids, targets, SHARDS)[1], feed

    distributed.train_worker(
        server, cluster, index, build, v1.train.AdagradOptimizer(0.05),
        batch_size=BATCH, last_step=10**9, checkpoint_dir=os.path.join(directory, "ckpt"),
        checkpoint_every=20, startup_timeout=STARTUP_TIMEOUT_S,
        operation_timeout=OPERATION_TIMEOUT_S, ps_memory_budget=PS_BUDGET, log_every=5,
        on_log=lambda step, loss: print(f"step {step} loss {loss:.5f}", flush=True),
        on_session=lambda step: print(f"session at step {step}", flush=True),
    )  # fmt: skip


# --- the cluster's story: one fault after another, each recorded -------------------

WAIT_S = 120  # bound of every wait: a fault not recovered from in this time fails
STRAGGLER_S = 4  # a worker stopped this long: longer than one step may take
SHORT_PARTITION_S = 1  # a ps stopped this long: shorter than one step may take


class Story:
    """A running cluster, its supervisor thread, and what each fault did."""

    def __init__(self, directory):
        self.directory = directory
        self.jobs = cluster_spec.local_cluster(2, ps=2)
        self.network = PrivateNetwork()
        self.cluster = LocalCluster(
            self.command, directory, self.jobs, self.network, popen=forkserver.popen
        )
        self.caught, self.failure = [], []
        self.supervisor = threading.Thread(target=self.supervise)

    def command(self, job, index):
        spec = json.dumps(self.jobs)
        return [sys.executable, "-c", TASK, job, str(index), spec, self.directory]

    def supervise(self):
        try:
            self.cluster.supervise(self.caught, 10 * WAIT_S, 5, max_ps_restarts=5)
        except ZooError as err:
            self.failure.append(err)

    def pid(self, name):
        return self.cluster.processes[name].pid

    def signal(self, names, signum):
        for name in names:
            os.kill(self.pid(name), signum)

    def lines(self, name):
        with open(self.cluster.log(name)) as f:
            return f.read().splitlines()

    def marks(self):
        """The length of each task's log: what a fault's effects are read after."""
        return {name: len(self.lines(name)) for name in self.cluster.processes}

    def since(self, marks, name):
        return self.lines(name)[marks[name] :]

    def wait(self, condition, what):
        """Seconds until ``condition()``; fails the story after :data:`WAIT_S`."""
        start = time.monotonic()
        while not condition():
            if self.failure or time.monotonic() - start > WAIT_S:
                raise AssertionError(f"{what}: {self.failure or 'timed out'}")
            time.sleep(0.05)
        return time.monotonic() - start

    def steps_after(self, marks, name, event):
        """Whether task ``name`` logged a step after ``event`` (a line start), since
        ``marks``."""
        lines = self.since(marks, name)
        starts = [i for i, line in enumerate(lines) if line.startswith(event)]
        return bool(starts) and any(line.startswith("step") for line in lines[starts[0] :])

    def recovered(self, marks, event_of):
        """Seconds until every worker named in ``event_of`` logged a step after its
        event (``"step"``: any step)."""
        return self.wait(
            lambda: all(self.steps_after(marks, n, e) for n, e in event_of.items()),
            f"recovery of {sorted(event_of)}",
        )

    def sessions(self, marks, name):
        """The global steps at which task ``name`` (re)created its session since
        ``marks``."""
        return [int(line.split()[-1]) for line in self.since(marks, name)
                if line.startswith("session at step")]  # fmt: skip

    def checkpoint_steps(self):
        state = tf.train.get_checkpoint_state(os.path.join(self.directory, "ckpt"))
        paths = state.all_model_checkpoint_paths if state else []
        return sorted(int(path.rsplit("-", 1)[1]) for path in paths)


BOTH = ("worker-0", "worker-1")


def straggler(story):
    """worker-1 stopped (SIGSTOP) longer than a step may take: the chief goes on; once
    continued, worker-1 takes its timed-out step again, not restarted."""
    marks, restarts = story.marks(), dict(story.cluster.restarts)
    story.signal(["worker-1"], signal.SIGSTOP)
    time.sleep(STRAGGLER_S)
    chief_steps = sum(line.startswith("step") for line in story.since(marks, "worker-0"))
    story.signal(["worker-1"], signal.SIGCONT)
    seconds = story.recovered(story.marks(), {"worker-1": "step"})
    return {"chief_steps_meanwhile": chief_steps, "recover_s": seconds,
            "restarted": restarts != story.cluster.restarts}  # fmt: skip


def worker_killed(story):
    """worker-1 killed mid-step (SIGKILL): restarted, it rejoins."""
    marks = story.marks()
    story.signal(["worker-1"], signal.SIGKILL)
    return {"recover_s": story.recovered(marks, {"worker-1": "worker:1 serving"})}


def two_workers_killed(story):
    """Both workers killed at once, worker-1 for the second time: both restarted; the
    new chief restores the last checkpoint."""
    marks = story.marks()
    story.signal(BOTH, signal.SIGKILL)
    at_kill = story.checkpoint_steps()
    seconds = story.recovered(
        marks, {"worker-0": "session at", "worker-1": "worker:1 serving"}
    )
    return {"recover_s": seconds, "at_kill": at_kill,
            "restored": story.sessions(marks, "worker-0")[0]}  # fmt: skip


def ps_killed(story, name, between_steps=False, worker_recovering=False):
    """ps task ``name`` killed; the launcher restarts it, the chief restores the last
    checkpoint into both ps tasks, and every worker steps again.

    ``between_steps``: both workers stopped first and continued once the new ps
    answers (no step in flight). ``worker_recovering``: worker-1 killed first, the ps
    once worker-1 was restarted and before it steps."""
    marks = story.marks()
    events = {"worker-0": "session at", "worker-1": "session at"}
    if between_steps:
        story.signal(BOTH, signal.SIGSTOP)
    if worker_recovering:
        before = story.pid("worker-1")
        story.signal(["worker-1"], signal.SIGKILL)
        story.wait(lambda: story.pid("worker-1") != before, "worker-1 restarted")
        events["worker-1"] = "worker:1 serving"
    at_kill = story.checkpoint_steps()
    story.signal([name], signal.SIGKILL)
    start = time.monotonic()
    if between_steps:
        ps_serving = f"{name.replace('-', ':')} serving"
        story.wait(lambda: ps_serving in story.since(marks, name), "the ps restarted")
        story.signal(BOTH, signal.SIGCONT)
    story.recovered(marks, events)
    return {"recover_s": time.monotonic() - start, "at_kill": at_kill,
            "restored": story.sessions(marks, "worker-0")[0]}  # fmt: skip


def short_partition(story):
    """ps-0 stopped (SIGSTOP) shorter than a step may take: the run goes on, no session
    re-created, nothing restarted."""
    marks, restarts = story.marks(), dict(story.cluster.restarts)
    story.signal(["ps-0"], signal.SIGSTOP)
    time.sleep(SHORT_PARTITION_S)
    story.signal(["ps-0"], signal.SIGCONT)
    seconds = story.recovered(story.marks(), {"worker-0": "step", "worker-1": "step"})
    sessions = [story.sessions(marks, name) for name in BOTH]
    return {"recover_s": seconds, "sessions": sessions,
            "restarted": restarts != story.cluster.restarts}  # fmt: skip


def long_partition(story):
    """ps-1 stopped (SIGSTOP) past the operation timeout: the run fails naming it."""
    story.signal(["ps-1"], signal.SIGSTOP)
    start = time.monotonic()
    while not story.failure and time.monotonic() - start < WAIT_S:
        time.sleep(0.05)
    seconds = time.monotonic() - start
    story.supervisor.join(WAIT_S)
    closing = time.monotonic()
    story.cluster.close()
    return {"fail_s": seconds, "close_s": time.monotonic() - closing,
            "error": str(story.failure[0]) if story.failure else None}  # fmt: skip


FAULTS = {
    "straggler": straggler,
    "worker_killed": worker_killed,
    "two_workers_killed": two_workers_killed,
    "ps_killed_mid_step": lambda story: ps_killed(story, "ps-1"),
    "ps_killed_between_steps": lambda story: ps_killed(story, "ps-0", between_steps=True),
    "ps_killed_while_a_worker_recovers": lambda story: ps_killed(
        story, "ps-1", worker_recovering=True
    ),
    "short_partition": short_partition,
    "long_partition": long_partition,
}


@pytest.fixture(scope="module")
def story(tmp_path_factory):
    """The cluster's run through :data:`FAULTS`, in order: ``{fault: its record}``,
    each fault's exception in place of its record, and the run's leftovers."""
    story = Story(str(tmp_path_factory.mktemp("faults")))
    records, start = {}, time.monotonic()
    try:
        story.cluster.start_all()
        story.supervisor.start()
        records["up_s"] = story.recovered(story.marks(), dict.fromkeys(BOTH, "step"))
        for name, fault in FAULTS.items():
            try:
                records[name] = fault(story)
            except AssertionError as err:
                records[name] = err
                break
    finally:
        story.caught.append(signal.SIGTERM)
        story.supervisor.join(WAIT_S)
        story.cluster.close()
        story.network.close()
    records.update(
        total_s=time.monotonic() - start,
        cluster=story.jobs,
        restarts=story.cluster.restarts,
        left=forkserver.processes_naming(story.directory),
        holder=story.network.holder.poll(),
        checkpoint=tf.train.latest_checkpoint(os.path.join(story.directory, "ckpt")),
    )  # fmt: skip
    print({k: v for k, v in records.items() if k != "checkpoint"})
    return records


def record(story, fault):
    found = story.get(fault)
    if isinstance(found, BaseException) or found is None:
        pytest.fail(f"{fault}: {found or 'not reached'}")
    return found


CLUSTER = pytest.mark.xdist_group("faults_cluster")  # one cluster, on one pytest worker


@CLUSTER
@pytest.mark.slow
def test_a_straggler_holds_nobody_up_and_goes_on_unrestarted(story):
    found = record(story, "straggler")
    assert found["chief_steps_meanwhile"] >= 2  # the chief went on without it
    assert not found["restarted"] and found["recover_s"] < WAIT_S


@CLUSTER
@pytest.mark.slow
def test_killed_workers_are_restarted_and_the_new_chief_restores_the_last_checkpoint(
    story,
):
    assert record(story, "worker_killed")["recover_s"] < WAIT_S
    both = record(story, "two_workers_killed")
    assert both["at_kill"] and both["restored"] >= max(both["at_kill"])
    assert story["restarts"]["worker-0"] >= 1
    assert story["restarts"]["worker-1"] >= 2  # the same worker twice, and more


@CLUSTER
@pytest.mark.slow
@pytest.mark.parametrize(
    "fault",
    ["ps_killed_mid_step", "ps_killed_between_steps", "ps_killed_while_a_worker_recovers"],
)
def test_a_killed_ps_is_restarted_and_the_chief_restores_the_last_checkpoint(story, fault):
    found = record(story, fault)
    assert found["at_kill"] and found["restored"] >= max(found["at_kill"])
    assert found["recover_s"] < WAIT_S


@CLUSTER
@pytest.mark.slow
def test_a_short_partition_of_a_ps_only_delays_the_steps(story):
    found = record(story, "short_partition")
    assert found["sessions"] == [[], []] and not found["restarted"]
    assert found["recover_s"] < WAIT_S


@CLUSTER
@pytest.mark.slow
def test_a_long_partition_fails_the_run_naming_the_silent_ps_and_leaves_nothing(story):
    found = record(story, "long_partition")
    ps_1 = story["cluster"]["ps"][1]
    assert re.search(
        r"worker-\d.log: expected worker-\d to run to the end, found worker-\d exited "
        r"with 2: error: worker:\d: expected a step within the operation timeout of 3 s, "
        rf"found none, with ps {re.escape(ps_1)} \(logs/ps-1.log\) silent",
        found["error"],
    ), found["error"]
    assert found["fail_s"] < WAIT_S  # bounded: the operation timeout, then the probe
    assert found["close_s"] < STOP_GRACE_S  # the stopped ps does not hold the close up
    assert story["left"] == [] and story["holder"] is not None


@CLUSTER
@pytest.mark.slow
@pytest.mark.parametrize("into", [2, 1])
def test_the_checkpoint_of_3_shards_over_2_ps_tasks_restores_into_2_and_into_1(story, into):
    checkpoint = story["checkpoint"]
    ids, _ = examples(seed=99, count=64)
    outputs = {shards: predictions_after_restore(checkpoint, shards, ids)
               for shards in (SHARDS, into)}  # fmt: skip
    table = tf.train.load_variable(checkpoint, "wide/table")
    readout = tf.train.load_variable(checkpoint, "wide/readout")
    expected = (table[ids].sum(axis=1) @ readout)[:, 0]
    # float32 sums in another order than numpy's: a round-off of ~3e-8 on outputs of
    # ~0.1-0.5, which a trained output near 0 shows as a relative error (0.0025 was
    # 1.2e-5 off): bounded absolutely too, by 1e-6 of the largest output's scale
    scale = np.abs(expected).max()
    np.testing.assert_allclose(outputs[SHARDS], expected, rtol=1e-5, atol=1e-6 * scale)
    np.testing.assert_array_equal(outputs[into], outputs[SHARDS])


def predictions_after_restore(checkpoint, shards, ids):
    """The model's predictions at ``ids`` with its table in ``shards`` shards, restored
    from ``checkpoint``."""
    with tf.Graph().as_default():
        ids_in = v1.placeholder(tf.int64, [None, IDS_PER_EXAMPLE])
        predictions, _ = model(ids_in, tf.zeros([tf.shape(ids_in)[0]]), shards)
        variables = [v for v in v1.global_variables() if v.op.name.startswith("wide/")]
        with v1.Session() as session:
            v1.train.Saver(variables).restore(session, checkpoint)
            return session.run(predictions, {ids_in: ids})


# --- no cluster: the budget, the placement, the timeout's message --------------------


def placed_model(ps_tasks):
    """The model and its Adagrad slots placed by ``replica_device_setter`` over
    ``ps_tasks`` ps tasks; returns the graph's variables."""
    with v1.device(v1.train.replica_device_setter(ps_tasks=ps_tasks)):
        ids = v1.placeholder(tf.int64, [None, IDS_PER_EXAMPLE])
        _, loss = model(ids, v1.placeholder(tf.float32, [None]), SHARDS)
        v1.train.AdagradOptimizer(0.05).minimize(loss)
    return v1.global_variables()


def test_the_table_does_not_fit_one_ps_task_s_budget_but_fits_two(graph):
    variables = placed_model(ps_tasks=2)
    spread = partitioned.bytes_per_task(variables)
    assert sorted(spread) == ["/job:ps/task:0", "/job:ps/task:1"]
    assert sum(spread.values()) > PS_BUDGET >= max(spread.values())
    partitioned.check_memory_budget(variables, PS_BUDGET)
    with tf.Graph().as_default():
        one = placed_model(ps_tasks=1)
        with pytest.raises(
            ZooError,
            match=rf"/job:ps/task:0: expected at most {PS_BUDGET} bytes of variables on a "
            rf"ps task, found {sum(spread.values())} \(wide/table/part_\d.*, \.\.\.\); "
            "split the large variables with a partitioner",
        ):
            partitioned.check_memory_budget(one, PS_BUDGET)


@pytest.mark.slow
def test_sync_a_stopped_worker_ends_the_other_naming_it(tmp_path, capfd):
    """On collectives (zoo.parallel.sync) worker 1 stopped for good (SIGSTOP) would hold
    worker 0 in its all-reduce forever: it ends after the operation timeout and a
    probe, with a zoo error naming worker 1 silent (the launcher then restarts both from
    the last checkpoint; a killed worker named absent: tests/zoo/test_sync.py)."""
    from tests.zoo.test_sync import EVERY, checkpointed_step, start_workers

    workers = start_workers(
        tmp_path, tmp_path / "checkpoints", 1, operation_timeout=OPERATION_TIMEOUT_S
    )
    try:
        deadline = time.monotonic() + WAIT_S
        while checkpointed_step(tmp_path / "checkpoints") < EVERY:
            assert time.monotonic() < deadline and all(w.poll() is None for w in workers)
            time.sleep(0.01)
        workers[1].send_signal(signal.SIGSTOP)
        start = time.monotonic()
        assert workers[0].wait(WAIT_S) == 1
        seconds = time.monotonic() - start
    finally:
        for worker in workers:
            worker.kill()
            worker.wait()
    assert OPERATION_TIMEOUT_S <= seconds < OPERATION_TIMEOUT_S + 20, seconds
    error = capfd.readouterr().err.strip().splitlines()[-1]
    assert re.fullmatch(
        rf"zoo.parallel.sync.LostWorkerError: worker:0: expected every worker in each "
        rf"synchronous step, found no step within the timeout of {OPERATION_TIMEOUT_S} s, "
        r"with worker 1 \(127.0.0.1:\d+, logs/worker-1.log\) silent; restart every "
        r"worker from the last checkpoint .*",
        error,
    ), error
