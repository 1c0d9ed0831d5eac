"""The training loop as a library: logging, NaN guard, checkpoints, SIGINT/SIGTERM.

Usage::

    from zoo import training

    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)
        batches.initialize(session)
        logged, steps_per_second = training.train_loop(
            session, train_op, model.loss, batches, steps=10001, batch_size=128,
            checkpointer=training.Checkpointer("runs/mine", resume=False),
        )

With a :class:`zoo.training.checkpoints.Checkpointer`, the loop saves variables
(optimizer slots and any global step included), the step, the batch iterator
position and the numpy and Python RNG states every ``every`` steps; SIGINT or
SIGTERM saves and raises :class:`RunInterrupted` with the command that
resumes; a resumed loop continues to the same final numbers; a NaN or Inf loss
stops the run at once with :class:`NonFiniteLossError`.
"""

import contextlib
import math
import signal
import threading
import time

import tensorflow as tf
from tqdm import tqdm

from layers.errors import ZooError
from zoo.data.batches import GraphBatches
from zoo.training.steps import RepeatedStep, graph_updates


class NonFiniteLossError(ZooError):
    """The loss became NaN or Inf; the last good checkpoint is left intact.

    Attributes:
        step: the step whose loss was not finite.
        last_finite: ``(step, loss)`` of the last finite loss seen, or None.
        checkpoint: path prefix of the last good checkpoint, or None.
    """

    def __init__(self, message, step, last_finite, checkpoint):
        super().__init__(message)
        self.step, self.last_finite, self.checkpoint = step, last_finite, checkpoint


def add_scalar(writer, tag, value, step):
    """Writes one scalar to a TensorBoard ``FileWriter``."""
    value = tf.compat.v1.Summary.Value(tag=tag, simple_value=float(value))
    writer.add_summary(tf.compat.v1.Summary(value=[value]), step)


@contextlib.contextmanager
def signals_caught(enabled):
    """Collects SIGINT/SIGTERM instead of dying; a second signal acts as before.

    The loop checks the list after each run and stops cleanly (the parameter
    server's tasks do the same)::

        with signals_caught(enabled=True) as caught:
            while not caught:
                ...  # one unit of work

    Args:
        enabled: False yields an empty list and leaves the handlers alone (also
            the case outside the main thread).

    Yields:
        The list of signal numbers received, empty until one arrives.
    """
    caught = []
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield caught
        return
    previous = {}

    def restore_handlers():
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)

    def catch(signum, frame):
        caught.append(signum)
        restore_handlers()

    for signum in (signal.SIGINT, signal.SIGTERM):
        previous[signum] = signal.signal(signum, catch)
    try:
        yield caught
    finally:
        restore_handlers()


def train_loop(
    session,
    train_op,
    loss,
    batches,
    steps,
    batch_size,
    feed=None,
    *,
    log_every=1000,
    desc="train",
    on_log=None,
    metrics=None,
    writer=None,
    checkpointer=None,
    nan_guard=None,
):
    """Runs ``steps`` training steps, fetching the loss every ``log_every`` steps.

    With a ``checkpointer``, the loop first restores its last checkpoint (on
    resume), saves one every ``checkpointer.every`` steps and at the end,
    and on SIGINT/SIGTERM saves one, writes ``partial.json`` and raises
    :class:`RunInterrupted`, whose message holds the command that resumes.

    With a :class:`RepeatedStep` (:func:`repeat_step`), each ``session.run``
    trains K steps; runs are cut short at checkpoint steps and at the end, so
    logging, checkpoints and the batches are exactly those of one step per
    run, the NaN guard checks every step's loss (and names the first bad one),
    and a signal is answered within one run.

    A plain ``train_op`` runs with the graph's update ops
    (``GraphKeys.UPDATE_OPS``: :class:`layers.BatchNorm`'s moving statistics);
    a :class:`RepeatedStep` runs those it built in its loop.

    Args:
        session: the ``tf.compat.v1.Session``, variables initialized.
        train_op: the op to run each step, or a :class:`RepeatedStep`.
        loss: scalar tensor fetched at steps 0, log_every, 2*log_every, ...
            (and at every step while the NaN guard is on); None with a
            :class:`RepeatedStep`, whose ``losses`` are used.
        batches: a :class:`zoo.data.batches.GraphBatches` (the model reads its
            tensors: no ``feed_dict``, the fast path), or a
            :class:`zoo.data.DataSet` whose ``next_batch`` goes through ``feed``.
        steps: number of steps.
        batch_size: examples per step.
        feed: with a DataSet, function ``(images, labels) -> feed_dict``; with
            GraphBatches, None or a function ``() -> feed_dict`` of extra values
            (with a RepeatedStep, held for the K steps of a run).
        log_every: logging period in steps.
        desc: label of the progress bar and of the loop's checkpoints.
        on_log: optional ``on_log(step, loss)`` called at each logged step.
        metrics: optional dict of tensors fetched with the loss at each logged
            step; each logged entry then is ``(step, loss, {name: value})``
            (with a RepeatedStep, its own ``metrics`` are used instead).
        writer: optional TensorBoard writer that receives the logged loss.
        checkpointer: optional :class:`Checkpointer` of the run.
        nan_guard: check the loss at every step and stop on NaN/Inf; None means
            on exactly when a ``checkpointer`` is given.

    Returns:
        ``(logged, steps_per_second)``: the list of ``(step, loss)`` pairs (or
        triples, with metrics) and the speed over the whole loop (resumed
        parts included).

    Raises:
        NonFiniteLossError: the guard is on and the loss became NaN or Inf.
        RunInterrupted: SIGINT/SIGTERM arrived; a checkpoint was written.
        ZooError: the checkpoint to resume from does not fit (see
            :class:`Checkpointer`), or ``train_op``, ``loss``, ``batches`` and
            ``feed`` do not go together.
    """
    next_feed = _feeder(session, batches, batch_size, feed, desc)
    step_runner = _StepRunner(session, train_op, loss, metrics, desc)
    checkpoints = None
    if checkpointer is not None:
        checkpoints = checkpointer.open(session, batches, desc, steps, batch_size)
    return run_steps(
        lambda count, with_loss: step_runner(next_feed(count), count, with_loss),
        steps,
        checkpoints,
        steps_per_run=step_runner.steps_per_run,
        log_every=log_every,
        desc=desc,
        on_log=on_log,
        writer=writer,
        nan_guard=nan_guard,
    )


def run_steps(
    run_step,
    steps,
    checkpoints=None,
    *,
    steps_per_run=1,
    log_every=1000,
    desc="train",
    on_log=None,
    writer=None,
    nan_guard=None,
):
    """The loop of :func:`train_loop` around any step: logging, NaN guard, checkpoints.

    ``run_step`` trains: batch norm's moving statistics move where its step
    runs them (eagerly and in ``tf.function`` with the call; in a graph, run
    :func:`with_updates` of the training op).

    Args:
        run_step: ``run_step(count, with_loss)`` runs ``count`` training steps
            (1 <= count <= steps_per_run); with ``with_loss`` it returns
            ``(losses, metrics)``: the ``count`` losses and a dict name ->
            ``count`` values, or None.
        steps: number of steps.
        checkpoints: optional :class:`LoopCheckpoint` of the loop (restored
            first, saved every ``checkpoints.owner.every`` steps, at the end
            and on SIGINT/SIGTERM).
        steps_per_run: most steps one ``run_step`` call trains.
        log_every, desc, on_log, writer, nan_guard: as :func:`train_loop`.

    Returns:
        ``(logged, steps_per_second)`` as :func:`train_loop`.

    Raises:
        NonFiniteLossError, RunInterrupted, ZooError: as :func:`train_loop`.
    """
    guard = checkpoints is not None if nan_guard is None else nan_guard
    start, logged, seconds = checkpoints.restore() if checkpoints else (0, [], 0.0)
    every = checkpoints.owner.every if checkpoints else steps
    last_finite = None
    began = time.perf_counter()
    progress = tqdm(initial=start, total=steps, desc=desc, disable=None, leave=False)
    step = start
    with progress, signals_caught(enabled=bool(checkpoints)) as caught:
        while step < steps:
            count = min(steps_per_run, steps - step, every - step % every)
            first_logged = -(-step // log_every) * log_every
            with_loss = guard or first_logged < step + count
            result = run_step(count, with_loss)
            if with_loss:
                losses, values = result
                losses = [float(value) for value in losses]
                for offset, value in enumerate(losses):
                    if guard and not math.isfinite(value):
                        raise _non_finite_error(
                            desc, step + offset, value, last_finite, checkpoints
                        )
                    last_finite = (step + offset, value)
                for logged_step in range(first_logged, step + count, log_every):
                    value = losses[logged_step - step]
                    entry = (logged_step, value)
                    if values is not None:
                        offset = logged_step - step
                        entry += ({name: _plain(v[offset]) for name, v in values.items()},)
                    logged.append(entry)
                    _report(desc, logged_step, value, on_log, writer)
            step += count
            progress.update(count)
            if checkpoints and (step % every == 0 or step == steps or caught):
                checkpoints.save(step, logged, seconds + time.perf_counter() - began)
            if caught:
                raise checkpoints.interrupted(caught[0], step, logged)
    return logged, steps / (seconds + time.perf_counter() - began)


def _plain(value):
    """A numpy scalar as a Python number (JSON-able); anything else as it is."""
    return value.item() if hasattr(value, "item") else value


def _feeder(session, batches, batch_size, feed, desc):
    """Returns ``next_feed(count) -> feed_dict`` of a run of ``count`` steps."""
    if not isinstance(batches, GraphBatches):
        if feed is None:
            raise ZooError(
                f"{desc}: expected feed(images, labels) -> feed_dict with a DataSet, "
                "found none; pass feed=, or GraphBatches whose tensors the model reads"
            )
        return lambda count: feed(*batches.next_batch(batch_size))
    if batch_size != batches.batch_size:
        raise ZooError(
            f"{desc}: expected batch_size {batches.batch_size} as the GraphBatches were "
            f"built with, found {batch_size}; pass the same batch size to both"
        )
    if feed is None:
        return lambda count: batches.next_feed(session, count)
    return lambda count: {**batches.next_feed(session, count), **feed()}


class _StepRunner:
    """Runs a step (fetching its losses and metrics) through cached callables.

    A callable skips the per-call work of ``session.run`` (fetch and feed
    handling in Python), a measurable share of a small model's step.
    """

    def __init__(self, session, train_op, loss, metrics, desc):
        self.repeated = isinstance(train_op, RepeatedStep)
        if self.repeated:
            if loss is not None or metrics:
                raise ZooError(
                    f"{desc}: expected loss=None and no metrics= with a RepeatedStep "
                    f"(it carries its own), found loss={loss!r}, metrics={metrics!r}; "
                    "pass None and return metrics from repeat_step's loss_fn"
                )
            self.count, self.steps_per_run = train_op.count, train_op.steps_per_run
            loss, metrics = train_op.losses, train_op.metrics
            train_op = train_op.train_op
        else:
            self.count, self.steps_per_run = None, 1
            updates = graph_updates(session.graph)
            train_op = [train_op, *updates] if updates else train_op
        self.session = session
        self.fetches = {False: train_op, True: (train_op, loss, metrics or {})}
        self.callables = {}

    def __call__(self, feed_dict, count, with_loss):
        """Runs ``count`` steps; with ``with_loss``, returns ``(losses, metrics)``.

        ``losses`` has one value per step and ``metrics`` maps each name to one
        value per step (None without metrics).
        """
        if count != self.steps_per_run:
            feed_dict = {**feed_dict, self.count: count}
        key = (with_loss, tuple(feed_dict))
        if key not in self.callables:
            self.callables[key] = self.session.make_callable(
                self.fetches[with_loss], list(feed_dict)
            )
        result = self.callables[key](*feed_dict.values())
        if not with_loss:
            return None
        _, losses, values = result
        if not self.repeated:  # one step: scalars
            losses, values = [losses], {name: [v] for name, v in values.items()}
        return losses, values or None


def _report(desc, step, value, on_log, writer):
    if on_log:
        on_log(step, value)
    if writer:
        add_scalar(writer, f"{desc}/loss", value, step)


def _non_finite_error(desc, step, value, last_finite, checkpoints):
    """Returns the :class:`NonFiniteLossError` for ``value`` at ``step`` of loop ``desc``.

    Args:
        desc: the loop.
        step: the step whose loss is not finite.
        value: that loss.
        last_finite: ``(step, loss)`` of the last finite loss, or None.
        checkpoints: the loop's checkpoint (its ``last`` path is named), or None.
    """
    checkpoint = checkpoints.last if checkpoints else None
    last = (
        f"last finite loss {last_finite[1]:.6g} at step {last_finite[0]}"
        if last_finite
        else "no finite loss before it"
    )
    kept = (
        f"last good checkpoint {checkpoint} left intact" if checkpoint else "no checkpoint"
    )
    return NonFiniteLossError(
        f"{desc}: expected a finite loss, found {value} at step {step}; {last}; {kept}; "
        "lower the learning rate or check the input data",
        step,
        last_finite,
        checkpoint,
    )
