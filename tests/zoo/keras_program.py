"""TF1 programs that use ``tf.keras`` as TF 1.15 code did, written for the tests: a
``tf.keras.Sequential`` inside an Estimator model_fn, a compiled model handed to
``tf.keras.estimator.model_to_estimator``, ``fit`` in graph mode, Keras layers
mixed with ``tf.layers`` in one graph. They import only TensorFlow and numpy, so
TF 2.15 runs them too (the reference venv, :mod:`tests.zoo.keras_reference`);
ours runs them under ``zoo.compat.install()``."""

import numpy as np
import tensorflow.compat.v1 as tf

SIDE, N_CLASSES = 8, 3


def data(n=64, seed=0):
    """``(x [n, 8, 8, 1] float32, y [n] int32)``: the class is the brightest of the
    first three rows."""
    x = np.random.RandomState(seed).rand(n, SIDE, SIDE, 1).astype(np.float32)
    return x, x[:, :N_CLASSES, :, 0].sum(axis=2).argmax(axis=1).astype(np.int32)


def network(**input_shape):
    """A small convolutional classifier (batch norm and dropout: state and noise),
    built where it is first called, or on ``input_shape=...``'s input."""
    return tf.keras.Sequential([
        tf.keras.layers.Conv2D(4, 3, activation="relu", **input_shape),
        tf.keras.layers.BatchNormalization(),
        tf.keras.layers.Dropout(0.25),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(N_CLASSES),
    ])  # fmt: skip


def model_fn(features, labels, mode):
    """The network called on ``features["x"]``; its batch-norm updates run with
    each step."""
    model = network()
    logits = model(features["x"], training=mode == tf.estimator.ModeKeys.TRAIN)
    predictions = {"probabilities": tf.nn.softmax(logits)}
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions=predictions)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    with tf.control_dependencies(model.updates):
        train_op = tf.train.AdamOptimizer(0.01).minimize(loss, tf.train.get_global_step())
    accuracy = tf.metrics.accuracy(labels, tf.argmax(logits, 1))
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=train_op, eval_metric_ops={"accuracy": accuracy}
    )


def compiled():
    """The network compiled for ``fit`` and ``model_to_estimator``."""
    model = network(input_shape=(SIDE, SIDE, 1))
    model.compile(
        optimizer=tf.keras.optimizers.Adam(0.01),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def input_fn(x, y=None, key="x", repeat=True):
    """An input_fn of a Dataset of ``({key: x}, y)`` batches of 16."""

    def fn():
        features = {key: x}
        dataset = tf.data.Dataset.from_tensor_slices(
            features if y is None else (features, y)
        )
        return (dataset.repeat() if repeat else dataset).batch(16)

    return fn


def config():
    return tf.estimator.RunConfig(tf_random_seed=1, save_checkpoints_steps=10)


def estimator(model_dir):
    """The Estimator of :func:`model_fn`."""
    return tf.estimator.Estimator(model_fn, str(model_dir), config())


def keras_estimator(model_dir, checkpoint_format="saver"):
    """``(model_to_estimator of :func:`compiled`, its input's name)``, the model made
    in a fresh graph; checkpoints by variable name (``"saver"``, TF 1.15's), or
    object-based keys (``"checkpoint"``)."""
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        model = compiled()
        estimator = tf.keras.estimator.model_to_estimator(
            model, model_dir=str(model_dir), config=config(),
            checkpoint_format=checkpoint_format,
        )  # fmt: skip
        return estimator, model.input_names[0]


def keras_estimator_objects(model_dir):
    """:func:`keras_estimator` saving object-based checkpoints."""
    return keras_estimator(model_dir, "checkpoint")


PROGRAMS = {
    "model_fn": estimator,
    "model_to_estimator": keras_estimator,
    "model_to_estimator_objects": keras_estimator_objects,
}


def train_and_predict(make, model_dir, key="x"):
    """Trains 6 + 6 steps in ``model_dir`` (the second call resumes), returns the
    predictions on :func:`data`."""
    x, y = data()
    made = make(model_dir)
    estimator, key = made if isinstance(made, tuple) else (made, key)
    estimator.train(input_fn(x, y, key), steps=6)
    estimator.train(input_fn(x, y, key), steps=6)
    return predict(made, key)


def predict(made, key="x"):
    """The predictions of an Estimator (or ``(Estimator, input key)``) on :func:`data`
    from its model_dir's latest checkpoint, a list of ``[n, 3]`` lists."""
    estimator, key = made if isinstance(made, tuple) else (made, key)
    x, _ = data()
    outputs = list(estimator.predict(input_fn(x, key=key, repeat=False)))
    return [list(map(float, next(iter(out.values())))) for out in outputs]


def fit(epochs=3):
    """``fit`` in graph mode on numpy arrays then on a ``tf.data`` Dataset; returns
    the losses of each epoch and the trained model's loss and accuracy."""
    x, y = data(256, seed=1)
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        model = compiled()
        history = model.fit(x, y, batch_size=32, epochs=epochs, shuffle=False, verbose=0)
        dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(32).repeat()
        more = model.fit(dataset, steps_per_epoch=8, epochs=1, verbose=0)
        evaluated = model.evaluate(x, y, batch_size=64, verbose=0)
        return {
            "losses": history.history["loss"] + more.history["loss"],
            "evaluate": list(map(float, evaluated)),
        }


def mixed_collections():
    """Keras layers and ``tf.layers`` in one graph under variable scopes: each
    collection's names, and the names of the Keras layer's losses and updates."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 6])
        with tf.variable_scope("tower"):
            hidden = tf.layers.dense(
                x, 5, kernel_regularizer=tf.keras.regularizers.l2(0.1), name="tf_layer"
            )
            hidden = tf.layers.batch_normalization(hidden, training=True)
            dense = tf.keras.layers.Dense(
                4, kernel_regularizer=tf.keras.regularizers.l2(0.1), name="keras_layer"
            )
            norm = tf.keras.layers.BatchNormalization()
            out = norm(dense(hidden), training=True)
        with tf.variable_scope("head"):
            tf.keras.layers.Dense(2)(out)
        keys = ("variables", "trainable_variables", "update_ops", "regularization_losses",
                "model_variables", "losses")  # fmt: skip
        names = {key: [item.name for item in tf.get_collection(key)] for key in keys}
        names["keras_losses"] = [loss.name for loss in dense.losses]
        names["keras_updates"] = [update.name for update in norm.updates]
        return names
