"""Layers built on ``tf.compat.v1.get_variable``: variables and math only.

Importing this package changes nothing in TensorFlow's global state, and does
not import TensorFlow: each name is imported from its module when first used,
so ``layers.errors`` serves a command's flag checks before TensorFlow starts.
"""

from layers import lazy

__getattr__, __dir__, __all__ = lazy.exports(
    __name__,
    {
        "layers.conv": ("Conv2D", "Conv2DTranspose", "MaxPool"),
        "layers.dense": (
            "Decoder", "Dense", "Embedding", "Encoder", "FullConnected", "ReadOut",
        ),
        "layers.normalization": ("BatchNorm", "batch_statistics"),
        "layers.errors": (
            "DataError", "EagerError", "RunInterrupted", "ScopeError", "ShapeError",
            "TieError", "ZooError",
        ),
    },
)  # fmt: skip
