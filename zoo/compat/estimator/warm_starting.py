"""``tf.estimator.WarmStartSettings`` and ``VocabInfo``: start a new model_dir from
another model's checkpoint, through ``tf.compat.v1.train.warm_start``."""

import collections
import os

import tensorflow as tf

v1 = tf.compat.v1

VocabInfo = v1.train.VocabInfo


class WarmStartSettings(
    collections.namedtuple(
        "WarmStartSettings",
        ["ckpt_to_initialize_from", "vars_to_warm_start", "var_name_to_vocab_info",
         "var_name_to_prev_var_name"],  # fmt: skip
    )
):
    """Which variables to initialize from which checkpoint (TF 1.15's fields).

    Args:
        ckpt_to_initialize_from: a checkpoint file, a directory of checkpoints
            or a SavedModel directory.
        vars_to_warm_start: a regex or list of names/regexes (default ``".*"``,
            the trainable variables).
        var_name_to_vocab_info: dict of variable name -> :data:`VocabInfo`.
        var_name_to_prev_var_name: dict of variable name -> its name in the
            checkpoint.
    """

    def __new__(cls, ckpt_to_initialize_from, vars_to_warm_start=".*",
                var_name_to_vocab_info=None, var_name_to_prev_var_name=None):  # fmt: skip
        return super().__new__(
            cls, os.fspath(ckpt_to_initialize_from), vars_to_warm_start,
            var_name_to_vocab_info or {}, var_name_to_prev_var_name or {},
        )  # fmt: skip


def warm_start(settings):
    """Makes the default graph's variables start from ``settings``' checkpoint (call
    before the session is made)."""
    checkpoint = settings.ckpt_to_initialize_from
    saved_model_variables = os.path.join(checkpoint, "variables", "variables")
    if tf.io.gfile.exists(saved_model_variables + ".index"):
        checkpoint = saved_model_variables
    v1.train.warm_start(
        checkpoint,
        vars_to_warm_start=settings.vars_to_warm_start,
        var_name_to_vocab_info=settings.var_name_to_vocab_info,
        var_name_to_prev_var_name=settings.var_name_to_prev_var_name,
    )
