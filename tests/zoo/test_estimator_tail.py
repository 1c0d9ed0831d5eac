"""Issue 50's Estimator half: tf.contrib.estimator, tf.estimator.add_metrics and
experimental's early stopping, tf.contrib.predictor, params of any type,
TPUEstimator one step per run on CPU; programs in TF 1.15's idioms after install()
(the TF 2.15 comparison of the same behaviours: test_estimator_reference.py)."""

import contextlib
import os

import numpy as np
import pytest
import tensorflow as tf

from layers.errors import ZooError
from tests.zoo import estimator_model as m
from tests.zoo.test_estimator import installed  # noqa: F401  (install() for the module)
from zoo.compat.contrib import ContribError

v1 = tf.compat.v1


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A model_fn Estimator trained 10 steps and evaluated once (events at step 10)."""
    model_dir = str(tmp_path_factory.mktemp("tail") / "model")
    x, y = m.data()
    estimator = tf.estimator.Estimator(m.model_fn, model_dir, params={"hidden": 8})
    estimator.train(m.input_fn(x, y), steps=10)
    estimator.evaluate(m.input_fn(x, y, repeat=False))
    return estimator


def with_id_input_fn(repeat=True, labels=True):
    """Batches of ``{"x", "id"}`` (an example id the model does not read)."""
    x, y = m.data()

    def input_fn():
        features = {"x": x, "id": np.arange(len(x), dtype=np.int64)}
        dataset = tf.data.Dataset.from_tensor_slices((features, y) if labels else features)
        return (dataset.repeat() if repeat else dataset).batch(16)

    return input_fn


def id_serving_input_receiver_fn():
    x = v1.placeholder(tf.float32, [None, m.N_FEATURES], name="x")
    example_id = v1.placeholder(tf.int64, [None], name="id")
    features = {"x": x, "id": example_id}
    return tf.estimator.export.ServingInputReceiver(features, features)


def test_add_metrics_adds_to_the_evaluation_and_rejects_other_arguments(trained):
    x, y = m.data()

    def label_mean(labels, features, config):
        assert config.model_dir == trained.model_dir and "x" in features
        return {"label_mean": v1.metrics.mean(tf.cast(labels, tf.float32))}

    extended = tf.compat.v1.estimator.add_metrics(trained, label_mean)
    metrics = extended.evaluate(m.input_fn(x, y, repeat=False), name="added")
    assert metrics["label_mean"] == pytest.approx(y.mean())
    assert metrics["accuracy"] == pytest.approx(trained.evaluate(
        m.input_fn(x, y, repeat=False), name="plain")["accuracy"])  # fmt: skip
    assert tf.contrib.estimator.add_metrics is tf.estimator.add_metrics
    with pytest.raises(ZooError, match=r"metric_fn's arguments among .*found \['logits'\]"):
        tf.estimator.add_metrics(trained, lambda logits: {})
    with pytest.raises(ZooError, match="add_metrics: expected a tf.estimator.Estimator"):
        tf.estimator.add_metrics("model_dir", lambda labels: {})


def test_stop_if_lower_hook_stops_on_the_evaluation_in_eval_dir(tmp_path):
    x, y = m.data()
    estimator = tf.estimator.Estimator(m.model_fn, str(tmp_path), params={"hidden": 8})
    experimental = tf.estimator.experimental
    every_step = {"run_every_secs": None, "run_every_steps": 1}
    late = experimental.stop_if_lower_hook(estimator, "loss", 1e9, min_steps=100,
                                           **every_step)  # fmt: skip
    estimator.train(m.input_fn(x, y), steps=5, hooks=[late])
    estimator.evaluate(m.input_fn(x, y, repeat=False))  # loss at step 5 in eval/
    estimator.train(m.input_fn(x, y), steps=3, hooks=[late])
    assert estimator.get_variable_value("global_step") == 8  # step 5 < min_steps
    assert not estimator.get_variable_value("signal_early_stopping/STOP")
    hook = tf.contrib.estimator.stop_if_lower_hook(estimator, "loss", 1e9, **every_step)
    estimator.train(m.input_fn(x, y), steps=50, hooks=[hook])
    assert estimator.get_variable_value("global_step") == 9  # stopped after one step
    assert estimator.get_variable_value("signal_early_stopping/STOP")
    steps = tf.contrib.estimator.read_eval_metrics(estimator.eval_dir())
    assert list(steps) == [5] and set(steps[5]) == {"loss", "accuracy"}


@contextlib.contextmanager
def after_runs(hook):
    """``run_to(step, read)``: sets the global step to ``step`` and calls
    ``hook.after_run`` as a run that fetched ``read`` would (a session of its own)."""
    with tf.Graph().as_default():
        global_step = v1.train.create_global_step()
        hook.begin()
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())

            def run_to(step, read):
                global_step.load(step, session)
                context = v1.train.SessionRunContext(None, session)
                hook.after_run(context, v1.train.SessionRunValues(read, None, None))
                return context.stop_requested

            yield run_to


def test_early_stopping_checks_each_step_whichever_value_the_run_read(trained):
    """A run's fetched global step may be read before or after its increment: read
    after at step 14 and before at 15 (14 twice), TF 1.15's hook skipped step 15."""
    checks = []
    hook = tf.estimator.experimental.make_early_stopping_hook(
        trained, lambda: checks.append(1) or len(checks) == 3, run_every_secs=None,
        run_every_steps=1,
    )  # fmt: skip
    with after_runs(hook) as run_to:
        stopped = [run_to(13, read=12), run_to(14, read=14), run_to(15, read=14)]
        assert (stopped, len(checks)) == ([False, False, True], 3)


def test_early_stopping_errors(trained):
    experimental = tf.estimator.experimental
    with pytest.raises(ZooError, match="expected one of run_every_secs and run_every_"):
        experimental.stop_if_no_increase_hook(trained, "accuracy", 10, run_every_steps=5)
    with pytest.raises(ZooError, match="expected should_stop_fn to be callable"):
        experimental.make_early_stopping_hook(trained, True)
    with pytest.raises(ZooError, match="stop_if_no_decrease_hook|early stopping hook"):
        experimental.stop_if_no_decrease_hook(None, "loss", 10)
    x, y = m.data()
    hook = experimental.stop_if_higher_hook(trained, "auc", 0.5, run_every_secs=None,
                                            run_every_steps=1)  # fmt: skip
    # TF 1.15 failed too: trained's checkpoint has no signal_early_stopping/STOP
    with pytest.raises(ZooError, match=r"Estimator.train: expected .*model.ckpt-10 to hold "
                                       r"this model's variables, found \['signal_early_"):
        trained.train(m.input_fn(x, y), steps=1, hooks=[hook])
    with pytest.raises(ZooError, match=r"expected metric 'auc' in the evaluation at step "
                                       r"10, found \['accuracy', 'loss'\]"):  # fmt: skip
        with after_runs(hook) as run_to:
            run_to(10, read=9)
    with pytest.raises(ZooError, match="InMemoryEvaluatorHook: expected every_n_iter an"):
        experimental.InMemoryEvaluatorHook(trained, m.input_fn(x, y), every_n_iter=0)


def test_forward_features_adds_a_feature_to_predictions_and_the_export(tmp_path):
    estimator = tf.estimator.Estimator(m.model_fn, str(tmp_path), params={"hidden": 8})
    forwarding = tf.contrib.estimator.forward_features(estimator, "id")
    forwarding.train(with_id_input_fn(), steps=2)
    predictions = list(forwarding.predict(with_id_input_fn(False, labels=False)))
    assert [p["id"] for p in predictions] == list(range(len(m.data()[0])))
    assert set(predictions[0]) == {"class_ids", "probabilities", "logits", "id"}
    export = forwarding.export_saved_model(str(tmp_path / "export"),
                                           id_serving_input_receiver_fn)  # fmt: skip
    served = tf.contrib.predictor.from_saved_model(export)({"x": m.data()[0][:3],
                                                            "id": [7, 8, 9]})  # fmt: skip
    assert served["id"].tolist() == [7, 8, 9]
    def predicts_id(features, labels, mode, params):
        spec = m.model_fn(features, labels, mode, params)
        return spec._replace(predictions={**spec.predictions, "id": features["id"]})

    predicting = tf.estimator.Estimator(predicts_id, str(tmp_path), params={"hidden": 8})
    for base, keys, message in (
        (predicting, "id", r"expected keys that are not predictions already .*found 'id'"),
        (estimator, "weight", r"expected keys among the features \['id', 'x'\]"),
    ):  # fmt: skip
        wrong = tf.contrib.estimator.forward_features(base, keys)
        with pytest.raises(ZooError, match=message):
            next(wrong.predict(with_id_input_fn(False, labels=False)))
    with pytest.raises(ZooError, match="expected keys a string or a list of strings"):
        tf.contrib.estimator.forward_features(estimator, 3)


def test_clip_gradients_by_norm_clips_the_global_norm_before_the_optimizer():
    with tf.Graph().as_default():
        w = v1.get_variable("w", initializer=[3.0, 4.0])
        loss = tf.reduce_sum(10.0 * w)  # gradient [10, 10], global norm 14.14
        optimizer = tf.contrib.estimator.clip_gradients_by_norm(
            v1.train.MomentumOptimizer(1.0, 0.5), clip_norm=2.0
        )
        train_op = optimizer.minimize(loss)
        assert optimizer.get_name() == "ClipByNormMomentum"
        assert optimizer.get_slot(w, "momentum").op.name == "w/Momentum"
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            session.run(train_op)
            clipped = np.array([10.0, 10.0]) * 2.0 / np.sqrt(200.0)
            np.testing.assert_allclose(session.run(w), [3.0, 4.0] - clipped, rtol=1e-6)
    with pytest.raises(ZooError, match="expected a tf.compat.v1.train.Optimizer"):
        tf.contrib.estimator.clip_gradients_by_norm("adam", 1.0)


def test_contrib_heads_average_the_loss_and_reject_what_is_not_provided():
    contrib = tf.contrib.estimator
    logits = np.array([[1.0, 2.0], [0.5, -1.0], [2.0, 0.0]], np.float32)
    labels = np.array([[1.5, 2.0], [0.0, 0.0], [1.0, 1.0]], np.float32)
    with tf.Graph().as_default():
        v1.train.get_or_create_global_step()
        head = contrib.regression_head(label_dimension=2, name="value")
        spec = head.create_estimator_spec({}, tf.estimator.ModeKeys.EVAL, logits, labels)
        with v1.Session() as session:
            session.run(v1.local_variables_initializer())
            assert session.run(spec.loss) == pytest.approx(((logits - labels) ** 2).mean())
        assert "average_loss/value" in spec.eval_metric_ops
        assert contrib.multi_class_head(3).logits_dimension == 3
        assert contrib.binary_classification_head().logits_dimension == 1
    with pytest.raises(ZooError, match="multi_class_head: expected n_classes an int > 2"):
        contrib.multi_class_head(2)
    with pytest.raises(ZooError, match="expected loss_fn None"):
        contrib.regression_head(loss_fn=lambda labels, logits: labels)
    with pytest.raises(ContribError, match="poisson_regression_head: .* use tf.nn"):
        contrib.poisson_regression_head  # noqa: B018
    with pytest.raises(ContribError, match="from_contrib_estimator: .*use tf.contrib."):
        tf.contrib.predictor.from_contrib_estimator  # noqa: B018


def test_replicate_model_fn_trains_one_tower_as_the_model_fn(tmp_path):
    x, y = m.data()
    values = {}
    for name, model_fn in (("plain", m.model_fn),
                           ("replicated", tf.contrib.estimator.replicate_model_fn(
                               m.model_fn, loss_reduction=v1.losses.Reduction.MEAN))):
        config = tf.estimator.RunConfig(tf_random_seed=5)
        estimator = tf.estimator.Estimator(model_fn, str(tmp_path / name), config,
                                           params={"hidden": 8})  # fmt: skip
        estimator.train(m.input_fn(x, y), steps=3)
        values[name] = {n: estimator.get_variable_value(n)
                        for n in estimator.get_variable_names()}  # fmt: skip
    assert values["plain"].keys() == values["replicated"].keys()
    for name, value in values["plain"].items():
        np.testing.assert_array_equal(values["replicated"][name], value, err_msg=name)
    optimizer = v1.train.AdamOptimizer()
    assert tf.contrib.estimator.TowerOptimizer(optimizer) is optimizer
    with pytest.raises(ZooError, match="expected at most one device"):
        tf.contrib.estimator.replicate_model_fn(m.model_fn, devices=["/gpu:0", "/gpu:1"])
    with pytest.raises(ZooError, match="expected the tower losses reduced"):
        tf.contrib.estimator.replicate_model_fn(m.model_fn, v1.losses.Reduction.NONE)


def test_predictor_from_estimator_serves_its_checkpoint_as_predict(trained):
    x, _ = m.data()
    predict_fn = tf.contrib.predictor.from_estimator(trained, m.serving_input_receiver_fn)
    served = predict_fn({"x": x})
    predicted = [p["probabilities"] for p in trained.predict(m.input_fn(x, repeat=False))]
    np.testing.assert_allclose(served["probabilities"], predicted, rtol=1e-6)
    assert "Predictor with feed tensors {'x'" in repr(predict_fn)
    with pytest.raises(ZooError, match=r"expected input keys among \['x'\], found \['y'\]"):
        predict_fn({"x": x, "y": x})
    with pytest.raises(ZooError, match=r"expected a value for each input .* for \['x'\]"):
        predict_fn({})
    with pytest.raises(ZooError, match=r"expected output_key among \['predict', 'serving"):
        tf.contrib.predictor.from_estimator(trained, m.serving_input_receiver_fn, "scores")


def test_from_saved_model_chooses_its_signature_and_fails_clearly(trained, tmp_path):
    x, _ = m.data()
    export = trained.export_saved_model(str(tmp_path), m.serving_input_receiver_fn)
    predictor = tf.contrib.predictor
    by_key = predictor.from_saved_model(export, signature_def_key="predict")
    by_names = predictor.from_saved_model(
        export, input_names={"features": "x:0"},
        output_names={"scores": by_key.fetch_tensors["probabilities"].name},
    )  # fmt: skip
    np.testing.assert_allclose(by_names({"features": x})["scores"],
                               by_key({"x": x})["probabilities"])  # fmt: skip
    with pytest.raises(ZooError, match="expected input_names and output_names both"):
        predictor.from_saved_model(export, input_names={"x": "x:0"})
    with pytest.raises(ZooError, match=r"at most one of .* found \['signature_def_key', "):
        predictor.from_saved_model(export, "predict", input_names={}, output_names={})
    with pytest.raises(ZooError, match="expected signature_def_key among"):
        predictor.from_saved_model(export, signature_def_key="classify")
    with pytest.raises(ZooError, match=r"expected a MetaGraphDef of tags \['train'\]"):
        predictor.from_saved_model(export, tags="train")
    with pytest.raises(ZooError, match="expected a SavedModel"):
        predictor.from_saved_model(str(tmp_path))


def test_params_of_any_type_reach_model_fn_and_input_fn_as_copies(tmp_path):
    x, y = m.data()
    params = tf.contrib.training.HParams(hidden=8, learning_rate=0.3)
    seen = []

    def input_fn(params):
        seen.append(("input_fn", params.batch_size))
        return m.input_fn(x, y, params.batch_size)()

    def model_fn(features, labels, mode, params):
        seen.append(("model_fn", params.batch_size, params.use_tpu))
        spec = m.model_fn(features, labels, mode, params.values())
        return v1.estimator.tpu.TPUEstimatorSpec(mode, loss=spec.loss,
                                                 train_op=spec.train_op)  # fmt: skip

    tpu = v1.estimator.tpu
    config = tpu.RunConfig(model_dir=str(tmp_path), tpu_config=tpu.TPUConfig(4))
    estimator = tpu.TPUEstimator(model_fn, config=config, params=params, use_tpu=False,
                                 train_batch_size=8)  # fmt: skip
    estimator.train(input_fn, steps=2)
    assert seen == [("input_fn", 8), ("model_fn", 8, False)]
    assert "batch_size" not in params and estimator.params.hidden == 8
    assert estimator.params is not params

    class Opaque:
        hidden = 8

    with pytest.raises(ZooError, match=r"expected params a dict or an HParams .*found "
                                       r"Opaque"):  # fmt: skip
        tpu.TPUEstimator(model_fn, config=config, params=Opaque(), use_tpu=False)
    with pytest.raises(ZooError, match="expected model_fn to take params"):
        tf.estimator.Estimator(lambda features, labels, mode: None, params=Opaque())


def test_tpu_estimator_without_tpu_runs_a_step_per_run_unless_asked(tmp_path):
    x, y = m.data()
    runs = {}
    for loop_on_cpu in (False, True):
        tpu = v1.estimator.tpu
        config = tpu.RunConfig(model_dir=str(tmp_path / str(loop_on_cpu)),
                               tpu_config=tpu.TPUConfig(4))  # fmt: skip
        estimator = tpu.TPUEstimator(sgd_model_fn, config=config, use_tpu=False,
                                     train_batch_size=8, loop_on_cpu=loop_on_cpu)
        counter = RunCounter()
        estimator.train(lambda params: m.input_fn(x, y, params["batch_size"])(), steps=6,
                        hooks=[counter])  # fmt: skip
        runs[loop_on_cpu] = (counter.runs, counter.losses)
    assert runs[False][0] == 6 and runs[True][0] == 2  # 4 + 2 steps
    assert runs[False][1] == ["sparse_softmax_cross_entropy_loss/value:0"] * 2


def sgd_model_fn(features, labels, mode, params):
    """A softmax classifier trained by SGD, no metric variables (a loop's body)."""
    logits = v1.layers.dense(features["x"], m.N_CLASSES)
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, v1.train.get_global_step()
    )
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


class RunCounter(v1.train.SessionRunHook):
    def begin(self):
        self.runs = 0
        self.losses = [t.name for t in v1.get_collection(v1.GraphKeys.LOSSES)]

    def after_run(self, run_context, run_values):
        self.runs += 1


def test_install_maps_the_contrib_modules_and_tf_estimator_experimental():
    import tensorflow.contrib.predictor as predictor_module
    from tensorflow.contrib.estimator import stop_if_no_decrease_hook
    from tensorflow_estimator.python.estimator import early_stopping

    assert stop_if_no_decrease_hook is tf.estimator.experimental.stop_if_no_decrease_hook
    assert early_stopping.stop_if_no_decrease_hook is stop_if_no_decrease_hook
    assert v1.estimator.experimental is tf.estimator.experimental
    assert predictor_module.from_saved_model.__module__ == "zoo.compat.contrib.predictor"
    estimator = tf.estimator.Estimator(m.model_fn, "/tmp/x", params={})
    assert os.path.basename(estimator.eval_dir("b")) == "eval_b"


def test_steps_may_be_floats_as_tf_1_15_took_them(tmp_path):
    x, y = m.data()
    estimator = tf.estimator.Estimator(sgd_model_fn, str(tmp_path))
    spec = tf.estimator.TrainSpec(m.input_fn(x, y), max_steps=4000 / 1600)  # 2.5
    estimator.train(spec.input_fn, max_steps=spec.max_steps)
    assert estimator.get_variable_value("global_step") == 3  # StopAtStepHook: >= 2.5
    estimator.train(m.input_fn(x, y), steps=1.5)
    assert estimator.get_variable_value("global_step") == 5
    with pytest.raises(ZooError, match="expected steps to be a number > 0, found '10'"):
        estimator.train(m.input_fn(x, y), steps="10")
    with pytest.raises(ZooError, match="TrainSpec: expected max_steps to be a number >= 1"):
        tf.estimator.TrainSpec(m.input_fn(x, y), max_steps=True)


def test_tf_layers_take_an_activation_by_name_as_tf_1_15_did():
    """tensorflow/tpu's mnist_tpu.py: ``tf.layers.Conv2D(..., activation="relu")``."""
    with tf.Graph().as_default():
        images = tf.constant(np.linspace(-1, 1, 2 * 4 * 4 * 1, dtype=np.float32))
        images = tf.reshape(images, [2, 4, 4, 1])
        conv = v1.layers.Conv2D(3, 3, padding="same", activation="relu")
        dense = v1.layers.dense(tf.reshape(images, [2, 16]), 5, activation="sigmoid")
        outputs = conv(images)
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            linear = session.run(tf.nn.conv2d(images, conv.kernel, 1, "SAME") + conv.bias)
            np.testing.assert_allclose(session.run(outputs), np.maximum(linear, 0), 1e-6)
            assert 0 < session.run(dense).min() and session.run(dense).max() < 1


def test_tf_estimator_experimental_names_the_replacement_of_what_it_lacks():
    with pytest.raises(ContribError, match=r"experimental.LinearSDCA: .* does not provide; "
                                           r"use tf.estimator.LinearClassifier"):
        tf.estimator.experimental.LinearSDCA  # noqa: B018


def test_multi_head_sums_the_weighted_losses_and_keys_predictions_by_head(tmp_path):
    x, y = m.data()
    contrib = tf.contrib.estimator

    def model_fn(features, labels, mode):
        head = contrib.multi_head([contrib.regression_head(name="size"),
                                   contrib.multi_class_head(3, name="kind")],
                                  head_weights=[1.0, 2.0])  # fmt: skip
        logits = v1.layers.dense(features["x"], head.logits_dimension)  # split 1 + 3
        optimizer = v1.train.GradientDescentOptimizer(0.1)
        return head.create_estimator_spec(features, mode, logits, labels, optimizer)

    def input_fn():
        labels = {"size": x[:, :1], "kind": y}
        return tf.data.Dataset.from_tensor_slices(({"x": x}, labels)).batch(48)

    estimator = tf.estimator.Estimator(model_fn, str(tmp_path))
    estimator.train(lambda: input_fn().repeat(), steps=3)
    metrics = estimator.evaluate(input_fn)
    assert {"loss/size", "loss/kind", "average_loss/size", "accuracy/kind"} <= set(metrics)
    expected = metrics["loss/size"] + 2 * metrics["loss/kind"]
    assert metrics["loss"] == pytest.approx(expected, rel=1e-5)
    first = next(estimator.predict(lambda: tf.data.Dataset.from_tensor_slices(
        {"x": x}).batch(8)))  # fmt: skip
    assert ("size", "predictions") in first and ("kind", "probabilities") in first
    export = estimator.export_saved_model(str(tmp_path / "export"),
                                          m.serving_input_receiver_fn)  # fmt: skip
    predict_fn = tf.contrib.predictor.from_saved_model(export, signature_def_key="predict")
    assert {"size/predictions", "kind/probabilities"} <= set(predict_fn.fetch_tensors)
    with pytest.raises(ZooError, match="multi_head: expected every head to have a name"):
        contrib.multi_head([contrib.regression_head()])
    with pytest.raises(ZooError, match=r"expected one weight per head \(1\), found 2"):
        contrib.multi_head([contrib.regression_head(name="a")], head_weights=[1, 2])


def test_dnn_and_linear_estimators_take_a_contrib_head(tmp_path):
    x, y = m.data()
    columns = [tf.feature_column.numeric_column("x", [m.N_FEATURES])]
    contrib = tf.contrib.estimator
    dnn = contrib.DNNEstimator(contrib.multi_class_head(3), [8], columns,
                               model_dir=str(tmp_path / "dnn"))  # fmt: skip
    linear = v1.estimator.LinearEstimator(contrib.regression_head(), columns,
                                          model_dir=str(tmp_path / "linear"))  # fmt: skip
    dnn.train(m.input_fn(x, y), steps=2)
    linear.train(m.input_fn(x, y.astype(np.float32)), steps=2)
    assert "dnn/hiddenlayer_0/kernel" in dnn.get_variable_names()
    assert "linear/linear_model/x/weights" in linear.get_variable_names()
    assert 0 <= dnn.evaluate(m.input_fn(x, y, repeat=False))["accuracy"] <= 1
    assert contrib.dnn_logit_fn_builder is tf.estimator.experimental.dnn_logit_fn_builder
    with pytest.raises(ZooError, match="DNNEstimator: expected a head"):
        contrib.DNNEstimator("regression", [8], columns)


def test_multi_label_head_averages_sigmoid_cross_entropy_over_classes():
    logits = np.array([[2.0, -1.0, 0.5], [-0.5, 1.5, 0.0]], np.float32)
    multi_hot = np.array([[1, 0, 1], [0, 1, 0]], np.int64)
    probabilities = 1 / (1 + np.exp(-logits))
    per_class = -(multi_hot * np.log(probabilities)
                  + (1 - multi_hot) * np.log(1 - probabilities))  # fmt: skip
    with tf.Graph().as_default():
        v1.train.get_or_create_global_step()
        sparse_ids = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], [0, 2, 1], [2, 2])
        head = tf.contrib.estimator.multi_label_head(3, name="tags")
        mode = tf.estimator.ModeKeys.EVAL
        dense = head.create_estimator_spec({}, mode, logits, multi_hot)
        sparse = head.create_loss({}, mode, logits, sparse_ids)
        with v1.Session() as session:
            session.run(v1.local_variables_initializer())
            loss, sparse_loss = session.run([dense.loss, sparse.training_loss])
    assert loss == pytest.approx(per_class.mean(), rel=1e-5)
    assert sparse_loss == pytest.approx(per_class.mean(), rel=1e-5)
    assert {"auc/tags", "auc_precision_recall/tags", "average_loss/tags"} <= set(
        dense.eval_metric_ops)  # fmt: skip
    with pytest.raises(ZooError, match="multi_label_head: expected n_classes an int > 1"):
        tf.contrib.estimator.multi_label_head(1)
