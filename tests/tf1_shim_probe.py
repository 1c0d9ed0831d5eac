"""TensorFlow's own shim, ``track_tf1_style_variables``, under tf_keras: a ``.keras``
save and load of a layer built with ``tf.compat.v1.layers``.

Run with ``TF_USE_LEGACY_KERAS=1`` (tf_keras installed); prints one JSON line::

    TF_USE_LEGACY_KERAS=1 python -m tests.tf1_shim_probe /tmp/probe

``{"weights": [before, after], "restored": {"keras": n, "h5": n},
"difference": {"keras": d, "h5": d}}``: the weight counts, how many of the
trained weights come back equal, the largest output difference after loading.
The tests read it from ``tests/tf1_programs.py``'s ``main``, which calls
:func:`report` in the tests' ``tf_keras`` run (``tests/legacy_reference.py``).
"""

import json
import pathlib
import sys

import numpy as np
import tensorflow as tf
import tf_keras


@tf_keras.saving.register_keras_serializable(package="probe")
class Net(tf_keras.layers.Layer):
    """Two dense layers around a batch norm, TF1 code under TensorFlow's shim."""

    @tf.compat.v1.keras.utils.track_tf1_style_variables
    def call(self, x):
        with tf.compat.v1.variable_scope("net"):
            h = tf.compat.v1.layers.dense(x, 8, activation=tf.nn.relu)
            h = tf.compat.v1.layers.batch_normalization(h, training=False)
            return tf.compat.v1.layers.dense(h, 1)


def report(directory):
    """Trains, saves (``.keras``, ``.h5``) under ``directory`` and loads the model;
    returns the report the module docstring describes."""
    tf_keras.utils.set_random_seed(0)
    x = np.random.default_rng(0).standard_normal([64, 4]).astype(np.float32)
    inputs = tf_keras.Input((4,))
    model = tf_keras.Model(inputs, Net()(inputs))
    model.compile(tf_keras.optimizers.Adam(0.05), "mse")
    model.fit(x, x.sum(1, keepdims=True), epochs=5, verbose=0)
    before = model.predict(x, verbose=0)
    result = {"restored": {}, "difference": {}}
    for suffix in ("keras", "h5"):
        path = pathlib.Path(directory) / f"model.{suffix}"
        model.save(path)
        loaded = tf_keras.models.load_model(path)
        after = loaded.predict(x, verbose=0)
        equal = [np.array_equal(a, b) for a, b in zip(model.get_weights(),
                                                       loaded.get_weights(), strict=True)]
        result["weights"] = [len(model.weights), len(loaded.weights)]
        result["restored"][suffix] = int(sum(equal))
        result["difference"][suffix] = float(np.abs(before - after).max())
    return result


if __name__ == "__main__":
    print(json.dumps(report(sys.argv[1])))
