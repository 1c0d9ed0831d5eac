"""Names both floors read, without TensorFlow: a script's flags check them before it starts.

- ``GAN_ARCHITECTURES``: the architectures :func:`zoo.models.gan.gan` builds,
  ``DCGAN`` (convolutions) and ``MLP_GAN`` (one hidden layer per player); its
  ``ARCHITECTURES`` maps each to its builders, ``experiments/gan.py`` offers them
  as ``--architecture``.
- ``BATCH_WINDOW``: the batches :class:`zoo.data.batches.GraphBatches` writes into
  the graph at once, so the most training steps one ``session.run`` may take
  (``--steps-per-run``).
"""

DCGAN = "dcgan"
MLP_GAN = "mlp"
GAN_ARCHITECTURES = (DCGAN, MLP_GAN)
BATCH_WINDOW = 256
