"""Names both floors read, without TensorFlow: a script's flags check them before it starts.

- ``GAN_ARCHITECTURES``: the architectures :func:`zoo.models.gan.gan` builds,
  ``DCGAN`` (convolutions) and ``MLP_GAN`` (one hidden layer per player); its
  ``ARCHITECTURES`` maps each to its builders, ``experiments/gan.py`` offers them
  as ``--architecture``.
- ``PRECISION_POLICIES``: the policies of :func:`zoo.training.precision.policy`,
  each with the dtype its products run in (variables are float32 in all three).
- ``BATCH_WINDOW``: the batches :class:`zoo.data.batches.GraphBatches` writes into
  the graph at once, so the most training steps one ``session.run`` may take
  (``--steps-per-run``).
"""

DCGAN = "dcgan"
MLP_GAN = "mlp"
GAN_ARCHITECTURES = (DCGAN, MLP_GAN)

PRECISION_POLICIES = {
    "float32": "float32",
    "mixed_bfloat16": "bfloat16",
    "mixed_float16": "float16",
}
BATCH_WINDOW = 256
