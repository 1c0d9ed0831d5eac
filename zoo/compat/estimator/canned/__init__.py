"""The canned estimators of TF 1.15 (``tf.compat.v1.estimator``) and TF 2.x
(``tf.estimator``) on feature columns, laid out as tensorflow_estimator's
``canned/``: ``head``, ``dnn``, ``linear``, ``dnn_linear_combined``, ``baseline``,
``optimizers``, ``metric_keys``, ``prediction_keys``.

:data:`V1` and :data:`V2` map each public name to the module that holds it and
its class there, for ``install()``'s ``tf.compat.v1.estimator`` and
``tf.estimator``. Importing this package imports none of them.
"""

_CLASSES = {
    "BaselineClassifier": "baseline",
    "BaselineRegressor": "baseline",
    "DNNClassifier": "dnn",
    "DNNRegressor": "dnn",
    "DNNLinearCombinedClassifier": "dnn_linear_combined",
    "DNNLinearCombinedRegressor": "dnn_linear_combined",
    "LinearClassifier": "linear",
    "LinearRegressor": "linear",
}
V1 = {name: (f"{__name__}.{module}", name) for name, module in _CLASSES.items()}
V2 = {name: (f"{__name__}.{module}", f"{name}V2") for name, module in _CLASSES.items()}
# TF 1.15's estimators of any head (TF 2.x's take its other heads: not provided)
V1.update({name: (f"{__name__}.{module}", name) for name, module in (
    ("BaselineEstimator", "baseline"), ("DNNEstimator", "dnn"),
    ("DNNLinearCombinedEstimator", "dnn_linear_combined"), ("LinearEstimator", "linear"),
)})  # fmt: skip
