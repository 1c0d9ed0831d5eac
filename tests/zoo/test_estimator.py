"""zoo.compat.estimator: TF 1.15's tf.estimator on TF 2.21 after install(): files as
TF 1.15 wrote them, resume, export, train_and_evaluate, inputs, TPUEstimator on CPU,
install/uninstall, and each bad input's message."""

import os
import re
import sys

import numpy as np
import pytest
import tensorflow as tf

import zoo.compat
from layers.errors import ZooError
from tests.zoo import estimator_model as m

v1 = tf.compat.v1


@pytest.fixture(scope="module", autouse=True)
def installed():
    """install() for the module (tf.compat.v1.layers, tf.estimator)."""
    zoo.compat.uninstall()
    zoo.compat.install()
    yield
    zoo.compat.uninstall()


def config(**settings):
    return tf.estimator.RunConfig(**{"save_checkpoints_steps": 10, "tf_random_seed": 1,
                                     "log_step_count_steps": 10, **settings})  # fmt: skip


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """An Estimator trained 20 then 10 more steps (checkpoints every 10, keep 3),
    evaluated and exported."""
    model_dir = str(tmp_path_factory.mktemp("est") / "model")
    x, y = m.data()
    estimator = tf.estimator.Estimator(
        m.model_fn, model_dir, config(keep_checkpoint_max=3), params={"hidden": 8}
    )
    estimator.train(m.input_fn(x, y), max_steps=20)
    estimator.train(m.input_fn(x, y), steps=10)
    metrics = estimator.evaluate(m.input_fn(x, y, repeat=False), name="test")
    export = estimator.export_saved_model(
        os.path.join(model_dir, "export", "e"), m.serving_input_receiver_fn
    )
    return estimator, metrics, export


def numpy_probabilities(estimator, x):
    """The model's probabilities computed with numpy from the checkpoint's values."""
    value = estimator.get_variable_value
    hidden = np.maximum(x @ value("dense/kernel") + value("dense/bias"), 0)
    logits = hidden @ value("logits/kernel") + value("logits/bias")
    e = np.exp(logits - logits.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_files_as_tf_1_15_wrote_them_and_a_second_train_continues(trained):
    estimator, metrics, export = trained
    files = set(os.listdir(estimator.model_dir))
    steps = sorted(int(s) for s in re.findall(r"model\.ckpt-(\d+)\.index", " ".join(files)))
    assert steps == [10, 20, 30]  # keep_checkpoint_max=3
    assert {"checkpoint", "graph.pbtxt", "eval_test", "export"} <= files
    assert any(f.startswith("events.out.tfevents.") for f in files)
    assert any(
        f.startswith("events.") for f in os.listdir(f"{estimator.model_dir}/eval_test")
    )
    assert estimator.latest_checkpoint().endswith("model.ckpt-30")
    assert metrics["global_step"] == 30 and set(metrics) == {
        "accuracy",
        "loss",
        "global_step",
    }
    assert re.fullmatch(rb".*/export/e/\d{10}", export)
    assert sorted(estimator.get_variable_names()) == [
        "dense/bias", "dense/kernel", "global_step", "logits/bias", "logits/kernel",
    ]  # fmt: skip


def test_predict_and_the_export_reloaded_predict_the_checkpoint(trained):
    estimator, _, export = trained
    x, _ = m.data()
    expected = numpy_probabilities(estimator, x)
    single = list(
        estimator.predict(m.input_fn(x, repeat=False), predict_keys="probabilities")
    )
    assert len(single) == len(x) and set(single[0]) == {"probabilities"}
    np.testing.assert_allclose([p["probabilities"] for p in single], expected, rtol=1e-5)
    batches = list(
        estimator.predict(m.input_fn(x, repeat=False), yield_single_examples=False)
    )
    assert [len(b["logits"]) for b in batches] == [16, 16, 16]
    loaded = tf.saved_model.load(export.decode())
    assert set(loaded.signatures) == {"predict", "serving_default"}
    served = loaded.signatures["serving_default"](x=tf.constant(x))
    np.testing.assert_allclose(served["probabilities"].numpy(), expected, rtol=1e-5)


def test_evaluate_matches_numpy(trained):
    estimator, metrics, _ = trained
    x, y = m.data()
    probabilities = numpy_probabilities(estimator, x)
    assert metrics["accuracy"] == pytest.approx(np.mean(probabilities.argmax(1) == y))
    loss = -np.mean(np.log(probabilities[np.arange(len(y)), y]))
    assert metrics["loss"] == pytest.approx(loss, rel=1e-4)


def variable(name):
    """The default graph's global variable ``name``."""
    (found,) = [v for v in v1.global_variables() if v.op.name == name]
    return found


class Crash(Exception):
    pass


class CrashAtStep(v1.train.SessionRunHook):
    def __init__(self, step):
        self.step = step

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(v1.train.get_global_step())

    def after_run(self, run_context, run_values):
        if run_values.results >= self.step:
            raise Crash


def test_a_run_killed_mid_training_resumes_from_its_last_checkpoint(tmp_path):
    x, y = m.data()
    estimator = tf.estimator.Estimator(m.model_fn, str(tmp_path), config(), {"hidden": 4})
    with pytest.raises(Crash):
        estimator.train(m.input_fn(x, y), max_steps=30, hooks=[CrashAtStep(25)])
    assert estimator.latest_checkpoint().endswith("model.ckpt-20")
    saved = estimator.get_variable_value("logits/kernel")
    resumed = []

    class Record(tf.estimator.SessionRunHook):
        def after_create_session(self, session, coord):
            resumed.append(session.run(variable("logits/kernel")))

    estimator.train(m.input_fn(x, y), max_steps=30, hooks=[Record()])
    np.testing.assert_array_equal(resumed[0], saved)
    assert estimator.latest_checkpoint().endswith("model.ckpt-30")


def test_train_and_evaluate_runs_the_exporters(tmp_path):
    x, y = m.data()
    estimator = tf.estimator.Estimator(m.model_fn, str(tmp_path), config(), {"hidden": 4})
    exporters = [
        tf.estimator.FinalExporter("final", m.serving_input_receiver_fn),
        tf.estimator.LatestExporter(
            "latest", m.serving_input_receiver_fn, exports_to_keep=1
        ),
        tf.estimator.BestExporter("best", m.serving_input_receiver_fn),
    ]
    metrics, exports = tf.estimator.train_and_evaluate(
        estimator,
        tf.estimator.TrainSpec(m.input_fn(x, y), max_steps=20),
        tf.estimator.EvalSpec(
            m.input_fn(x, y), steps=2, exporters=exporters, throttle_secs=0
        ),  # fmt: skip
    )
    assert metrics["global_step"] == 20 and len(exports) == 3
    assert all(re.fullmatch(rb".*/export/(final|latest|best)/\d{10}", e) for e in exports)
    assert len(os.listdir(tmp_path / "export" / "final")) == 1
    assert len(os.listdir(tmp_path / "export" / "latest")) == 1  # exports_to_keep=1
    assert any(f.startswith("events.") for f in os.listdir(tmp_path / "eval"))


def test_numpy_input_fn_batches_every_row_once_per_epoch_across_epochs_as_a_queue():
    x = {"a": np.arange(10.0), "b": np.arange(10.0) * 2}
    input_fn = v1.estimator.inputs.numpy_input_fn(x, np.arange(10), batch_size=4,
                                                  num_epochs=2, shuffle=False)  # fmt: skip
    with tf.Graph().as_default(), v1.Session() as session:
        features, labels = input_fn()
        rows = []
        while True:
            try:
                rows.append(session.run((features, labels)))
            except tf.errors.OutOfRangeError:
                break
    assert [len(lab) for _, lab in rows] == [4, 4, 4, 4, 4]  # TF 1.15's queue: 20 rows
    np.testing.assert_array_equal(np.concatenate([f["b"] for f, _ in rows]),
                                  np.tile(np.arange(10.0) * 2, 2))  # fmt: skip
    with pytest.raises(
        ZooError, match="numpy_input_fn: expected shuffle to be True or False"
    ):
        v1.estimator.inputs.numpy_input_fn(x, np.arange(10))
    with pytest.raises(ZooError, match=r"expected x and y of one length, found .*'y': 3"):
        v1.estimator.inputs.numpy_input_fn(x, np.arange(3), shuffle=False)


def test_pandas_input_fn_names_the_missing_package():
    if "pandas" in sys.modules or __import__("importlib").util.find_spec("pandas"):
        pytest.skip("pandas is installed")
    with pytest.raises(ZooError, match="pip install pandas"):
        v1.estimator.inputs.pandas_input_fn(None, shuffle=False)


def tpu_model_fn(features, labels, mode, params):
    """A TPUEstimator model_fn in BERT's style: batch size from params, scaffold_fn,
    eval_metrics=(metric_fn, [tensors]), CrossShardOptimizer."""
    assert features["x"].shape[0] in (None, params["batch_size"]) and not params["use_tpu"]
    logits = v1.layers.dense(features["x"], m.N_CLASSES, name="logits")
    if mode == tf.estimator.ModeKeys.PREDICT:
        return v1.estimator.tpu.TPUEstimatorSpec(mode, predictions={"logits": logits})
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    optimizer = v1.estimator.tpu.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.1))
    train_op = optimizer.minimize(loss, v1.train.get_global_step())

    def metric_fn(labels, logits):
        return {"accuracy": v1.metrics.accuracy(labels, tf.argmax(logits, 1))}

    return v1.estimator.tpu.TPUEstimatorSpec(
        mode, loss=loss, train_op=train_op, eval_metrics=(metric_fn, [labels, logits]),
        scaffold_fn=lambda: scaffolds.append(mode) or v1.train.Scaffold(),
    )  # fmt: skip


scaffolds = []


def test_tpu_estimator_runs_on_cpu_with_params_batch_size(tmp_path):
    x, y = m.data()

    def input_fn(params):
        dataset = tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat()
        return dataset.batch(params["batch_size"], drop_remainder=True)

    tpu = v1.estimator.tpu
    run_config = tpu.RunConfig(model_dir=str(tmp_path), tpu_config=tpu.TPUConfig(4),
                               save_checkpoints_steps=4)  # fmt: skip
    estimator = tpu.TPUEstimator(tpu_model_fn, config=run_config, use_tpu=False,
                                 train_batch_size=8, eval_batch_size=12,
                                 loop_on_cpu=True)  # fmt: skip
    estimator.train(input_fn, max_steps=8)
    metrics = estimator.evaluate(input_fn, steps=2)
    assert metrics["global_step"] == 8 and 0 <= metrics["accuracy"] <= 1
    # model_fn is called twice to train (4 steps per run: again in the loop)
    assert scaffolds == ["train", "train", "eval"]
    assert run_config.replace(keep_checkpoint_max=1).tpu_config.iterations_per_loop == 4


def test_install_gives_the_namespaces_and_module_paths_and_uninstall_removes_them():
    import tensorflow.compat.v1 as tf_v1
    from tensorflow.compat.v1 import estimator
    from tensorflow.python.estimator.model_fn import ModeKeys  # TF 1.15's path
    from tensorflow_estimator.python.estimator import model_fn
    from tensorflow_estimator.python.estimator.tpu import tpu_estimator

    assert estimator is tf_v1.estimator and estimator.Estimator is tf.estimator.Estimator
    assert model_fn.EstimatorSpec is tf.estimator.EstimatorSpec
    assert ModeKeys is tf.estimator.ModeKeys
    assert tpu_estimator.TPUEstimator is tf.estimator.tpu.TPUEstimator
    assert tf.estimator.SessionRunHook is v1.train.SessionRunHook
    hook = type("Hook", (tf.estimator.SessionRunHook,), {})  # as programs do at import
    assert issubclass(hook, v1.train.SessionRunHook)
    assert hasattr(v1.estimator, "inputs") and not hasattr(tf.estimator, "inputs")
    names = zoo.compat.uninstall()
    try:
        assert "tensorflow.estimator" in names and not hasattr(tf, "estimator")
        assert not hasattr(tf_v1, "estimator")
        paths = ("tensorflow_estimator", "tensorflow.python.estimator")
        assert not any(n.startswith(paths) for n in sys.modules)
        assert "tensorflow.estimator" not in sys.modules
    finally:
        zoo.compat.install()


def failing_model_fn(failure):
    def model_fn(features, labels, mode):
        logits = v1.layers.dense(features["x"], m.N_CLASSES, name=failure)
        if failure == "no_loss":
            return tf.estimator.EstimatorSpec(mode, predictions={"logits": logits})
        predictions = {"logits": logits, "mean": tf.reduce_mean(logits, keepdims=True)}
        return tf.estimator.EstimatorSpec(mode, predictions=predictions)

    return model_fn


def test_bad_input_messages(tmp_path, trained):
    x, y = m.data()
    estimator = tf.estimator.Estimator(failing_model_fn("no_loss"), str(tmp_path / "a"))
    with pytest.raises(
        ZooError, match=r"EstimatorSpec\(mode='train'\): expected loss, found"
    ):
        estimator.train(m.input_fn(x, y), steps=1)
    mismatched = tf.estimator.Estimator(failing_model_fn("mismatch"), str(tmp_path / "b"))
    with pytest.raises(ZooError, match=r"mode 'infer'.*one batch size, found .*'mean': 1"):
        next(mismatched.predict(m.input_fn(x, repeat=False)))
    with pytest.raises(
        ZooError, match="input_fn: expected features or .*a tuple of 3 items"
    ):
        estimator.train(lambda: (x, y, y), steps=1)
    with pytest.raises(
        ZooError, match="evaluate: expected a checkpoint in model_dir .*, found"
    ):
        mismatched.evaluate(m.input_fn(x, y))
    other = tf.estimator.Estimator(failing_model_fn("no_loss"), trained[0].model_dir)
    missing = r"\['no_loss/bias', 'no_loss/kernel'\] missing from it.*warm_start_from"
    with pytest.raises(ZooError, match=missing):
        next(other.predict(m.input_fn(x, repeat=False)))
    with pytest.raises(ZooError, match="expected a serving_input_receiver_fn, found None"):
        trained[0].export_saved_model(str(tmp_path / "e"), None)


def test_a_strategy_of_several_replicas_is_refused():
    two = type("TwoReplicas", (), {"num_replicas_in_sync": 2})()
    config = tf.estimator.RunConfig(train_distribute=two)
    with pytest.raises(ZooError, match="expected a distribution strategy of one replica"):
        tf.estimator.Estimator(m.model_fn, config=config)


def test_export_without_export_outputs_says_so(trained):
    def model_fn(features, labels, mode, params):
        spec = m.model_fn(features, labels, mode, params)
        return spec._replace(export_outputs={}) if mode == "infer" else spec

    estimator = tf.estimator.Estimator(model_fn, trained[0].model_dir, params={"hidden": 8})
    with pytest.raises(ZooError, match=r"expected one of the export_outputs \[\] under "
                                       r"'serving_default', found none"):  # fmt: skip
        estimator.export_saved_model(os.path.join(estimator.model_dir, "x"),
                                     m.serving_input_receiver_fn)  # fmt: skip


def test_warm_start_from_another_model_dir(tmp_path, trained):
    x, y = m.data()
    estimator = tf.estimator.Estimator(m.model_fn, str(tmp_path), config(),
                                       params={"hidden": 8},
                                       warm_start_from=trained[0].model_dir)  # fmt: skip
    started = []

    class Record(tf.estimator.SessionRunHook):
        def after_create_session(self, session, coord):
            started.append(session.run(variable("logits/kernel")))

    estimator.train(m.input_fn(x, y), steps=1, hooks=[Record()])
    np.testing.assert_array_equal(
        started[0], trained[0].get_variable_value("logits/kernel")
    )


def adam_model_fn(features, labels, mode, params):
    """Unnamed layers, Adam (slots and beta powers), a summary: what K steps per run
    must build again in the loop on the first call's variables."""
    hidden = v1.layers.dense(features["x"], 8, tf.nn.relu)
    loss = v1.losses.sparse_softmax_cross_entropy(labels, v1.layers.dense(hidden, 3))
    v1.summary.scalar("model_loss", loss)
    train_op = v1.train.AdamOptimizer(0.01).minimize(loss, v1.train.get_global_step())
    return v1.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def test_iterations_per_loop_trains_k_steps_per_run_exactly_as_one(tmp_path):
    x, y = m.data()

    def input_fn(params):
        dataset = tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat()
        return dataset.batch(params["batch_size"])

    tpu, values, runs = v1.estimator.tpu, {}, {}
    for k in (1, 4):
        run_config = tpu.RunConfig(
            model_dir=str(tmp_path / str(k)), tf_random_seed=3, save_checkpoints_steps=4,
            tpu_config=tpu.TPUConfig(k),
        )  # fmt: skip
        estimator = tpu.TPUEstimator(adam_model_fn, config=run_config, use_tpu=False,
                                     train_batch_size=8, loop_on_cpu=True)  # fmt: skip
        counter = RunCounter()
        estimator.train(input_fn, max_steps=10, hooks=[counter])
        estimator.train(input_fn, steps=3, hooks=[counter])
        runs[k] = counter.runs
        names = estimator.get_variable_names()
        values[k] = {n: estimator.get_variable_value(n) for n in names}
        files = " ".join(os.listdir(tmp_path / str(k)))
        steps = sorted(int(s) for s in re.findall(r"ckpt-(\d+)\.index", files))
        assert steps == [0, 4, 8, 10, 13]
    assert runs == {1: 13, 4: 4}  # 4 + 4 + 2, then 3
    assert values[1].keys() == values[4].keys() and values[4]["global_step"] == 13
    for name, value in values[1].items():
        np.testing.assert_array_equal(values[4][name], value, err_msg=name)


class RunCounter(v1.train.SessionRunHook):
    runs = 0

    def after_run(self, run_context, run_values):
        self.runs += 1


def test_run_config_defaults_replace_and_errors():
    default = tf.estimator.RunConfig()
    assert (default.save_checkpoints_secs, default.save_checkpoints_steps) == (600, None)
    local = (default.keep_checkpoint_max, default.is_chief, default.task_type)
    assert local == (5, True, "worker")
    steps = default.replace(save_checkpoints_steps=50, tf_random_seed=3)
    assert (steps.save_checkpoints_secs, steps.save_checkpoints_steps) == (None, 50)
    assert steps.tf_random_seed == 3 and default.tf_random_seed is None
    with pytest.raises(ZooError, match="RunConfig: expected save_checkpoints_steps or "
                                       "save_checkpoints_secs, found both"):  # fmt: skip
        tf.estimator.RunConfig(save_checkpoints_steps=1, save_checkpoints_secs=1)
    with pytest.raises(ZooError, match=r"RunConfig.replace: expected names .*\['x'\]"):
        default.replace(x=1)


def test_estimator_spec_checks_as_tf_1_15(graph):
    loss = tf.reduce_sum(tf.ones([2]))
    spec = tf.estimator.EstimatorSpec("infer", predictions={"y": tf.ones([2, 1])})
    assert set(spec.export_outputs) == {"serving_default"} and spec.scaffold is not None
    with pytest.raises(ZooError, match=r"mode='eval'\): expected loss to be a scalar"):
        tf.estimator.EstimatorSpec("eval", loss=tf.ones([2]))
    with pytest.raises(ZooError, match=r"mode='train'\): expected train_op, found None"):
        tf.estimator.EstimatorSpec("train", loss=loss)
    with pytest.raises(ZooError, match=r"expected training_hooks to hold SessionRunHook"):
        tf.estimator.EstimatorSpec("eval", loss=loss, training_hooks=[object()])
    with pytest.raises(ZooError, match=r"_replace: expected mode 'eval', found 'train'"):
        tf.estimator.EstimatorSpec("eval", loss=loss)._replace(mode="train")


def keras_model_fn(features, labels, mode):
    """A Keras model called inside a model_fn (tensorflow/models' official MNIST style)."""
    model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"),
                                 tf.keras.layers.Dense(m.N_CLASSES)])  # fmt: skip
    logits = model(features["x"], training=mode == tf.estimator.ModeKeys.TRAIN)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"logits": logits})
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = v1.train.AdamOptimizer(0.01).minimize(loss, v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def test_a_keras_model_in_model_fn_gets_the_same_names_in_every_graph(tmp_path):
    # Keras 3 names layers per process; each Estimator graph starts its names afresh
    # (keras.src.backend.common.global_state's object_name_uids, put back after)
    x, y = m.data()
    estimator = tf.estimator.Estimator(keras_model_fn, str(tmp_path))
    estimator.train(m.input_fn(x, y), steps=3)
    assert "sequential/dense/kernel" in estimator.get_variable_names()
    assert estimator.evaluate(m.input_fn(x, y, repeat=False))["global_step"] == 3
    logits = [p["logits"] for p in estimator.predict(m.input_fn(x, repeat=False))]
    assert np.shape(logits) == (len(x), m.N_CLASSES)


def test_model_fn_arguments_are_checked_as_tf_1_15(tmp_path):
    x, y = m.data()
    with pytest.raises(ZooError, match=r"model_fn's arguments among .*, found \['label'\]"):
        tf.estimator.Estimator(lambda features, label, mode: None)
    no_labels = tf.estimator.Estimator(lambda features, mode: None, str(tmp_path))
    with pytest.raises(ZooError, match=r"expected model_fn to take labels .*\['features'"):
        no_labels.train(m.input_fn(x, y), steps=1)


def test_classification_and_regression_signatures_read_serialized_examples(trained):
    def model_fn(features, labels, mode, params):
        spec = m.model_fn(features, labels, mode, params)
        if mode != tf.estimator.ModeKeys.PREDICT:
            return spec
        p = spec.predictions
        export = tf.estimator.export
        outputs = {
            "serving_default": export.ClassificationOutput(
                scores=p["probabilities"], classes=tf.as_string(p["class_ids"])
            ),
            "regression": export.RegressionOutput(tf.reduce_max(p["logits"], 1)),
            "predict": export.PredictOutput(p),
        }
        return spec._replace(export_outputs=outputs)

    estimator = tf.estimator.Estimator(model_fn, trained[0].model_dir, params={"hidden": 8})
    base = os.path.join(estimator.model_dir, "signatures")
    spec = {"x": tf.io.FixedLenFeature([m.N_FEATURES], tf.float32)}
    parsing = tf.estimator.export.build_parsing_serving_input_receiver_fn(spec)
    loaded = tf.saved_model.load(estimator.export_saved_model(base, parsing).decode())
    assert set(loaded.signatures) == {"serving_default", "regression", "predict"}
    x, _ = m.data(4)
    examples = [
        tf.train.Example(features=tf.train.Features(feature={
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=row))
        })).SerializeToString()
        for row in x
    ]  # fmt: skip
    scores = loaded.signatures["serving_default"](inputs=tf.constant(examples))["scores"]
    expected = numpy_probabilities(trained[0], x)
    np.testing.assert_allclose(scores.numpy(), expected, rtol=1e-5)
    raw = tf.estimator.export.build_raw_serving_input_receiver_fn({"x": tf.zeros([1, 4])})
    loaded = tf.saved_model.load(estimator.export_saved_model(base, raw).decode())
    assert set(loaded.signatures) == {"predict"}  # classify/regress need serialized input
