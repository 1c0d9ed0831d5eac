"""What of TF 1.15's ``tf.contrib.learn`` real programs still reach: ``ModeKeys``.

The rest of contrib.learn (its estimators, ``Experiment``, ``learn_runner``,
``preprocessing``) was deprecated in TF 1.x for ``tf.estimator``; asking for it
names that replacement (:data:`zoo.compat.contrib.names.REPLACEMENTS`).
"""

__all__ = ["ModeKeys"]


class ModeKeys:
    """TF 1.15's ``tf.contrib.learn.ModeKeys``: ``INFER`` where ``tf.estimator``
    says ``PREDICT`` (both are ``"infer"``)."""

    TRAIN = "train"
    EVAL = "eval"
    INFER = "infer"
