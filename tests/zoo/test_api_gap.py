"""The names TF 2.15's ``tf.compat.v1`` had that ours lacked (28, found 2026-11-29 by
comparing the two APIs name by name): each is provided, or raises a ContribError
naming TF's name and the replacement, and ``dir()`` lists it."""

import functools
import types

import numpy as np
import pytest
import tensorflow as tf

from layers.errors import ZooError
from tests.zoo import estimator_model as m
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


def test_the_private_lazy_loader_name_it_uses_is_there():
    """install() refuses names in TF's own data.experimental and tpu.experimental
    through the module TF's lazy-loading wrapper wraps (zoo/compat/namespaces.py)."""
    for module in (v1.data.experimental, v1.tpu.experimental):
        assert isinstance(module._tfmw_wrapped_module, types.ModuleType)
        assert "__getattr__" not in getattr(module, "__all__", ())


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


def test_parse_example_specs_add_the_label_and_the_weight_as_tf_did():
    age = tf.feature_column.numeric_column("age")
    city = tf.feature_column.categorical_column_with_hash_bucket("city", 10)
    spec = v1.estimator.classifier_parse_example_spec(
        [age, city], "clicked", label_dtype=tf.string, label_default="no",
        weight_column="w")  # fmt: skip
    assert spec == {
        "age": tf.io.FixedLenFeature((1,), tf.float32),
        "city": tf.io.VarLenFeature(tf.string),
        "clicked": tf.io.FixedLenFeature((1,), tf.string, "no"),
        "w": tf.io.FixedLenFeature((1,), tf.float32),
    }  # fmt: skip
    spec = tf.estimator.regressor_parse_example_spec(
        [age], "price", label_dimension=2,
        weight_column=tf.feature_column.numeric_column("w", dtype=tf.float64))  # fmt: skip
    assert spec["price"] == tf.io.FixedLenFeature((2,), tf.float32)
    assert spec["w"] == tf.io.FixedLenFeature((1,), tf.float64)
    assert v1.estimator.classifier_parse_example_spec([age], "y")["y"].dtype == tf.int64


def test_parse_example_specs_refuse_a_label_or_weight_key_a_feature_has():
    age = tf.feature_column.numeric_column("age")
    with pytest.raises(ZooError, match=r"^classifier_parse_example_spec: expected a "
                       r"label_key no feature column parses, found 'age' among the "
                       r"features \['age'\] \(TF: label should not be used as feature\)"):
        v1.estimator.classifier_parse_example_spec([age], "age")
    with pytest.raises(ZooError, match=r"^regressor_parse_example_spec: .* found 'y' "
                       r"among \['age', 'y'\] \(TF: weight_column should not be used"):
        v1.estimator.regressor_parse_example_spec([age], "y", weight_column="y")
    with pytest.raises(ZooError, match=r"^regressor_parse_example_spec: expected "
                       r"weight_column a feature key or a numeric column, found 3"):
        v1.estimator.regressor_parse_example_spec([age], "y", weight_column=3)


def test_eval_output_serves_loss_predictions_and_metrics_under_tfs_keys(graph):
    x = v1.placeholder(tf.float32, [None], name="x")
    labels = tf.zeros_like(x)
    loss = tf.reduce_mean(tf.square(x))
    mean, update = v1.metrics.mean(x)
    output = tf.estimator.export.EvalOutput(
        loss=loss, predictions={"doubled": 2 * x, "predictions/x": x},
        metrics={"mean": (mean, update), ("head", "mse"): v1.metrics.mean_squared_error(
            labels, x)})  # fmt: skip
    signature = output.as_signature_def({"x": x})
    assert signature.method_name == "tensorflow/supervised/eval"
    assert set(signature.outputs) == {
        "loss", "predictions/doubled", "predictions/x", "metrics/mean/value",
        "metrics/mean/update_op", "metrics/head/mse/value", "metrics/head/mse/update_op",
    }  # fmt: skip
    with v1.Session() as session:
        session.run(v1.local_variables_initializer())
        fetch = {key: info.name for key, info in signature.outputs.items()}
        feed = {signature.inputs["x"].name: [1.0, 3.0]}
        session.run(fetch["metrics/mean/update_op"], feed)
        values = session.run({key: name for key, name in fetch.items()
                              if not key.endswith("update_op")}, feed)  # fmt: skip
    assert values["loss"] == 5.0 and list(values["predictions/doubled"]) == [2.0, 6.0]
    assert values["metrics/mean/value"] == 2.0
    op_output = tf.estimator.export.EvalOutput(metrics=(mean, tf.group(update)))
    assert set(op_output.metrics) == {"metrics/value", "metrics/update_op"}
    assert op_output.metrics["metrics/update_op"].op.name.startswith("metric_op_wrapper")
    with pytest.raises(ZooError, match=r"^EvalOutput: expected metric 'metrics/acc' a "
                                       r"\(value Tensor, update_op\) tuple, found 0.5"):
        tf.estimator.export.EvalOutput(metrics={"acc": 0.5})
    with pytest.raises(ZooError, match=r"^EvalOutput: expected str keys \(or tuples of "
                                       r"str\), found 1"):
        tf.estimator.export.EvalOutput(predictions={1: x})
    with pytest.raises(ZooError, match=r"^EvalOutput: expected the serving input's "
                                       r"tensors, found none"):
        output.as_signature_def({})


def test_baseline_estimator_learns_the_label_mean_through_a_contrib_head(tmp_path):
    x, _ = m.data()
    y = np.full([len(x), 1], 4.0, np.float32)
    baseline = v1.estimator.BaselineEstimator(
        tf.contrib.estimator.regression_head(), model_dir=str(tmp_path),
        optimizer=v1.train.GradientDescentOptimizer(0.25))  # fmt: skip
    baseline.train(m.input_fn(x, y), steps=3)
    # the mean squared error's gradient 2 (b - 4): b = 4 (1 - 0.5 ** steps)
    np.testing.assert_allclose(baseline.get_variable_value("baseline/bias"), [3.5], 1e-6)
    with pytest.raises(ZooError, match="^BaselineEstimator: expected a head"):
        v1.estimator.BaselineEstimator("regression")


def test_dnn_linear_combined_estimator_is_the_regressor_on_its_head(tmp_path):
    x, y = m.data()
    y = y.astype(np.float32)[:, None]
    column = tf.feature_column.numeric_column("x", [m.N_FEATURES])
    settings = {"linear_feature_columns": [column], "dnn_feature_columns": [column],
                "dnn_hidden_units": [5],
                "config": tf.estimator.RunConfig(tf_random_seed=3)}  # fmt: skip
    assert tf.contrib.estimator.DNNLinearCombinedEstimator is (
        v1.estimator.DNNLinearCombinedEstimator)
    head = tf.contrib.estimator.regression_head(loss_reduction=v1.losses.Reduction.SUM)
    combined = v1.estimator.DNNLinearCombinedEstimator(
        head, model_dir=str(tmp_path / "head"), **settings)
    regressor = v1.estimator.DNNLinearCombinedRegressor(
        model_dir=str(tmp_path / "regressor"), **settings)
    for estimator in (combined, regressor):
        estimator.train(m.input_fn(x, y), steps=3)
    names = regressor.get_variable_names()
    assert combined.get_variable_names() == names and "dnn/logits/kernel" in names
    for name in names:
        np.testing.assert_allclose(combined.get_variable_value(name),
                                   regressor.get_variable_value(name), rtol=1e-6)
    with pytest.raises(ZooError, match="^DNNLinearCombinedEstimator: expected a head"):
        v1.estimator.DNNLinearCombinedEstimator(None, linear_feature_columns=[column])
