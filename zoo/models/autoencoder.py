"""The seeds' 784-625-784 sigmoid autoencoder, tied or untied.

Usage::

    ae = autoencoder(x, tied=True, scope="ae")  # ae/encoder/{W,b}, ae/decoder/b
    train = tf.compat.v1.train.AdagradOptimizer(0.1).minimize(ae.loss)
    ae_eval = autoencoder(x_test, tied=True, scope="ae", reuse=True)   # nothing new
"""

from layers import Decoder, Encoder
from zoo.models.losses import sigmoid_cross_entropy_mean
from zoo.models.parts import Autoencoder, builder_scope, input_width

# The seed's (003) Adagrad learning rate for this autoencoder, read by every script
# that trains it as the seed did (experiments.autoencoder, experiments.eager_autoencoder).
LEARNING_RATE = 0.1


def autoencoder(x, tied=True, scope="ae", reuse=False, n_hidden=625, **layer_kwargs):
    """Builds encoder and decoder under ``scope``.

    Args:
        x: inputs [batch, n_in] in [0, 1], n_in known statically.
        tied: decoder reads ``<scope>/encoder/W`` transposed instead of its own W.
        scope: variable scope of the model.
        reuse: False, True or ``tf.compat.v1.AUTO_REUSE``.
        n_hidden: width of the code.
        **layer_kwargs: ``activation``, ``w_init``, ``b_init`` for both layers.

    Returns:
        :class:`zoo.models.Autoencoder`.

    Raises:
        ScopeError: reuse=True before the scope was built, or a second build
            without reuse.
        ShapeError: ``x`` is not [batch, n] with n known.
        EagerError: called eagerly outside ``zoo.share`` or a template.
    """
    with builder_scope(scope, reuse) as var_scope:
        n_in = input_width(var_scope.name, x, "x")
        encoder = Encoder(x, n_in, n_hidden, scope="encoder", **layer_kwargs)
        decoder = Decoder(
            encoder.output,
            n_hidden,
            n_in,
            scope="decoder",
            tie_to="encoder" if tied else None,
            **layer_kwargs,
        )
        loss = sigmoid_cross_entropy_mean(labels=x, logits=decoder.logits)
    return Autoencoder(
        encoded=encoder.output,
        decoded=decoder.output,
        logits=decoder.logits,
        loss=loss,
        encoder=encoder,
        decoder=decoder,
        scope_name=var_scope.name,
    )
