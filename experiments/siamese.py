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

import numpy as np

from experiments.harness import entry, figures, flags, rundir
from zoo.data import N_PIXELS

VARIANTS = ("shared", "two_towers")
LOG_PERIOD = 250  # steps between logged training losses (fewer in short runs)
N_SCATTER = 2000
EMBED_CHUNK = 5000
LOSS = (
    "contrastive (Hadsell, Chopra, LeCun 2006): mean of same * d^2 / 2 + "
    "(1 - same) * max(0, margin - d)^2 / 2"
)


def build_parser():
    """Returns the experiment's argument parser."""
    p = flags.ablation_parser(
        "Train a siamese embedding with one shared tower and with two independent "
        "towers; compare verification and nearest-neighbour accuracy.",
        VARIANTS,
        "one tower for both images (shared), a tower per image (two_towers), or both",
        steps=5000,
        xla=True,
        learning_rate=1e-3,  # Adam's
        validation="training examples held out from the start of the training split; "
        "the verification threshold is chosen on their pairs (on training pairs with 0)",
    )
    p.add_argument("--hidden", type=int, default=256, help="width of the hidden layer")
    p.add_argument("--embedding-size", type=int, default=32, help="width of the embedding")
    p.add_argument(
        "--margin",
        type=float,
        default=1.0,
        help="distance beyond which unlike pairs cost 0",
    )
    p.add_argument(
        "--gallery",
        type=int,
        default=None,
        metavar="N",
        help="nearest neighbour: compare the test images with the first N training "
        "images (default all)",
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
    import tensorflow as tf

    from zoo.models.siamese import partners_in_batch, siamese

    partner, same = partners_in_batch(tf.argmax(labels, 1))
    model = siamese(images, tf.gather(images, partner), same, **model_kwargs(args, variant))
    return model.loss


def run_variant(variant, args, data, run):
    """Trains and evaluates one variant (:func:`experiments.harness.train.train_variant`).

    Returns:
        ``(result dict, {tower name: test embeddings of the first N_SCATTER images})``.
    """
    import tensorflow as tf

    from experiments.harness.train import train_variant

    return train_variant(
        variant,
        args,
        data,
        run,
        loss_fn=lambda images, labels: pair_loss(images, labels, args, variant),
        optimizer=tf.compat.v1.train.AdamOptimizer(args.learning_rate),
        evaluation=lambda: evaluation(args, variant, data),
        log_period=LOG_PERIOD,
    )


def evaluation(args, variant, data):
    """Builds the towers again with ``reuse=True``; returns ``evaluate(session)``.

    ``evaluate`` returns :func:`evaluate`'s metrics and test embeddings.
    """
    import tensorflow as tf

    from experiments.harness.train import run_in_chunks
    from zoo.models.siamese import partners_in_batch, siamese

    x_eval = tf.compat.v1.placeholder(tf.float32, [None, N_PIXELS], name="x_eval")
    probe = siamese(x_eval, x_eval, reuse=True, **model_kwargs(args, variant))
    labels_eval = tf.compat.v1.placeholder(tf.int64, [None], name="labels_eval")
    pairs_eval = partners_in_batch(labels_eval)

    def embed(session, images):
        towers = [probe.embedding1, probe.embedding2]
        chunks = run_in_chunks(session, towers, {x_eval: images}, EMBED_CHUNK)
        return _concatenated(embeddings for embeddings, _ in chunks)

    def pairs(session, labels):
        chunks = run_in_chunks(session, pairs_eval, {labels_eval: labels}, args.batch_size)
        offsets = range(0, len(labels), args.batch_size)
        return _concatenated(
            (partner + offset, same)
            for ((partner, same), _), offset in zip(chunks, offsets, strict=True)
        )

    return lambda session: evaluate(session, embed, pairs, args, variant, data)


def _concatenated(parts):
    """Returns the tuple of each field of ``parts`` (tuples of arrays) concatenated."""
    return tuple(np.concatenate(field) for field in zip(*parts, strict=True))


def evaluate(session, embed, pairs, args, variant, data):
    """Returns ``(metrics, shown)``: verification and 1-NN accuracies, test embeddings.

    Args:
        session: the trained variant's session.
        embed: ``(session, images) -> (tower 1's, tower 2's embeddings)``.
        pairs: ``(session, labels) -> (partner, same)`` of the pairs of a split.
        args: the parsed flags.
        variant: ``"shared"`` or ``"two_towers"``.
        data: the :class:`zoo.data.DataSets`.
    """
    threshold_split = "validation" if data.validation.num_examples else "train"
    splits = {"train": data.train, "test": data.test, "validation": data.validation}
    labels = {name: splits[name].labels.argmax(1) for name in ("train", "test")}
    labels[threshold_split] = splits[threshold_split].labels.argmax(1)
    embeddings = {name: embed(session, splits[name].images) for name in labels}
    partners = {name: pairs(session, labels[name]) for name in (threshold_split, "test")}
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
    metrics = {
        "verification": verify(embeddings, partners, threshold_split),
        "nearest_neighbour_accuracy": nearest,
        "nearest_neighbour_gallery": len(labels["train"][: args.gallery]),
    }
    shown = {
        ("tower" if variant == "shared" else f"tower_{i + 1}"): tower[:N_SCATTER]
        for i, tower in enumerate(embeddings["test"][: 1 if variant == "shared" else 2])
    }
    return metrics, shown


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
    """Runs the experiment (``--help``); raises ZooError as :func:`rundir.start`."""
    args, data, run = rundir.start_with_tensorflow(build_parser(), argv, "siamese")
    variants = flags.chosen_variants(args, VARIANTS)
    results, shown = {}, {}
    for variant in variants:
        results[variant], towers = run_variant(variant, args, data, run)
        shown.update({f"{variant}: {name}": points for name, points in towers.items()})
    title = "Siamese: one shared tower vs two towers"
    label = "contrastive loss (training batch)"
    run.write_ablation("siamese", data, results, title, label, loss=LOSS)
    test_labels = data.test.labels.argmax(1)[:N_SCATTER]
    run.save_figure(
        "embedding.png", figures.embedding_figure(shown, test_labels, data.name)
    )
    print(f"results in {run.path}")
    return 0


if __name__ == "__main__":
    entry.entry_point(main)
