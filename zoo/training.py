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
import dataclasses
import math
import signal
import threading
import time

import tensorflow as tf
from tqdm import tqdm

from layers.errors import ScopeError, ZooError
from layers.variables import function_of_graph
from zoo.batches import GraphBatches
from zoo.checkpoints import Checkpointer, LoopCheckpoint, RunInterrupted

__all__ = [
    "Checkpointer",
    "RepeatedStep",
    "LoopCheckpoint",
    "NonFiniteLossError",
    "RunInterrupted",
    "add_scalar",
    "loss_and_metrics",
    "repeat_step",
    "repeat_updates",
    "run_steps",
    "signals_caught",
    "train_loop",
    "with_updates",
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


@dataclasses.dataclass(frozen=True)
class RepeatedStep:
    """Training steps that one ``session.run`` repeats in a loop; see :func:`repeat_step`.

    Attributes:
        train_op: one run trains ``count`` steps (default ``steps_per_run``).
        losses: [count] the loss of each of those steps, in order.
        metrics: dict name -> [count] tensor of each step's metric.
        count: scalar int32 placeholder with default ``steps_per_run``: feed a
            smaller value to run fewer steps (the loop does at checkpoints).
        steps_per_run: steps of a run when ``count`` is not fed.
        loss: the scalar loss built once outside the loop on the batches'
            ``images``/``labels`` (the one-step graph that created the
            variables and optimizer slots).
    """

    train_op: tf.Operation
    losses: tf.Tensor
    metrics: dict
    count: tf.Tensor
    steps_per_run: int
    loss: tf.Tensor


def repeat_step(
    loss_fn,
    optimizer,
    batches,
    steps_per_run,
    *,
    global_step=None,
    var_list=None,
    jit_compile=False,
    clip_norm=None,
    after_update=None,
):
    """Builds ``steps_per_run`` optimizer steps on consecutive batches inside one run.

    ``loss_fn(images, labels)`` builds a model's loss (a scalar, or ``(loss,
    {name: scalar})`` with metrics). It is called twice: once outside the loop on
    ``batches.images``/``batches.labels``, where it creates the variables and
    ``optimizer.minimize`` creates the slots (that is the one-step graph), then
    inside a ``tf.while_loop`` body under ``reuse=True``, where each iteration
    takes the next batch with :meth:`zoo.batches.GraphBatches.draw`, computes the
    gradients and applies them. The iterations run one after the other (each
    waits for the previous update), on the same batches in the same order as
    ``steps_per_run`` separate runs, so the numbers are those of one step per run
    up to float round-off.

    The update ops a call of ``loss_fn`` adds to ``GraphKeys.UPDATE_OPS``
    (:class:`layers.BatchNorm`'s) run with that call's step: each iteration
    runs those of its own call in the loop; the one-step graph's run only
    with its step (K=1 without XLA), never from the loop.

    With ``jit_compile=True`` the whole loop is one XLA computation (a
    ``tf.function(jit_compile=True)`` called in the graph): its elementwise work
    is fused and nothing is dispatched per step, 10-30 % faster on a 2-core CPU
    (docs/benchmark.md). XLA computes with other kernels, so its numbers equal
    the uncompiled ones only up to float round-off (any K still gives those of
    K=1 compiled); every op of ``loss_fn`` and the optimizer needs an XLA kernel
    (TensorFlow names the one that has none at the first run).

    Args:
        loss_fn: builds the loss from one batch; must create no variable on its
            second call (build the model with the zoo's builders or your own
            ``get_variable`` code: the second call reuses).
        optimizer: a ``tf.compat.v1.train.Optimizer`` (any: slots are made once,
            outside the loop).
        batches: the :class:`zoo.batches.GraphBatches` the steps draw from (or
            any object with its ``images``, ``labels``, ``window`` and ``draw()``).
        steps_per_run: K >= 1, at most ``batches.window``; 1 without XLA builds
            no loop.
        global_step: optional variable incremented once per step.
        var_list: variables to train (default: every trainable variable).
        jit_compile: compile the loop with XLA.
        clip_norm: None, or a positive number: each step's gradients are scaled
            by ``min(1, clip_norm / global_norm)`` (``tf.clip_by_global_norm``)
            before they are applied.
        after_update: None, or ``after_update(update_op)`` that builds what must
            run after each step's update (e.g. a target network's sync, under a
            control dependency on ``update_op``); the step waits for it.

    Returns:
        A :class:`RepeatedStep`; pass it to :func:`train_loop` as ``train_op``
        with ``loss=None``.

    Raises:
        ZooError: ``steps_per_run`` is not an int in ``[1, batches.window]``,
            ``jit_compile`` is not a bool, ``clip_norm`` is not a positive number,
            ``batches`` is not a GraphBatches, or
            ``loss_fn`` returns something else than a scalar loss (and metrics).
        ScopeError: ``loss_fn`` creates a variable on its second call.
    """
    check_clip_norm("repeat_step", clip_norm)
    after_update = after_update or (lambda update: update)
    trained = []  # the variables the one-step graph's gradients reach

    def update_fn(images, labels):
        loss, metrics = loss_and_metrics(loss_fn(images, labels))
        if not trained:  # the one-step graph: the optimizer makes its slots here
            # Each gradient op on its forward op's device (zoo.towers: a tower's
            # backward pass on its own device), as tf.gradients does in the loop.
            grads_and_vars = optimizer.compute_gradients(
                loss, var_list, colocate_gradients_with_ops=True
            )
            trained.extend(v for g, v in grads_and_vars if g is not None)
            gradients = [g for g, _ in grads_and_vars if g is not None]
        else:
            gradients = tf.gradients(loss, trained)
        if clip_norm is not None:
            gradients, _ = tf.clip_by_global_norm(gradients, clip_norm)
        update = optimizer.apply_gradients(
            zip(gradients, trained, strict=True), global_step
        )
        return tf.group(update, after_update(update)), loss, metrics

    return repeat_updates(
        update_fn, batches, steps_per_run, jit_compile=jit_compile, name="loss_fn"
    )


def repeat_updates(update_fn, batches, steps_per_run, *, jit_compile=False, name=None):
    """Builds ``steps_per_run`` training steps of any kind inside one run.

    :func:`repeat_step` for a step that is more than one optimizer's update:
    ``update_fn(images, labels)`` builds a whole step and returns ``(update op,
    scalar loss, {name: scalar})``; a GAN's step, the discriminator's update and
    then the generator's against the updated discriminator
    (:func:`zoo.models.gan.gan_update`). It is called once outside the loop on
    ``batches.images``/``batches.labels``, where the variables and every
    optimizer's slots are made (the one-step graph), then once per iteration
    inside the loop under ``reuse=True``, on the next batch; the loss and
    metrics each iteration writes are those computed before its update. Same
    loop, same order of batches and same XLA option as :func:`repeat_step`.

    Args:
        update_fn: builds one step from one batch; must create no variable on
            its second call.
        batches: as :func:`repeat_step`.
        steps_per_run: as :func:`repeat_step`.
        jit_compile: compile the loop with XLA.
        name: what error messages call ``update_fn`` (default ``"update_fn"``).

    Returns:
        A :class:`RepeatedStep` for :func:`train_loop`.

    Raises:
        ZooError: as :func:`repeat_step`, or ``update_fn`` returns something
            else than ``(op, scalar loss, {name: scalar})``.
        ScopeError: ``update_fn`` creates a variable on its second call.
    """
    name = name or "update_fn"
    _check_steps_per_run(steps_per_run, batches)
    if not isinstance(jit_compile, bool):
        raise ZooError(
            f"repeat_step: expected jit_compile True or False, found {jit_compile!r}; "
            "pass jit_compile=True to compile the loop with XLA"
        )
    built, updates = _with_updates_of(update_fn, batches.images, batches.labels)
    one_step, loss, metrics = _update(built, name)
    if updates:  # batch norm: the one-step graph's updates run with its step only
        one_step = tf.group(one_step, *updates, name="train_with_updates")
    count = tf.compat.v1.placeholder_with_default(steps_per_run, [], name="steps_this_run")
    if steps_per_run == 1 and not jit_compile:
        stacked = {key: tf.reshape(v, [1]) for key, v in metrics.items()}
        return RepeatedStep(one_step, tf.reshape(loss, [1]), stacked, count, 1, loss)
    scope = tf.compat.v1.get_variable_scope()
    names = sorted(metrics)

    def body(i, *arrays):
        images, labels = batches.draw()
        with tf.compat.v1.variable_scope(scope, reuse=True, auxiliary_name_scope=False):
            try:
                built, step_updates = _with_updates_of(update_fn, images, labels)
            except ScopeError as err:
                raise ScopeError(
                    f"repeat_step: expected {name} to build the same variables on its "
                    f"second call (in the loop, reuse=True), found: {err}; build the "
                    "same scopes on every call"
                ) from err
        update, step_loss, step_metrics = _update(built, name)
        values = (step_loss, *(step_metrics[key] for key in names))
        with tf.control_dependencies([update, *step_updates]):
            return (i + 1, *(a.write(i, v) for a, v in zip(arrays, values, strict=True)))

    def steps(count):
        """Runs ``count`` steps; returns each one's loss and metrics, [steps_per_run]."""
        arrays = [
            tf.TensorArray(t.dtype, size=steps_per_run, element_shape=[])
            for t in (loss, *(metrics[key] for key in names))
        ]
        _, *arrays = tf.while_loop(
            lambda i, *_: i < count,
            body,
            [tf.constant(0), *arrays],
            parallel_iterations=1,
            maximum_iterations=steps_per_run,
            name="repeat_step",
        )
        return [a.stack() for a in arrays]

    if jit_compile:
        with function_of_graph():
            compiled = tf.function(steps, jit_compile=True, autograph=False)
            stacked = compiled(count)
    else:
        stacked = steps(count)
    stacked = [values[:count] for values in stacked]  # the steps this run made
    return RepeatedStep(
        tf.group(stacked, name="train_steps"),
        stacked[0],
        dict(zip(names, stacked[1:], strict=True)),
        count,
        steps_per_run,
        loss,
    )


def check_clip_norm(owner, clip_norm):
    """Raises ZooError naming ``owner`` unless ``clip_norm`` is None or a number > 0."""
    if clip_norm is None:
        return
    if (
        isinstance(clip_norm, bool)
        or not isinstance(clip_norm, (int, float))
        or not 0 < clip_norm < math.inf
    ):
        raise ZooError(
            f"{owner}: expected the gradients' clip norm to be None or a finite number "
            f"> 0, found {clip_norm!r}; pass e.g. 10.0, or None to leave them as they are"
        )


def _update(built, name):
    """Checks ``update_fn``'s result: ``(op, scalar loss, {name: scalar})``."""
    if not (
        isinstance(built, tuple)
        and len(built) == 3
        and isinstance(built[0], tf.Operation | tf.Tensor)
    ):
        raise ZooError(
            f"repeat_step: expected {name} to return (update op, scalar loss, "
            f"{{name: scalar tensor}}), found {built!r}; return those three"
        )
    loss, metrics = loss_and_metrics(built[1:], function=name)
    return built[0], loss, metrics


def with_updates(train_op):
    """Returns an op that runs ``train_op`` and the graph's update ops (batch norm).

    For a loop of your own: ``session.run(with_updates(optimizer.minimize(loss)))``
    moves every :class:`layers.BatchNorm`'s moving statistics (any op in
    ``tf.compat.v1.GraphKeys.UPDATE_OPS``) with each step, as the TF1 idiom
    ``with tf.control_dependencies(update_ops): train_op = ...`` does.
    :func:`train_loop` and :func:`repeat_step` need no such call.

    Args:
        train_op: the training op (or tensor) of the default graph.

    Returns:
        ``train_op`` itself when the graph has no update ops, else one op
        grouping it with them.
    """
    updates = graph_updates(train_op.graph)
    return tf.group(train_op, *updates, name="train_with_updates") if updates else train_op


def graph_updates(graph):
    """The ops in ``graph``'s ``UPDATE_OPS`` that belong to the graph itself (the
    ones made in a ``tf.while_loop`` or ``tf.function`` body run there, not here)."""
    with graph.as_default():
        ops = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
    return [op for op in ops if op.graph is graph]


def _with_updates_of(build, *args):
    """Calls ``build(*args)``; returns its result and the update ops it added to the
    current graph's ``UPDATE_OPS`` (those of this call only, not older ones)."""
    key = tf.compat.v1.GraphKeys.UPDATE_OPS
    before = len(tf.compat.v1.get_collection(key))
    result = build(*args)
    return result, tf.compat.v1.get_collection(key)[before:]


def _check_steps_per_run(steps_per_run, batches):
    if not all(hasattr(batches, name) for name in ("images", "labels", "draw", "window")):
        raise ZooError(
            f"repeat_step: expected GraphBatches (batches drawn in the graph), found "
            f"{type(batches).__name__}; a feed_dict source cannot be looped in one run: "
            "use zoo.batches.GraphBatches, or train_loop with one step per run"
        )
    if (
        isinstance(steps_per_run, bool)
        or not isinstance(steps_per_run, int)
        or not 1 <= steps_per_run <= batches.window
    ):
        raise ZooError(
            f"repeat_step: expected steps_per_run an int in [1, {batches.window}] (the "
            f"batches' window), found {steps_per_run!r}; pass a K in that range, or "
            "build GraphBatches with a larger window"
        )


def loss_and_metrics(built, owner="repeat_step", function="loss_fn"):
    """Splits a loss function's result into ``(scalar loss, {name: scalar})``.

    Args:
        built: what the function returned: a scalar loss, or ``(loss, {name: scalar})``.
        owner: named in the message (``repeat_step``, ``towers``).
        function: the argument that returned ``built``, named in the message.

    Raises:
        ZooError: ``built`` is neither.
    """
    loss, metrics = built if isinstance(built, tuple) else (built, {})
    tensors = [loss, *metrics.values()] if isinstance(metrics, dict) else None
    if tensors is None or not all(
        isinstance(t, tf.Tensor) and t.shape.rank == 0 for t in tensors
    ):
        raise ZooError(
            f"{owner}: expected {function} to return a scalar loss tensor or (loss, "
            f"{{name: scalar tensor}}), found {built!r}; return model.loss (and metrics)"
        )
    return loss, metrics


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
        batches: a :class:`zoo.batches.GraphBatches` (the model reads its
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
