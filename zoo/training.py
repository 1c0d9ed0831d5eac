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

With a :class:`zoo.checkpoints.Checkpointer`, the loop saves variables
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
from zoo.batches import GraphBatches
from zoo.checkpoints import Checkpointer, LoopCheckpoint, RunInterrupted

__all__ = [
    "Checkpointer",
    "LoopCheckpoint",
    "NonFiniteLossError",
    "RunInterrupted",
    "add_scalar",
    "run_steps",
    "train_loop",
]


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
def _signals_caught(enabled):
    """Collects SIGINT/SIGTERM instead of dying; a second signal acts as before.

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
    ``--resume``), saves one every ``checkpointer.every`` steps and at the end,
    and on SIGINT/SIGTERM saves one, writes ``partial.json`` and raises
    :class:`RunInterrupted`, whose message holds the command that resumes.

    Args:
        session: the ``tf.compat.v1.Session``, variables initialized.
        train_op: the op to run each step.
        loss: scalar tensor fetched at steps 0, log_every, 2*log_every, ...
            (and at every step while the NaN guard is on).
        batches: a :class:`zoo.batches.GraphBatches` (the model reads its
            tensors: no ``feed_dict``, the fast path), or a
            :class:`zoo.data.DataSet` whose ``next_batch`` goes through ``feed``.
        steps: number of steps.
        batch_size: examples per step.
        feed: with a DataSet, function ``(images, labels) -> feed_dict``; with
            GraphBatches, None or a function ``() -> feed_dict`` of extra values.
        log_every: logging period in steps.
        desc: label of the progress bar and of the loop's checkpoints.
        on_log: optional ``on_log(step, loss)`` called at each logged step.
        metrics: optional dict of tensors fetched with the loss at each logged
            step; each logged entry then is ``(step, loss, {name: value})``.
        writer: optional TensorBoard writer that receives the logged loss.
        checkpointer: optional :class:`Checkpointer` of the run.
        nan_guard: check the loss at every step and stop on NaN/Inf; None means
            on exactly when a ``checkpointer`` is given.

    Returns:
        ``(logged, steps_per_second)``: the list of ``(step, loss)`` pairs (or
        triples, with ``metrics``) and the speed over the whole loop (resumed
        parts included).

    Raises:
        NonFiniteLossError: the guard is on and the loss became NaN or Inf.
        RunInterrupted: SIGINT/SIGTERM arrived; a checkpoint was written.
        ZooError: the checkpoint to resume from does not fit (see
            :class:`Checkpointer`), or ``batches`` and ``feed`` do not go together.
    """
    next_feed = _feeder(session, batches, batch_size, feed, desc)
    step_runner = _StepRunner(session, train_op, loss, metrics)
    checkpoints = None
    if checkpointer is not None:
        checkpoints = checkpointer.open(session, batches, desc, steps, batch_size)
    return run_steps(
        lambda with_loss: step_runner(next_feed(), with_loss),
        steps,
        checkpoints,
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
    log_every=1000,
    desc="train",
    on_log=None,
    writer=None,
    nan_guard=None,
):
    """The loop of :func:`train_loop` around any step: logging, NaN guard, checkpoints.

    Args:
        run_step: ``run_step(with_loss)`` runs one training step; with
            ``with_loss`` it returns ``(loss, metrics)``, metrics a dict or None.
        steps: number of steps.
        checkpoints: optional :class:`LoopCheckpoint` of the loop (restored
            first, saved every ``checkpoints.owner.every`` steps, at the end
            and on SIGINT/SIGTERM).
        log_every, desc, on_log, writer, nan_guard: as :func:`train_loop`.

    Returns:
        ``(logged, steps_per_second)`` as :func:`train_loop`.

    Raises:
        NonFiniteLossError, RunInterrupted, ZooError: as :func:`train_loop`.
    """
    guard = checkpoints is not None if nan_guard is None else nan_guard
    start, logged, seconds = checkpoints.restore() if checkpoints else (0, [], 0.0)
    last_finite = None
    began = time.perf_counter()
    with _signals_caught(enabled=bool(checkpoints)) as caught:
        for step in tqdm(
            range(start, steps),
            initial=start,
            total=steps,
            desc=desc,
            disable=None,
            leave=False,
        ):
            if step % log_every and not guard:
                run_step(False)
            else:
                value, values = run_step(True)
                value = float(value)
                if guard and not math.isfinite(value):
                    raise _non_finite_error(desc, step, value, last_finite, checkpoints)
                last_finite = (step, value)
                if step % log_every == 0:
                    entry = (step, value) if values is None else (step, value, values)
                    logged.append(entry)
                    _report(desc, step, value, on_log, writer)
            done = step + 1
            every = checkpoints.owner.every if checkpoints else 0
            if checkpoints and (done % every == 0 or done == steps or caught):
                checkpoints.save(done, logged, seconds + time.perf_counter() - began)
            if caught:
                raise checkpoints.interrupted(caught[0], done, logged)
    return logged, steps / (seconds + time.perf_counter() - began)


def _feeder(session, batches, batch_size, feed, desc):
    """Returns ``next_feed() -> feed_dict`` of one training step from ``batches``."""
    if not isinstance(batches, GraphBatches):
        if feed is None:
            raise ZooError(
                f"{desc}: expected feed(images, labels) -> feed_dict with a DataSet, "
                "found none; pass feed=, or GraphBatches whose tensors the model reads"
            )
        return lambda: feed(*batches.next_batch(batch_size))
    if batch_size != batches.batch_size:
        raise ZooError(
            f"{desc}: expected batch_size {batches.batch_size} as the GraphBatches were "
            f"built with, found {batch_size}; pass the same batch size to both"
        )
    if feed is None:
        return lambda: batches.next_feed(session)
    return lambda: {**batches.next_feed(session), **feed()}


class _StepRunner:
    """Runs ``train_op`` (and fetches ``loss`` and metrics) through cached callables.

    A callable skips the per-call work of ``session.run`` (fetch and feed
    handling in Python), a measurable share of a small model's step.
    """

    def __init__(self, session, train_op, loss, metrics):
        self.session = session
        self.fetches = {False: train_op, True: (train_op, loss, metrics or {})}
        self.callables = {}

    def __call__(self, feed_dict, with_loss=False):
        """Runs one step; with ``with_loss`` returns ``(loss, {name: value} or None)``."""
        key = (with_loss, tuple(feed_dict))
        if key not in self.callables:
            self.callables[key] = self.session.make_callable(
                self.fetches[with_loss], list(feed_dict)
            )
        result = self.callables[key](*feed_dict.values())
        if with_loss:
            _, loss, values = result
            return loss, {name: float(value) for name, value in values.items()} or None
        return None


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
