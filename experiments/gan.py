"""Shared vs unshared discriminator: what the GAN's ``reuse=True`` buys.

A DCGAN (:mod:`zoo.models.gan`: z -> 7x7x64 -> 14x14x32 -> 28x28x1 and back down
to 1; Adam 2e-4, beta1 0.5, batch 64, 3,000 steps; samples from an exponential
moving average of the generator) is trained on Fashion-MNIST twice: the
discriminator of the generated images reusing the variables of the one of the
real images (shared, the GAN), and a second discriminator of its own (unshared,
the classic mistake: it never sees a real image). Each step updates the
discriminator, then the generator against it (:func:`zoo.training.gan.gan_update`),
32 steps per ``session.run``. ``--architecture mlp``: the MLP GAN of earlier runs.

Sample quality is the Frechet classifier distance (FCD, :mod:`zoo.frechet`): the
Frechet distance between the test images and generated samples in the last
hidden layer of an MLP classifier this script trains first on the same data.
Computed like the FID, it is not the Inception FID: its values compare only
with each other. Real training images give the floor.

Usage::

    python -m experiments.gan --dataset fashion_mnist \
        --data-dir /usr/share/datasets/fashion-mnist --out runs/gan/full
    python -m experiments.gan --quick --variant shared --data-dir DIR

Writes ``results.json``, ``fcd.png`` (FCD and losses by step), ``coverage.png``
(the final samples' classes), ``samples_<variant>.png``, TensorBoard events
(``tensorboard/<variant>/``) and checkpoints (``checkpoints/``, ``--resume``).
"""

import time

import numpy as np

from experiments.harness import datasets, entry, figures, flags, rundir, startup
from layers.checks import int_problem, require
from zoo.constants import DCGAN, GAN_ARCHITECTURES
from zoo.frechet import train_feature_classifier

VARIANTS = ("shared", "unshared")
HIDDEN = 32
AVERAGE_DECAY = 0.999
XLA = False  # XLA compiles the convolutions to slower CPU kernels
LEARNING_RATE = 2e-4
BETA1 = 0.5
GRID_SIDE = 8
# The flags each variant's result repeats.
RECORDED = "architecture noise_dim hidden learning_rate average_decay samples".split()
METRIC = (
    "Frechet classifier distance (FCD): the Frechet distance between Gaussians fitted "
    "to test images and to generated samples in the last hidden layer (128 ReLU units) "
    "of an MLP classifier trained by this run on the same dataset; computed like the "
    "FID, but not the Inception FID: compare its values only with each other"
)


def build_parser():
    """Returns the experiment's argument parser (shared flags plus the GAN's)."""
    p = flags.parser(
        "Train a DCGAN with a shared discriminator and with an unshared one (a "
        "second discriminator for the fakes) and compare their Frechet classifier "
        "distances.",
        steps=3000,
        batch_size=64,
    )
    flags.add_loop_flags(p, xla=XLA)
    flags.add_variant_flag(
        p,
        VARIANTS,
        help="shared: the discriminator of the fakes reuses the one of the real images; "
        "unshared: a second discriminator of its own; both: one after the other",
    )
    p.add_argument(
        "--learning-rate",
        type=float,
        default=LEARNING_RATE,
        help="Adam learning rate of both players (beta1 0.5)",
    )
    p.add_argument("--noise-dim", type=int, default=64, help="width of the noise z")
    p.add_argument(
        "--average-decay",
        type=float,
        default=AVERAGE_DECAY,
        check=flags.real(0.0, inclusive=True, maximum=0.9999),
        help="samples come from an exponential moving average of the generator's "
        "variables with this decay per step; 0: from the generator itself",
    )
    p.add_argument(
        "--architecture",
        choices=GAN_ARCHITECTURES,
        default=DCGAN,
        help="dcgan: transposed convolutions up from 7x7 (generator), stride-2 "
        "convolutions down (discriminator); mlp: one hidden layer each",
    )
    p.add_argument(
        "--hidden",
        type=int,
        default=HIDDEN,
        help="dcgan: the discriminator's channels are H, 2H and the generator's 2H, "
        "H; mlp: the hidden width of both players",
    )
    p.add_argument(
        "--evals",
        type=int,
        default=12,
        help="FCD evaluations during training, evenly spaced (plus one at step 0)",
    )
    p.add_argument(
        "--samples",
        type=int,
        default=5000,
        check=flags.integer(2),
        quick=1000,
        help="generated images per FCD evaluation (and real training images for the "
        "floor), 2 or more for a covariance; quick runs use at most 1,000",
    )
    p.add_argument(
        "--classifier-steps",
        type=int,
        default=3000,
        quick=300,
        help="training steps of the feature classifier (batch 128, Adam 1e-3); quick "
        "runs use at most 300",
    )
    p.add_check(check_evals)
    return p


def check_evals(args):
    """Raises ZooError when ``--evals`` asks for more evaluations than ``--steps``."""
    require(
        "--evals",
        int_problem(args.evals, 1, args.steps, name="the number of evaluations"),
        f"at most one per step (--steps {args.steps}): pass fewer --evals or more --steps",
    )


def parse_args(argv):
    """Returns the flags (:func:`flags.parse_args`, raising ZooError as it does), then
    starts TensorFlow; ``--quick`` caps ``--samples`` at 1,000 and
    ``--classifier-steps`` at 300."""
    args = flags.parse_args(build_parser(), argv)
    startup.import_tensorflow()
    return args


def widths(architecture, hidden):
    """Returns ``(generator widths, discriminator widths)`` of ``--hidden``."""
    if architecture == DCGAN:
        return (2 * hidden, hidden), (hidden, 2 * hidden)
    return (hidden,), (hidden,)


def run_variant(variant, args, data, run, classifier, real):
    """Trains one variant (:func:`experiments.harness.train.train_updates`), its FCD
    against ``real`` (the test images' statistics) taken at step 0 and after each
    of ``--evals`` chunks from the generator's average.

    Returns:
        ``(result dict, the first GRID_SIDE**2 final samples [n, 784])``.
    """
    import tensorflow as tf

    from experiments.harness.train import loss_scaled, train_updates
    from zoo.models.gan import ARCHITECTURES
    from zoo.training.gan import gan_update

    generator_hidden, discriminator_hidden = widths(args.architecture, args.hidden)
    d_optimizer, g_optimizer = (
        loss_scaled(tf.compat.v1.train.AdamOptimizer(args.learning_rate, beta1=BETA1), args)
        for _ in range(2)
    )
    update_fn = gan_update(
        args.batch_size,
        args.noise_dim,
        d_optimizer,
        g_optimizer,
        scope="gan",
        average_decay=args.average_decay,
        shared=variant == "shared",
        architecture=args.architecture,
        generator_hidden=generator_hidden,
        discriminator_hidden=discriminator_hidden,
    )

    def evaluation():
        z = tf.compat.v1.placeholder(tf.float32, [None, args.noise_dim], "z_eval")
        sampler = ARCHITECTURES[args.architecture].generator(
            z, scope="gan/generator_average", reuse=True, hidden=generator_hidden
        )
        noise = np.random.default_rng([args.seed, 1]).standard_normal(
            (args.samples, args.noise_dim)
        )

        def evaluate(session):
            samples = session.run(sampler.images, {z: noise})
            return {"fcd": classifier.distance(real, samples)}, samples

        return evaluate

    result, samples = train_updates(
        variant, args, data, run, update_fn, evaluation, evaluations=args.evals
    )
    g_loss, d_real, d_fake = (result.pop(name) for name in ("g_loss", "d_real", "d_fake"))
    losses = zip(result["losses"], g_loss, strict=True)
    outputs = zip(d_real, d_fake, strict=True)
    result.update(
        final_fcd=result["fcd"][-1][1],
        class_histogram=classifier.class_fractions(samples),
        losses=[[step, d, g] for (step, d), (_, g) in losses],
        loss_columns=["step", "d_loss", "g_loss"],
        discriminator_outputs=[[step, r, f] for (step, r), (_, f) in outputs],
        discriminator_output_columns=["step", "mean D(real)", "mean D(fake)"],
        generator_hidden=list(generator_hidden),
        discriminator_hidden=list(discriminator_hidden),
        beta1=BETA1,
        **{name: getattr(args, name) for name in RECORDED},
    )
    return result, samples[: GRID_SIDE**2]


def plot_curves(results, floor):
    """Returns a figure: FCD against the step (left), both losses (right)."""
    figure, (left, right) = figures.pyplot().subplots(1, 2, figsize=(12, 4.5))
    for variant, result in results.items():
        left.plot(*zip(*result["fcd"], strict=True), marker="o", label=variant)
        steps, d_loss, g_loss = zip(*result["losses"], strict=True)
        line = right.plot(steps, d_loss, label=f"{variant}: discriminator")
        color = line[0].get_color()
        right.plot(steps, g_loss, "--", color=color, label=f"{variant}: generator")
    left.axhline(floor, color="gray", linestyle=":", label="real training images")
    dataset = next(iter(results.values()))["dataset"]
    left.set(yscale="log", ylabel="FCD (log scale)", title=f"Sample quality ({dataset})")
    right.set(ylabel="cross-entropy (training batch)", title="Losses")
    for axes in (left, right):
        axes.set_xlabel("training step")
        axes.legend()
        axes.grid(alpha=0.3)
    return figure


def main(argv=None):
    """Runs the experiment; see ``--help``.

    Raises:
        ZooError: bad flags, an existing run directory, or missing/corrupt data.
    """
    args = parse_args(argv)
    data = datasets.load(args, validation=0)
    run = rundir.run_dir(args, "gan")
    start = time.perf_counter()
    print("Training the feature classifier...")
    log_every = entry.log_period(args.classifier_steps)
    classifier = train_feature_classifier(
        data, args.classifier_steps, args.seed, run.checkpointer, log_every
    )
    print(f"feature classifier: test accuracy {classifier.summary['test_accuracy']:.4f}")
    try:
        real = classifier.statistics(data.test.images)
        test_histogram = classifier.class_fractions(data.test.images)
        floor = classifier.distance(real, data.train.images[: args.samples])
        print(f"FCD of {args.samples} real training images (the floor): {floor:.3f}")
        results, samples = {}, {}
        for variant in flags.chosen_variants(args, VARIANTS):
            results[variant], samples[variant] = run_variant(
                variant, args, data, run, classifier, real
            )
    finally:
        classifier.close()
    names = figures.class_names(data.name)
    summary = {
        "experiment": "gan",
        "metric": METRIC,
        "dataset": data.name,
        "data_source": data.source,
        "argv": args.argv,
        "classifier": classifier.summary,
        "real_floor_fcd": floor,
        "class_names": list(names),
        "test_class_histogram": test_histogram,
        "variants": results,
        "wall_time_s": time.perf_counter() - start,
    }
    if len(results) == 2:
        summary["shared_below_unshared"] = (
            results["shared"]["final_fcd"] < results["unshared"]["final_fcd"]
        )
    run.write_results(summary)
    run.save_figure("fcd.png", plot_curves(results, floor))
    bars = {"test images": test_histogram}
    bars.update({name: result["class_histogram"] for name, result in results.items()})
    title = f"Mode coverage: classes of {args.samples} final samples (feature classifier)"
    run.save_figure("coverage.png", figures.class_bars(bars, names, title))
    for variant, images in samples.items():
        title = f"{variant}: step {args.steps}, FCD {results[variant]['final_fcd']:.2f}"
        run.save_figure(f"samples_{variant}.png", figures.image_grid(images, title))
    print(f"results in {run.path}")
    return 0


if __name__ == "__main__":
    entry.entry_point(main)
