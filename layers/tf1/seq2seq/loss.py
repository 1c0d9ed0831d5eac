"""TF 1.15's ``tf.contrib.seq2seq.sequence_loss``."""

import tensorflow as tf

from layers.checks import require


def sequence_loss(logits, targets, weights, average_across_timesteps=True,
                  average_across_batch=True, sum_over_timesteps=False,
                  sum_over_batch=False, softmax_loss_function=None, name=None):  # fmt: skip
    """Weighted cross entropy of a sequence of logits.

    Averaging divides the weighted sum by the sum of the weights; summing over
    divides it by the number of non-zero weights (TF 1.15's rule); an axis neither
    averaged nor summed over is kept.

    Args:
        logits: [batch, time, classes] float.
        targets: [batch, time] int.
        weights: [batch, time] float (0 masks a padded step).
        average_across_timesteps, average_across_batch, sum_over_timesteps,
            sum_over_batch: how each axis is reduced (averaging and summing the
            same axis cannot both be on).
        softmax_loss_function: None, or ``f(labels=, logits=)`` in place of the
            sparse softmax cross entropy.
        name: the name scope (default ``sequence_loss``).

    Returns:
        A scalar, [time], [batch] or [batch, time] tensor.

    Raises:
        ZooError: a rank other than these, or an axis both averaged and summed.
    """
    logits, targets, weights = map(tf.convert_to_tensor, (logits, targets, weights))
    for tensor, rank, what in ((logits, 3, "logits [batch, time, classes]"),
                               (targets, 2, "targets [batch, time]"),
                               (weights, 2, "weights [batch, time]")):  # fmt: skip
        found = tensor.shape.rank
        problem = f"expected {what}, found rank {found}" if found != rank else None
        require("sequence_loss", problem, "reshape it")
    flags = {"timesteps": (average_across_timesteps, sum_over_timesteps),
             "batch": (average_across_batch, sum_over_batch)}  # fmt: skip
    for axis, (average, total) in flags.items():
        problem = f"expected average_across_{axis} or sum_over_{axis}, found both"
        require("sequence_loss", problem if average and total else None,
                "turn one of them off")  # fmt: skip
    with tf.compat.v1.name_scope(name, "sequence_loss", [logits, targets, weights]):
        logits_flat = tf.reshape(logits, [-1, tf.shape(logits)[2]])
        targets = tf.reshape(targets, [-1])
        if softmax_loss_function is None:
            crossent = tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=targets, logits=logits_flat
            )
        else:
            crossent = softmax_loss_function(labels=targets, logits=logits_flat)
        crossent = tf.reshape(crossent * tf.reshape(weights, [-1]), tf.shape(logits)[:2])
        axes = {"batch": 0, "timesteps": 1}
        averaged = [axes[axis] for axis, (average, _) in flags.items() if average]
        summed = [axes[axis] for axis, (_, total) in flags.items() if total]
        if averaged:
            crossent = tf.math.divide_no_nan(
                tf.reduce_sum(crossent, averaged), tf.reduce_sum(weights, averaged)
            )
        elif summed:
            count = tf.cast(tf.math.count_nonzero(weights, summed), crossent.dtype)
            crossent = tf.math.divide_no_nan(tf.reduce_sum(crossent, summed), count)
        return crossent
