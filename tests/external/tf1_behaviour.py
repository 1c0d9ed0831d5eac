"""A pytest plugin that turns TensorFlow 2 behaviour off before any test module is
imported: TensorFlow's own tests then run as its TF1 (``--config=v1``) builds ran them,
``run_v1_only`` tests included. Used by :mod:`tests.external.tf_layers_tests`."""

import tensorflow as tf

tf.compat.v1.disable_v2_behavior()
