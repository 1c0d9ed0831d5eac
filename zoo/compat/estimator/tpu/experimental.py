"""``tf.estimator.tpu.experimental``: TF 2.15's ``EmbeddingConfigSpec`` (TPU embedding
tables) is refused, with its replacement: this machine has no TPU."""

from zoo.compat import refused

REPLACEMENTS = {
    "EmbeddingConfigSpec": "tf.compat.v1.feature_column.embedding_column in the "
    "model_fn (TPUEstimator runs on CPU, without TPU embeddings)",
}

__getattr__, __dir__ = refused.hooks("tf.estimator.tpu.experimental", __name__,
                                     REPLACEMENTS, lambda: globals())
