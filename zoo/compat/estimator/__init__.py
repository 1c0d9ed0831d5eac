"""``tf.estimator`` of TF 1.15 on TensorFlow 2.21, on ``tf.compat.v1``'s machinery.

Modules laid out as tensorflow_estimator laid them out: ``mode_keys``
(:class:`ModeKeys`), ``model_fn`` (:class:`EstimatorSpec`), ``run_config``
(:class:`RunConfig`), ``estimator`` (:class:`Estimator`), ``training``
(:class:`TrainSpec`, :class:`EvalSpec`, :func:`train_and_evaluate`),
``exporter``, ``warm_starting``, ``export`` (``tf.estimator.export``),
``inputs`` (``tf.compat.v1.estimator.inputs``), ``tpu`` (TPUEstimator on CPU),
``canned`` (the canned estimators); the hooks are ``tf.compat.v1.train``'s.
``namespaces`` makes ``tf.estimator`` and ``tf.compat.v1.estimator`` of them for
:func:`zoo.compat.install`.

Importing this package imports none of them (nor TensorFlow).
"""

from layers import lazy

HOOKS = (
    "CheckpointSaverHook", "CheckpointSaverListener", "FeedFnHook", "FinalOpsHook",
    "GlobalStepWaiterHook", "LoggingTensorHook", "NanLossDuringTrainingError",
    "NanTensorHook", "ProfilerHook", "SecondOrStepTimer", "SessionRunArgs",
    "SessionRunContext", "SessionRunHook", "SessionRunValues", "StepCounterHook",
    "StopAtStepHook", "SummarySaverHook",
)  # tf.compat.v1.train's classes, under tf.estimator as in TF 1.15  # fmt: skip

__getattr__, __dir__, __all__ = lazy.exports(
    __name__,
    {
        "tensorflow.compat.v1.train": HOOKS,
        "zoo.compat.estimator.canned.parsing_utils": (
            "classifier_parse_example_spec", "regressor_parse_example_spec",
        ),
        "zoo.compat.estimator.estimator": ("Estimator",),
        "zoo.compat.estimator.export": ("export",),
        "zoo.compat.estimator.experimental": ("experimental",),
        "zoo.compat.estimator.extenders": ("add_metrics",),
        "zoo.compat.estimator.exporter": (
            "BestExporter", "Exporter", "FinalExporter", "LatestExporter",
        ),
        "zoo.compat.estimator.inputs": ("inputs",),
        "zoo.compat.estimator.mode_keys": ("ModeKeys",),
        "zoo.compat.estimator.model_fn": ("EstimatorSpec",),
        "zoo.compat.estimator.run_config": ("RunConfig",),
        "zoo.compat.estimator.tpu": ("tpu",),
        "zoo.compat.estimator.training": ("EvalSpec", "TrainSpec", "train_and_evaluate"),
        "zoo.compat.estimator.warm_starting": ("VocabInfo", "WarmStartSettings"),
    },
)  # fmt: skip


def changes():
    """What :func:`zoo.compat.install` changes for Estimator (see ``namespaces``)."""
    from zoo.compat.estimator import namespaces

    return namespaces.changes()
