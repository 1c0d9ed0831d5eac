"""Tasks (a run per seed...) in worker processes, SIGINT/SIGTERM passed on to them once.

Each task runs ``function(*task)`` in a worker of its own, forked from a server
that started TensorFlow once (multiprocessing's "forkserver": no start of its own
per task); the workers leave the terminal's process group, so a Ctrl-C reaches
this process alone, which passes it on: each running task stops as on a signal of
its own (its training loop checkpoints and raises RunInterrupted) the next time it
calls :func:`stop_if_asked`, and tasks not started yet are skipped. Importing this
module imports no TensorFlow; the server starts it as the parent did, quietly unless
the user chose a log level (:mod:`experiments.harness.startup`).

Usage::

    def run_seed(args, run, seed):            # module level: the workers import it
        ...                                   # in the training step:
        processes.stop_if_asked()             # stops here once the parent is signalled

    outcomes = processes.run_in_processes(
        functools.partial(run_seed, args, run), [(0,), (1,)], args.jobs, "dqn",
        run.command,
    )
"""

import multiprocessing
import os
import signal

from layers.errors import RunInterrupted, ZooError

_STOP = None
"""In a worker process: the shared signal number the parent received (0: none)."""


def stop_if_asked():
    """In a worker, raises once the signal the parent received; elsewhere does nothing.

    Call it where the task's loop can stop (its signal handler then checkpoints
    and stops, as on a signal of its own).
    """
    global _STOP
    if _STOP is not None and _STOP.value:
        signum, _STOP = _STOP.value, None
        signal.raise_signal(signum)


def _start_worker(stop):
    global _STOP
    os.setpgrp()  # a Ctrl-C reaches the parent alone, which passes it on once
    _STOP = stop


def _work(function, task):
    """Runs one task in a worker; returns ``("done", outcome)``, or how it stopped.

    Zoo errors come back as text: their extra constructor arguments do not
    survive pickling.
    """
    if _STOP is not None and _STOP.value:
        return "skipped", None
    try:
        return "done", function(*task)
    except RunInterrupted as err:
        return "interrupted", str(err)
    except ZooError as err:
        return "error", str(err)


def run_in_processes(function, tasks, jobs, name, command):
    """Runs ``function(*task)`` for each task; returns the outcomes in task order.

    With ``jobs`` 1 the tasks run here, one after the other; otherwise in
    ``jobs`` worker processes (forked from the server, one per task). SIGINT/SIGTERM to this
    process is then passed on: each running task stops at its next
    :func:`stop_if_asked`, tasks not started yet are skipped.

    Args:
        function: a module-level function (or a ``functools.partial`` of one),
            picklable with its arguments.
        tasks: argument tuples, one per task.
        jobs: worker processes; 1 runs the tasks in this process.
        name: names the run in the interruption's message.
        command: the shell command that resumes the run.

    Returns:
        ``[function(*task) for task in tasks]``.

    Raises:
        RunInterrupted: a signal stopped the run (the message counts the tasks
            stopped mid-way and those not started, and names ``command``).
        ZooError: a task failed with a zoo error (its message).
    """
    if jobs == 1:
        return [function(*task) for task in tasks]
    context = multiprocessing.get_context("forkserver")
    # The server imports these once, the script (as the spawn method would) first;
    # a server already running (an earlier call here) keeps what it has.
    context.set_forkserver_preload(["__main__", "experiments.harness.tensorflow_preload"])
    stop = context.Value("i", 0)

    def forward(signum, frame):
        if not stop.value:
            stop.value = signum

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with context.Pool(jobs, _start_worker, (stop,), maxtasksperchild=1) as pool:
            pending = [pool.apply_async(_work, (function, task)) for task in tasks]
            outcomes = [result.get() for result in pending]
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    for kind, value in outcomes:
        if kind == "error":
            raise ZooError(value)
    if stop.value:
        kinds = [kind for kind, _ in outcomes]
        raise RunInterrupted(
            f"{name}: interrupted by {signal.Signals(stop.value).name}; "
            f"{kinds.count('interrupted')} runs checkpointed mid-way, "
            f"{kinds.count('skipped')} not started; resume with: {command}",
            stop.value,
            command,
        )
    return [value for _, value in outcomes]
