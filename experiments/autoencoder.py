"""Tied vs untied autoencoder, as in seed 003: which one reconstructs better?

A 784-625-784 sigmoid autoencoder (weights truncated normal, stddev 0.05) is
trained with Adagrad (learning rate 0.1, batch 128, 10,001 steps) on the mean
elementwise binary cross-entropy, once with its own decoder weight (untied) and
once with the decoder reading the encoder's ``W`` transposed (tied). The test
loss is computed by a second build of the model with ``reuse=True``.

Usage::

    python -m experiments.autoencoder --dataset fashion_mnist \
        --data-dir /usr/share/datasets/fashion-mnist --out runs/autoencoder/full
    python -m experiments.autoencoder --quick --variant tied --data-dir DIR

Writes ``results.json``, ``loss_curves.png``, ``reconstructions.png`` and
TensorBoard events under ``tensorboard/<variant>/`` into the run directory.
"""

import time

import tensorflow as tf

from experiments import loops, rundir, runner
from zoo import training
from zoo.batches import GraphBatches
from zoo.models import autoencoder

VARIANTS = ("untied", "tied")
LEARNING_RATE = 0.1
N_PIXELS = 784
N_SHOWN = 10
SEED_REFERENCE = {
    "dataset": "mnist",
    "untied": {
        "test_loss": 0.183986,
        "losses": [
            [0, 0.732], [1000, 0.271], [2000, 0.261], [3000, 0.240], [4000, 0.234],
            [5000, 0.229], [6000, 0.219], [7000, 0.197], [8000, 0.195], [9000, 0.193],
            [10000, 0.189],
        ],
    },
    "tied": {
        "test_loss": 0.147831,
        "losses": [
            [0, 0.707], [1000, 0.233], [2000, 0.215], [3000, 0.194], [4000, 0.186],
            [5000, 0.174], [6000, 0.167], [7000, 0.154], [8000, 0.159], [9000, 0.152],
            [10000, 0.152],
        ],
    },
}  # fmt: skip


def build_parser():
    """Returns the experiment's argument parser (shared flags plus ``--variant``)."""
    p = runner.parser(
        "Train the seed's 784-625-784 autoencoder untied and tied and compare test losses.",
        steps=10001,
        batch_size=128,
    )
    runner.add_variant_flag(
        p,
        VARIANTS,
        help="which decoder to train: its own weight (untied), the encoder's W "
        "transposed (tied), or both one after the other",
    )
    runner.add_validation_flag(p)
    loops.add_flags(p, xla=True)
    return p


def run_variant(variant, args, data, run):
    """Builds, trains and evaluates one variant in its own graph.

    Args:
        variant: ``"untied"`` or ``"tied"``.
        args: the parsed flags.
        data: the :class:`zoo.data.DataSets`; training restarts at its first batch.
        run: the :class:`experiments.rundir.RunDir`.

    Returns:
        ``(result dict, reconstructions of the first N_SHOWN test images)``.
    """
    start = time.perf_counter()
    tied = variant == "tied"
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(args.seed)
        batches = GraphBatches(data.train, args.batch_size)
        step = loops.repeat_step(
            args,
            lambda images, _: autoencoder(images, tied=tied, scope="autoencoder").loss,
            tf.compat.v1.train.AdagradOptimizer(LEARNING_RATE),
            batches,
        )
        x_test = tf.compat.v1.placeholder(tf.float32, [None, N_PIXELS], name="x_test")
        evaluation = autoencoder(x_test, tied=tied, scope="autoencoder", reuse=True)
        init = tf.compat.v1.global_variables_initializer()
        writer = run.summary_writer(variant, graph=graph)
    graph.finalize()
    log_every = runner.log_period(args.steps)
    with tf.compat.v1.Session(graph=graph) as session:
        print(f"Training ({variant})...")
        logged, steps_per_second = loops.train(
            session,
            init,
            step,
            batches,
            args,
            run,
            variant,
            log_every=log_every,
            writer=writer,
        )
        test_loss = float(session.run(evaluation.loss, {x_test: data.test.images}))
        shown = session.run(evaluation.decoded, {x_test: data.test.images[:N_SHOWN]})
    print(f"loss (test) = {test_loss:f}")
    training.add_scalar(writer, f"{variant}/test_loss", test_loss, args.steps)
    writer.close()
    result = {
        "test_loss": test_loss,
        "losses": [[step, loss] for step, loss in logged],
        "dataset": data.name,
        **loops.settings(args, log_every),
        "wall_time_s": time.perf_counter() - start,
        "steps_per_second": steps_per_second,
        "reference": {"dataset": SEED_REFERENCE["dataset"], **SEED_REFERENCE[variant]},
    }
    return result, shown


def plot_losses(results):
    """Returns a figure of each variant's training loss: ours solid, the seed's dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for variant, result in results.items():
        steps, losses = zip(*result["losses"], strict=True)
        line = axes.plot(
            steps, losses, marker="o", label=f"{variant} ({result['dataset']})"
        )
        reference = [pair for pair in result["reference"]["losses"] if pair[0] <= steps[-1]]
        ref_steps, ref_losses = zip(*reference, strict=True)
        axes.plot(
            ref_steps,
            ref_losses,
            linestyle="--",
            color=line[0].get_color(),
            alpha=0.6,
            label=f"{variant}, seed ({result['reference']['dataset']})",
        )
    axes.set_xlabel("training step")
    axes.set_ylabel("binary cross-entropy (training batch)")
    axes.set_title("Autoencoder 784-625-784: untied vs tied decoder")
    axes.legend()
    axes.grid(alpha=0.3)
    return figure


def plot_reconstructions(originals, reconstructions):
    """Returns a figure: a row of test images, then one row per variant's reconstructions.

    Args:
        originals: [N_SHOWN, 784] test images.
        reconstructions: dict variant -> [N_SHOWN, 784] reconstructions.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = {"original": originals, **reconstructions}
    figure, axes = plt.subplots(
        len(rows), N_SHOWN, figsize=(N_SHOWN, len(rows) + 0.3), squeeze=False
    )
    for row, (label, images) in zip(axes, rows.items(), strict=True):
        for ax, image in zip(row, images, strict=True):
            ax.imshow(image.reshape(28, 28), cmap="gray", vmin=0.0, vmax=1.0)
            ax.set_xticks([])
            ax.set_yticks([])
        row[0].set_ylabel(label)
    return figure


def main(argv=None):
    """Runs the experiment; see ``--help``.

    Raises:
        ZooError: bad flags, an existing run directory, or missing/corrupt data.
    """
    args = runner.parse_args(build_parser(), argv)
    data = runner.load_data(args)
    run = rundir.run_dir(args, "autoencoder")
    variants = runner.chosen_variants(args, VARIANTS)
    results, reconstructions = {}, {}
    for variant in variants:
        results[variant], reconstructions[variant] = run_variant(variant, args, data, run)
    summary = {"experiment": "autoencoder", "data_source": data.source, "variants": results}
    if len(results) == 2:
        summary["tied_below_untied"] = (
            results["tied"]["test_loss"] < results["untied"]["test_loss"]
        )
    run.write_json("results.json", summary)
    run.save_figure("loss_curves.png", plot_losses(results))
    originals = data.test.images[:N_SHOWN]
    run.save_figure("reconstructions.png", plot_reconstructions(originals, reconstructions))
    print(f"results in {run.path}")
    return 0


if __name__ == "__main__":
    runner.entry_point(main)
