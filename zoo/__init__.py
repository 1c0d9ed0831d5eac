"""Model builders and the tools around variable sharing.

Importing this package changes nothing in TensorFlow's global state and imports
neither TensorFlow nor tensorflow-datasets: each name is imported from its
module when first used (``zoo.data`` imports tensorflow-datasets only when asked
for data), so a command's flag checks answer before TensorFlow starts.
"""

from layers import lazy

__getattr__, __dir__, __all__ = lazy.exports(
    __name__,
    {
        "zoo.hparams": ("HParams",),
        "zoo.models": (
            "MODELS", "Autoencoder", "Average", "Classifier", "autoencoder",
            "conv_classifier", "gan", "get_model", "mlp_classifier", "model_average",
        ),
        "zoo.share": ("share",),
    },
)  # fmt: skip
