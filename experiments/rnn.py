"""A GRU reading images row by row: one cell shared across time vs a cell per step.

:func:`zoo.models.rnn.rnn_classifier` reads each image as 28 rows of 28 pixels
through a GRU of 128 units and classifies the last state with a softmax
read-out; Adam trains it on the cross-entropy summed over the batch, its rate
decayed along a cosine from 0.002 to 0.00004 over the 10,000 steps. ``shared``
builds the cell once and reuses its variables at every step (the TF1 unroll
with ``reuse=True``); ``per_step`` gives every step its own cell, 28 times
the cell's parameters, trained with the same steps and batches. Training goes through
``zoo.training.repeat_step`` and ``train_loop``: ``--steps-per-run K`` steps in
one ``session.run`` (the numbers do not depend on K, the speed does). The test
accuracy comes from a second build with ``reuse=True`` on a test placeholder.

Usage::

    python -m experiments.rnn --dataset fashion_mnist \
        --data-dir /usr/share/datasets/fashion-mnist --out runs/rnn/full
    python -m experiments.rnn --quick --data-dir DIR --validation 0

Writes ``results.json``, ``loss_curves.png``, ``accuracy.png`` and TensorBoard
events under ``tensorboard/<variant>/`` into the run directory.
"""

import numpy as np

from experiments.harness import entry, figures, flags, rundir
from layers.errors import ShapeError
from zoo.data import N_CLASSES, N_PIXELS

VARIANTS = ("shared", "per_step")
LOG_PERIOD = 100  # steps between logged training losses (fewer in short runs)
EVAL_CHUNK = 2000
SCHEDULES = ("cosine", "constant")
FINAL_RATE = 0.02  # the cosine schedule's last rate, a fraction of the first


def build_parser():
    """Returns the experiment's argument parser."""
    p = flags.ablation_parser(
        "Train a row-by-row GRU classifier with one cell shared across time steps and "
        "with a cell per step; compare test accuracy and parameter counts.",
        VARIANTS,
        "one cell for all time steps (shared), a cell per step (per_step), or both",
        steps=10000,
        xla=True,  # with the state as c + z * (h - c): docs/rnn.md
        learning_rate=2e-3,  # Adam's, at step 0
    )
    p.add_argument(
        "--lr-schedule",
        choices=SCHEDULES,
        default="cosine",
        help="Adam's rate over the run: cosine decay from --learning-rate to "
        f"{FINAL_RATE:g} of it at the last step, or constant",
    )
    p.add_argument("--hidden", type=int, default=128, help="width of the GRU state")
    p.add_argument(
        "--time-steps", type=int, default=28, help="784 / N pixels per step (28: one row)"
    )
    p.add_check(check_time_steps)
    return p


def check_time_steps(args):
    """Raises ShapeError unless ``--time-steps`` divides the 784 pixels of an image."""
    if N_PIXELS % args.time_steps:
        raise ShapeError(
            f"--time-steps: expected a divisor of the {N_PIXELS} pixels of an image, "
            f"found {args.time_steps}; pass e.g. 28 (a row per step), 14, 56 or 784"
        )


def model_kwargs(args, variant):
    """Returns the :func:`zoo.models.rnn.rnn_classifier` arguments of a variant."""
    return {
        "scope": "rnn",
        "n_hidden": args.hidden,
        "n_steps": args.time_steps,
        "shared": variant == "shared",
    }


def loss_and_accuracy(images, labels, kwargs):
    """Returns the classifier's loss and ``{"batch_accuracy": ...}`` on one batch."""
    from zoo.models.rnn import rnn_classifier

    model = rnn_classifier(images, labels, **kwargs)
    return model.loss, {"batch_accuracy": model.accuracy}


def run_variant(variant, args, data, run):
    """Trains and evaluates one variant (:func:`experiments.harness.train.train_variant`).

    Returns:
        The variant's result dict.
    """

    from experiments.harness.train import train_variant

    kwargs = model_kwargs(args, variant)
    result, _ = train_variant(
        variant,
        args,
        data,
        run,
        loss_fn=lambda images, labels: loss_and_accuracy(images, labels, kwargs),
        optimizer=lambda global_step: adam(args, global_step),
        evaluation=lambda: test_set_evaluation(data.test, kwargs),
        log_period=LOG_PERIOD,
    )
    return result


def adam(args, global_step):
    """Returns Adam at ``--learning-rate``, decayed by ``--lr-schedule`` over ``--steps``.

    The rate is a function of ``global_step`` read at every training step, inside
    the K-step loop too, so the numbers do not depend on ``--steps-per-run``.
    """
    import tensorflow as tf

    if args.lr_schedule == "constant":
        return tf.compat.v1.train.AdamOptimizer(args.learning_rate)
    return tf.compat.v1.train.AdamOptimizer(
        lambda: tf.compat.v1.train.cosine_decay(
            args.learning_rate, global_step, args.steps, alpha=FINAL_RATE
        )
    )


def test_set_evaluation(test, kwargs):
    """Builds the classifier again with ``reuse=True``; returns ``evaluate(session)``.

    ``evaluate`` returns ``({"test_accuracy", "parameters"}, None)``: the
    accuracy on ``test`` and the parameters of the cells and the readout.
    """
    import tensorflow as tf

    from experiments.harness.train import run_in_chunks
    from zoo.models.rnn import rnn_classifier

    x_test = tf.compat.v1.placeholder(tf.float32, [None, N_PIXELS], name="x_test")
    y_test = tf.compat.v1.placeholder(tf.float32, [None, N_CLASSES], name="y_test")
    model = rnn_classifier(x_test, y_test, reuse=True, **kwargs)
    cell = {id(v): v for step in model.steps for v in step.params}.values()
    parameters = {
        "cells": sum(int(np.prod(v.shape)) for v in cell),
        "cell_variables": len(cell),
        "readout": sum(int(np.prod(v.shape)) for v in model.readout.params),
    }
    parameters["total"] = parameters["cells"] + parameters["readout"]

    def evaluate(session):
        feeds = {x_test: test.images, y_test: test.labels}
        chunks = run_in_chunks(session, model.accuracy, feeds, EVAL_CHUNK)
        correct = sum(accuracy * size for accuracy, size in chunks)
        return {
            "test_accuracy": correct / test.num_examples,
            "parameters": parameters,
        }, None

    return evaluate


def accuracy_figure(results):
    """Returns a bar chart of each variant's test accuracy, labelled with its parameters."""
    figure, axes = figures.pyplot().subplots(figsize=(6, 4.5))
    names = list(results)
    accuracies = [results[name]["test_accuracy"] for name in names]
    bars = axes.bar(names, accuracies, color=["tab:blue", "tab:orange"][: len(names)])
    for bar, name in zip(bars, names, strict=True):
        axes.annotate(
            f"{results[name]['test_accuracy']:.4f}\n"
            f"{results[name]['parameters']['total']:,} parameters",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
        )
    axes.set_ylim(0, 1.15)
    axes.set_ylabel("test accuracy")
    axes.set_title("GRU row by row: one cell for all steps vs a cell per step")
    return figure


def main(argv=None):
    """Runs the experiment (``--help``); raises ZooError as :func:`rundir.start`."""
    args, data, run = rundir.start_with_tensorflow(build_parser(), argv, "rnn")
    variants = flags.chosen_variants(args, VARIANTS)
    results = {variant: run_variant(variant, args, data, run) for variant in variants}
    title = "GRU row by row: shared cell vs a cell per step"
    run.write_ablation("rnn", data, results, title, "cross-entropy summed over the batch")
    run.save_figure("accuracy.png", accuracy_figure(results))
    print(f"results in {run.path}")
    return 0


if __name__ == "__main__":
    entry.entry_point(main)
