"""The RNN and siamese benchmark's Keras contenders compute our models' numbers."""

import numpy as np
import tensorflow as tf

from experiments.bench import rnn_siamese
from zoo.models import rnn_classifier
from zoo.models.siamese import siamese

SIZES = rnn_siamese.Sizes(batch=5, rnn_hidden=6, rows=3, tower_hidden=7, embedding=4)
N_IN, N_CLASSES = 12, 3


def ours_with_values(build):
    """Builds ``build()`` in a graph; returns (its value, {variable name: value})."""
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        output = build()
        session.run(tf.compat.v1.global_variables_initializer())
        variables = tf.compat.v1.global_variables()
        values = session.run([output, *variables])
    return values[0], {
        v.op.name: value for v, value in zip(variables, values[1:], strict=True)
    }


def test_keras_gru_without_reset_after_computes_our_gru_with_our_weights():
    rng = np.random.default_rng(0)
    x = rng.random((SIZES.batch, N_IN), dtype=np.float32)
    y = np.eye(N_CLASSES, dtype=np.float32)[rng.integers(0, N_CLASSES, SIZES.batch)]
    logits, w = ours_with_values(
        lambda: (
            rnn_classifier(
                tf.constant(x),
                tf.constant(y),
                n_hidden=SIZES.rnn_hidden,
                n_steps=SIZES.rows,
            ).logits
        )
    )
    model = rnn_siamese.models()["rnn"]
    net, _ = rnn_siamese.keras_model(
        rnn_siamese.Model("rnn", SIZES, {}, 1.0), N_IN, N_CLASSES
    )
    assert model.keras_settings["_unroll"] == {"unroll": True}
    # Keras orders the gates z, r, then the candidate, and splits the input rows
    # (kernel) from the state rows (recurrent_kernel); ours is r, z on [x, h].
    n_in, u = N_IN // SIZES.rows, SIZES.rnn_hidden
    gates, candidate = w["rnn/cell/gates/W"], w["rnn/cell/candidate/W"]
    kernel = np.concatenate([gates[:, u:], gates[:, :u], candidate], axis=1)
    bias = w["rnn/cell/gates/b"]
    net.set_weights(
        [
            kernel[:n_in],
            kernel[n_in:],
            np.concatenate([bias[u:], bias[:u], w["rnn/cell/candidate/b"]]),
            w["rnn/W_RO"],
            w["rnn/b_RO"],
        ]
    )

    np.testing.assert_allclose(net(x).numpy(), logits, rtol=1e-5, atol=1e-5)


def test_keras_siamese_is_one_tower_applied_twice_with_our_distance_and_loss():
    rng = np.random.default_rng(1)
    x1, x2 = rng.random((2, SIZES.batch, N_IN), dtype=np.float32)
    same = np.array([1, 0, 1, 0, 0], np.float32)

    def build():
        net = siamese(
            tf.constant(x1),
            tf.constant(x2),
            tf.constant(same),
            hidden=(SIZES.tower_hidden,),
            embedding_size=SIZES.embedding,
            margin=rnn_siamese.MARGIN,
        )
        return net.distance, net.loss

    (distance, loss), w = ours_with_values(build)
    net, keras_loss = rnn_siamese.keras_model(
        rnn_siamese.Model("siamese", SIZES, {}, 1.0), N_IN, N_CLASSES
    )
    assert len(net.weights) == 4  # one tower, read by both inputs
    tower = "siamese/tower/"
    net.set_weights(
        [w[tower + name] for name in ("W_hid_1", "b_hid_1", "W_embed", "b_embed")]
    )

    keras_distance = net([x1, x2]).numpy()
    np.testing.assert_allclose(keras_distance, distance, rtol=1e-5)
    keras_mean = np.mean(keras_loss(same, keras_distance).numpy())
    np.testing.assert_allclose(keras_mean, loss, rtol=1e-5)
