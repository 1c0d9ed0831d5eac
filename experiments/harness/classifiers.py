"""The classifiers a script trains by name: ``--model mlp`` or ``--model conv``;
the batch-norm conv classifier as towers (:func:`towers_loss`, whose tower counts
:func:`check_tower_counts` checks) and built once more to evaluate them
(:func:`towers_evaluation`).

``experiments.ps`` and ``experiments.bench.gradients`` offer the same two networks;
the names and what each builds are written here once::

    p.add_argument("--model", choices=classifiers.MODELS, default="mlp", help=...)
    ...
    model = classifiers.build(args.model, x, y, hidden=(625, 625), keep_prob=0.5)

Importing this module imports no TensorFlow; :func:`build` does.
"""

from layers.errors import ZooError
from zoo.data import N_CLASSES, N_PIXELS

MODELS = ("mlp", "conv")
BATCH_NORM_MODEL = "bn_conv"  # whose batch norm needs its update ops run


def build(model, x, y, hidden=None, keep_prob=None, training=True):
    """Builds the classifier ``model`` on ``x`` [batch, 784] and one-hot ``y``.

    Args:
        model: ``"mlp"``: :func:`zoo.models.mlp_classifier` under scope ``mlp``
            (no dropout); ``"conv"``: the Deep MNIST conv net,
            :func:`zoo.models.conv_classifier` under scope ``conv``;
            :data:`BATCH_NORM_MODEL`: :func:`zoo.models.bn_conv.bn_conv_classifier`
            under scope ``bn_conv``.
        x: the images.
        y: the one-hot labels.
        hidden: the MLP's hidden widths; None takes the builder's (625, 625).
        keep_prob: the conv net's dropout keep probability; None: no dropout.
        training: batch norm's mode (:data:`BATCH_NORM_MODEL` only).

    Returns:
        The :class:`zoo.models.Classifier`.
    """
    from zoo.models import conv_classifier, mlp_classifier
    from zoo.models.bn_conv import bn_conv_classifier

    if model == BATCH_NORM_MODEL:
        return bn_conv_classifier(x, y, scope=BATCH_NORM_MODEL, training=training)
    if model == "conv":
        return conv_classifier(x, y, scope="conv", keep_prob=keep_prob)
    return mlp_classifier(x, y, scope="mlp", **({"hidden": hidden} if hidden else {}))


def batch_loss(model, batch_size, hidden=None):
    """Returns ``build(x, y)``: ``model``'s loss as :func:`build` makes it, the
    cross-entropy summed over ``batch_size`` examples plus the weight decay, from
    the mean over the examples of ``x`` (a worker's share: what
    :func:`zoo.parallel.sync.train` and ``one_process`` train). No dropout.
    """
    import tensorflow as tf

    def loss(x, y):
        net = build(model, x, y, hidden)
        examples = tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=net.logits)
        decay = [layer.regularization_loss for layer in net.layers]
        mean = tf.reduce_mean(examples)
        return tf.add_n([batch_size * mean, *filter(lambda d: d is not None, decay)])

    return loss


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


def towers_evaluation(test, batch_norm, filters, chunk, slots=()):
    """Builds :func:`towers_loss`' classifier again, on the towers' variables, to evaluate.

    The build is outside the towers, under scope ``towers`` with ``reuse=True`` and
    ``training=False`` (batch norm reads the moving statistics).

    Args:
        test: the :class:`zoo.data.DataSet` to evaluate on.
        batch_norm, filters: as :func:`towers_loss`.
        chunk: examples per evaluation run.
        slots: the optimizer's slot names, left out of the weights (``("Momentum",)``).

    Returns:
        ``evaluate(session) -> ({"test_accuracy"}, weights)``, the weights a
        ``{name: array}`` of the model's variables
        (:func:`zoo.parallel.towers.scope_weights`).
    """
    import tensorflow as tf

    from experiments.harness.train import mean_in_chunks
    from zoo.models.bn_conv import bn_conv_classifier
    from zoo.parallel.towers import scope_weights

    x = tf.compat.v1.placeholder(tf.float32, [None, N_PIXELS], name="x_test")
    y = tf.compat.v1.placeholder(tf.float32, [None, N_CLASSES], name="y_test")
    with tf.compat.v1.variable_scope(TOWERS_SCOPE, reuse=True):
        net = bn_conv_classifier(
            x,
            y,
            scope="net",
            reuse=True,
            training=False,
            filters=filters,
            batch_norm=batch_norm != "none",
        )
    variables = scope_weights(TOWERS_SCOPE, slots=slots)

    def evaluate(session):
        feeds = {x: test.images, y: test.labels}
        accuracy = mean_in_chunks(session, net.accuracy, feeds, chunk)
        return {"test_accuracy": accuracy}, session.run(variables)

    return evaluate
