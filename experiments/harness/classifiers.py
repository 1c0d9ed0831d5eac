"""The classifiers a script trains by name: ``--model mlp`` or ``--model conv``;
the batch-norm conv classifier as towers (:func:`towers_loss`, whose tower counts
:func:`check_tower_counts` checks).

``experiments.ps`` and ``experiments.bench.gradients`` offer the same two networks;
the names and what each builds are written here once::

    p.add_argument("--model", choices=classifiers.MODELS, default="mlp", help=...)
    ...
    model = classifiers.build(args.model, x, y, hidden=(625, 625), keep_prob=0.5)

Importing this module imports no TensorFlow; :func:`build` does.
"""

from layers.errors import ZooError

MODELS = ("mlp", "conv")


def build(model, x, y, hidden=None, keep_prob=None):
    """Builds the classifier ``model`` on ``x`` [batch, 784] and one-hot ``y``.

    Args:
        model: ``"mlp"``: :func:`zoo.models.mlp_classifier` under scope ``mlp``
            (no dropout); ``"conv"``: the Deep MNIST conv net,
            :func:`zoo.models.conv_classifier` under scope ``conv``.
        x: the images.
        y: the one-hot labels.
        hidden: the MLP's hidden widths; None takes the builder's (625, 625).
        keep_prob: the conv net's dropout keep probability; None: no dropout.

    Returns:
        The :class:`zoo.models.Classifier`.
    """
    from zoo.models import conv_classifier, mlp_classifier

    if model == "conv":
        return conv_classifier(x, y, scope="conv", keep_prob=keep_prob)
    return mlp_classifier(x, y, scope="mlp", **({"hidden": hidden} if hidden else {}))


BATCH_NORM = ("none", "per-tower", "sync")
TOWERS_SCOPE = "towers"


def check_tower_counts(counts, batch_size):
    """Raises ZooError unless every tower count (``--towers``) divides ``batch_size``.

    Each tower reads ``batch_size / towers`` examples of every batch.
    """
    for count in counts:
        if batch_size % count:
            raise ZooError(
                f"--towers: expected tower counts that divide --batch-size {batch_size}, "
                f"found {count}; pass a batch size divisible by each"
            )


def towers_loss(batch_norm, towers, filters):
    """Returns the loss of :func:`zoo.models.bn_conv.bn_conv_classifier` as towers.

    The model of ``experiments.towers`` and ``experiments.bench.towers``, built
    by :func:`zoo.parallel.towers.data_parallel` under scope ``towers`` (the builder's
    scope ``net`` inside it), its loss summed over the towers as over the batch.

    Args:
        batch_norm: ``"none"`` (no batch norm), ``"per-tower"`` or ``"sync"``.
        towers: the tower count.
        filters: the channels of the two convolutions.

    Returns:
        ``loss_fn(images, labels) -> (loss, {"batch_accuracy": ...})``.
    """
    from zoo.models.bn_conv import bn_conv_classifier
    from zoo.parallel import towers as zoo_towers

    def model(images, labels):
        net = bn_conv_classifier(
            images, labels, scope="net", filters=filters, batch_norm=batch_norm != "none"
        )
        return net.loss, {"batch_accuracy": net.accuracy}

    return zoo_towers.data_parallel(
        model,
        towers,
        scope=TOWERS_SCOPE,
        batch_norm="sync" if batch_norm == "sync" else "per-tower",
        loss_reduction="sum",
    )
