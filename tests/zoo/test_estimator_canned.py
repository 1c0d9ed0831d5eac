"""The canned estimators (zoo/compat/estimator/canned): TF 1.15's names, heads, keys and
signatures; each trained from TensorFlow 2.15's checkpoint ends where TensorFlow 2.15
ends (tests/zoo/canned_program.py, one reference subprocess per session)."""

import importlib
import json
import os
import pathlib
import re
import subprocess
import types

import numpy as np
import pytest
import tensorflow as tf

from experiments.bench import canned as canned_bench
from layers.errors import ZooError
from tests.zoo import canned_program
from zoo.compat.estimator.canned import V1, V2, optimizers
from zoo.compat.estimator.canned.head import binary_or_multi_class_head
from zoo.compat.estimator.mode_keys import ModeKeys

REFERENCE_PYTHON = pathlib.Path(canned_bench.REFERENCE_PYTHON)
DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "estimator_canned.md"
v1 = tf.compat.v1
fc = tf.feature_column


def _namespace(names):
    return types.SimpleNamespace(**{
        name: getattr(importlib.import_module(module), attribute)
        for name, (module, attribute) in names.items()
    })  # fmt: skip


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    """(reference, ours): each case's record after TF 2.15's 3 steps and 3 more."""
    if not REFERENCE_PYTHON.exists():
        pytest.skip(f"no TF 2.15 reference venv at {REFERENCE_PYTHON} (make reference)")
    workdir = tmp_path_factory.mktemp("canned")
    subprocess.run(
        [str(REFERENCE_PYTHON), canned_program.__file__, "reference", str(workdir)],
        check=True, capture_output=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )  # fmt: skip
    reference = json.loads((workdir / "reference.json").read_text())
    return reference, canned_program.run(_namespace(V1), workdir, "ours")


CASES = list(canned_program.cases(types.SimpleNamespace()))
# The mark of every test that reads ``trained``: one xdist group, one reference run.
CANNED_REFERENCE = pytest.mark.xdist_group("canned_reference")


@pytest.mark.slow
@CANNED_REFERENCE
@pytest.mark.parametrize("case", CASES)
def test_checkpoint_and_tensor_names_equal_tensorflow_2_15s(trained, case):
    reference, ours = (side[case] for side in trained)
    assert ours["names"] == reference["names"]
    assert ours["fetchable"] == reference["fetchable"]
    assert any(name.endswith("head/weighted_loss/Sum:0") for name in ours["fetchable"])


@pytest.mark.slow
@CANNED_REFERENCE
@pytest.mark.parametrize("case", CASES)
def test_evaluation_and_predictions_equal_tensorflow_2_15s(trained, case):
    reference, ours = (side[case] for side in trained)
    assert ours["evaluation"].keys() == reference["evaluation"].keys()
    for key, value in reference["evaluation"].items():
        np.testing.assert_allclose(ours["evaluation"][key], value, rtol=1e-5, atol=1e-5)
    assert ours["predictions"].keys() == reference["predictions"].keys()
    for key, value in reference["predictions"].items():
        if np.asarray(value).dtype.kind == "U":
            assert ours["predictions"][key] == value
        else:
            np.testing.assert_allclose(ours["predictions"][key], value, rtol=1e-5,
                                       atol=1e-5)  # fmt: skip


def _spec(head, mode, labels=(1, 0, 1)):
    logits = tf.constant([[0.5], [-1.0], [2.0]]) if head.logits_dimension == 1 else (
        tf.constant(np.arange(3.0 * head.logits_dimension, dtype=np.float32).reshape(3, -1))
    )  # fmt: skip
    with v1.variable_scope("model", reuse=v1.AUTO_REUSE):
        logits *= v1.get_variable("scale", initializer=1.0)  # something to train
    optimizer = v1.train.GradientDescentOptimizer(0.1)
    v1.train.get_or_create_global_step()
    return head.create_estimator_spec(
        {"x": tf.zeros([3, 1])}, mode, logits, tf.constant(labels),
        optimizer=optimizer if mode == ModeKeys.TRAIN else None,
    )  # fmt: skip


def test_binary_head_keys_signatures_and_tensor_names(graph):
    head = binary_or_multi_class_head(2)
    predict = _spec(head, ModeKeys.PREDICT)
    assert sorted(predict.predictions) == [
        "all_class_ids", "all_classes", "class_ids", "classes", "logistic", "logits",
        "probabilities",
    ]  # fmt: skip
    assert sorted(predict.export_outputs) == [
        "classification", "predict", "regression", "serving_default"
    ]
    assert predict.predictions["probabilities"].name == "head/predictions/probabilities:0"
    train = _spec(head, ModeKeys.TRAIN)
    assert train.loss.name == "head_1/weighted_loss/Sum:0"
    graph.get_tensor_by_name("head_1/truediv:0")  # average_loss, as census_main logs it
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        fetches = [predict.predictions["probabilities"], train.loss]
        probabilities, loss = session.run(fetches)
    logits = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(probabilities[:, 1], 1 / (1 + np.exp(-logits)), rtol=1e-6)
    labels = np.array([1, 0, 1])
    expected = np.sum(np.log1p(np.exp(-logits)) + (1 - labels) * logits)
    np.testing.assert_allclose(loss, expected, rtol=1e-6)


def test_multi_class_head_evaluates_accuracy_and_average_loss(graph):
    head = binary_or_multi_class_head(3, label_vocabulary=["a", "b", "c"])
    spec = _spec(head, ModeKeys.EVAL, labels=[["c"], ["a"], ["c"]])
    assert sorted(spec.eval_metric_ops) == ["accuracy", "average_loss"]
    with v1.Session() as session:
        session.run([v1.global_variables_initializer(), v1.local_variables_initializer(),
                     v1.tables_initializer()])  # fmt: skip
        session.run({key: op for key, (_, op) in spec.eval_metric_ops.items()})
        accuracy = session.run(spec.eval_metric_ops["accuracy"][0])
    assert accuracy == pytest.approx(2 / 3)  # argmax is class 2 ("c") for every row


def test_v2_forms_average_the_loss_and_take_keras_defaults():
    assert set(V1) - set(V2) == {"BaselineEstimator", "DNNEstimator",
                                 "DNNLinearCombinedEstimator", "LinearEstimator"}
    assert len(V2) == 8
    dnn = _namespace(V2).DNNClassifier([3], [fc.numeric_column("x")])
    with tf.Graph().as_default():
        v1.train.get_or_create_global_step()
        spec = dnn.model_fn({"x": tf.ones([4, 1])}, tf.ones([4, 1], tf.int64),
                            ModeKeys.TRAIN, dnn.config)  # fmt: skip
        names = [v.op.name for v in v1.trainable_variables()]
        assert spec.loss.op.name == "dnn/head/weighted_loss/value"  # SUM_OVER_BATCH_SIZE
    assert names == [
        "dnn/hiddenlayer_0/kernel", "dnn/hiddenlayer_0/bias", "dnn/logits/kernel",
        "dnn/logits/bias",
    ]  # no partitioner  # fmt: skip
    adam = optimizers.get_optimizer_instance("Adam", keras_defaults=True)
    assert (adam._lr, adam._epsilon) == (0.001, 1e-7)


def test_optimizer_by_name_instance_or_callable():
    sgd = v1.train.GradientDescentOptimizer(0.5)
    assert optimizers.get_optimizer_instance(sgd) is sgd
    assert optimizers.get_optimizer_instance(lambda: sgd) is sgd
    ftrl = optimizers.get_optimizer_instance("Ftrl", learning_rate=0.2)
    assert isinstance(ftrl, v1.train.FtrlOptimizer) and ftrl._learning_rate == 0.2


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: optimizers.get_optimizer_instance("Adadelta", 0.1),
         "optimizer: expected one of ['Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD'], "
         "found 'Adadelta'"),
        (lambda: optimizers.get_optimizer_instance(3),
         "optimizer: expected a tf.compat.v1.train.Optimizer, a callable returning one "
         "or a name, found 3"),
        (lambda: binary_or_multi_class_head(1),
         "head: expected n_classes an int > 1, found 1"),
        (lambda: binary_or_multi_class_head(3, label_vocabulary=["a", "b"]),
         "head: expected label_vocabulary of n_classes=3 strings, found 2"),
        (lambda: _namespace(V1).DNNLinearCombinedClassifier(),
         "DNNLinearCombined: expected linear_feature_columns or dnn_feature_columns, "
         "found neither"),
        (lambda: _namespace(V1).DNNLinearCombinedRegressor(
            dnn_feature_columns=[fc.numeric_column("x")]),
         "DNNLinearCombined: expected dnn_hidden_units with dnn_feature_columns, "
         "found None"),
    ],
)  # fmt: skip
def test_bad_arguments_are_named(call, message):
    with pytest.raises(ZooError, match=re.escape(message)):
        call()


def test_features_not_a_dict_are_named(graph):
    dnn = _namespace(V1).DNNRegressor([2], [fc.numeric_column("x")])
    message = "DNN estimator: expected the input_fn's features as a dict of tensors, found"
    with pytest.raises(ZooError, match=re.escape(message)):
        dnn.model_fn(tf.ones([2, 1]), None, ModeKeys.PREDICT, dnn.config)


@pytest.mark.slow
def test_the_page_program_trains_evaluates_exports_and_serves():
    (code,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    namespace = {"__name__": "estimator_canned_doc"}
    try:
        exec(compile(code, "<docs/estimator_canned.md>", "exec"), namespace)  # noqa: S102
    finally:
        importlib.import_module("zoo.compat").uninstall()
    assert sorted(namespace["served"].signatures) == [
        "classification", "predict", "regression", "serving_default"
    ]
    metrics = namespace["metrics"]
    assert metrics["accuracy"] > metrics["accuracy_baseline"]
    np.testing.assert_allclose(
        namespace["scores"].numpy()[:, 1], namespace["predicted"][:8], rtol=1e-5
    )
