"""Model builders with ``scope`` and ``reuse``, and the registry name -> builder."""

from layers.errors import ZooError
from zoo.models.autoencoder import autoencoder
from zoo.models.bn_conv import bn_conv_classifier
from zoo.models.conv import conv_classifier
from zoo.models.conv_autoencoder import conv_autoencoder
from zoo.models.gan import GAN, Discriminator, Generator, discriminator, gan, generator
from zoo.models.mlp import Average, mlp_classifier, model_average
from zoo.models.parts import Autoencoder, Classifier
from zoo.models.qnet import QNetwork, q_network
from zoo.models.rnn import GRUStep, Recurrent, gru_step, rnn_classifier
from zoo.models.siamese import (
    Siamese,
    Tower,
    contrastive_loss,
    embedding_tower,
    partners_in_batch,
    siamese,
)

MODELS = {
    "autoencoder": autoencoder,
    "mlp_classifier": mlp_classifier,
    "conv_classifier": conv_classifier,
    "bn_conv_classifier": bn_conv_classifier,
    "conv_autoencoder": conv_autoencoder,
    "gan": gan,
    "gan_generator": generator,
    "gan_discriminator": discriminator,
    "siamese": siamese,
    "embedding_tower": embedding_tower,
    "rnn_classifier": rnn_classifier,
    "q_network": q_network,
}


def get_model(name):
    """Returns the builder registered as ``name``.

    Raises:
        ZooError: the name is not in :data:`MODELS`.
    """
    if name not in MODELS:
        raise ZooError(f"Name of model unknown: {name!r}; expected one of {sorted(MODELS)}")
    return MODELS[name]


__all__ = [
    "MODELS",
    "Autoencoder",
    "Average",
    "Classifier",
    "Discriminator",
    "GAN",
    "Generator",
    "QNetwork",
    "autoencoder",
    "bn_conv_classifier",
    "conv_autoencoder",
    "conv_classifier",
    "discriminator",
    "gan",
    "generator",
    "get_model",
    "mlp_classifier",
    "model_average",
    "GRUStep",
    "Recurrent",
    "Siamese",
    "Tower",
    "contrastive_loss",
    "embedding_tower",
    "gru_step",
    "partners_in_batch",
    "rnn_classifier",
    "siamese",
    "q_network",
]
