"""Siamese twins: one embedding tower applied to both images of a pair, contrastive loss.

The tower (``hidden`` ReLU layers, then a linear embedding) is built on the
first image under ``<scope>/tower`` and applied again to the second image with
``reuse=True``: both images go through the very same variables, so their
embeddings live in one space (the ops of each application sit under the name
scopes ``<scope>/x1/`` and ``<scope>/x2/``). ``shared=False`` is the ablation: two
independent towers, ``<scope>/tower_1`` for the first image of each pair and
``<scope>/tower_2`` for the second, with twice the parameters.

The loss is the contrastive loss of Hadsell, Chopra and LeCun (2006, eq. 4),
with ``same`` = 1 for a pair of one class (their Y = 0)::

    L = mean( same * d^2 / 2 + (1 - same) * max(0, margin - d)^2 / 2 )

``d`` the Euclidean distance between the two embeddings.

Usage::

    partner, same = partners_in_batch(labels)             # balanced pairs, in-graph
    net = siamese(x, tf.gather(x, partner), same, scope="siamese")  # siamese/tower/...
    train = tf.compat.v1.train.AdamOptimizer(1e-3).minimize(net.loss)
    probe = siamese(x_test, x_test, scope="siamese", reuse=True)  # nothing new
    probe.embedding1                                       # the test images' embeddings
"""

import dataclasses

import tensorflow as tf

from layers import Dense
from layers.checks import number_problem, require
from layers.dense import check_size
from layers.errors import ShapeError
from layers.variables import at_least_float32
from zoo.models.parts import builder_scope, hidden_stack, input_width


@dataclasses.dataclass(frozen=True)
class Tower:
    """What :func:`embedding_tower` builds.

    Attributes:
        embedding: the embedding [batch, embedding_size] (linear, no activation).
        layers: the hidden layers then the embedding layer.
        scope_name: the full variable scope.
    """

    embedding: tf.Tensor
    layers: tuple
    scope_name: str


@dataclasses.dataclass(frozen=True)
class Siamese:
    """What :func:`siamese` builds.

    Attributes:
        embedding1: embeddings of the first images [batch, embedding_size].
        embedding2: embeddings of the second images [batch, embedding_size].
        distance: Euclidean distance between the two embeddings [batch].
        loss: the mean contrastive loss (a scalar), or None without ``same``.
        towers: the :class:`Tower` of each image: one tower's variables twice
            when shared, two towers' otherwise.
        scope_name: the full variable scope.
    """

    embedding1: tf.Tensor
    embedding2: tf.Tensor
    distance: tf.Tensor
    loss: tf.Tensor | None
    towers: tuple
    scope_name: str


def embedding_tower(x, scope="tower", reuse=False, hidden=(256,), embedding_size=32):
    """Builds ``x -> ReLU hidden layers -> linear embedding`` under ``scope``.

    Variables are ``W_hid_i``/``b_hid_i`` per hidden layer and ``W_embed``/``b_embed``.

    Args:
        x: inputs [batch, n_in], n_in known statically.
        scope: variable scope of the tower.
        reuse: False, True or ``tf.compat.v1.AUTO_REUSE``.
        hidden: widths of the hidden layers (may be empty: a linear embedding).
        embedding_size: width of the embedding.

    Returns:
        :class:`Tower`.

    Raises:
        ShapeError: a size is not a positive int, or ``x`` is not [batch, n].
        ScopeError, EagerError: as :func:`zoo.autoencoder`.
    """
    with builder_scope(scope, reuse) as var_scope:
        width = input_width(var_scope.name, x, "x")
        check_size(var_scope.name, embedding_size=embedding_size)
        return _tower(x, width, hidden, embedding_size, var_scope.name)


def _tower(x, width, hidden, embedding_size, scope_name):
    """The tower's layers under the current variable scope (``embedding_size`` checked;
    :func:`hidden_stack` checks ``hidden`` before any variable)."""
    layers, h, width = hidden_stack(x, width, hidden)
    embed = Dense(
        h, width, embedding_size, names=("W_embed", "b_embed"), activation=tf.identity
    )
    return Tower(embedding=embed.output, layers=(*layers, embed), scope_name=scope_name)


def siamese(
    x1,
    x2,
    same=None,
    scope="siamese",
    reuse=False,
    shared=True,
    hidden=(256,),
    embedding_size=32,
    margin=1.0,
):
    """Embeds both images of each pair and builds the contrastive loss.

    Args:
        x1: first images of the pairs [batch, n_in], n_in known statically.
        x2: second images [batch, n_in].
        same: [batch] 1.0 where the pair is of one class, 0.0 otherwise; None
            builds no loss (to embed or compare images).
        scope: variable scope of the model.
        reuse: False, True or ``tf.compat.v1.AUTO_REUSE``.
        shared: one tower (``<scope>/tower``) for both images; False gives each
            image its own (``<scope>/tower_1`` for ``x1``, ``<scope>/tower_2``
            for ``x2``).
        hidden: widths of each tower's hidden layers.
        embedding_size: width of the embedding.
        margin: distance beyond which a pair of two classes costs nothing (> 0).

    Returns:
        :class:`Siamese`.

    Raises:
        ShapeError: a size is not a positive int, ``x1``/``x2`` are not
            [batch, n] of one n, or ``same`` is not [batch].
        ZooError: ``margin`` is not a positive number.
        ScopeError, EagerError: as :func:`zoo.autoencoder`.
    """
    with builder_scope(scope, reuse) as var_scope:
        owner = var_scope.name
        width = input_width(owner, x1, "x1")
        if input_width(owner, x2, "x2") != width:
            raise ShapeError(
                f"{owner}: expected x2 as wide as x1 ({width}), found {x2.shape}; pair "
                "images of one size"
            )
        check_size(owner, embedding_size=embedding_size)  # hidden: in the first tower
        check_margin(owner, margin)
        if same is not None and same.shape.rank != 1:
            raise ShapeError(
                f"{owner}: expected same of shape [batch] (1.0 for a pair of one class), "
                f"found {same.shape}; pass one value per pair"
            )
        names = ("tower", "tower") if shared else ("tower_1", "tower_2")
        towers = []
        for x, x_name, name, again in (
            (x1, "x1", names[0], None),
            (x2, "x2", names[1], shared or None),
        ):
            with (
                tf.name_scope(x_name),
                tf.compat.v1.variable_scope(name, reuse=again) as tower_scope,
            ):
                towers.append(_tower(x, width, hidden, embedding_size, tower_scope.name))
        # The distance and the loss in float32, whatever the towers' compute dtype.
        embedding1, embedding2 = (at_least_float32(t.embedding) for t in towers)
        distance_sq = tf.reduce_sum(tf.square(embedding1 - embedding2), axis=1)
        distance = tf.sqrt(distance_sq + 1e-12, name="distance")
        loss = None if same is None else contrastive_loss(distance, same, margin)
    return Siamese(
        embedding1=embedding1,
        embedding2=embedding2,
        distance=distance,
        loss=loss,
        towers=tuple(towers),
        scope_name=owner,
    )


def check_margin(owner, margin):
    """Raises ZooError naming ``owner`` unless ``margin`` is a positive number."""
    name = "margin, the distance beyond which a pair of two classes costs nothing,"
    problem = number_problem(margin, 0, low_open=True, name=name)
    require(owner, problem, "pass e.g. margin=1.0")


def contrastive_loss(distance, same, margin, name="loss"):
    """Returns Hadsell, Chopra and LeCun's contrastive loss, averaged over the pairs.

    ``mean(same * d^2 / 2 + (1 - same) * max(0, margin - d)^2 / 2)``.

    Args:
        distance: Euclidean distances d [batch] (:attr:`Siamese.distance` is
            taken with a tiny floor under the square root, so identical
            embeddings get a zero gradient, not NaN).
        same: [batch] 1.0 for a pair of one class, 0.0 otherwise (any float dtype).
        margin: positive number.
        name: name of the scalar result.

    Returns:
        A scalar tensor.
    """
    same = tf.cast(same, distance.dtype)
    apart = tf.square(tf.nn.relu(margin - distance))
    together = tf.square(distance)
    return tf.reduce_mean(0.5 * (same * together + (1.0 - same) * apart), name=name)


def partners_in_batch(labels):
    """Pairs every example of a batch with another of the batch, half of one class.

    Even positions get the next example, in cyclic batch order, of the same
    class; odd positions the next one of another class. The pairs are a
    function of the batch alone (no random state), so a training run resumed
    from a checkpoint, which replays the batch order, replays the pairs; the
    batch order being shuffled every epoch, so are the partners. An example
    whose class has no other member in the batch (or a batch of one class)
    pairs with its neighbour, and ``same`` says what the pair really is.

    Args:
        labels: class ids [batch] (int).

    Returns:
        ``(partner, same)``: partner indices into the batch [batch] (int32) and
        1.0/0.0 where the pair is of one class or not [batch] (float32).
    """
    with tf.name_scope("partners_in_batch"):
        n = tf.shape(labels)[0]
        positions = tf.range(n)
        offsets = tf.range(1, tf.maximum(n, 2))
        candidates = (positions[:, None] + offsets[None, :]) % n  # [n, n - 1]
        matches = tf.equal(tf.gather(labels, candidates), labels[:, None])
        want_same = tf.equal(positions % 2, 0)
        wanted = tf.equal(matches, want_same[:, None])
        first = tf.argmax(tf.cast(wanted, tf.int32), axis=1, output_type=tf.int32)
        partner = tf.gather(candidates, first, batch_dims=1)
        same = tf.cast(tf.equal(tf.gather(labels, partner), labels), tf.float32)
    return partner, same
