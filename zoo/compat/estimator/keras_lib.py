"""``tf.keras.estimator.model_to_estimator`` (TF 2.15's ``keras_lib``) onto this
package's :class:`~zoo.compat.estimator.estimator.Estimator`.

The model is a tf_keras (Keras 2) model, what ``tf.keras`` is in TF1 code under
:func:`zoo.compat.install` (:mod:`zoo.compat.keras`). As TF 2.15 did, each
Estimator call clones it onto the input_fn's tensors with
``clone_and_build_model`` (its optimizer counting the global step), the first
checkpoint (``model_dir/keras/keras_model.ckpt``) holds the model's weights and
warm-starts training, and checkpoints are object-based (``checkpoint_format=
"checkpoint"``, keys such as ``layer_with_weights-0/kernel/.ATTRIBUTES/
VARIABLE_VALUE``) or name-based (``"saver"``): TF 2.15's and ours read each
other's.

Usage::

    model = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(4,))])
    model.compile(tf.keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy")
    estimator = tf.keras.estimator.model_to_estimator(model, model_dir="/tmp/m")
    estimator.train(input_fn, steps=100)
"""

import os
import tempfile

import tensorflow as tf

from layers.errors import ZooError
from zoo.compat.estimator.estimator import Estimator
from zoo.compat.estimator.export.export_output import PredictOutput
from zoo.compat.estimator.mode_keys import ModeKeys
from zoo.compat.estimator.model_fn import DEFAULT_SERVING_KEY, EstimatorSpec
from zoo.compat.estimator.run_config import RunConfig
from zoo.compat.keras import engine, is_keras3

v1 = tf.compat.v1

_OWNER = "tf.keras.estimator.model_to_estimator"


def _tf_keras():
    """tf_keras's package module (its ``__internal__`` API; raises as
    :func:`~zoo.compat.keras.engine` when missing)."""
    engine()
    import tf_keras

    return tf_keras


def check_model(model, owner):
    """Raises unless ``model`` is a tf_keras (Keras 2) model.

    Raises:
        ZooError: a Keras 3 model, or no model.
    """
    tf_keras = _tf_keras()
    if isinstance(model, tf_keras.Model):
        return
    found = (
        "a Keras 3 model (import keras, or TF2's tf.keras)"
        if is_keras3(model)
        else f"{type(model).__name__} {model!r}"
    )
    raise ZooError(
        f"{owner}: expected a Keras 2 model (tf.keras of TF1 code, tf_keras), found "
        f"{found}; build it with tf.compat.v1.keras (tf.keras after `import "
        "tensorflow.compat.v1 as tf`) or `import tf_keras`, not with Keras 3"
    )


def _convert_tensor(x):
    return x if tf.is_tensor(x) else v1.convert_to_tensor_or_sparse_tensor(x)


def _ordered(obj, key_order, obj_name):
    """``obj`` (a tensor, list or dict) as a list of tensors in ``key_order``."""
    if obj is None:
        return None
    if isinstance(obj, list | tuple):
        return [_convert_tensor(x) for x in obj]
    if isinstance(obj, dict):
        missing = set(key_order) - set(obj)
        if missing:
            raise ZooError(
                f"{_OWNER}: expected the {obj_name} dict to hold the model's keys "
                f"{sorted(key_order)}, found {sorted(obj)}, missing {sorted(missing)}; "
                f"return them from input_fn"
            )
        return [_convert_tensor(obj[key]) for key in key_order]
    return [_convert_tensor(obj)]


def _keras_io(model, features, labels):
    """Estimator features and labels as the model's inputs, targets and sample
    weights (a features dict ``{"features", "sample_weights"}`` carries them)."""
    weights = None
    if isinstance(features, dict) and set(features) == {"features", "sample_weights"}:
        features, weights = features["features"], features["sample_weights"]
    graph_network = model._is_graph_network  # noqa: SLF001
    input_names = output_names = None
    if isinstance(features, dict):
        input_names = model.input_names if graph_network else [
            f"input_{i}" for i in range(1, len(features) + 1)
        ]  # fmt: skip
    if isinstance(labels, dict):
        output_names = model.output_names if graph_network else [
            f"output_{i}" for i in range(1, len(labels) + 1)
        ]  # fmt: skip
    if isinstance(model.inputs, dict):
        inputs = {key: _convert_tensor(features[key]) for key in model.inputs}
    elif model.inputs is None and isinstance(features, dict):
        inputs = {key: _convert_tensor(value) for key, value in features.items()}
    else:
        inputs = _ordered(features, input_names, "features")
    return inputs, _ordered(labels, output_names, "labels"), weights


def _clone(mode, model, custom_objects, features=None, labels=None, optimizer_config=None):
    """The model cloned onto ``features`` and ``labels`` in the default graph,
    compiled (but in PREDICT) with the global step as its optimizer's iterations."""
    tf_keras = _tf_keras()
    engine().backend.set_learning_phase(mode == ModeKeys.TRAIN)
    inputs, targets, weights = _keras_io(model, features, labels)
    compile_clone = mode != ModeKeys.PREDICT
    global_step = None
    if compile_clone:
        global_step = v1.train.get_or_create_global_step()
        tf_keras.__internal__.backend.track_variable(global_step)
    clone = tf_keras.__internal__.models.clone_and_build_model(
        model, inputs, targets, custom_objects, compile_clone=compile_clone,
        in_place_reset=not model._is_graph_network,  # noqa: SLF001
        optimizer_iterations=global_step, optimizer_config=optimizer_config,
    )  # fmt: skip
    if weights is not None:
        from tf_keras.src.engine import training_utils_v1

        weights = training_utils_v1.standardize_sample_or_class_weights(
            weights, clone.output_names, "sample_weight"
        )
        clone._compile_weights_loss_and_weighted_metrics(weights)  # noqa: SLF001
    return clone


def _metric_ops(model, metric_names_map):
    """The clone's compiled metrics by name (renamed by ``metric_names_map``)."""
    if not getattr(model, "_compile_metrics", None):
        return None
    metrics = model._compile_metric_functions  # noqa: SLF001
    if not metric_names_map:
        return {metric.name: metric for metric in metrics}
    names = {metric.name for metric in metrics}
    if set(metric_names_map) != names:
        raise ZooError(
            f"{_OWNER}: expected metric_names_map's keys to be the model's metrics "
            f"{sorted(names)}, found {sorted(metric_names_map)}; map each of them"
        )
    return {metric_names_map[metric.name]: metric for metric in metrics}


def _object_saver(model):
    """A Saver of ``model``'s variables under their object-checkpoint keys, as TF
    2.15 saves ``model_to_estimator``'s checkpoints (tensorflow.python.checkpoint's
    ``frozen_saver`` restores object-based ones)."""
    from tensorflow.python.checkpoint import checkpoint as trackable_util

    model._track_trackable(v1.train.get_global_step(), "estimator_global_step")  # noqa: SLF001
    var_list = tf.__internal__.tracking.ObjectGraphView(model).frozen_saveable_objects()
    saver = v1.train.Saver(var_list=var_list, sharded=True)
    saver._object_restore_saver = trackable_util.frozen_saver(model)  # noqa: SLF001
    return saver


def _model_fn(keras_model, custom_objects, save_object_ckpt, metric_names_map,
              export_outputs):  # fmt: skip
    """The model_fn of the Estimator ``model_to_estimator`` makes."""
    try:
        optimizer = keras_model.optimizer
        optimizer_config = (
            [opt.get_config() for opt in optimizer]
            if isinstance(optimizer, list | tuple) else optimizer.get_config()
        )  # fmt: skip
    except (NotImplementedError, AttributeError):
        optimizer_config = None  # TFOptimizer and custom optimizers have no config

    def model_fn(features, labels, mode):
        model = _clone(mode, keras_model, custom_objects, features, labels,
                       optimizer_config)  # fmt: skip
        predictions = dict(zip(model.output_names, model.outputs, strict=True))
        loss = train_op = eval_metric_ops = None
        if mode != ModeKeys.PREDICT:
            if mode == ModeKeys.TRAIN:
                model._make_train_function()  # noqa: SLF001
                train_op = model.train_function.updates_op
            else:
                model._make_test_function()  # noqa: SLF001
            loss = model.total_loss
            eval_metric_ops = _metric_ops(model, metric_names_map)
        if (
            not model._is_graph_network  # noqa: SLF001
            and getattr(keras_model, "_original_attributes_cache", None) is not None
        ):
            _tf_keras().__internal__.models.in_place_subclassed_model_state_restoration(
                keras_model
            )
        scaffold = (
            v1.train.Scaffold(saver=_object_saver(model)) if save_object_ckpt else None
        )
        outputs = {DEFAULT_SERVING_KEY: PredictOutput(predictions)}
        unknown = set(export_outputs or ()) - set(model.output_names)
        if unknown:
            raise ZooError(
                f"{_OWNER}: expected export_outputs' keys among the model's outputs "
                f"{model.output_names}, found {sorted(unknown)}; name outputs by them"
            )
        for key, output_class in (export_outputs or {}).items():
            outputs[key] = output_class(predictions[key])
        return EstimatorSpec(
            mode, predictions=predictions, loss=loss, train_op=train_op,
            eval_metric_ops=eval_metric_ops, export_outputs=outputs, scaffold=scaffold,
        )  # fmt: skip

    return model_fn


def _any_weight_initialized(model):
    return any(
        hasattr(weight, "_keras_initialized")
        for layer in model.layers
        for weight in layer.weights
    )


def _save_first_checkpoint(keras_model, custom_objects, config, save_object_ckpt):
    """``model_dir/keras/keras_model.ckpt``: the model's weights (or its initial
    values), written once, for the Estimator to warm-start from; returns its path."""
    tf_keras = _tf_keras()
    directory = os.path.join(config.model_dir, "keras")
    latest = tf.train.latest_checkpoint(directory)
    if latest:
        return latest
    weights = keras_model.get_weights() if _any_weight_initialized(keras_model) else None
    tf.io.gfile.makedirs(directory)
    with tf.Graph().as_default():
        v1.set_random_seed(config.tf_random_seed)
        v1.train.create_global_step()
        model = _clone(ModeKeys.TRAIN, keras_model, custom_objects)
        model._make_train_function()  # noqa: SLF001  (adds the optimizer's variables)
        with v1.Session(config=config.session_config) as session:
            if weights:
                model.set_weights(weights)
            tf_keras.__internal__.backend.initialize_variables(session)
            path = os.path.join(directory, "keras_model.ckpt")
            if save_object_ckpt:
                model._track_trackable(v1.train.get_global_step(), "estimator_global_step")  # noqa: SLF001
                model.save_weights(path)
            else:
                v1.train.Saver().save(session, path)
    return path


def model_to_estimator(keras_model=None, keras_model_path=None, custom_objects=None,
                       model_dir=None, config=None, checkpoint_format=None,
                       use_v2_estimator=False, metric_names_map=None,
                       export_outputs=None):  # fmt: skip
    """An :class:`Estimator` that trains, evaluates, predicts with and exports a
    compiled Keras 2 model, as TF 2.15's ``model_to_estimator``.

    Args:
        keras_model: a compiled tf_keras model (``tf.keras`` of TF1 code), or
        keras_model_path: an h5 file of one (``model.save``); one of the two.
        custom_objects: dict of custom classes the model's config names.
        model_dir: where checkpoints go (takes precedence over config's); None:
            config's, else a new temporary directory.
        config: a ``RunConfig``.
        checkpoint_format: ``"checkpoint"`` (None: object-based keys) or
            ``"saver"`` (variable names).
        use_v2_estimator: ignored (one Estimator class here).
        metric_names_map: dict of the model's metric names -> names in
            ``evaluate``'s results.
        export_outputs: dict of output name -> ``ExportOutput`` class.

    Returns:
        An :class:`Estimator`.

    Raises:
        ZooError: both or neither of keras_model and keras_model_path; a Keras 3
            model; a model never compiled; a checkpoint_format of another name;
            model_dir holding another model's checkpoint (on ``train``).
    """
    del use_v2_estimator
    if (keras_model is None) == (keras_model_path is None):
        raise ZooError(
            f"{_OWNER}: expected keras_model or keras_model_path, found "
            f"{'both' if keras_model is not None else 'neither'}; pass one of them"
        )
    tf_keras = _tf_keras()
    if keras_model is None:
        keras_model = engine().models.load_model(keras_model_path)
    check_model(keras_model, _OWNER)
    is_subclassed = not (
        keras_model._is_graph_network  # noqa: SLF001
        or isinstance(keras_model, tf_keras.Sequential)
    )
    if checkpoint_format not in (None, "checkpoint", "saver"):
        raise ZooError(
            f"{_OWNER}: expected checkpoint_format 'checkpoint' or 'saver', found "
            f"{checkpoint_format!r}; pass one of them"
        )
    save_object_ckpt = checkpoint_format != "saver"
    if save_object_ckpt and is_subclassed:
        raise ZooError(
            f"{_OWNER}: expected a Sequential or functional model for object-based "
            f"checkpoints, found the subclassed {type(keras_model).__name__}; pass "
            "checkpoint_format='saver'"
        )
    if not getattr(keras_model, "optimizer", None):
        raise ZooError(
            f"{_OWNER}: expected a compiled model, found {keras_model.name!r} never "
            "compiled; call model.compile(optimizer, loss) first"
        )
    config = RunConfig() if config is None else config
    model_dir = os.fspath(model_dir) if model_dir else config.model_dir
    config = config.replace(model_dir=model_dir or tempfile.mkdtemp())
    model_fn = _model_fn(keras_model, custom_objects, save_object_ckpt, metric_names_map,
                         export_outputs)  # fmt: skip
    if not _any_weight_initialized(keras_model):
        engine().backend.set_session(v1.Session(config=config.session_config))
    warm_start_from = None
    if keras_model._is_graph_network and config.is_chief:  # noqa: SLF001
        warm_start_from = _save_first_checkpoint(keras_model, custom_objects, config,
                                                 save_object_ckpt)  # fmt: skip
    return Estimator(model_fn, config=config, warm_start_from=warm_start_from)
