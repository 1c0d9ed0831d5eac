"""TF 1.15's ``tf.contrib.layers`` encoders that tf-slim 1.1.0 does not have:
``embed_sequence``, ``bow_encoder`` and ``embedding_lookup_unique``, with TF 1.15's
scopes (``EmbedSequence/embeddings``, ``bow_encoder/embeddings``), collections
(``MODEL_VARIABLES``) and arguments.

Usage (after ``zoo.compat.install()``, as TF1 programs wrote it)::

    embedded = tf.contrib.layers.embed_sequence(ids, vocab_size=100, embed_dim=16,
                                                scope="embed")
    again = tf.contrib.layers.embed_sequence(other_ids, scope="embed", reuse=True)
"""

import tensorflow as tf

from layers.errors import ZooError

__all__ = ["bow_encoder", "embed_sequence", "embedding_lookup_unique"]

v1 = tf.compat.v1


def _embeddings(shape, initializer, regularizer, trainable):
    """The ``embeddings`` model variable of the current scope (TF 1.15's
    ``model_variable``: global and model variables, trainable if asked)."""
    collections = [v1.GraphKeys.GLOBAL_VARIABLES, v1.GraphKeys.MODEL_VARIABLES]
    return v1.get_variable("embeddings", shape, initializer=initializer,
                           regularizer=regularizer, trainable=trainable,
                           collections=collections)  # fmt: skip


def embedding_lookup_unique(params, ids, partition_strategy="mod", name=None):
    """``embedding_lookup`` of each distinct id once, repeated as ``ids`` repeats it.

    Args:
        params: the embeddings ``[vocab, ...]`` (or a list of their shards).
        ids: int ids of any shape.
        partition_strategy: as ``tf.compat.v1.nn.embedding_lookup``'s.
        name: the name scope.

    Returns:
        ``[*ids.shape, ...]``.
    """
    with tf.name_scope(name or "EmbeddingLookupUnique"):
        ids = tf.convert_to_tensor(ids)
        shape = tf.shape(ids)
        unique_ids, index = tf.unique(tf.reshape(ids, [-1]))
        unique = v1.nn.embedding_lookup(params, unique_ids, partition_strategy)
        found = tf.reshape(tf.gather(unique, index),
                           tf.concat([shape, tf.shape(unique)[1:]], 0))  # fmt: skip
        found.set_shape(ids.shape.concatenate(unique.shape[1:]))
        return found


def embed_sequence(ids, vocab_size=None, embed_dim=None, unique=False, initializer=None,
                   regularizer=None, trainable=True, scope=None, reuse=None):  # fmt: skip
    """Embeds ``[batch, length]`` ids with the variable ``<scope>/embeddings``.

    Args:
        ids: int ids ``[batch, length]``.
        vocab_size: rows of the embeddings (not needed with ``reuse``).
        embed_dim: their width (not needed with ``reuse``).
        unique: look each distinct id up once (:func:`embedding_lookup_unique`).
        initializer: of the embeddings; None: the scope's default.
        regularizer: of the embeddings, into ``REGULARIZATION_LOSSES``.
        trainable: whether the embeddings train.
        scope: the variable scope (default ``EmbedSequence``).
        reuse: reuse the scope's embeddings.

    Returns:
        ``[batch, length, embed_dim]``.

    Raises:
        ZooError: no ``vocab_size`` or ``embed_dim`` without ``reuse``.
    """
    if not (reuse or (vocab_size and embed_dim)):
        raise ZooError(
            f"embed_sequence: Must specify vocab size and embedding dimension when not "
            f"reusing. Got vocab_size={vocab_size} and embed_dim={embed_dim}; pass both, "
            "or reuse=True with the scope of the embeddings"
        )
    with v1.variable_scope(scope, "EmbedSequence", [ids], reuse=reuse):
        unknown = (reuse and vocab_size is None) or embed_dim is None  # TF 1.15's test
        shape = None if unknown else [vocab_size, embed_dim]
        embeddings = _embeddings(shape, initializer, regularizer, trainable)
        if unique:
            return embedding_lookup_unique(embeddings, ids)
        return v1.nn.embedding_lookup(embeddings, ids)


def bow_encoder(ids, vocab_size, embed_dim, sparse_lookup=True, initializer=None,
                regularizer=None, trainable=True, scope=None, reuse=None):  # fmt: skip
    """The mean embedding of each row of ids (a bag of words).

    Args:
        ids: int ids ``[batch, length]`` or a ``SparseTensor`` of them.
        vocab_size: rows of the embeddings ``<scope>/embeddings``.
        embed_dim: their width.
        sparse_lookup: leave out id 0 (padding) and give an empty row the
            embedding of id 0, as TF 1.15 did; False: the mean over every id.
        initializer: of the embeddings; None: the scope's default.
        regularizer: of the embeddings.
        trainable: whether the embeddings train.
        scope: the variable scope (default ``bow_encoder``).
        reuse: reuse the scope's embeddings.

    Returns:
        ``[batch, embed_dim]``.

    Raises:
        ZooError: no ``vocab_size`` or ``embed_dim``, or sparse ids with
            ``sparse_lookup=False``.
    """
    if not vocab_size or not embed_dim:
        raise ZooError(
            f"bow_encoder: Must specify vocab size and embedding dimension; found "
            f"vocab_size={vocab_size}, embed_dim={embed_dim}"
        )
    with v1.variable_scope(scope, "bow_encoder", [ids], reuse=reuse):
        embeddings = _embeddings([vocab_size, embed_dim], initializer, regularizer,
                                 trainable)  # fmt: skip
        if sparse_lookup:
            sparse_ids = (
                ids if isinstance(ids, tf.SparseTensor) else tf.sparse.from_dense(ids)
            )
            return v1.nn.safe_embedding_lookup_sparse(
                [embeddings], sparse_ids, combiner="mean", default_id=0
            )
        if isinstance(ids, tf.SparseTensor):
            raise ZooError(
                "bow_encoder: expected dense ids with sparse_lookup=False, found a "
                "SparseTensor; pass sparse_lookup=True or tf.sparse.to_dense(ids)"
            )
        return tf.reduce_mean(v1.nn.embedding_lookup(embeddings, ids), axis=1)
