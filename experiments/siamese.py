"""Siamese twins: one embedding tower for both images of a pair vs two independent towers.

A 784-256-32 tower (ReLU hidden layer, linear embedding) is trained with Adam
on the contrastive loss of Hadsell, Chopra and LeCun (2006; margin 1) over
pairs made inside the graph from each training batch
(:func:`zoo.models.siamese.partners_in_batch`: every image of the batch is the
first image of one pair, half of the pairs of one class). ``shared`` applies
one tower to both images (the second time with ``reuse=True``);
``two_towers`` gives the second image its own tower, with the same steps,
batches and pairs. Training goes through ``zoo.training.repeat_step`` and
``train_loop``: ``--steps-per-run K`` steps in one ``session.run`` (the numbers
do not depend on K, the speed does).

Measured on the test split, per variant:

* verification: the pairs :func:`partners_in_batch` makes from consecutive
  chunks of ``--batch-size`` test images (half of one class); a pair is called
  "same class" when its distance is below a threshold, the one that is most
  accurate on the pairs made the same way from the validation split (from the
  training split with ``--validation 0``);
* nearest neighbour: each test image takes the class of its nearest training
  image in the embedding. For two towers, each tower embeds both sets on its
  own (``tower_1``, ``tower_2``), and ``tower_1 vs tower_2`` embeds the test
  images with tower 1 and the training images with tower 2, as the pairs were
  compared in training.

Usage::

    python -m experiments.siamese --dataset fashion_mnist \
        --data-dir /usr/share/datasets/fashion-mnist --out runs/siamese/full
    python -m experiments.siamese --quick --data-dir DIR

Writes ``results.json``, ``loss_curves.png``, ``embedding.png`` (test
embeddings on their first two principal axes) and TensorBoard events under
``tensorboard/<variant>/`` into the run directory.
"""

import time

import numpy as np
import tensorflow as tf

from experiments import figures, loops, rundir, runner
from experiments.bench import machine
from zoo import training
from zoo.batches import GraphBatches
from zoo.models.siamese import partners_in_batch, siamese

VARIANTS = ("shared", "two_towers")
N_PIXELS = 784
LOG_PERIOD = 250  # steps between logged training losses (fewer in short runs)
N_SCATTER = 2000
EMBED_CHUNK = 5000


def build_parser():
    """Returns the experiment's argument parser."""
    p = runner.parser(
        "Train a siamese embedding with one shared tower and with two independent "
        "towers; compare verification and nearest-neighbour accuracy.",
        steps=5000,
        batch_size=128,
    )
    runner.add_variant_flag(
        p,
        VARIANTS,
        help="one tower for both images (shared), a tower per image (two_towers), or both",
    )
    p.add_argument("--hidden", type=int, default=256, help="width of the hidden layer")
    p.add_argument("--embedding-size", type=int, default=32, help="width of the embedding")
    p.add_argument(
        "--margin",
        type=float,
        default=1.0,
        help="contrastive margin: pairs of two classes further apart cost nothing",
    )
    p.add_argument("--learning-rate", type=float, default=1e-3, help="Adam's rate")
    p.add_argument(
        "--gallery",
        type=int,
        default=None,
        metavar="N",
        help="nearest neighbour: compare the test images with the first N training "
        "images (default all)",
    )
    loops.add_flags(p, xla=True)
    runner.add_validation_flag(
        p,
        "training examples held out from the start of the training split; the "
        "verification threshold is chosen on their pairs (on training pairs with 0)",
    )
    return p


def model_kwargs(args, variant):
    """Returns the :func:`siamese` arguments of a variant."""
    return {
        "scope": "siamese",
        "shared": variant == "shared",
        "hidden": (args.hidden,),
        "embedding_size": args.embedding_size,
        "margin": args.margin,
    }


def pair_loss(images, labels, args, variant):
    """Returns the contrastive loss of the pairs :func:`partners_in_batch` makes."""
    partner, same = partners_in_batch(tf.argmax(labels, 1))
    model = siamese(images, tf.gather(images, partner), same, **model_kwargs(args, variant))
    return model.loss


def run_variant(variant, args, data, run):
    """Builds, trains and evaluates one variant in its own graph.

    Args:
        variant: ``"shared"`` or ``"two_towers"``.
        args: the parsed flags.
        data: the :class:`zoo.data.DataSets`; training restarts at its first batch.
        run: the :class:`experiments.rundir.RunDir`.

    Returns:
        ``(result dict, {tower name: test embeddings of the first N_SCATTER images})``.
    """
    start = time.perf_counter()
    log_every = runner.log_period(args.steps, LOG_PERIOD)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(args.seed)
        batches = GraphBatches(data.train, args.batch_size)
        step = loops.repeat_step(
            args,
            lambda images, labels: pair_loss(images, labels, args, variant),
            tf.compat.v1.train.AdamOptimizer(args.learning_rate),
            batches,
        )
        x_eval = tf.compat.v1.placeholder(tf.float32, [None, N_PIXELS], name="x_eval")
        probe = siamese(x_eval, x_eval, reuse=True, **model_kwargs(args, variant))
        labels_eval = tf.compat.v1.placeholder(tf.int64, [None], name="labels_eval")
        pairs_eval = partners_in_batch(labels_eval)
        parameters = sum(int(np.prod(v.shape)) for v in tf.compat.v1.trainable_variables())
        init = tf.compat.v1.global_variables_initializer()
        writer = run.summary_writer(variant, graph=graph)
    graph.finalize()
    with tf.compat.v1.Session(graph=graph) as session:
        print(f"Training ({variant}, {parameters:,} parameters)...")
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

        def embed(images):
            parts = [
                session.run(
                    [probe.embedding1, probe.embedding2],
                    {x_eval: images[i : i + EMBED_CHUNK]},
                )
                for i in range(0, len(images), EMBED_CHUNK)
            ]
            return tuple(np.concatenate(tower) for tower in zip(*parts, strict=True))

        def pairs(labels):
            chunks = []
            for i in range(0, len(labels), args.batch_size):
                found, same_class = session.run(
                    pairs_eval, {labels_eval: labels[i : i + args.batch_size]}
                )
                chunks.append((found + i, same_class))
            return tuple(np.concatenate(part) for part in zip(*chunks, strict=True))

        threshold_split = "validation" if data.validation.num_examples else "train"
        splits = {"train": data.train, "test": data.test, "validation": data.validation}
        labels = {name: splits[name].labels.argmax(1) for name in ("train", "test")}
        labels[threshold_split] = splits[threshold_split].labels.argmax(1)
        embeddings = {name: embed(splits[name].images) for name in labels}
        partners = {name: pairs(labels[name]) for name in (threshold_split, "test")}
    verification = verify(embeddings, partners, threshold_split)
    views = {"tower": (0, 0)} if variant == "shared" else TWO_TOWER_VIEWS
    nearest = {
        view: nearest_neighbour_accuracy(
            embeddings["test"][query],
            labels["test"],
            embeddings["train"][gallery][: args.gallery],
            labels["train"][: args.gallery],
        )
        for view, (query, gallery) in views.items()
    }
    wall = time.perf_counter() - start
    print(
        f"verification accuracy (test) = {verification['test_accuracy']:.4f}, "
        f"nearest neighbour accuracy (test) = "
        + ", ".join(f"{view} {acc:.4f}" for view, acc in nearest.items())
    )
    training.add_scalar(
        writer,
        f"{variant}/test_verification_accuracy",
        verification["test_accuracy"],
        args.steps,
    )
    for view, accuracy in nearest.items():
        training.add_scalar(
            writer, f"{variant}/test_1nn_accuracy/{view}", accuracy, args.steps
        )
    writer.close()
    result = {
        "parameters": parameters,
        "verification": verification,
        "nearest_neighbour_accuracy": nearest,
        "nearest_neighbour_gallery": len(labels["train"][: args.gallery]),
        "losses": [[step, loss] for step, loss in logged],
        "dataset": data.name,
        "train_examples": data.train.num_examples,
        **loops.settings(args, log_every),
        "wall_time_s": wall,
        "steps_per_second": steps_per_second,
    }
    shown = {
        ("tower" if variant == "shared" else f"tower_{i + 1}"): tower[:N_SCATTER]
        for i, tower in enumerate(embeddings["test"][: 1 if variant == "shared" else 2])
    }
    return result, shown


def verify(embeddings, partners, threshold_split):
    """Returns the verification metrics of the test pairs (see the module's docstring).

    Args:
        embeddings: split name -> (first-image tower's, second-image tower's
            embeddings of the split).
        partners: split name -> (partner index, same) of the split's pairs.
        threshold_split: the split whose pairs choose the threshold.
    """
    distances = {
        name: np.linalg.norm(
            embeddings[name][0] - embeddings[name][1][partners[name][0]], axis=1
        )
        for name in partners
    }
    threshold, chosen_accuracy = best_threshold(
        distances[threshold_split], partners[threshold_split][1]
    )
    test_same = partners["test"][1]
    return {
        "threshold": threshold,
        "threshold_from": f"{threshold_split} pairs",
        "threshold_accuracy": chosen_accuracy,
        "test_accuracy": float(
            np.mean((distances["test"] < threshold) == (test_same == 1))
        ),
        "test_pairs": len(test_same),
        "test_same_fraction": float(test_same.mean()),
    }


# For two towers: which tower embeds the test queries and which the training gallery.
TWO_TOWER_VIEWS = {"tower_1": (0, 0), "tower_2": (1, 1), "tower_1 vs tower_2": (0, 1)}


def best_threshold(distances, same):
    """Returns ``(threshold, accuracy)``: the cut that best tells same-class pairs.

    A pair is called "same class" when its distance is below the threshold; the
    threshold is the midpoint between the two distances where the accuracy on
    these pairs is highest.

    Args:
        distances: [n] pair distances.
        same: [n] 1.0 for a pair of one class, 0.0 otherwise.
    """
    order = np.argsort(distances, kind="stable")
    d, s = distances[order], same[order]
    # Calling the k nearest pairs "same": correct are the same ones among them
    # and the different ones after them.
    correct = np.concatenate([[0], np.cumsum(s)]) + (
        np.sum(1 - s) - np.concatenate([[0], np.cumsum(1 - s)])
    )
    k = int(np.argmax(correct))
    edges = np.concatenate([[d[0] - 1.0], d, [d[-1] + 1.0]])
    return float((edges[k] + edges[k + 1]) / 2), float(correct[k] / len(d))


def nearest_neighbour_accuracy(queries, query_labels, gallery, gallery_labels, chunk=256):
    """Returns the fraction of queries whose nearest gallery point has their label."""
    gallery_sq = np.sum(gallery**2, axis=1)
    gallery_t = np.ascontiguousarray(gallery.T)
    correct = 0
    for i in range(0, len(queries), chunk):
        scores = queries[i : i + chunk] @ gallery_t  # ranks as the squared distance:
        scores *= -2.0
        scores += gallery_sq  # |q|^2 is the same for every gallery point
        nearest = scores.argmin(axis=1)
        correct += int(np.sum(gallery_labels[nearest] == query_labels[i : i + chunk]))
    return correct / len(queries)


def main(argv=None):
    """Runs the experiment; see ``--help``.

    Raises:
        ZooError: bad flags, an existing run directory (or one of another
            experiment to resume), or missing/corrupt data.
    """
    args = runner.parse_args(build_parser(), argv)
    data = runner.load_data(args)
    run = rundir.run_dir(args, "siamese")
    variants = runner.chosen_variants(args, VARIANTS)
    results, shown = {}, {}
    for variant in variants:
        results[variant], towers = run_variant(variant, args, data, run)
        shown.update({f"{variant}: {name}": points for name, points in towers.items()})
    summary = {
        "experiment": "siamese",
        "dataset": data.name,
        "data_source": data.source,
        "flags": run.record["flags"],
        "machine": machine(),
        "loss": "contrastive (Hadsell, Chopra, LeCun 2006): mean of same * d^2 / 2 + "
        "(1 - same) * max(0, margin - d)^2 / 2",
        "variants": results,
    }
    run.write_json("results.json", summary)
    run.save_figure(
        "loss_curves.png",
        figures.loss_figure(
            results,
            "Siamese: one shared tower vs two towers",
            "contrastive loss (training batch)",
        ),
    )
    test_labels = data.test.labels.argmax(1)[:N_SCATTER]
    panels = {
        name: (figures.principal_components(points), test_labels)
        for name, points in shown.items()
    }
    run.save_figure(
        "embedding.png",
        figures.scatter_figure(
            panels,
            figures.class_names(data.name),
            f"Test embeddings ({data.name}), first two principal axes",
        ),
    )
    print(f"results in {run.path}")
    return 0


if __name__ == "__main__":
    runner.entry_point(main)
