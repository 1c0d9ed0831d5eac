"""Model builders and the tools around variable sharing.

Importing this package changes nothing in TensorFlow's global state and does
not import tensorflow-datasets; ``zoo.data`` does that only when asked for data.
"""

from zoo.models import (
    MODELS,
    Autoencoder,
    Average,
    Classifier,
    autoencoder,
    get_model,
    mlp_classifier,
    model_average,
)

__all__ = [
    "MODELS",
    "Autoencoder",
    "Average",
    "Classifier",
    "autoencoder",
    "get_model",
    "mlp_classifier",
    "model_average",
]
