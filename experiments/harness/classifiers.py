"""The classifiers a script trains by name: ``--model mlp`` or ``--model conv``.

``experiments.ps`` and ``experiments.bench.gradients`` offer the same two networks;
the names and what each builds are written here once::

    p.add_argument("--model", choices=classifiers.MODELS, default="mlp", help=...)
    ...
    model = classifiers.build(args.model, x, y, hidden=(625, 625), keep_prob=0.5)

Importing this module imports no TensorFlow; :func:`build` does.
"""

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
