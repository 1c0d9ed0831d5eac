"""Model builders and the tools around variable sharing.

Importing this package changes nothing in TensorFlow's global state and does
not import tensorflow-datasets; ``zoo.data`` does that only when asked for data.
"""

from zoo.hparams import HParams
from zoo.models import (
    MODELS,
    Autoencoder,
    Average,
    Classifier,
    autoencoder,
    conv_classifier,
    gan,
    get_model,
    mlp_classifier,
    model_average,
)
from zoo.share import share

__all__ = [
    "HParams",
    "MODELS",
    "Autoencoder",
    "Average",
    "Classifier",
    "autoencoder",
    "conv_classifier",
    "gan",
    "get_model",
    "mlp_classifier",
    "model_average",
    "share",
]
