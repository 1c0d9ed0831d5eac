"""Layers built on ``tf.compat.v1.get_variable``: variables and math only.

Importing this package changes nothing in TensorFlow's global state.
"""

from layers.conv import Conv2D, Conv2DTranspose, MaxPool
from layers.dense import Decoder, Dense, Embedding, Encoder, FullConnected, ReadOut
from layers.errors import (
    DataError,
    EagerError,
    ScopeError,
    ShapeError,
    TieError,
    ZooError,
)

__all__ = [
    "Conv2D",
    "Conv2DTranspose",
    "MaxPool",
    "DataError",
    "Decoder",
    "Dense",
    "EagerError",
    "Embedding",
    "Encoder",
    "FullConnected",
    "ReadOut",
    "ScopeError",
    "ShapeError",
    "TieError",
    "ZooError",
]
