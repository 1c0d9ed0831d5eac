"""tf.contrib.crf under install(): scores, normalizers and decodes against a brute
force over every tag path and NumPy's forward algorithm; lengths 0 and 1; the
``transitions`` variable; shape errors."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

import zoo.compat
from layers.errors import ShapeError
from tests.zoo.test_compat import uninstalled  # noqa: F401  (autouse: nothing installed)

v1 = tf.compat.v1
NUM_TAGS, MAX_LEN = 3, 4
LENGTHS = np.array([4, 3, 1, 0, 2], np.int32)  # a full one, shorter ones, 1 and 0


def path_score(unary, transitions, tags):
    return unary[np.arange(len(tags)), tags].sum() + sum(
        transitions[a, b] for a, b in zip(tags[:-1], tags[1:], strict=True))  # fmt: skip


def brute_force(unary, transitions, length):
    """(log Z, best path, best score) over all NUM_TAGS ** length paths."""
    if length == 0:
        return 0.0, [], 0.0
    paths = [np.array(p) for p in itertools.product(range(NUM_TAGS), repeat=length)]
    scores = np.array([path_score(unary[:length], transitions, p) for p in paths])
    return np.logaddexp.reduce(scores), list(paths[scores.argmax()]), scores.max()


def forward_algorithm(unary, transitions, length):
    """NumPy's forward algorithm: log Z of one sequence."""
    alphas = unary[0]
    for t in range(1, length):
        alphas = unary[t] + np.logaddexp.reduce(alphas[:, None] + transitions, axis=0)
    return np.logaddexp.reduce(alphas) if length else 0.0


@pytest.fixture
def case():
    rng = np.random.default_rng(7)
    unary = rng.normal(size=(len(LENGTHS), MAX_LEN, NUM_TAGS)).astype(np.float32)
    transitions = rng.normal(size=(NUM_TAGS, NUM_TAGS)).astype(np.float32)
    tags = rng.integers(0, NUM_TAGS, size=(len(LENGTHS), MAX_LEN)).astype(np.int32)
    return unary, transitions, tags


def test_log_likelihood_norm_and_decode_match_brute_force(case):
    unary, transitions, tags = case
    zoo.compat.install()
    with tf.Graph().as_default():
        inputs = v1.placeholder(tf.float32, [None, None, NUM_TAGS])
        lengths = v1.placeholder(tf.int32, [None])
        matrix = tf.constant(transitions)
        crf = tf.contrib.crf
        log_likelihood, same = crf.crf_log_likelihood(inputs, tags, lengths, matrix)
        decoded, best = crf.crf_decode(inputs, matrix, lengths)
        norm = crf.crf_log_norm(inputs, lengths, matrix)
        with v1.Session() as sess:
            found = sess.run([log_likelihood, decoded, best, norm],
                             {inputs: unary, lengths: LENGTHS})  # fmt: skip
    assert same is matrix
    for i, length in enumerate(LENGTHS):
        log_z, path, score = brute_force(unary[i], transitions, length)
        forward = forward_algorithm(unary[i], transitions, length)
        assert found[3][i] == pytest.approx(forward, abs=1e-5)
        assert found[3][i] == pytest.approx(log_z, abs=1e-5)
        expected = path_score(unary[i, :length], transitions, tags[i, :length]) - log_z
        assert found[0][i] == pytest.approx(expected if length else 0.0, abs=1e-5)
        assert found[0][i] <= 1e-6  # a probability's log, also for length 1
        if length:
            assert list(found[1][i, :length]) == path
            assert found[2][i] == pytest.approx(score, abs=1e-5)
            viterbi, viterbi_score = crf.viterbi_decode(unary[i, :length], transitions)
            assert viterbi == path and viterbi_score == pytest.approx(score, abs=1e-5)


def test_one_step_sequences_take_the_single_step_path(case):
    unary, transitions, tags = case
    zoo.compat.install()
    with tf.Graph().as_default():
        crf = tf.contrib.crf
        one = tf.constant(unary[:, :1])
        lengths = tf.constant(np.minimum(LENGTHS, 1))
        log_likelihood, _ = crf.crf_log_likelihood(one, tags[:, :1], lengths,
                                                   tf.constant(transitions))
        decoded, best = crf.crf_decode(one, tf.constant(transitions), lengths)
        with v1.Session() as sess:
            found, tags_found, best_found = sess.run([log_likelihood, decoded, best])
    first = unary[:, 0]
    expected = first[np.arange(len(tags)), tags[:, 0]] - np.logaddexp.reduce(first, axis=1)
    np.testing.assert_allclose(found, np.where(LENGTHS > 0, expected, 0.0), atol=1e-5)
    np.testing.assert_array_equal(tags_found[:, 0], first.argmax(1))
    np.testing.assert_allclose(best_found, first.max(1), atol=1e-6)


def test_transitions_variable_is_made_by_get_variable_and_reused(case):
    unary, _, tags = case
    zoo.compat.install()
    with tf.Graph().as_default():
        inputs = tf.constant(unary)
        with v1.variable_scope("crf_layer"):
            _, transitions = tf.contrib.crf.crf_log_likelihood(inputs, tags, LENGTHS)
        with v1.variable_scope("crf_layer", reuse=True):
            log_likelihood, again = tf.contrib.crf.crf_log_likelihood(inputs, tags, LENGTHS)
        assert again is transitions
        assert [v.name for v in v1.trainable_variables()] == ["crf_layer/transitions:0"]
        assert transitions.shape == (NUM_TAGS, NUM_TAGS)
        loss = -tf.reduce_mean(log_likelihood)
        step = v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            losses = [sess.run([loss, step])[0] for _ in range(5)]
    assert losses[-1] < losses[0]


def test_forward_rnn_cell_runs_in_dynamic_rnn(case):
    unary, transitions, _ = case
    zoo.compat.install()
    with tf.Graph().as_default():
        cell = tf.contrib.crf.CrfForwardRnnCell(tf.constant(transitions))
        _, alphas = v1.nn.dynamic_rnn(cell, tf.constant(unary[:1, 1:]),
                                      initial_state=tf.constant(unary[:1, 0]))
        with v1.Session() as sess:
            log_z = sess.run(tf.reduce_logsumexp(alphas, 1))
    assert log_z[0] == pytest.approx(forward_algorithm(unary[0], transitions, MAX_LEN),
                                     abs=1e-5)  # fmt: skip


def test_bad_shapes_name_the_argument(case):
    unary, transitions, tags = case
    zoo.compat.install()
    crf = tf.contrib.crf
    with tf.Graph().as_default():
        with pytest.raises(ShapeError, match=r"crf_log_likelihood: expected "
                           r"transition_params of shape \[3, 3\].*found shape \(4, 4\)"):
            crf.crf_log_likelihood(tf.constant(unary), tags, LENGTHS, tf.zeros([4, 4]))
        unknown = v1.placeholder(tf.float32, [None, None, None])
        with pytest.raises(ShapeError, match="crf_decode: expected inputs .*num_tags"):
            crf.crf_decode(unknown, transitions, LENGTHS)
        with pytest.raises(ShapeError, match="crf_log_norm: expected inputs with at least "
                           "one time step, found shape \\(5, 0, 3\\)"):
            crf.crf_log_norm(tf.zeros([5, 0, 3]), LENGTHS, transitions)
        tags_out_of_range = np.full_like(tags, NUM_TAGS)  # TF's own error when run, from
        # the unary gather or the transitions' gather_nd, whichever op runs first
        scores = crf.crf_sequence_score(tf.constant(unary), tags_out_of_range, LENGTHS,
                                        tf.constant(transitions))  # fmt: skip
        out_of_range = (r"indices.* = (3 is not in \[0, 3\)|\[3, 3\] does not index into "
                        r"param shape \[3,3\])")
        with v1.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                                 match=out_of_range):
            sess.run(scores)
    with pytest.raises(ShapeError, match=r"viterbi_decode: expected score \[seq_len >= 1"):
        crf.viterbi_decode(np.zeros((0, NUM_TAGS)), transitions)
    with pytest.raises(ShapeError, match=r"viterbi_decode: expected transition_params"):
        crf.viterbi_decode(unary[0], np.zeros((2, 2)))
