"""``tf.estimator.ModeKeys``: the modes a model_fn is called in, as TF 1.15 named them."""


class ModeKeys:
    """Standard names for model modes: ``TRAIN``, ``EVAL``, ``PREDICT``."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


MODES = (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)
