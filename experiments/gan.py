"""Shared vs unshared discriminator: what the GAN's ``reuse=True`` buys.

A DCGAN (:func:`zoo.models.gan.conv_generator`: z -> 7x7x64 -> 14x14x32 ->
28x28x1; :func:`zoo.models.gan.conv_discriminator`: 28x28x1 -> 14x14x32 ->
7x7x64 -> 1; Adam 2e-4, beta1 0.5, batch 64, 3,000 steps; samples from an
exponential moving average of the generator) is trained on Fashion-MNIST
twice: with the discriminator of the generated images reusing the variables of
the discriminator of the real images (shared, the GAN), and with a second
discriminator of its own (unshared, the classic mistake: it never sees a real
image). Each step runs the discriminator update, then the generator update
against the updated discriminator; ``--steps-per-run`` (32) steps run inside one
``session.run`` (:func:`zoo.training.repeat_updates`). ``--architecture mlp``
trains the one-hidden-layer MLP GAN of earlier runs instead.

Sample quality is a number: the Frechet classifier distance (FCD), the Frechet
distance between the test images and generated samples in the last hidden layer
of an MLP classifier this script trains first on the same data. It is computed
like the FID but it is not the Inception FID; its values compare only with each
other. The FCD of real training images against the test images is the floor a
perfect generator would reach with as many samples.

Usage::

    python -m experiments.gan --dataset fashion_mnist \
        --data-dir /usr/share/datasets/fashion-mnist --out runs/gan/full
    python -m experiments.gan --quick --variant shared --data-dir DIR

Writes ``results.json``, ``fcd.png`` (FCD and losses against the step),
``coverage.png`` (the classes of the final samples under the feature classifier),
``samples_<variant>.png`` and TensorBoard events under ``tensorboard/<variant>/``
into the run directory; checkpoints go to ``checkpoints/`` (``--resume``).
"""

import itertools
import time

import numpy as np

from experiments.harness import datasets, entry, figures, flags, rundir, startup
from layers.errors import ZooError
from zoo.data import N_CLASSES, N_PIXELS

VARIANTS = ("shared", "unshared")
ARCHITECTURES = ("dcgan", "mlp")  # zoo.models.gan.ARCHITECTURES, without TensorFlow
HIDDEN = 32
AVERAGE_DECAY = 0.999
XLA = False  # XLA compiles the convolutions to slower CPU kernels
LEARNING_RATE = 2e-4
BETA1 = 0.5
CLASSIFIER_HIDDEN = (256, 128)
CLASSIFIER_LEARNING_RATE = 1e-3
CLASSIFIER_BATCH = 128
GRID_SIDE = 8
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
        choices=ARCHITECTURES,
        default="dcgan",
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
        check=at_least_two,
        quick=1000,
        help="generated images per FCD evaluation (and real training images for the "
        "floor); quick runs use at most 1,000",
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


def at_least_two(samples):
    """Check of ``--samples``: 2 or more, to estimate a covariance."""
    if samples < 2:
        return (
            f"expected at least 2 samples to estimate a covariance, found {samples}; "
            "pass 2 or more (thousands for a stable FCD)"
        )
    return flags.integer(2)(samples)


def check_evals(args):
    """Raises ZooError when ``--evals`` asks for more evaluations than ``--steps``."""
    if args.evals > args.steps:
        raise ZooError(
            f"--evals: expected at most one evaluation per step (--steps {args.steps}), "
            f"found {args.evals}; pass fewer --evals or more --steps"
        )


def parse_args(argv):
    """Parses and checks the flags (:func:`flags.parse_args`), then starts TensorFlow;
    ``--quick`` caps ``--samples`` at 1,000 and ``--classifier-steps`` at 300.

    Raises:
        ZooError: a flag out of range (every number is checked, ``--samples``
            needs 2 or more), or more ``--evals`` than ``--steps``.
    """
    args = flags.parse_args(build_parser(), argv)
    startup.import_tensorflow()
    return args


class FeatureClassifier:
    """The classifier whose last hidden layer is the FCD's feature space.

    Trained by :func:`train_feature_classifier`; its session stays open while the
    GAN variants are evaluated (:meth:`close` ends it).

    Attributes:
        test_accuracy: accuracy on the test split.
        steps_per_second: training speed.
    """

    def __init__(self, session, images, features, logits, test_accuracy, steps_per_second):
        self._session, self._images = session, images
        self._features, self._logits = features, logits
        self.test_accuracy = test_accuracy
        self.steps_per_second = steps_per_second

    def statistics(self, images):
        """Returns the :class:`zoo.frechet.FeatureStatistics` of images [n, 784]."""
        from zoo.frechet import feature_statistics

        features = self._session.run(self._features, {self._images: images})
        return feature_statistics(features)

    def classes(self, images):
        """Returns the class the classifier gives each of images [n, 784], [n] ints."""
        logits = self._session.run(self._logits, {self._images: images})
        return np.argmax(logits, axis=1)

    def distance(self, reference, images):
        """Returns the FCD between ``reference`` statistics and images [n, 784]."""
        from zoo.frechet import frechet_distance

        return frechet_distance(reference, self.statistics(images))

    def close(self):
        self._session.close()


def train_feature_classifier(args, data, run):
    """Trains an MLP classifier on ``data.train`` and keeps its session open.

    Args:
        args: the parsed flags (``classifier_steps``, ``seed``).
        data: the :class:`zoo.data.DataSets`; training starts at its first batch.
        run: the :class:`experiments.harness.rundir.RunDir` (its checkpointer).

    Returns:
        :class:`FeatureClassifier`.
    """
    import tensorflow as tf

    from zoo import training
    from zoo.data.batches import GraphBatches
    from zoo.models import mlp_classifier

    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(args.seed)
        batches = GraphBatches(data.train, CLASSIFIER_BATCH)
        scope = "fcd_classifier"
        model = mlp_classifier(
            batches.images, batches.labels, scope=scope, hidden=CLASSIFIER_HIDDEN, l2=0.0
        )
        train_op = tf.compat.v1.train.AdamOptimizer(CLASSIFIER_LEARNING_RATE).minimize(
            model.loss
        )
        images = tf.compat.v1.placeholder(tf.float32, [None, N_PIXELS], name="images")
        labels = tf.compat.v1.placeholder(tf.float32, [None, N_CLASSES], name="labels")
        evaluation = mlp_classifier(
            images, labels, scope=scope, reuse=True, hidden=CLASSIFIER_HIDDEN
        )
        init = tf.compat.v1.global_variables_initializer()
    graph.finalize()
    data.train.restore({"epoch": 0, "position": 0})
    session = tf.compat.v1.Session(graph=graph)
    session.run(init)
    batches.initialize(session)
    print("Training the feature classifier...")
    _, steps_per_second = training.train_loop(
        session,
        train_op,
        model.loss,
        batches,
        args.classifier_steps,
        CLASSIFIER_BATCH,
        log_every=entry.log_period(args.classifier_steps),
        desc="classifier",
        checkpointer=run.checkpointer,
    )
    accuracy = float(
        session.run(
            evaluation.accuracy, {images: data.test.images, labels: data.test.labels}
        )
    )
    print(f"feature classifier: test accuracy {accuracy:.4f}")
    features = evaluation.layers[-2].output
    return FeatureClassifier(
        session, images, features, evaluation.logits, accuracy, steps_per_second
    )


def boundaries(steps, evals):
    """Returns the steps at which the FCD is evaluated: 0, then ``evals`` even cuts."""
    return [round(k * steps / evals) for k in range(evals + 1)]


def widths(architecture, hidden):
    """Returns ``(generator widths, discriminator widths)`` of ``--hidden``."""
    if architecture == "dcgan":
        return (2 * hidden, hidden), (hidden, 2 * hidden)
    return (hidden,), (hidden,)


def class_histogram(predicted, n_classes=N_CLASSES):
    """Returns the fraction of samples in each class, a list of ``n_classes`` floats.

    Args:
        predicted: the class index of each sample [n].
        n_classes: classes counted, those no sample fell in included.
    """
    counts = np.bincount(np.asarray(predicted, dtype=np.int64), minlength=n_classes)
    return (counts / max(1, counts.sum())).tolist()


def run_variant(variant, args, data, run, classifier, real):
    """Builds, trains and evaluates one variant in its own graph.

    Training runs in ``--evals`` chunks, each one :func:`zoo.training.train_loop`
    of ``--steps-per-run`` GAN steps per run (:func:`zoo.training.repeat_updates`,
    XLA with ``--xla``) with its own checkpoint, and the FCD is taken after each
    chunk; a resumed run restores the finished chunks and recomputes their FCD
    exactly.

    Args:
        variant: ``"shared"`` or ``"unshared"``.
        args: the parsed flags.
        data: the :class:`zoo.data.DataSets`; training restarts at its first batch.
        run: the :class:`experiments.harness.rundir.RunDir`.
        classifier: the :class:`FeatureClassifier`.
        real: the :class:`zoo.frechet.FeatureStatistics` of the test images.

    Returns:
        ``(result dict, the first GRID_SIDE**2 final samples [n, 784])``.
    """
    import tensorflow as tf
    from tqdm import tqdm

    from zoo import training
    from zoo.data.batches import GraphBatches
    from zoo.models.gan import ARCHITECTURES, gan_update

    start = time.perf_counter()
    graph = tf.Graph()
    generator_hidden, discriminator_hidden = widths(args.architecture, args.hidden)
    with graph.as_default():
        tf.compat.v1.set_random_seed(args.seed)
        batches = GraphBatches(data.train, args.batch_size)
        update_fn = gan_update(
            args.batch_size,
            args.noise_dim,
            tf.compat.v1.train.AdamOptimizer(args.learning_rate, beta1=BETA1),
            tf.compat.v1.train.AdamOptimizer(args.learning_rate, beta1=BETA1),
            scope="gan",
            average_decay=args.average_decay,
            shared=variant == "shared",
            architecture=args.architecture,
            generator_hidden=generator_hidden,
            discriminator_hidden=discriminator_hidden,
        )
        step = training.repeat_updates(
            update_fn, batches, args.steps_per_run, jit_compile=args.xla
        )
        z_eval = tf.compat.v1.placeholder(tf.float32, [None, args.noise_dim], "z_eval")
        sampler = ARCHITECTURES[args.architecture].generator(
            z_eval, scope="gan/generator_average", reuse=True, hidden=generator_hidden
        )
        init = tf.compat.v1.global_variables_initializer()
        writer = run.summary_writer(variant, graph=graph)
    graph.finalize()
    noise = np.random.default_rng([args.seed, 1]).standard_normal(
        (args.samples, args.noise_dim)
    )

    data.train.restore({"epoch": 0, "position": 0})
    fcd, losses, outputs, seconds = [], [], [], 0.0
    cuts = boundaries(args.steps, args.evals)
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)
        batches.initialize(session)

        def evaluate(step):
            samples = session.run(sampler.images, {z_eval: noise})
            distance = classifier.distance(real, samples)
            fcd.append([step, distance])
            training.add_scalar(writer, f"{variant}/fcd", distance, step)
            tqdm.write(f"  {variant} step {step:6d}: FCD {distance:8.3f}")
            return samples

        evaluate(0)
        print(f"Training ({variant})...")
        for begin, end in itertools.pairwise(cuts):
            logged, speed = training.train_loop(
                session,
                step,
                None,
                batches,
                end - begin,
                args.batch_size,
                log_every=entry.log_period(end - begin),
                desc=f"{variant}-{end}",
                checkpointer=run.checkpointer,
            )
            seconds += (end - begin) / speed
            for at, d_loss, values in logged:
                losses.append([begin + at, d_loss, values["g_loss"]])
                outputs.append([begin + at, values["d_real"], values["d_fake"]])
                for name, value in (("d_loss", d_loss), *values.items()):
                    training.add_scalar(writer, f"{variant}/{name}", value, begin + at)
            samples = evaluate(end)
    writer.close()
    result = {
        "fcd": fcd,
        "final_fcd": fcd[-1][1],
        "class_histogram": class_histogram(classifier.classes(samples)),
        "losses": losses,
        "loss_columns": ["step", "d_loss", "g_loss"],
        "discriminator_outputs": outputs,
        "discriminator_output_columns": ["step", "mean D(real)", "mean D(fake)"],
        "dataset": data.name,
        "architecture": args.architecture,
        "generator_hidden": list(generator_hidden),
        "discriminator_hidden": list(discriminator_hidden),
        "steps": args.steps,
        "batch_size": args.batch_size,
        "noise_dim": args.noise_dim,
        "hidden": args.hidden,
        "learning_rate": args.learning_rate,
        "beta1": BETA1,
        "average_decay": args.average_decay,
        "seed": args.seed,
        "samples": args.samples,
        "steps_per_run": args.steps_per_run,
        "xla": args.xla,
        "wall_time_s": time.perf_counter() - start,
        "steps_per_second": args.steps / seconds,
    }
    return result, samples[: GRID_SIDE**2]


def plot_curves(results, floor):
    """Returns a figure: FCD against the step (left), both losses (right)."""
    figure, (left, right) = figures.pyplot().subplots(1, 2, figsize=(12, 4.5))
    for variant, result in results.items():
        steps, distances = zip(*result["fcd"], strict=True)
        left.plot(steps, distances, marker="o", label=variant)
        steps, d_loss, g_loss = zip(*result["losses"], strict=True)
        line = right.plot(steps, d_loss, label=f"{variant}: discriminator")
        right.plot(
            steps,
            g_loss,
            linestyle="--",
            color=line[0].get_color(),
            label=f"{variant}: generator",
        )
    left.axhline(floor, color="gray", linestyle=":", label="real training images")
    left.set_yscale("log")
    left.set_xlabel("training step")
    left.set_ylabel("Frechet classifier distance (log scale)")
    left.set_title(f"Sample quality ({next(iter(results.values()))['dataset']})")
    right.set_xlabel("training step")
    right.set_ylabel("cross-entropy (training batch)")
    right.set_title("Losses")
    for axes in (left, right):
        axes.legend()
        axes.grid(alpha=0.3)
    return figure


def plot_coverage(results, test_histogram, dataset, samples):
    """Returns a bar chart: the class fractions of each variant's final samples and
    of the test images, as the feature classifier labels them (mode coverage)."""
    names = figures.class_names(dataset)
    bars = {"test images": test_histogram}
    bars.update({name: r["class_histogram"] for name, r in results.items()})
    figure, axes = figures.pyplot().subplots(figsize=(10, 4.5))
    width = 0.8 / len(bars)
    for i, (label, fractions) in enumerate(bars.items()):
        positions = np.arange(len(names)) + (i - (len(bars) - 1) / 2) * width
        axes.bar(positions, fractions, width, label=label)
    axes.set_xticks(np.arange(len(names)), names, rotation=30, ha="right")
    axes.set_ylabel("fraction of the images")
    axes.set_title(
        f"Mode coverage: classes of {samples} final samples under the feature classifier"
    )
    axes.legend()
    axes.grid(alpha=0.3, axis="y")
    figure.tight_layout()
    return figure


def plot_samples(images, title):
    """Returns a figure of a GRID_SIDE x GRID_SIDE grid of images [n, 784]."""
    side = int(np.sqrt(images.shape[1]))
    grid = np.ones((GRID_SIDE * (side + 1), GRID_SIDE * (side + 1)))
    for i, image in enumerate(images[: GRID_SIDE**2]):
        row, col = divmod(i, GRID_SIDE)
        top, left = row * (side + 1), col * (side + 1)
        grid[top : top + side, left : left + side] = image.reshape(side, side)
    figure, axes = figures.pyplot().subplots(figsize=(6, 6.3))
    axes.imshow(grid, cmap="gray", vmin=0.0, vmax=1.0)
    axes.set_axis_off()
    axes.set_title(title)
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
    classifier = train_feature_classifier(args, data, run)
    try:
        real = classifier.statistics(data.test.images)
        test_histogram = class_histogram(classifier.classes(data.test.images))
        floor = classifier.distance(real, data.train.images[: args.samples])
        print(f"FCD of {args.samples} real training images (the floor): {floor:.3f}")
        variants = flags.chosen_variants(args, VARIANTS)
        results, samples = {}, {}
        for variant in variants:
            results[variant], samples[variant] = run_variant(
                variant, args, data, run, classifier, real
            )
    finally:
        classifier.close()
    summary = {
        "experiment": "gan",
        "metric": METRIC,
        "dataset": data.name,
        "data_source": data.source,
        "argv": args.argv,
        "classifier": {
            "hidden": list(CLASSIFIER_HIDDEN),
            "steps": args.classifier_steps,
            "batch_size": CLASSIFIER_BATCH,
            "learning_rate": CLASSIFIER_LEARNING_RATE,
            "test_accuracy": classifier.test_accuracy,
            "steps_per_second": classifier.steps_per_second,
        },
        "real_floor_fcd": floor,
        "class_names": list(figures.class_names(data.name)),
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
    run.save_figure(
        "coverage.png", plot_coverage(results, test_histogram, data.name, args.samples)
    )
    for variant, images in samples.items():
        title = f"{variant}: step {args.steps}, FCD {results[variant]['final_fcd']:.2f}"
        run.save_figure(f"samples_{variant}.png", plot_samples(images, title))
    print(f"results in {run.path}")
    return 0


if __name__ == "__main__":
    entry.entry_point(main)
