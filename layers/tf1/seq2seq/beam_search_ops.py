"""TF 1.15's ``tf.contrib.seq2seq.gather_tree``, in TensorFlow ops (TF 2.21 has no
``GatherTree`` kernel without TensorFlow Addons)."""

import tensorflow as tf


def gather_tree(step_ids, parent_ids, max_sequence_lengths, end_token, name=None):
    """Each beam's whole sequence, followed back through its parents.

    For entry ``b`` and beam ``k``, from step ``max_sequence_lengths[b] - 1`` back
    to 0: the id at the current beam, then its parent's beam one step earlier.
    Steps at or past the length, and every step after the first ``end_token``,
    hold ``end_token``.

    Args:
        step_ids: [time, batch, beam] int32 ids chosen at each step.
        parent_ids: [time, batch, beam] int32 beams each id continued.
        max_sequence_lengths: [batch] int32 lengths.
        end_token: a scalar int32.
        name: the name scope.

    Returns:
        [time, batch, beam] int32 ids.
    """
    with tf.compat.v1.name_scope(name, "GatherTree",
                                 [step_ids, parent_ids, max_sequence_lengths]):  # fmt: skip
        step_ids = tf.convert_to_tensor(step_ids, tf.int32, name="step_ids")
        parent_ids = tf.convert_to_tensor(parent_ids, tf.int32, name="parent_ids")
        lengths = tf.convert_to_tensor(max_sequence_lengths, tf.int32)
        end_token = tf.convert_to_tensor(end_token, tf.int32, name="end_token")
        beams = tf.broadcast_to(tf.range(tf.shape(step_ids)[2]), tf.shape(step_ids)[1:])

        def back_one_step(carry, step):
            _, beam = carry
            ids, parents, time = step
            within = time < lengths[:, None]
            found = tf.where(within, tf.gather(ids, beam, batch_dims=1), end_token)
            beam = tf.where(within, tf.gather(parents, beam, batch_dims=1), beams)
            return found, beam

        times = tf.range(tf.shape(step_ids)[0])
        ids, _ = tf.scan(back_one_step, (step_ids, parent_ids, times),
                         initializer=(beams * 0, beams), reverse=True)  # fmt: skip
        ended = tf.cumsum(tf.cast(tf.equal(ids, end_token), tf.int32), axis=0,
                          exclusive=True) > 0  # fmt: skip
        ids = tf.where(ended, end_token, ids)
        ids.set_shape(step_ids.shape)
        return ids
