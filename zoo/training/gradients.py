"""Gradients as data: compute all in one run, transform in numpy, apply, accumulate.

``optimizer.minimize`` is ``compute_gradients`` then ``apply_gradients``;
:class:`GradientStep` puts a numpy boundary between the two, where gradients can
cross a network, be scaled, clipped or noised, or be summed over several batches.
``compute`` fetches every gradient in ONE ``session.run`` (evaluating each
gradient tensor on its own reruns the forward and backward pass each time).

Usage::

    step = GradientStep(net.loss, tf.compat.v1.train.AdamOptimizer(1e-4))
    grads = step.compute(sess, {x: images, y: labels})   # [(array, "conv/W_conv1"), ...]
    grads = clip_by_global_norm(scale(grads, 0.5), 5.0)
    step.apply(sess, grads)
    step.apply(sess, step.accumulate(sess, [feed_1, feed_2, feed_3]))  # mean of 3
"""

import numpy as np
import tensorflow as tf

from layers.errors import ShapeError, ZooError


class GradientStep:
    """The two halves of ``optimizer.minimize(loss)`` with numpy in between.

    Args:
        loss: scalar loss tensor.
        optimizer: a ``tf.compat.v1.train.Optimizer``.
        var_list: variables to differentiate; default all trainable variables.
        global_step: optional variable that ``apply`` increments.

    Raises:
        ZooError: no variable gets a gradient from ``loss``.
    """

    def __init__(self, loss, optimizer, var_list=None, global_step=None):
        if var_list is None:
            var_list = tf.compat.v1.trainable_variables()
        pairs = var_list and [
            (g, v) for g, v in optimizer.compute_gradients(loss, var_list) if g is not None
        ]
        if not pairs:
            raise ZooError(
                f"GradientStep: expected variables that {loss.name} depends on, found "
                "none with a gradient; pass the loss of a built model or its var_list"
            )
        self._gradients = [g for g, _ in pairs]
        self._variables = [v for _, v in pairs]
        with tf.name_scope("gradient_step"):
            self._placeholders = [
                tf.compat.v1.placeholder(v.dtype.base_dtype, v.shape, name="grad")
                for v in self._variables
            ]
            self._apply_op = optimizer.apply_gradients(
                zip(self._placeholders, self._variables, strict=True),
                global_step=global_step,
            )

    @property
    def names(self):
        """Names of the variables, in the order ``compute`` returns them."""
        return [v.op.name for v in self._variables]

    @property
    def gradients(self):
        """The gradient tensors, one per variable."""
        return list(self._gradients)

    def compute(self, session, feed=None):
        """Evaluates every gradient in one ``session.run``.

        Args:
            session: a session of the graph that holds ``loss``.
            feed: the feed dict of one batch.

        Returns:
            A list of ``(gradient as numpy array, variable name)`` pairs.
        """
        values = session.run(self._gradients, feed)
        return list(zip(values, self.names, strict=True))

    def accumulate(self, session, feeds):
        """Returns the mean gradient over several batches, ready for one ``apply``.

        Args:
            session: as :meth:`compute`.
            feeds: a non-empty list of feed dicts, one per batch.

        Raises:
            ZooError: ``feeds`` is empty.
        """
        return average([self.compute(session, feed) for feed in feeds])

    def apply(self, session, grads):
        """Applies ``grads`` with the optimizer, through placeholders.

        Args:
            session: as :meth:`compute`.
            grads: ``(array, variable name)`` pairs in the order of :attr:`names`, as
                :meth:`compute` returns them (possibly transformed).

        Raises:
            ZooError: the names are not :attr:`names` in order.
            ShapeError: an array has another shape than its variable.
        """
        names = [name for _, name in grads]
        if names != self.names:
            raise ZooError(
                f"GradientStep.apply: expected gradients for {self.names}, found "
                f"{names}; pass the (gradient, name) list compute() returned"
            )
        feed = {}
        for (value, name), placeholder in zip(grads, self._placeholders, strict=True):
            value = np.asarray(value)
            if not placeholder.shape.is_compatible_with(value.shape):
                raise ShapeError(
                    f"GradientStep.apply: expected the gradient of {name} with shape "
                    f"{placeholder.shape.as_list()}, found {list(value.shape)}; pass the "
                    "arrays compute() returned"
                )
            feed[placeholder] = value
        session.run(self._apply_op, feed)


def average(grad_lists):
    """Returns the elementwise mean of several gradient lists of the same variables.

    Raises:
        ZooError: no lists, or lists for different variables.
    """
    if not grad_lists:
        raise ZooError(
            "average: expected at least one gradient list, found none; pass the "
            "lists compute() returned for k >= 1 batches"
        )
    names = [name for _, name in grad_lists[0]]
    for grads in grad_lists[1:]:
        if [name for _, name in grads] != names:
            raise ZooError(
                f"average: expected every list for {names}, found "
                f"{[name for _, name in grads]}; average lists from one GradientStep"
            )
    return [
        (np.mean([grads[i][0] for grads in grad_lists], axis=0), name)
        for i, name in enumerate(names)
    ]


def scale(grads, factor):
    """Returns every gradient multiplied by ``factor``."""
    return [(factor * value, name) for value, name in grads]


def global_norm(grads):
    """Returns ``sqrt(sum of squares)`` over all gradients."""
    return float(np.sqrt(sum(np.sum(np.square(value)) for value, _ in grads)))


def clip_by_global_norm(grads, clip_norm):
    """Scales all gradients by ``clip_norm / global_norm`` when that norm is larger.

    The numpy twin of ``tf.clip_by_global_norm``.
    """
    norm = global_norm(grads)
    return grads if norm <= clip_norm else scale(grads, clip_norm / norm)


def add_noise(grads, stddev, rng):
    """Returns every gradient plus Gaussian noise.

    Args:
        grads: ``(array, name)`` pairs.
        stddev: standard deviation of the noise.
        rng: a ``numpy.random.Generator``.
    """
    noisy = []
    for value, name in grads:
        value = np.asarray(value)
        noisy.append(
            (value + rng.normal(0.0, stddev, value.shape).astype(value.dtype), name)
        )
    return noisy
