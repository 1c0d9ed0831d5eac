"""K training steps in one ``session.run``: the step graph the loop runs.

:func:`repeat_step` builds K optimizer steps (or, with :func:`repeat_updates`,
any update such as a GAN's D-then-G step) as one ``tf.while_loop`` that draws its
batches in the graph, optionally compiled with XLA; :func:`with_updates` adds the
graph's batch-norm updates to a step of your own loop. :mod:`zoo.training.loop`
runs what these build.
"""

import contextlib
import dataclasses

import tensorflow as tf

from layers.checks import int_problem, number_problem, require
from layers.errors import ScopeError, ZooError
from layers.variables import function_of_graph

# TF1's "losses" collection (the CIFAR-10 tutorial's idiom: each build adds its terms,
# weight decay included, and the loss is their sum).
LOSSES = tf.compat.v1.GraphKeys.LOSSES


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
    takes the next batch with :meth:`zoo.data.batches.GraphBatches.draw`, computes the
    gradients and applies them. The iterations run one after the other (each
    waits for the previous update), on the same batches in the same order as
    ``steps_per_run`` separate runs, so the numbers are those of one step per run
    up to float round-off.

    The update ops a call of ``loss_fn`` adds to ``GraphKeys.UPDATE_OPS``
    (:class:`layers.BatchNorm`'s) run with that call's step: each iteration
    runs those of its own call in the loop; the one-step graph's run only
    with its step (K=1 without XLA), never from the loop. Likewise the
    ``"losses"`` collection: while the loop's call builds it holds that call's
    terms only, so a ``loss_fn`` that returns ``tf.add_n(get_collection("losses"))``
    sums its own step's terms, not the one-step graph's too.
    (``tf.compat.v1.losses.get_regularization_loss()`` needs nothing: its terms,
    made with the variables, are re-read by each iteration.)

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
        batches: the :class:`zoo.data.batches.GraphBatches` the steps draw from (or
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
            # Each gradient op on its forward op's device (zoo.parallel.towers: a tower's
            # backward pass on its own device), as tf.gradients does in the loop.
            grads_and_vars = optimizer.compute_gradients(
                loss, var_list, colocate_gradients_with_ops=True
            )
            trained.extend(v for g, v in grads_and_vars if g is not None)
            gradients = [g for g, _ in grads_and_vars if g is not None]
        else:  # through the optimizer: a wrapper's compute_gradients (loss scaling) too
            gradients = [
                g
                for g, _ in optimizer.compute_gradients(
                    loss,
                    trained,
                    gate_gradients=optimizer.GATE_NONE,
                    colocate_gradients_with_ops=True,
                )
            ]
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
    (:func:`zoo.training.gan.gan_update`). It is called once outside the loop on
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
        with (
            _own_losses_collection(),
            tf.compat.v1.variable_scope(scope, reuse=True, auxiliary_name_scope=False),
        ):
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
            # a list as loop_vars is: TF1 control flow (disable_v2_behavior) wants it
            return [i + 1, *(a.write(i, v) for a, v in zip(arrays, values, strict=True))]

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
    if clip_norm is not None:
        require(
            owner,
            number_problem(clip_norm, 0, low_open=True, name="the gradients' clip norm"),
            "pass e.g. 10.0, or None to leave them as they are",
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


@contextlib.contextmanager
def _own_losses_collection():
    """While the loop's call builds: the ``"losses"`` collection holds its terms only.

    The loop body shares the graph's collections, where the one-step build's
    terms are; summed again in the loop they would count twice, computed on
    the one-step graph's batch. They are put back afterwards.
    """
    graph = tf.compat.v1.get_default_graph()
    outer = graph.get_collection(LOSSES)
    graph.clear_collection(LOSSES)
    try:
        yield
    finally:
        graph.clear_collection(LOSSES)
        for term in outer:
            graph.add_to_collection(LOSSES, term)


def _check_steps_per_run(steps_per_run, batches):
    if not all(hasattr(batches, name) for name in ("images", "labels", "draw", "window")):
        raise ZooError(
            f"repeat_step: expected GraphBatches (batches drawn in the graph), found "
            f"{type(batches).__name__}; a feed_dict source cannot be looped in one run: "
            "use zoo.data.batches.GraphBatches, or train_loop with one step per run"
        )
    require(
        "repeat_step",
        int_problem(steps_per_run, 1, batches.window, name="steps_per_run"),
        f"pass a K of at most the batches' window {batches.window}, or build "
        "GraphBatches with a larger window",
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
