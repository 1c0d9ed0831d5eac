"""BatchNorm: numbers against numpy in both modes, one update per training call, the four
shared variables, a checkpoint round trip, batch_statistics, every error by its message."""

import threading

import numpy as np
import pytest
import tensorflow as tf

from layers import BatchNorm, ScopeError, ShapeError, ZooError, batch_statistics

v1 = tf.compat.v1
UPDATE_OPS = v1.GraphKeys.UPDATE_OPS
DECAY, EPSILON = 0.9, 1e-3
NAMES = ["bn/gamma:0", "bn/beta:0", "bn/moving_mean:0", "bn/moving_variance:0"]


def batch(shape, seed=0):
    return np.random.default_rng(seed).normal(2.0, 3.0, size=shape).astype(np.float32)


def normalized(x, mean, variance, gamma, beta):
    return gamma * (x - mean) / np.sqrt(variance + EPSILON) + beta


def shared(build):
    """Builds ``build()`` under the current scope with reuse=True."""
    with v1.variable_scope(v1.get_variable_scope(), reuse=True):
        return build()


@pytest.mark.parametrize("shape", [(6, 3), (2, 3, 4, 3)], ids=["dense", "nhwc"])
def test_both_modes_match_the_numpy_formula(graph, shape):
    x = v1.placeholder(tf.float32, [None, *shape[1:]])
    train = BatchNorm(x, True, decay=DECAY, epsilon=EPSILON)
    evaluation = shared(lambda: BatchNorm(x, False, decay=DECAY, epsilon=EPSILON))
    gamma, beta = np.float32([0.5, 2.0, -1.0]), np.float32([0.1, -0.2, 0.3])
    xs = [batch(shape, seed) for seed in range(3)]
    axes = tuple(range(len(shape) - 1))
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        session.run([train.gamma.assign(gamma), train.beta.assign(beta)])
        moving = np.zeros(3), np.ones(3)
        for value in xs[:2]:
            out, _ = session.run([train.output, train.updates], {x: value})
            mean, variance = value.mean(axes), value.var(axes)  # biased, as documented
            np.testing.assert_allclose(
                out, normalized(value, mean, variance, gamma, beta), rtol=1e-4, atol=1e-4
            )
            moving = [
                DECAY * m + (1 - DECAY) * b
                for m, b in zip(moving, (mean, variance), strict=True)
            ]
            got = session.run([train.moving_mean, train.moving_variance])
            np.testing.assert_allclose(got, moving, rtol=1e-5)
        out = session.run(evaluation.output, {x: xs[2]})
    np.testing.assert_allclose(
        out, normalized(xs[2], *moving, gamma, beta), rtol=1e-4, atol=1e-4
    )


def test_one_update_per_training_call_and_none_from_evaluation(graph):
    x = v1.placeholder(tf.float32, [None, 3])
    train = BatchNorm(x, True)
    assert len(train.updates) == 1 and v1.get_collection(UPDATE_OPS) == train.updates
    evaluation = shared(lambda: BatchNorm(x, False))
    assert evaluation.updates == [] and len(v1.get_collection(UPDATE_OPS)) == 1
    again = shared(lambda: BatchNorm(x, True))
    assert v1.get_collection(UPDATE_OPS) == train.updates + again.updates


def test_a_fed_false_training_tensor_leaves_the_statistics_alone(graph):
    x = v1.placeholder(tf.float32, [None, 3])
    training = v1.placeholder_with_default(True, [])
    bn = BatchNorm(x, training, decay=DECAY, epsilon=EPSILON)
    value = batch((5, 3))
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        session.run(bn.updates, {x: value})  # one training step moves them
        before = session.run(bn.params[2:])
        out, _ = session.run([bn.output, bn.updates], {x: value, training: False})
        after = session.run(bn.params[2:])
        trained, _ = session.run([bn.output, bn.updates], {x: value})
    np.testing.assert_array_equal(after, before)
    np.testing.assert_allclose(out, normalized(value, *before, 1, 0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        trained, normalized(value, value.mean(0), value.var(0), 1, 0), atol=1e-4
    )


def test_reuse_shares_exactly_four_variables(graph):
    x = v1.placeholder(tf.float32, [None, 3])
    first = BatchNorm(x, True)
    second = shared(lambda: BatchNorm(x, False))
    assert [v.name for v in first.params] == NAMES
    assert all(a is b for a, b in zip(first.params, second.params, strict=True))
    assert [v.name for v in v1.global_variables()] == NAMES
    assert [v.name for v in v1.trainable_variables()] == NAMES[:2]
    BatchNorm(x, True, scope="other")
    assert len(v1.global_variables()) == 8


def test_a_saver_restores_the_moving_statistics(graph, tmp_path):
    x = v1.placeholder(tf.float32, [None, 3])
    bn = BatchNorm(x, True)
    saver = v1.train.Saver()
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        for seed in range(3):
            session.run(bn.updates, {x: batch((4, 3), seed)})
        saved = session.run(bn.params)
        path = saver.save(session, str(tmp_path / "bn.ckpt"))
        session.run(v1.global_variables_initializer())  # back to 0 and 1
        saver.restore(session, path)
        restored = session.run(bn.params)
    assert dict(v1.train.list_variables(path)) == {n[:-2]: [3] for n in NAMES}
    np.testing.assert_array_equal(restored, saved)
    assert not np.allclose(saved[2], 0)


def test_batch_statistics_uses_the_given_moments_and_can_skip_the_update(graph):
    x = v1.placeholder(tf.float32, [None, 3])
    seen = []

    def fixed_moments(inputs, axes):
        seen.append(axes)
        return tf.fill([3], 1.0), tf.fill([3], 4.0)

    with batch_statistics(moments=fixed_moments, update=False):
        tower = BatchNorm(x, True, epsilon=EPSILON)
        with batch_statistics(update=True):  # the inner one wins
            inner = shared(lambda: BatchNorm(x, True))
        frozen = shared(lambda: BatchNorm(x, False))
    after = shared(lambda: BatchNorm(x, True))
    assert seen == [[0]] and tower.updates == [] and frozen.updates == []
    assert v1.get_collection(UPDATE_OPS) == inner.updates + after.updates
    value = batch((4, 3))
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        out = session.run(tower.output, {x: value})
    np.testing.assert_allclose(out, normalized(value, 1.0, 4.0, 1, 0), rtol=1e-5)


def test_batch_statistics_is_restored_after_an_error_and_per_thread(graph):
    x = v1.placeholder(tf.float32, [None, 3])
    with pytest.raises(RuntimeError), batch_statistics(update=False):
        raise RuntimeError
    assert len(BatchNorm(x, True).updates) == 1
    other_thread = []
    with batch_statistics(update=False):

        def build():
            with graph.as_default():
                other_thread.append(BatchNorm(x, True, scope="thread").updates)

        thread = threading.Thread(target=build)
        thread.start()
        thread.join()
    assert len(other_thread[0]) == 1


def test_errors_name_the_scope_and_the_fix(graph):
    x = v1.placeholder(tf.float32, [None, 3])
    with pytest.raises(ShapeError, match=r"bn: expected input .* feature width known, "):
        BatchNorm(v1.placeholder(tf.float32, [None, None]), True)
    with pytest.raises(ShapeError, match=r"bn: expected input .*found <unknown>"):
        BatchNorm(v1.placeholder(tf.float32), True)
    with pytest.raises(ZooError, match=r"bn: expected float32 inputs .*found int32; cast"):
        BatchNorm(v1.placeholder(tf.int32, [None, 3]), True)
    vector = v1.placeholder(tf.bool, [2])
    for training, found in [(1, "1"), (vector, "a bool tensor of shape .2.")]:
        with pytest.raises(ZooError, match=f"bn: expected training to be True, .*{found}"):
            BatchNorm(x, training)
    with pytest.raises(
        ZooError, match=r"bn: expected decay to be a finite number in \[0, 1\]"
    ):
        BatchNorm(x, True, decay=1.5)
    with pytest.raises(
        ZooError, match=r"bn: expected epsilon to be a finite number > 0, fo"
    ):
        BatchNorm(x, True, epsilon=0)
    BatchNorm(x, True)
    wide = v1.placeholder(tf.float32, [None, 5])
    with pytest.raises(ShapeError, match=r"bn: expected inputs with 3 features .*found 5;"):
        shared(lambda: BatchNorm(wide, False))
    with pytest.raises(ScopeError, match="pass reuse=True to share it"):
        BatchNorm(x, True)
    with pytest.raises(ZooError, match="expected update True or False, found 0"):
        with batch_statistics(update=0):
            pass
    with pytest.raises(ZooError, match="expected moments to be a function"):
        with batch_statistics(moments="mean"):
            pass
