"""Small TF1 programs written against ``tf.compat.v1.layers``, run two ways.

Each program takes the layers namespace ``L`` (TensorFlow's own legacy layers
under ``tf_keras``, or ``layers.tf1``) and builds in the default graph; it
returns its named outputs. :func:`run` builds one, initializes it (or assigns
given weights by name), feeds fixed inputs, and returns the variables, the
outputs, the regularization loss and the variables after a run of each
``UPDATE_OPS`` op in turn.

Run as a script with ``TF_USE_LEGACY_KERAS=1`` (tf_keras installed), it writes
to an ``.npz`` file everything the tests compare with TensorFlow's own legacy
code, from one process: every program's results by TensorFlow's own layers, the
parameter names of the layers of :data:`LAYERS`, and the report of TensorFlow's
shim (``tests/tf1_shim_probe.py``)::

    TF_USE_LEGACY_KERAS=1 python -m tests.tf1_programs reference.npz
"""

import inspect
import json
import pathlib
import sys

import numpy as np
import tensorflow as tf

from layers import tf1

v1 = tf.compat.v1
REPO = pathlib.Path(__file__).resolve().parents[1]
LAYERS = [name for name in tf1.__all__ if name != "Layer"]  # TF 1.15's, in layers.tf1


def inputs(shape, seed):
    """A placeholder of ``shape`` and the fixed array fed to it."""
    value = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return v1.placeholder(tf.float32, shape), value


def l2_regularizer(weight):
    """TF1's ``tf.contrib.layers.l2_regularizer(0.01)``."""
    return 0.01 * tf.nn.l2_loss(weight)


def dense(L):
    x, fx = inputs([4, 6], 1)
    y, fy = inputs([2, 3, 6], 2)
    outputs = {
        "relu": L.dense(x, 5, activation=tf.nn.relu, kernel_regularizer=l2_regularizer),
        "rank3": L.dense(y, 4, use_bias=False, name="projection"),
        "activity": L.dense(x, 3, activity_regularizer=lambda h: tf.reduce_sum(h**2)),
    }
    layer = L.Dense(3, bias_initializer=v1.constant_initializer(0.5))
    outputs["twice"] = layer(x) - layer(2 * x)
    return {x: fx, y: fy}, outputs


def convolutions(L):
    w, fw = inputs([2, 9, 3], 3)
    x, fx = inputs([2, 9, 8, 3], 4)
    z, fz = inputs([1, 5, 6, 4, 2], 5)
    outputs = {
        "conv1d": L.conv1d(w, 4, 3, strides=2, padding="same"),
        "conv2d": L.conv2d(x, 5, (3, 2), dilation_rate=2, activation=tf.nn.relu),
        "conv3d": L.conv3d(z, 3, 2, padding="same", bias_regularizer=tf.nn.l2_loss),
        "transposed_valid": L.conv2d_transpose(x, 4, 3, strides=2),
        "transposed_same": L.conv2d_transpose(x, 2, (2, 3), strides=(2, 1), padding="SAME"),
        "separable": L.separable_conv2d(x, 6, 3, padding="same", depth_multiplier=2),
        "separable_strided": L.separable_conv2d(x, 3, 2, strides=2, use_bias=False),
        "transposed3d": L.conv3d_transpose(z, 3, (2, 3, 2), strides=(1, 2, 2)),
        "transposed3d_same": L.conv3d_transpose(z, 2, 3, strides=2, padding="same"),
        "separable1d": L.separable_conv1d(w, 4, 3, depth_multiplier=2, dilation_rate=2),
        "separable1d_strided": L.separable_conv1d(w, 3, 2, strides=2, padding="same"),
    }
    return {w: fw, x: fx, z: fz}, outputs


def pooling(L):
    w, fw = inputs([2, 9, 3], 6)
    x, fx = inputs([2, 9, 8, 3], 7)
    z, fz = inputs([1, 5, 6, 4, 2], 12)
    outputs = {
        "max1d": L.max_pooling1d(w, 2, 2),
        "average1d": L.average_pooling1d(w, 3, 2, padding="same"),
        "max2d": L.max_pooling2d(x, 3, 2, padding="same"),
        "average2d": L.average_pooling2d(x, (2, 3), (1, 2)),
        "max3d": L.max_pooling3d(z, 2, (1, 2, 2), padding="same"),
        "average3d": L.average_pooling3d(z, (2, 1, 3), 1),
        "flatten": L.flatten(x),
        "dropout": L.dropout(x, 0.3, training=False),
    }
    return {w: fw, x: fx, z: fz}, outputs


def batch_norm(L):
    x, fx = inputs([4, 5, 6, 3], 8)
    y, fy = inputs([8, 5], 9)
    training = v1.placeholder_with_default(True, [])
    outputs = {
        "training": L.batch_normalization(x, training=True, momentum=0.9),
        "evaluation": L.batch_normalization(x, training=False, epsilon=0.01),
        "tensor": L.batch_normalization(x, training=training, name="switched"),
        "dense": L.batch_normalization(y, center=False, training=True, fused=False),
        "features_first": L.batch_normalization(x, axis=1, training=True, scale=False),
        "gamma_l2": L.batch_normalization(y, gamma_regularizer=tf.nn.l2_loss),
    }
    return {x: fx, y: fy}, outputs


def batch_norm_variants(L):
    """What TF 1.15's batch norm had beyond the plain one: renorm, ghost batches, an
    adjustment, float16 inputs, a list of axes, features first (fused) in 4-D and 5-D."""
    x, fx = inputs([8, 6], 12)
    z, fz = inputs([4, 3, 5, 4], 13)
    w, fw = inputs([2, 3, 2, 3, 4], 14)
    training = v1.placeholder_with_default(True, [])

    def adjustment(shape):
        return tf.linspace(0.8, 1.2, shape[-1]), tf.fill(shape[-1:], 0.1)

    clipping = {"rmax": 1.5, "rmin": 0.5, "dmax": 0.3}
    outputs = {
        "renorm": L.batch_normalization(
            x, training=True, renorm=True, renorm_clipping=clipping, renorm_momentum=0.8
        ),
        "renorm_switched": L.batch_normalization(x, training=training, renorm=True),
        "ghost": L.batch_normalization(z, axis=1, training=True, virtual_batch_size=2),
        "adjusted": L.batch_normalization(x, training=training, adjustment=adjustment),
        "half": L.batch_normalization(tf.cast(z, tf.float16), training=True),
        "axes": L.batch_normalization(z, axis=[1, 3], training=training),
        "channels_first": L.batch_normalization(z, axis=1, training=training),
        "channels_first_5d": L.batch_normalization(w, axis=1, training=True),
    }
    return {x: fx, z: fz, w: fw}, outputs


def generator(L, noise):
    """A DCGAN generator: [batch, 8, 8, channels] noise to [batch, 16, 16, 3] images."""
    with v1.variable_scope("generator"):
        h = L.conv2d_transpose(noise, 8, 4, strides=2, padding="same")
        h = tf.nn.relu(L.batch_normalization(h, training=True))
        return tf.tanh(L.conv2d(h, 3, 3, padding="same"))


def discriminator(L, images, reuse=None, training=True):
    """A DCGAN discriminator: two strided convolutions, batch norm, a dense logit."""
    with v1.variable_scope("discriminator", reuse=reuse):
        h = tf.nn.leaky_relu(L.conv2d(images, 8, 4, strides=2, padding="same"))
        h = L.conv2d(h, 16, 4, strides=2, padding="same", use_bias=False)
        h = tf.nn.leaky_relu(L.batch_normalization(h, training=training))
        return L.dense(L.flatten(h), 1)


def dcgan(L):
    """The discriminator built twice, on real and on generated images (reuse=True)."""
    real, fed_real = inputs([4, 16, 16, 3], 10)
    noise, fed_noise = inputs([4, 8, 8, 2], 11)
    fake = generator(L, noise)
    outputs = {
        "real": discriminator(L, real),
        "fake": discriminator(L, fake, reuse=True),
        "evaluation": discriminator(L, real, reuse=True, training=False),
        "images": fake,
    }
    return {real: fed_real, noise: fed_noise}, outputs


PROGRAMS = {
    program.__name__: program
    for program in (dense, convolutions, pooling, batch_norm, batch_norm_variants, dcgan)
}


def run(program, L, weights=None):
    """Builds ``program`` with ``L`` in a new graph and runs it once.

    Args:
        program: a function ``L -> (feed, outputs)``.
        L: the layers namespace.
        weights: None to keep the initializers' values, or ``{name: array}``
            assigned to the variables of those names.

    Returns:
        ``{"variables": {name: array}, "outputs": {key: array}, "regularization":
        float, "updated": {name: array}, "trained": {name: array}, "update_names":
        [str]}``: the variables as run, the outputs, the sum of
        ``get_regularization_losses()``, the variables after a run of each
        ``UPDATE_OPS`` op in turn (one at a time, as two ops that update one moving
        mean, a discriminator built twice, in one ``session.run`` apply in either
        order, which moves the mean by up to 1e-4 of the batch means' difference,
        run to run), the variables after :data:`STEPS` more such rounds, each fed
        other inputs (:func:`step_feed`), and the names of the ``UPDATE_OPS`` ops.
    """
    with tf.Graph().as_default():
        feed, outputs = program(L)
        variables = {v.op.name: v for v in v1.global_variables()}
        regularization = tf.add_n(v1.losses.get_regularization_losses() + [0.0])
        updates = v1.get_collection(v1.GraphKeys.UPDATE_OPS)
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            for name, value in (weights or {}).items():
                variables[name].load(value, session)
            values = session.run(variables)
            results = session.run(outputs, feed)
            total = session.run(regularization, feed)
            for step in range(STEPS + 1):
                for update in updates:
                    session.run(update, step_feed(feed, step))
                if step == 0:
                    updated = session.run(variables)
            trained = session.run(variables)
    return {"variables": values, "outputs": results, "regularization": total,
            "updated": updated, "trained": trained,
            "update_names": [update.name for update in updates]}  # fmt: skip


STEPS = 4  # the rounds of updates after the first, for ``run``'s "trained"


def step_feed(feed, step):
    """``feed`` for round ``step`` of the updates: each input scaled and shifted."""
    return {key: value * (1 + 0.5 * step) + 0.25 * step for key, value in feed.items()}


def flat(results, prefix):
    """``run``'s results as one flat ``{"<prefix>|<part>|<name>": array}``."""
    items = {f"{prefix}|regularization|": np.asarray(results["regularization"]),
             f"{prefix}|update_names|": np.array(results["update_names"], str)}  # fmt: skip
    for part in ("variables", "outputs", "updated", "trained"):
        items.update({f"{prefix}|{part}|{k}": v for k, v in results[part].items()})
    return items


def unflat(arrays, prefix):
    """The inverse of :func:`flat` for one ``prefix``."""
    results = {"variables": {}, "outputs": {}, "updated": {}, "trained": {}}
    for key, value in arrays.items():
        owner, part, name = key.split("|")
        if owner != prefix:
            continue
        if part == "regularization":
            results[part] = float(value)
        elif part == "update_names":
            results[part] = list(value)
        else:
            results[part][name] = value
    return results


def parameters(layer):
    """The parameters of a layer function, or of a layer class's constructor (``self``
    and ``**kwargs`` left out), each ``name`` or ``name=<default>``: the default's
    repr, or its class's name for an object such as an initializer."""
    function = layer.__init__ if inspect.isclass(layer) else layer
    found = [
        p.name if p.default is p.empty else f"{p.name}={default_form(p.default)}"
        for p in inspect.signature(function).parameters.values()
        if p.kind is p.POSITIONAL_OR_KEYWORD
    ]  # fmt: skip
    return found[1:] if inspect.isclass(layer) else found


def default_form(value):
    """``repr(value)`` for a literal (``(1, 1)``, ``'valid'``), else its class's name."""
    literal = value is None or isinstance(value, (bool, int, float, str, tuple))
    return repr(value) if literal else type(value).__name__


def shim_report(arrays):
    """The shim probe's report (see ``tests/tf1_shim_probe.py``) among :func:`main`'s
    arrays."""
    return json.loads(str(arrays["shim|report|"]))


def main(path):
    """Writes every program's results, the parameters of :data:`LAYERS` (all
    taken from ``tf.compat.v1.layers``) and the shim probe's report to the
    ``.npz`` file ``path`` (the probe saves its models beside it); read a program's
    part with :func:`unflat`, a layer's parameter names under
    ``"parameters|<layer>|"``, the shim's report with :func:`shim_report`."""
    from tests import tf1_shim_probe  # noqa: PLC0415  (imports tf_keras)

    reference = {}
    for name, program in PROGRAMS.items():
        reference.update(flat(run(program, v1.layers), name))
    for name in LAYERS:
        reference[f"parameters|{name}|"] = np.array(parameters(getattr(v1.layers, name)))
    report = tf1_shim_probe.report(pathlib.Path(path).parent)
    reference["shim|report|"] = np.array(json.dumps(report))
    np.savez(path, **reference)


if __name__ == "__main__":
    main(sys.argv[1])
