"""The names TF 2.15's ``tf.compat.v1`` had that ours lacked (28, found 2026-11-29 by
comparing the two APIs name by name): each is provided, or raises a ContribError
naming TF's name and the replacement, and ``dir()`` lists it."""

import functools

import pytest
import tensorflow as tf

from tests.zoo.test_estimator import installed  # noqa: F401  (install() for the module)
from zoo.compat.contrib import ContribError

v1 = tf.compat.v1

REFUSED = {
    "data.experimental.CheckpointInputPipelineHook": "tf.data.experimental."
    "make_saveable_from_iterator",
    "estimator.Head": "tf.contrib.estimator's heads",
    "estimator.BinaryClassHead": "binary_classification_head",
    "estimator.MultiClassHead": "multi_class_head",
    "estimator.MultiHead": "multi_head",
    "estimator.MultiLabelHead": "multi_label_head",
    "estimator.LogisticRegressionHead": "binary_classification_head",
    "estimator.PoissonRegressionHead": "tf.nn.log_poisson_loss",
    "estimator.RegressionHead": "regression_head",
    "estimator.experimental.LinearSDCA": "tf.estimator.LinearClassifier",
    "estimator.experimental.build_raw_supervised_input_receiver_fn":
        "build_raw_serving_input_receiver_fn",
    "estimator.experimental.call_logit_fn": "a model_fn of your own",
    "estimator.experimental.make_stop_at_checkpoint_step_hook": "StopAtStepHook",
    "estimator.tpu.experimental.EmbeddingConfigSpec": "embedding_column",
    "layers.experimental.keras_style_scope": "keras.layers",
    "layers.experimental.set_keras_style": "keras.layers",
    "tpu.experimental.AdagradParameters": "tf.compat.v1.train.AdagradOptimizer",
    "tpu.experimental.AdamParameters": "tf.compat.v1.train.AdamOptimizer",
    "tpu.experimental.FtrlParameters": "tf.compat.v1.train.FtrlOptimizer",
    "tpu.experimental.StochasticGradientDescentParameters": "GradientDescentOptimizer",
}  # fmt: skip


def parent_and_leaf(path):
    *parents, leaf = path.split(".")
    return functools.reduce(getattr, parents, v1), leaf


@pytest.mark.parametrize("path", sorted(REFUSED))
def test_a_name_not_provided_names_tf_2_15s_name_and_the_replacement(path):
    parent, leaf = parent_and_leaf(path)
    label = f"tf.{'compat.v1.' if path.count('.') == 1 else ''}{path}"
    with pytest.raises(ContribError, match=rf"^{label}: expected a name zoo.compat "
                       rf"provides, found TF 2.15's {label}, which it does not provide; "
                       rf"use .*{REFUSED[path]}"):  # fmt: skip
        getattr(parent, leaf)
    assert leaf in dir(parent) and not hasattr(parent, leaf)


def test_tf_2_x_estimator_refuses_the_estimators_of_tf_2_x_heads():
    for name in ("BaselineEstimator", "DNNEstimator", "DNNLinearCombinedEstimator",
                 "LinearEstimator"):  # fmt: skip
        with pytest.raises(ContribError, match=rf"^tf.estimator.{name}: .* use "
                           rf"tf.compat.v1.estimator.{name} \(it takes TF 1.15's heads\)"):
            getattr(tf.estimator, name)


def test_other_missing_names_keep_pythons_error():
    with pytest.raises(AttributeError, match="'tensorflow._api.v2.compat.v1.data."
                                             "experimental' has no attribute 'nope'$"):
        v1.data.experimental.nope  # noqa: B018
    assert v1.data.experimental.AUTOTUNE == tf.data.AUTOTUNE
