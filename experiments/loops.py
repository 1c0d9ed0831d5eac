"""How an experiment trains a variant from GraphBatches: ``--steps-per-run``, ``--xla``.

The autoencoder, siamese and RNN experiments train the same way: K steps per
``session.run`` (:func:`zoo.training.repeat_step`), optionally compiled with XLA,
through :func:`zoo.training.train_loop` with the run's checkpointer. Usage::

    def build_parser():
        p = runner.parser(...)
        loops.add_flags(p)
        return p

    with graph.as_default():
        batches = GraphBatches(data.train, args.batch_size)
        step = loops.repeat_step(args, loss_fn, optimizer, batches)
        init = tf.compat.v1.global_variables_initializer()
        writer = run.summary_writer(variant, graph=graph)
    with tf.compat.v1.Session(graph=graph) as session:
        logged, speed = loops.train(session, init, step, batches, args, run, variant,
                                    log_every=log_every, writer=writer)
    result = {..., **loops.settings(args, log_every)}
"""

import argparse

from tqdm import tqdm

from experiments import runner
from zoo import training
from zoo.batches import GraphBatches


def add_flags(p, steps_per_run=32, xla=False):
    """Adds ``--steps-per-run K`` and ``--xla``/``--no-xla`` to an experiment's parser.

    Args:
        p: the parser of :func:`experiments.runner.parser`.
        steps_per_run: default K.
        xla: compile by default (where it was measured to pay off: the
            autoencoder and the siamese towers; the RNN's 28 unrolled GRU steps
            run slower compiled).
    """
    p.add_argument(
        "--steps-per-run",
        type=int,
        default=steps_per_run,
        metavar="K",
        check=runner.integer(1, GraphBatches.DEFAULT_WINDOW),
        may_differ_on_resume=True,
        help="training steps inside one session.run (a tf.while_loop); the results "
        "do not depend on it, the speed does",
    )
    p.add_argument(
        "--xla",
        action=argparse.BooleanOptionalAction,
        default=xla,
        help="compile the K-step loop with XLA (10-50 %% faster for the autoencoder and "
        "the siamese towers on a 2-core CPU, slower for the RNN; docs/training.md); "
        "the numbers equal the uncompiled ones up to float round-off",
    )


def repeat_step(args, loss_fn, optimizer, batches):
    """Returns :func:`zoo.training.repeat_step` with the flags' K and XLA setting."""
    return training.repeat_step(
        loss_fn, optimizer, batches, args.steps_per_run, jit_compile=args.xla
    )


def train(session, init, step, batches, args, run, desc, *, log_every, writer):
    """Initializes ``session`` and trains ``args.steps`` steps from the first batch.

    Args:
        session: a new session of the variant's graph.
        init: the graph's variable initializer.
        step: the :class:`zoo.training.RepeatedStep` of :func:`repeat_step`.
        batches: its :class:`zoo.batches.GraphBatches`; restarted at the
            dataset's first batch (each variant trains on the same batches).
        args: the parsed flags.
        run: the :class:`experiments.rundir.RunDir` (its checkpointer resumes).
        desc: the variant's name (progress bar, checkpoints, logged lines).
        log_every: logging period in steps.
        writer: the variant's TensorBoard writer.

    Returns:
        ``(logged, steps_per_second)`` of :func:`zoo.training.train_loop`.
    """
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
        desc=desc,
        on_log=print_step,
        writer=writer,
        checkpointer=run.checkpointer,
    )


def settings(args, log_every):
    """Returns the loop's settings for a variant's results."""
    return {
        "steps": args.steps,
        "batch_size": args.batch_size,
        "steps_per_run": args.steps_per_run,
        "xla": args.xla,
        "seed": args.seed,
        "log_every": log_every,
    }
