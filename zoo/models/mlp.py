"""The seeds' MLP classifier (ReLU hidden layers, softmax read-out) and model averaging.

Usage::

    m1 = mlp_classifier(x, y, scope="mlp1")              # mlp1/W_hid_1 ... mlp1/b_RO
    m2 = mlp_classifier(x, y, scope="mlp1", reuse=True)  # the same six variables
    m3 = mlp_classifier(x, y, scope="mlp2")              # an independent network
    avg = model_average([m1, m3], y)                     # mean of the softmaxes
"""

import dataclasses

import tensorflow as tf

from layers import ReadOut
from layers.checks import probability_problem, require
from layers.errors import ShapeError, ZooError
from layers.variables import l2_regularizer
from zoo.models.parts import (
    accuracy_of,
    builder_scope,
    check_widths,
    classifier_head,
    hidden_stack,
    input_width,
    next_draw,
    stateless_seed,
)


def mlp_classifier(
    x, y, scope="mlp", reuse=False, hidden=(625, 625), l2=0.01, keep_prob=None
):
    """Builds ``x -> ReLU hidden layers -> softmax`` under ``scope``.

    Variables are ``W_hid_i``/``b_hid_i`` per hidden layer and ``W_RO``/``b_RO``.

    Args:
        x: inputs [batch, n_in], n_in known statically.
        y: one-hot labels [batch, n_classes].
        scope: variable scope of the model.
        reuse: False, True or ``tf.compat.v1.AUTO_REUSE``.
        hidden: widths of the hidden layers.
        l2: weight of the hidden weights' ``l2_loss`` (a number or a scalar tensor),
            given to the hidden layers as ``regularizer=l2_regularizer(l2)``: in graph
            mode the penalties also land in ``GraphKeys.REGULARIZATION_LOSSES``.
        keep_prob: dropout keep probability after each hidden layer (a number or a
            scalar tensor); None for no dropout. The masks are stateless, drawn
            from the graph seed, the layer and ``<scope>/dropout_draws`` (a
            non-trainable counter every run that uses dropout increments), so a
            run restored from a checkpoint draws the same masks.

    Returns:
        :class:`zoo.models.Classifier`.

    Raises:
        ShapeError: a hidden width that is not a positive int, or ``x``/``y`` not
            [batch, n] with n known (before any variable is made).
        ScopeError, EagerError: as :func:`zoo.autoencoder`.
        ZooError: a numeric ``keep_prob`` outside (0, 1].
    """
    with builder_scope(scope, reuse) as var_scope:
        check_keep_prob(var_scope.name, keep_prob)
        width = input_width(var_scope.name, x, "x")
        n_classes = input_width(var_scope.name, y, "one-hot labels y")
        hidden = check_widths(var_scope.name, hidden)  # before the draw counter
        regularizer = l2_regularizer(l2)
        draw = None if keep_prob is None else next_draw(var_scope.name)
        hidden_layers, h, width = hidden_stack(
            x,
            width,
            hidden,
            regularizer=regularizer,
            after=None if draw is None else _dropout(keep_prob, draw),
        )
        readout = ReadOut(h, width, n_classes, names=("W_RO", "b_RO"))
        penalty = None  # hidden=(): a softmax regression, no weight to decay
        if hidden_layers:
            penalty = tf.add_n([layer.regularization_loss for layer in hidden_layers])
        return classifier_head(readout, y, hidden_layers, var_scope.name, penalty)


def _dropout(keep_prob, draw):
    """The ``after`` of :func:`hidden_stack` that drops units after hidden layer i."""
    return lambda h, i: resumable_dropout(h, keep_prob, draw, layer=i)


def resumable_dropout(h, keep_prob, draw, layer=0):
    """Dropout whose mask depends only on the graph seed, ``layer`` and ``draw``.

    ``tf.nn.dropout`` draws from a stateful generator that a restored session
    starts afresh; this mask is a function of its seed, so a run resumed from a
    checkpoint (which holds the draw counter) drops the same units.

    Args:
        h: activations.
        keep_prob: keep probability (a number or a scalar tensor).
        draw: int64 scalar tensor, different for every run.
        layer: distinguishes the layers of one model.

    Returns:
        ``h`` with units zeroed with probability ``1 - keep_prob``, the others
        scaled by ``1 / keep_prob``.

    Raises:
        ZooError: a numeric ``keep_prob`` outside (0, 1].
    """
    check_keep_prob("resumable_dropout", keep_prob)
    seed = stateless_seed(draw, salt=layer)
    rate = 1.0 - keep_prob
    if isinstance(rate, tf.Tensor):  # in the dtype of h (bfloat16 under a policy)
        rate = tf.cast(rate, h.dtype)
    return tf.nn.experimental.stateless_dropout(h, rate=rate, seed=seed)


def check_keep_prob(owner, keep_prob):
    """Raises ZooError naming ``owner`` unless a numeric ``keep_prob`` is in (0, 1].

    None (no dropout) and tensors (checked where they are fed, e.g. by
    :class:`zoo.training.hparams.HParams`) pass.
    """
    if keep_prob is None or isinstance(keep_prob, tf.Tensor):
        return
    name = "keep_prob, the probability of keeping a unit,"
    problem = probability_problem(keep_prob, name=name)
    require(owner, problem, "pass e.g. keep_prob=0.5, or None for no dropout")


@dataclasses.dataclass(frozen=True)
class Average:
    """What :func:`model_average` builds: ``y_pred`` and ``accuracy``."""

    y_pred: tf.Tensor
    accuracy: tf.Tensor


def model_average(models, y):
    """Averages the softmax outputs of several classifiers.

    Args:
        models: classifiers with ``y_pred`` [batch, n_classes] of one shape.
        y: one-hot labels [batch, n_classes].

    Returns:
        :class:`Average`.

    Raises:
        ZooError: fewer than two models.
        ShapeError: the models' outputs differ in shape.
    """
    models = list(models)
    if len(models) < 2:
        raise ZooError(
            f"model_average: expected at least 2 models, found {len(models)}; pass a "
            "list of classifiers"
        )
    shapes = {str(m.y_pred.shape[1:]) for m in models}
    if len(shapes) > 1:
        raise ShapeError(
            f"model_average: expected outputs of one shape, found {sorted(shapes)}; "
            "average classifiers over the same classes"
        )
    with tf.name_scope("model_average"):
        y_pred = tf.reduce_mean(tf.stack([m.y_pred for m in models]), axis=0)
        return Average(y_pred=y_pred, accuracy=accuracy_of(y_pred, y))
