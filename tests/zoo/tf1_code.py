"""A user's own TF1 code, unchanged: a siamese tower shared with reuse=True, an L2 penalty.

The tests hand these functions to ``zoo.sharing.keras.ZooLayer`` and ``zoo.share``.
"""

import keras
import tensorflow as tf

from layers import BatchNorm, Conv2D, Dense, Embedding, ReadOut

v1 = tf.compat.v1
WIDTH, CODE = 4, 3
L2 = 0.1


def l2_regularizer(weight):
    """TF1's ``tf.contrib.layers.l2_regularizer(0.1)``."""
    return L2 * tf.nn.l2_loss(weight)


def tower(x):
    """One ReLU layer; its weight carries the L2 penalty."""
    w = v1.get_variable(
        "W",
        [WIDTH, CODE],
        initializer=v1.glorot_uniform_initializer(seed=1),
        regularizer=l2_regularizer,
    )
    b = v1.get_variable("b", [CODE], initializer=v1.constant_initializer(0.1))
    return tf.nn.relu(tf.matmul(x, w) + b)


@keras.saving.register_keras_serializable(package="tests")
def siamese(left, right):
    """Squared distance of the two inputs' codes, one tower for both."""
    with v1.variable_scope("tower"):
        a = tower(left)
    with v1.variable_scope("tower", reuse=True):
        b = tower(right)
    return tf.reduce_sum(tf.square(a - b), axis=1, keepdims=True)


def unregistered_siamese(left, right):
    """``siamese`` without the Keras registration that loading needs."""
    return siamese(left, right)


def siamese_parts(left, right):
    """``siamese`` returning a result with named fields."""
    return {"distance": siamese(left, right), "left_code": tower_again(left)}


def tower_again(x):
    with v1.variable_scope("tower", reuse=True):
        return tower(x)


VOCAB, DIM = 11, 4


def tied_bigram(ids):
    """Next-token logits from each token's embedding, the softmax tied to the embedding."""
    with v1.variable_scope("lm"):
        embedding = Embedding(ids, VOCAB, DIM)
        rows = tf.reshape(embedding.output, [-1, DIM])
        return ReadOut(rows, DIM, VOCAB, scope="softmax", tie_to="embedding").logits


def normalized_pair(x, training):
    """Batch norm on ``x`` for training, read again with reuse=True for evaluation."""
    train = BatchNorm(x, training, scope="bn")
    with v1.variable_scope(v1.get_variable_scope(), reuse=True):
        evaluation = BatchNorm(x, False, scope="bn")
    return train.output, evaluation.output


SIDE, CHANNELS, FILTERS, CLASSES = 8, 3, 4, 5


@keras.saving.register_keras_serializable(package="tests")
def conv_bn_classifier(images, training):
    """A convolution, the zoo's batch norm, a dense read-out: the non-trainable
    ``bn/moving_mean`` is made before the trainable ``head/W``."""
    conv = Conv2D(
        images, 3, CHANNELS, FILTERS, scope="conv", bias=False, activation=tf.identity
    )
    normalized = tf.nn.relu(BatchNorm(conv.output, training, scope="bn").output)
    pooled = tf.reduce_mean(normalized, axis=[1, 2])
    return Dense(pooled, FILTERS, CLASSES, scope="head", activation=tf.identity).output


WEIGHT_DECAY = 0.004


def decayed_weight(name, shape, stddev, decay=None):
    """A weight whose penalty ``decay * l2_loss`` joins the "losses" collection."""
    weight = v1.get_variable(
        name, shape, initializer=v1.truncated_normal_initializer(stddev=stddev, seed=2)
    )
    if decay is not None:
        v1.add_to_collection("losses", tf.multiply(tf.nn.l2_loss(weight), decay))
    return weight


def bias(name, size, value):
    return v1.get_variable(name, [size], initializer=v1.constant_initializer(value))


@keras.saving.register_keras_serializable(package="tests")
def cifar_style(images):
    """Two conv+pool blocks and two decayed dense layers, names at the root
    (``conv1/weights``), flattened by the static batch size, as CIFAR-10 code of
    the TF1 years did; returns the logits."""
    hidden = images
    for block, n_in in (("conv1", CHANNELS), ("conv2", FILTERS)):
        with v1.variable_scope(block):
            kernel = decayed_weight("weights", [3, 3, n_in, FILTERS], stddev=0.05)
            conv = tf.nn.conv2d(hidden, kernel, strides=1, padding="SAME")
            hidden = tf.nn.relu(conv + bias("biases", FILTERS, 0.0))
        hidden = tf.nn.max_pool2d(hidden, ksize=3, strides=2, padding="SAME")
    flat = tf.reshape(hidden, [images.shape[0], -1])
    for block, n_out in (("local3", 16), ("local4", 8)):
        with v1.variable_scope(block):
            weights = decayed_weight("weights", [flat.shape[1], n_out], 0.04, WEIGHT_DECAY)
            flat = tf.nn.relu(tf.matmul(flat, weights) + bias("biases", n_out, 0.1))
    with v1.variable_scope("softmax_linear"):
        weights = decayed_weight("weights", [8, CLASSES], stddev=1 / 8)
        return tf.matmul(flat, weights) + bias("biases", CLASSES, 0.0)


def scoped_net(x, scope="my_net", reuse=None):
    """A TF-Slim-style builder whose own default scope is ``my_net``."""
    with v1.variable_scope(scope, reuse=reuse):
        return tf.matmul(x, v1.get_variable("W", [WIDTH, CODE]))


@keras.saving.register_keras_serializable(package="tests")
def tf_layers_net(x):
    """``tf.layers`` code of the TF 1.x years on TensorFlow's own legacy layers (what
    ``tf.compat.v1.layers`` was before Keras 3): their ``kernel_regularizer`` never
    reaches ``get_variable``, it goes to the variable store's ``add_regularizer``."""
    from tensorflow.python.keras.legacy_tf_layers import core  # noqa: PLC0415

    hidden = core.Dense(6, tf.nn.relu, kernel_regularizer=l2_regularizer, name="hidden")(x)
    penalized = core.Dense(CODE, kernel_regularizer=l2_regularizer, name="out")
    with v1.variable_scope("extra", regularizer=l2_regularizer):
        scale = v1.get_variable("scale", [CODE], initializer=v1.ones_initializer())
    return penalized(hidden) * scale


@keras.saving.register_keras_serializable(package="tests")
def collected_pair(x):
    """Two variables, each added to a collection unless it is there already, as
    tf-slim's ``batch_norm`` adds its moving statistics (``var not in collection``)."""
    scales = []
    for name, value in (("first", 2.0), ("second", 3.0)):
        scale = v1.get_variable(name, [WIDTH], initializer=v1.constant_initializer(value))
        if scale not in v1.get_collection("moving_vars"):
            v1.add_to_collection("moving_vars", scale)
        scales.append(scale)
    return x * scales[0] * scales[1]
