"""Training a variant from its build functions: graph, seed, batches, K-step loop, results.

Every ablation (autoencoder, siamese, RNN) trains each of its variants the same
way, in :func:`train_variant`: a graph of its own seeded with ``--seed``, the
training split in batches read inside the graph (:class:`zoo.data.batches.GraphBatches`,
from its first batch, so every variant sees the same batches), ``--steps-per-run``
steps per ``session.run`` (:func:`zoo.training.repeat_step`) compiled with
``--xla``, the library loop with the run's checkpointer (``--resume``), then the
variant's own evaluation. Usage::

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

import numbers
import time

import numpy as np
import tensorflow as tf
from tqdm import tqdm

from experiments.harness import flags
from zoo import training
from zoo.data.batches import GraphBatches


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
    """Builds one variant in a graph of its own, trains it, evaluates it.

    Args:
        variant: the variant's name (progress bar, checkpoints, TensorBoard).
        args: the parsed flags (``--steps``, ``--batch-size``, ``--seed``,
            ``--steps-per-run``, ``--xla``).
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
            ``reuse=True``) and returns ``evaluate(session) -> (metrics, shown)``,
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
    start = time.perf_counter()
    log_every = flags.log_period(args.steps, log_period)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(args.seed)
        batches = GraphBatches(data.train, args.batch_size)
        global_step = None
        if callable(optimizer):
            global_step = tf.compat.v1.train.get_or_create_global_step()
            optimizer = optimizer(global_step)
        step = training.repeat_step(
            loss_fn,
            optimizer,
            batches,
            args.steps_per_run,
            global_step=global_step,
            jit_compile=args.xla,
        )
        evaluate = evaluation()
        parameters = sum(int(np.prod(v.shape)) for v in tf.compat.v1.trainable_variables())
        init = tf.compat.v1.global_variables_initializer()
        writer = run.summary_writer(variant, graph=graph)
    graph.finalize()
    with tf.compat.v1.Session(graph=graph, config=session_config) as session:
        print(f"Training ({variant}, {parameters:,} parameters)...")
        logged, steps_per_second = _train(
            session, init, step, batches, args, run, variant, log_every, writer
        )
        metrics, shown = evaluate(session)
    _report(writer, variant, metrics, args.steps)
    result = {
        "parameters": parameters,
        **metrics,
        "losses": [[entry[0], entry[1]] for entry in logged],
        **{
            name: [[entry[0], entry[2][name]] for entry in logged]
            for name in (logged[0][2] if logged and len(logged[0]) > 2 else {})
        },
        "dataset": data.name,
        "train_examples": data.train.num_examples,
        **_settings(args, log_every),
        "wall_time_s": time.perf_counter() - start,
        "steps_per_second": steps_per_second,
    }
    return result, shown


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


def _train(session, init, step, batches, args, run, variant, log_every, writer):
    """Initializes ``session`` and trains ``args.steps`` steps from the first batch."""
    batches.dataset.restore({"epoch": 0, "position": 0})
    session.run(init)
    batches.initialize(session)

    def print_step(step, loss):
        tqdm.write(f"  step, loss = {step:6d}: {loss:8.4f}")

    return training.train_loop(
        session,
        step,
        None,
        batches,
        args.steps,
        args.batch_size,
        log_every=log_every,
        desc=variant,
        on_log=print_step,
        writer=writer,
        checkpointer=run.checkpointer,
    )


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
    writer.close()
    print(f"{variant}: " + ", ".join(f"{tag} = {n:.6g}" for tag, n in found.items()))


def _settings(args, log_every):
    """Returns the loop's settings for a variant's results."""
    return {
        "steps": args.steps,
        "batch_size": args.batch_size,
        "steps_per_run": args.steps_per_run,
        "xla": args.xla,
        "seed": args.seed,
        "log_every": log_every,
    }
