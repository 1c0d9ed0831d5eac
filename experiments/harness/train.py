"""Training a variant from any step: graph, seed, batches, K steps per run, evaluations.

Every ablation (autoencoder, siamese, RNN, GAN) trains each of its variants the
same way: a graph of its own seeded with ``--seed``, the training split in
batches read inside the graph (:class:`zoo.data.batches.GraphBatches`, from its
first batch, so every variant sees the same batches), ``--steps-per-run`` steps
per ``session.run`` compiled with ``--xla``, the library loop with the run's
checkpointer (``--resume``), then the variant's own evaluation. The step and the
evaluation are built under ``--precision`` (:func:`zoo.training.precision.policy`);
under ``mixed_float16`` :func:`train_variant`'s optimizer scales the loss
(:func:`loss_scaled`, which a script that builds its own optimizer applies).
:func:`train_variant` trains a loss with an optimizer
(:func:`zoo.training.repeat_step`); :func:`train_updates` any step that builds
its own updates (:func:`zoo.training.repeat_updates`: a GAN's discriminator
update, then its generator's), evaluated along the way if asked. Usage::

    def evaluation():                      # in the variant's graph, after training's
        x = tf.compat.v1.placeholder(tf.float32, [None, N_PIXELS])
        model = autoencoder(x, scope="ae", reuse=True)
        return lambda session: ({"test_loss": session.run(model.loss, {x: test})}, None)

    result, shown = train.train_variant(
        "tied", args, data, run,
        loss_fn=lambda images, labels: autoencoder(images, scope="ae").loss,
        optimizer=tf.compat.v1.train.AdagradOptimizer(0.1),
        evaluation=evaluation,
    )

This module imports TensorFlow: a script imports it after its flags are parsed.
"""

import dataclasses
import functools
import itertools
import numbers
import time

import numpy as np
import tensorflow as tf
from tqdm import tqdm

from experiments.harness import entry
from layers.checks import int_problem, require
from zoo import training
from zoo.data.batches import GraphBatches
from zoo.training import precision
from zoo.training.loss_scale import LossScaleOptimizer


@dataclasses.dataclass(frozen=True)
class _Variant:
    """What training one variant reads: see :func:`train_variant`'s arguments."""

    name: str
    args: object
    data: object
    run: object
    log_period: int
    session_config: object


@dataclasses.dataclass(frozen=True)
class _Graph:
    """A variant's graph, built and finalized, and what its session runs."""

    graph: tf.Graph
    batches: GraphBatches
    step: training.RepeatedStep
    evaluate: object
    parameters: int
    init: tf.Operation
    writer: object


def train_variant(
    variant,
    args,
    data,
    run,
    loss_fn,
    optimizer,
    evaluation,
    log_period=1000,
    session_config=None,
):
    """Builds one variant in a graph of its own, trains its loss, evaluates it.

    Args:
        variant: the variant's name (progress bar, checkpoints, TensorBoard).
        args: the parsed flags (``--steps``, ``--batch-size``, ``--seed``,
            ``--steps-per-run``, ``--xla``, ``--precision``).
        data: the :class:`zoo.data.DataSets`; training reads ``data.train``.
        run: the :class:`experiments.harness.rundir.RunDir` (its checkpointer
            resumes an interrupted run exactly).
        loss_fn: ``(images, labels) -> loss``, or ``(loss, {name: scalar})``
            whose scalars are logged with the loss (:func:`zoo.training.repeat_step`).
        optimizer: the ``tf.compat.v1`` optimizer that minimizes the loss, or a
            function ``global_step -> optimizer`` (a learning-rate schedule):
            called in the variant's graph on a global step that each training
            step increments and checkpoints keep.
        evaluation: called with no argument in the variant's graph once the
            training step is built; builds what evaluation reads (with
            ``reuse=True``, under the same precision policy) and returns
            ``evaluate(session) -> (metrics, shown)``,
            run after training: ``metrics`` a dict that goes into the result
            (its numbers, and the numbers of its dicts, to TensorBoard too),
            ``shown`` whatever the figures need.
        log_period: steps between logged losses (fewer in short runs).
        session_config: the session's ``ConfigProto`` (``zoo.parallel.towers
            .session_config`` for towers on logical CPUs), or None.

    Returns:
        ``(result, shown)``: ``result`` holds the metrics, the trainable
        parameter count, the logged ``losses`` (and each logged scalar) as
        ``[step, value]`` pairs, the data, the loop's settings, the wall time
        and the steps per second.
    """

    def build_step(batches):
        global_step, chosen = None, optimizer
        if callable(optimizer):
            global_step = tf.compat.v1.train.get_or_create_global_step()
            chosen = optimizer(global_step)
        return training.repeat_step(
            loss_fn,
            loss_scaled(chosen, args),
            batches,
            args.steps_per_run,
            global_step=global_step,
            jit_compile=args.xla,
        )

    settings = _Variant(variant, args, data, run, log_period, session_config)
    return _train_and_evaluate(settings, build_step, evaluation, evaluations=None)


def train_updates(
    variant,
    args,
    data,
    run,
    update_fn,
    evaluation,
    evaluations=None,
    log_period=1000,
    session_config=None,
):
    """Builds one variant whose step makes its own updates, trains it, evaluates it.

    As :func:`train_variant`, for a step that is more than one optimizer's
    update: ``update_fn(images, labels) -> (update op, scalar loss, {name:
    scalar})`` (:func:`zoo.training.repeat_updates`; a GAN's is
    :func:`zoo.training.gan.gan_update`), whose optimizers the script passes
    through :func:`loss_scaled`. With ``evaluations``, the run is cut
    into that many even chunks (:func:`boundaries`), each its own loop
    (progress bar and checkpoint ``<variant>-<last step>``, losses logged every
    ``log_period`` of its length), and ``evaluate`` runs at step 0 and after each
    chunk; a resumed run restores the finished chunks and evaluates them again,
    exactly.

    Args:
        variant, args, data, run, evaluation, log_period, session_config: as
            :func:`train_variant`.
        update_fn: builds one step from one batch.
        evaluations: None (evaluate once, after training), or the number of
            evaluations after step 0, at most ``--steps``.

    Returns:
        ``(result, shown)`` as :func:`train_variant`, ``shown`` that of the last
        evaluation; with ``evaluations``, each metric in ``result`` is a list of
        ``[step, value]`` pairs, one per evaluation.

    Raises:
        ZooError: ``evaluations`` is neither None nor an int in [1, ``--steps``].
    """
    if evaluations is not None:
        require(
            variant,
            int_problem(evaluations, 1, args.steps, name="evaluations"),
            "pass at most one evaluation per step, or None for one after training",
        )

    def build_step(batches):
        return training.repeat_updates(
            update_fn, batches, args.steps_per_run, jit_compile=args.xla
        )

    settings = _Variant(variant, args, data, run, log_period, session_config)
    return _train_and_evaluate(settings, build_step, evaluation, evaluations)


def loss_scaled(optimizer, args):
    """Returns the optimizer a run's ``--precision`` trains with.

    Args:
        optimizer: a ``tf.compat.v1.train.Optimizer``, or a Keras optimizer (an
            eager loop's, which scales its loss with ``optimizer.scale_loss``).
        args: the run's settings (``--precision``).

    Returns:
        Under ``mixed_float16`` (whose gradients underflow unscaled),
        ``optimizer`` wrapped in a :class:`LossScaleOptimizer`, or a Keras one in
        ``keras.optimizers.LossScaleOptimizer``; else ``optimizer``.
    """
    if args.precision != "mixed_float16":
        return optimizer
    if isinstance(optimizer, tf.compat.v1.train.Optimizer):
        return LossScaleOptimizer(optimizer)
    import keras  # only for a Keras optimizer, which has imported it already

    return keras.optimizers.LossScaleOptimizer(optimizer)


def boundaries(steps, evaluations):
    """Returns the steps at which a variant is evaluated: 0, then ``evaluations``
    even cuts of ``steps``."""
    return [round(k * steps / evaluations) for k in range(evaluations + 1)]


def run_in_chunks(session, fetches, feeds, chunk):
    """Runs ``fetches`` on consecutive chunks of arrays (an evaluation set in parts).

    Args:
        session: the trained variant's session.
        fetches: what ``session.run`` fetches for each chunk.
        feeds: placeholder -> array; every array has the same length.
        chunk: examples per run.

    Returns:
        ``[(result, examples in the chunk), ...]`` in order.
    """
    total = len(next(iter(feeds.values())))
    return [
        (
            session.run(fetches, {x: array[i : i + chunk] for x, array in feeds.items()}),
            min(chunk, total - i),
        )
        for i in range(0, total, chunk)
    ]


def mean_in_chunks(session, fetch, feeds, chunk):
    """Returns a per-example mean (an accuracy) over an evaluation set run in chunks.

    Args:
        session, feeds, chunk: as :func:`run_in_chunks`.
        fetch: a scalar mean over a chunk's examples.

    Returns:
        The chunks' means weighted by their sizes: the mean over every example.
    """
    chunks = run_in_chunks(session, fetch, feeds, chunk)
    return sum(value * size for value, size in chunks) / len(next(iter(feeds.values())))


def first_step_reaching(logged, target, smoothing):
    """Returns the first logged step whose smoothed value reaches ``target``, or None.

    Args:
        logged: ``[(step, value), ...]`` in order (a batch accuracy as logged).
        target: the value to reach.
        smoothing: how many logged values (the last ones up to each step) are averaged.
    """
    for i, (step, _) in enumerate(logged):
        window = [value for _, value in logged[max(0, i - smoothing + 1) : i + 1]]
        if np.mean(window) >= target:
            return step
    return None


def _train_and_evaluate(variant, build_step, evaluation, evaluations):
    """Builds ``variant``'s graph around ``build_step(batches)``, trains, evaluates.

    Returns:
        ``(result, shown)``: see :func:`train_variant` and :func:`train_updates`.
    """
    start = time.perf_counter()
    built = _build(variant, build_step, evaluation)
    args = variant.args
    cuts = [0, args.steps] if evaluations is None else boundaries(args.steps, evaluations)
    with tf.compat.v1.Session(graph=built.graph, config=variant.session_config) as session:
        print(f"Training ({variant.name}, {built.parameters:,} parameters)...")
        logged, evaluated, seconds = _train(session, variant, built, cuts, evaluations)
    built.writer.close()
    metrics, shown = evaluated[-1][1]
    if evaluations is not None:  # each metric a curve
        metrics = {
            name: [[step, found[name]] for step, (found, _) in evaluated]
            for name in metrics
        }
    result = {
        "parameters": built.parameters,
        **metrics,
        "losses": [[entry[0], entry[1]] for entry in logged],
        **{
            name: [[entry[0], entry[2][name]] for entry in logged]
            for name in (logged[0][2] if logged and len(logged[0]) > 2 else {})
        },
        "dataset": variant.data.name,
        "train_examples": variant.data.train.num_examples,
        **_settings(args, _log_every(variant, cuts[0], cuts[1])),
        "wall_time_s": time.perf_counter() - start,
        "steps_per_second": args.steps / seconds,
    }
    return result, shown


def _build(variant, build_step, evaluation):
    """Builds the variant's graph: seed, batches, step and evaluation (under
    ``--precision``), initializer."""
    args = variant.args
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(args.seed)
        batches = GraphBatches(variant.data.train, args.batch_size)
        with precision.policy(args.precision):
            step = build_step(batches)
            evaluate = evaluation()
        parameters = sum(int(np.prod(v.shape)) for v in tf.compat.v1.trainable_variables())
        init = tf.compat.v1.global_variables_initializer()
        writer = variant.run.summary_writer(variant.name, graph=graph)
    graph.finalize()
    return _Graph(graph, batches, step, evaluate, parameters, init, writer)


def _train(session, variant, built, cuts, evaluations):
    """Initializes ``session``, trains from the first batch to ``cuts[-1]``, evaluates.

    Each pair of consecutive ``cuts`` is one loop; with ``evaluations``, the
    variant is evaluated at ``cuts[0]`` and after each loop, else after the last.

    Returns:
        ``(logged, [(step, (metrics, shown)), ...], seconds of training)``.
    """
    built.batches.dataset.restore({"epoch": 0, "position": 0})
    session.run(built.init)
    built.batches.initialize(session)
    logged, evaluated, seconds = [], [], 0.0

    def evaluate(step):
        metrics, shown = built.evaluate(session)
        _report(built.writer, variant.name, metrics, step)
        evaluated.append((step, (metrics, shown)))

    if evaluations is not None:
        evaluate(cuts[0])
    for begin, end in itertools.pairwise(cuts):
        name = variant.name if evaluations is None else f"{variant.name}-{end}"
        loop_logged, steps_per_second = training.train_loop(
            session,
            built.step,
            None,
            built.batches,
            end - begin,
            variant.args.batch_size,
            log_every=_log_every(variant, begin, end),
            desc=name,
            on_log=functools.partial(_print_step, begin),
            checkpointer=variant.run.checkpointer,
        )
        seconds += (end - begin) / steps_per_second
        loop_logged = [(begin + entry[0], *entry[1:]) for entry in loop_logged]
        _write_logged(built.writer, variant.name, loop_logged)
        logged += loop_logged
        if evaluations is not None or end == cuts[-1]:
            evaluate(end)
    return logged, evaluated, seconds


def _log_every(variant, begin, end):
    """Steps between logged losses in the loop from ``begin`` to ``end``."""
    return entry.log_period(end - begin, variant.log_period)


def _print_step(begin, step, loss):
    tqdm.write(f"  step, loss = {begin + step:6d}: {loss:8.4f}")


def _write_logged(writer, variant, logged):
    """Writes each logged loss (``<variant>/loss``) and scalar to TensorBoard."""
    for step, loss, *values in logged:
        for name, value in (("loss", loss), *(values[0].items() if values else ())):
            training.add_scalar(writer, f"{variant}/{name}", value, step)


def _report(writer, variant, metrics, step):
    """Prints the metrics' numbers and writes them (and those one level down) as scalars."""
    found = {}
    for name, value in metrics.items():
        items = value.items() if isinstance(value, dict) else [("", value)]
        for key, number in items:
            if isinstance(number, numbers.Real) and not isinstance(number, bool):
                found["/".join(filter(None, (name, key)))] = number
    for tag, number in found.items():
        training.add_scalar(writer, f"{variant}/{tag}", number, step)
    print(
        f"{variant} step {step}: "
        + ", ".join(f"{tag} = {n:.6g}" for tag, n in found.items())
    )


def _settings(args, log_every):
    """Returns the loop's settings for a variant's results."""
    return {
        "steps": args.steps,
        "batch_size": args.batch_size,
        "steps_per_run": args.steps_per_run,
        "xla": args.xla,
        "precision": args.precision,
        "seed": args.seed,
        "log_every": log_every,
    }
