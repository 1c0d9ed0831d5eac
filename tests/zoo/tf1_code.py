"""A user's own TF1 code, unchanged: a siamese tower shared with reuse=True, an L2 penalty.

The tests hand these functions to ``zoo.sharing.keras.ZooLayer`` and ``zoo.share``.
"""

import keras
import tensorflow as tf

from layers import BatchNorm, Embedding, ReadOut

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
