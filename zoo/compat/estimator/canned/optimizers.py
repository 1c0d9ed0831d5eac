"""The canned estimators' ``optimizer`` argument: a name, an optimizer or a callable.

Usage::

    get_optimizer_instance("Adagrad", learning_rate=0.05)  # AdagradOptimizer(0.05)
    get_optimizer_instance(lambda: tf.compat.v1.train.AdamOptimizer(0.01))
"""

import tensorflow as tf

from layers.errors import ZooError

v1 = tf.compat.v1

# name -> (tf.compat.v1.train class, learning rate and settings of the Keras optimizer
# of that name, which TF 2.x's tf.estimator forms take when given only the name)
_OPTIMIZERS = {
    "Adagrad": ("AdagradOptimizer", {"learning_rate": 0.001}),
    "Adam": ("AdamOptimizer", {"learning_rate": 0.001, "epsilon": 1e-7}),
    "Ftrl": ("FtrlOptimizer", {"learning_rate": 0.001}),
    "RMSProp": ("RMSPropOptimizer", {"learning_rate": 0.001, "epsilon": 1e-7}),
    "SGD": ("GradientDescentOptimizer", {"learning_rate": 0.01}),
}


def get_optimizer_instance(opt, learning_rate=None, keras_defaults=False):
    """The optimizer ``opt`` names, is, or returns when called.

    Args:
        opt: one of ``'Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD'``, a
            ``tf.compat.v1.train.Optimizer``, or a callable returning one.
        learning_rate: the learning rate of a named optimizer.
        keras_defaults: a named optimizer takes the settings of TF 2.x's Keras
            optimizer of that name (``tf.estimator``'s v2 classes), the learning
            rate too when ``learning_rate`` is None.

    Returns:
        A ``tf.compat.v1.train.Optimizer``.

    Raises:
        ZooError: an unknown name, or an object that is no such optimizer.
    """
    if isinstance(opt, str):
        if opt not in _OPTIMIZERS:
            raise ZooError(
                f"optimizer: expected one of {sorted(_OPTIMIZERS)}, found {opt!r}; pass "
                "one of these names, a tf.compat.v1.train.Optimizer or a callable "
                "returning one"
            )
        class_name, keras_settings = _OPTIMIZERS[opt]
        settings = dict(keras_settings) if keras_defaults else {}
        if learning_rate is not None:
            settings["learning_rate"] = learning_rate
        return getattr(v1.train, class_name)(**settings)
    if callable(opt) and not isinstance(opt, v1.train.Optimizer):
        opt = opt()
    if not isinstance(opt, v1.train.Optimizer):
        raise ZooError(
            f"optimizer: expected a tf.compat.v1.train.Optimizer, a callable returning "
            f"one or a name, found {opt!r}; pass e.g. "
            "tf.compat.v1.train.AdagradOptimizer(0.05) or 'Adagrad'"
        )
    return opt
