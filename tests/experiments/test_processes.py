"""Tasks in worker processes: outcomes in order, errors by message, a signal stops the
workers (each checkpoints, the unstarted skip) and the run then resumes to the end."""

import functools
import os
import signal
import threading
import time

import pytest

from experiments.harness import processes
from layers.errors import RunInterrupted, ZooError

STEPS = 300


def count(directory, name, steps=STEPS):
    """A resumable task: counts to ``steps`` in ``<directory>/<name>``, a step per 10 ms;
    on SIGINT/SIGTERM it keeps its count (its checkpoint) and stops. Returns its name,
    the count it started from, and whether it leads its own process group."""
    path = os.path.join(directory, name)
    started = done = read_count(path)
    caught = []
    handlers = {s: signal.signal(s, lambda s, _: caught.append(s)) for s in (2, 15)}
    try:
        for step in range(done, steps):
            processes.stop_if_asked()
            if caught:
                raise RunInterrupted(f"{name}: stopped at {step}", caught[0], "again")
            time.sleep(0.01)
            with open(path + ".new", "w") as f:
                f.write(str(step + 1))
            os.replace(path + ".new", path)  # a reader never sees half a count
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    return name, started, os.getpgrp() == os.getpid()


def refuse(name):
    raise ZooError(f"{name}: expected something, found nothing; fix it")


def read_count(path):
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return int(f.read())


def counts(directory, names):
    return [read_count(os.path.join(directory, name)) for name in names]


def test_one_job_runs_the_tasks_here_in_order(tmp_path):
    outcomes = processes.run_in_processes(
        functools.partial(count, str(tmp_path), steps=3), [("a",), ("b",)], 1, "t", "c"
    )
    assert outcomes == [("a", 0, False), ("b", 0, False)]  # this process, its group


@pytest.mark.slow
def test_workers_return_outcomes_in_order_and_errors_by_message(tmp_path):
    tasks = [("a",), ("b",), ("c",)]
    outcomes = processes.run_in_processes(
        functools.partial(count, str(tmp_path), steps=3), tasks, 2, "t", "c"
    )
    assert outcomes == [(n, 0, True) for n in "abc"]  # each worker leads its own group
    with pytest.raises(ZooError, match="^b: expected something, found nothing; fix it$"):
        processes.run_in_processes(refuse, [("b",)], 2, "t", "c")


@pytest.mark.slow
def test_a_signal_stops_the_workers_and_the_run_resumes(tmp_path):
    names = ["a", "b", "c"]
    tasks = [(name,) for name in names]
    task = functools.partial(count, str(tmp_path))

    def interrupt_once_both_count():
        while min(counts(tmp_path, names[:2])) < 3:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_both_count, daemon=True).start()
    with pytest.raises(RunInterrupted) as info:
        processes.run_in_processes(task, tasks, 2, "toy", "python -m toy --resume R")
    assert str(info.value) == (
        "toy: interrupted by SIGINT; 2 runs checkpointed mid-way, 1 not started; "
        "resume with: python -m toy --resume R"
    )
    assert info.value.signum == signal.SIGINT
    assert info.value.command == "python -m toy --resume R"
    stopped = counts(tmp_path, names)
    assert all(3 <= n < STEPS for n in stopped[:2]) and stopped[2] == 0

    outcomes = processes.run_in_processes(task, tasks, 2, "toy", "again")
    assert [started for _, started, _ in outcomes] == stopped  # each went on from there
    assert counts(tmp_path, names) == [STEPS] * 3
