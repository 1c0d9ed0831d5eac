"""``tf.estimator`` of TF 1.15 on TensorFlow 2.21, on ``tf.compat.v1``'s machinery.

Modules laid out as tensorflow_estimator laid them out: ``mode_keys``
(:class:`ModeKeys`), ``model_fn`` (:class:`EstimatorSpec`), ``run_config``
(:class:`RunConfig`), ``estimator`` (:class:`Estimator`), ``export``
(``tf.estimator.export``); the canned estimators in ``canned``.

Importing this package imports none of them (nor TensorFlow).
"""

from layers import lazy

__getattr__, __dir__, __all__ = lazy.exports(
    __name__,
    {
        "zoo.compat.estimator.estimator": ("Estimator",),
        "zoo.compat.estimator.export": ("export",),
        "zoo.compat.estimator.mode_keys": ("ModeKeys",),
        "zoo.compat.estimator.model_fn": ("EstimatorSpec",),
        "zoo.compat.estimator.run_config": ("RunConfig",),
    },
)
