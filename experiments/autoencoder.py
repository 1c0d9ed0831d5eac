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

from experiments.harness import entry, figures, flags, rundir, seeds
from zoo.data import N_PIXELS

VARIANTS = ("untied", "tied")
SCOPE = "autoencoder"
N_SHOWN = 10
SEED_REFERENCE = seeds.reference("autoencoder")  # the seed's MNIST figures


def build_parser():
    """Returns the experiment's argument parser (shared flags plus ``--variant``)."""
    return flags.ablation_parser(
        "Train the seed's 784-625-784 autoencoder untied and tied and compare test losses.",
        VARIANTS,
        "which decoder to train: its own weight (untied), the encoder's W transposed "
        "(tied), or both one after the other",
        steps=10001,
        xla=True,
    )


def run_variant(variant, args, data, run):
    """Trains and evaluates one variant (:func:`experiments.harness.train.train_variant`).

    Returns:
        ``(result dict, reconstructions of the first N_SHOWN test images)``.
    """
    import tensorflow as tf

    from experiments.harness.train import train_variant
    from zoo.models import autoencoder
    from zoo.models.autoencoder import LEARNING_RATE

    tied = variant == "tied"
    result, shown = train_variant(
        variant,
        args,
        data,
        run,
        loss_fn=lambda images, _: autoencoder(images, tied=tied, scope=SCOPE).loss,
        optimizer=tf.compat.v1.train.AdagradOptimizer(LEARNING_RATE),
        evaluation=lambda: test_set_evaluation(data.test.images, tied),
    )
    reference = {"dataset": SEED_REFERENCE["dataset"], **SEED_REFERENCE[variant]}
    return {**result, "reference": reference}, shown


def test_set_evaluation(images, tied):
    """Builds the test loss with ``reuse=True``; returns ``evaluate(session)``.

    ``evaluate`` returns ``({"test_loss": ...}, reconstructions of the first
    N_SHOWN images)``.
    """
    import tensorflow as tf

    from zoo.models import autoencoder

    x_test = tf.compat.v1.placeholder(tf.float32, [None, N_PIXELS], name="x_test")
    model = autoencoder(x_test, tied=tied, scope=SCOPE, reuse=True)

    def evaluate(session):
        test_loss = float(session.run(model.loss, {x_test: images}))
        return {"test_loss": test_loss}, session.run(
            model.decoded, {x_test: images[:N_SHOWN]}
        )

    return evaluate


def plot_losses(results):
    """Returns a figure of each variant's training loss: ours solid, the seed's dashed."""
    figure, axes = figures.pyplot().subplots(figsize=(7, 4.5))
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
    rows = {"original": originals, **reconstructions}
    figure, axes = figures.pyplot().subplots(
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
    """Runs the experiment (``--help``); raises ZooError as :func:`rundir.start`."""
    args, data, run = rundir.start_with_tensorflow(build_parser(), argv, "autoencoder")
    variants = flags.chosen_variants(args, VARIANTS)
    results, reconstructions = {}, {}
    for variant in variants:
        results[variant], reconstructions[variant] = run_variant(variant, args, data, run)
    summary = {"experiment": "autoencoder", "data_source": data.source, "variants": results}
    if len(results) == 2:
        summary["tied_below_untied"] = (
            results["tied"]["test_loss"] < results["untied"]["test_loss"]
        )
    run.write_results(summary)
    run.save_figure("loss_curves.png", plot_losses(results))
    originals = data.test.images[:N_SHOWN]
    run.save_figure("reconstructions.png", plot_reconstructions(originals, reconstructions))
    print(f"results in {run.path}")
    return 0


if __name__ == "__main__":
    entry.entry_point(main)
