"""layers.tf1.seq2seq: TF 1.15's tf.contrib.seq2seq, checked against the math in numpy
(no TensorFlow that runs contrib exists for TF 2.21 to compare with)."""

import numpy as np
import pytest
import tensorflow as tf

from layers import tf1
from layers.errors import ShapeError, ZooError
from layers.tf1 import seq2seq
from layers.tf1.rnn_cell import BasicRNNCell
from tests.layers.tf1_cells import IdentityCell, basic_rnn_step, values

v1 = tf.compat.v1


def log_softmax(x):
    shifted = x - x.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def softmax(x):
    return np.exp(log_softmax(x))


def run(fetches, assign=None):
    """``fetches`` in a session after initialization (and ``assign``: {variable name:
    value}); returns them and the variables' values."""
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        for variable in v1.global_variables():
            if assign and variable.name[:-2] in assign:
                session.run(variable.assign(assign[variable.name[:-2]]))
        return session.run(fetches), values(session)


def names():
    return sorted(v.name[:-2] for v in v1.global_variables())


# average_across_timesteps, average_across_batch, sum_over_timesteps, sum_over_batch
LOSS_FLAGS = [
    (True, True, False, False), (True, False, False, False), (False, True, False, False),
    (False, False, False, False), (False, False, True, True), (False, False, True, False),
    (False, False, False, True), (True, False, False, True),
]  # fmt: skip


def numpy_sequence_loss(logits, targets, weights, flags):
    """TF 1.15's rules: averaging divides by the summed weights, summing over by the
    number of non-zero weights; averaging an axis takes precedence."""
    average_t, average_b, sum_t, sum_b = flags
    picked = np.take_along_axis(log_softmax(logits), targets[..., None], -1)[..., 0]
    crossent = -picked * weights
    if average_t and average_b:
        return crossent.sum() / weights.sum()
    if sum_t and sum_b:
        return crossent.sum() / np.count_nonzero(weights)
    if average_t or average_b:
        axis = 0 if average_b else 1
        return crossent.sum(axis) / weights.sum(axis)
    if sum_t or sum_b:
        axis = 0 if sum_b else 1
        return crossent.sum(axis) / np.count_nonzero(weights, axis)
    return crossent


def test_sequence_loss_equals_numpy_for_each_averaging_flag(graph):
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(3, 4, 5)).astype(np.float32)
    targets = rng.integers(0, 5, (3, 4)).astype(np.int32)
    weights = np.array([[1, 1, 1, 0], [1, 0.5, 0, 0], [1, 1, 1, 1]], np.float32)
    found, _ = run([seq2seq.sequence_loss(logits, targets, weights, *flags)
                    for flags in LOSS_FLAGS])  # fmt: skip
    for flags, value in zip(LOSS_FLAGS, found, strict=True):
        expected = numpy_sequence_loss(logits, targets, weights, flags)
        np.testing.assert_allclose(value, expected, rtol=1e-5, err_msg=str(flags))
    custom = seq2seq.sequence_loss(
        logits, targets, weights,
        softmax_loss_function=lambda labels, logits: tf.cast(labels, tf.float32),
    )  # fmt: skip
    assert run(custom)[0] == pytest.approx((targets * weights).sum() / weights.sum())


def test_sequence_loss_refuses_bad_ranks_and_both_flags(graph):
    logits = tf.zeros([2, 3, 4])
    with pytest.raises(ZooError, match=r"sequence_loss: expected targets \[batch, time\], "
                       "found rank 1; reshape it"):  # fmt: skip
        seq2seq.sequence_loss(logits, tf.zeros([6], tf.int32), tf.ones([2, 3]))
    with pytest.raises(ZooError, match="expected average_across_batch or sum_over_batch, "
                       "found both; turn one of them off"):  # fmt: skip
        seq2seq.sequence_loss(logits, tf.zeros([2, 3], tf.int32), tf.ones([2, 3]),
                              sum_over_batch=True)  # fmt: skip


def numpy_unroll(variables, inputs, steps, scope="decoder", projection="projection"):
    """Every step's projected output and state of the Elman cell, feeding ``inputs(t,
    last output)``."""
    kernel, bias = (variables[f"{scope}/basic_rnn_cell/{n}"] for n in ("kernel", "bias"))
    state = np.zeros((inputs(0, None).shape[0], bias.shape[0]), np.float32)
    outputs, states, output = [], [], None
    for t in range(steps):
        output, state = basic_rnn_step(kernel, bias, inputs(t, output), state)
        outputs.append(output @ variables[f"{scope}/{projection}/kernel"]
                       + variables[f"{scope}/{projection}/bias"])  # fmt: skip
        states.append(state)
    return np.stack(outputs, 1), np.stack(states, 1)


def test_basic_decoder_with_training_helper_equals_a_numpy_unroll(graph):
    rng = np.random.default_rng(2)
    inputs = rng.normal(size=(3, 5, 2)).astype(np.float32)
    lengths = np.array([5, 2, 3], np.int32)
    cell, projection = BasicRNNCell(4), tf1.Dense(6, name="projection")
    decoded = {}
    for impute in (False, True):
        helper = seq2seq.TrainingHelper(inputs, lengths)
        decoder = seq2seq.BasicDecoder(cell, helper, cell.zero_state(3, tf.float32),
                                       output_layer=projection)  # fmt: skip
        decoded[impute] = seq2seq.dynamic_decode(decoder, impute_finished=impute)
    assert names() == ["decoder/basic_rnn_cell/bias", "decoder/basic_rnn_cell/kernel",
                       "decoder/projection/bias", "decoder/projection/kernel"]
    found, variables = run(decoded)  # fmt: skip
    logits, states = numpy_unroll(variables, lambda t, _: inputs[:, t], 5)
    plain, imputed = found[False], found[True]
    np.testing.assert_allclose(plain[0].rnn_output, logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(plain[0].sample_id, logits.argmax(-1))
    np.testing.assert_allclose(plain[1], states[:, -1], rtol=1e-5, atol=1e-6)
    past_end = np.arange(5)[None, :] >= lengths[:, None]
    imputed_logits = np.where(past_end[..., None], 0, logits)
    np.testing.assert_allclose(imputed[0].rnn_output, imputed_logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(imputed[1], states[np.arange(3), lengths - 1], rtol=1e-5,
                               atol=1e-6)  # fmt: skip
    for _, _, found_lengths in found.values():
        np.testing.assert_array_equal(found_lengths, lengths)


# Identity cell, embedding row i = 5 * one_hot(NEXT[i]): each step samples NEXT[previous].
END, NEXT = 0, np.array([1, 2, 0, 4, 3])


def greedy_reference(start, steps, impute):
    """Sample ids, lengths and final counters as TF 1.15 decodes the chain NEXT."""
    ids, lengths = [], np.zeros(len(start), int)
    previous, finished = np.array(start), np.zeros(len(start), bool)
    for t in range(steps):
        sample = NEXT[previous]
        lengths[~finished] = t + 1
        ids.append(np.where(finished, 0, sample) if impute else sample)
        finished |= sample == END
        previous = sample
        if finished.all():
            break
    return np.stack(ids, 1), lengths


@pytest.mark.parametrize("start", [[1, 3], [1, 2]], ids=["one_runs_on", "both_end"])
def test_greedy_embedding_helper_stops_at_end_token_and_pads_as_tf(graph, start):
    embedding = 5 * np.eye(5, dtype=np.float32)[NEXT]
    decoded = {}
    for impute in (False, True):
        helper = seq2seq.GreedyEmbeddingHelper(embedding, start, END)
        cell = IdentityCell(5)
        decoder = seq2seq.BasicDecoder(cell, helper, cell.zero_state(2, tf.float32))
        decoded[impute] = seq2seq.dynamic_decode(decoder, impute_finished=impute,
                                                 maximum_iterations=4)  # fmt: skip
    sampled = seq2seq.SampleEmbeddingHelper(embedding, start, END, softmax_temperature=1e-3)
    cold = seq2seq.dynamic_decode(seq2seq.BasicDecoder(
        IdentityCell(5), sampled, tf.zeros([2, 1])), maximum_iterations=4)  # fmt: skip
    found, _ = run([decoded, cold])
    plain_ids = greedy_reference(start, 4, impute=False)[0]
    for impute, (outputs, state, lengths) in found[0].items():
        ids, expected_lengths = greedy_reference(start, 4, impute)
        past_end = np.arange(ids.shape[1])[None, :] >= expected_lengths[:, None]
        np.testing.assert_array_equal(outputs.sample_id, ids)
        np.testing.assert_array_equal(lengths, expected_lengths)
        rnn_output = 5 * np.eye(5)[plain_ids]  # the cell's input: the last id's row
        rnn_output[past_end & impute] = 0
        np.testing.assert_array_equal(outputs.rnn_output, rnn_output)
        steps = expected_lengths if impute else np.full(2, ids.shape[1])
        np.testing.assert_array_equal(state[:, 0], steps)  # the counter stops at the end
    np.testing.assert_array_equal(found[1][0].sample_id, plain_ids)


def numpy_monotonic(p, previous):
    """Expected monotonic attention, by its recursion: ``q_j = (1 - p_{j-1}) q_{j-1} +
    previous_j``, attention ``p_j q_j``."""
    found = np.zeros_like(p)
    for b in range(p.shape[0]):
        q = 0.0
        for j in range(p.shape[1]):
            q = (1 - p[b, j - 1]) * q + previous[b, j] if j else previous[b, j]
            found[b, j] = p[b, j] * q
    return found


def numpy_attention(kind, flag, variables, memory, lengths, query, previous):
    """Alignments and context of TF 1.15's Bahdanau (``flag``: normalize) or Luong
    (``flag``: scale) mechanism, or their monotonic forms, in the wrapper's scope."""
    within = np.arange(memory.shape[1])[None, :] < lengths[:, None]
    masked = memory * within[..., None]
    keys = masked @ variables["memory_layer/kernel"]
    scope = f"attention_wrapper/{kind}_attention"
    if kind.startswith("bahdanau"):
        v = variables[f"{scope}/attention_v"]
        processed = (query @ variables[f"{scope}/query_layer/kernel"])[:, None, :]
        if flag:
            v = variables[f"{scope}/attention_g"] * v / np.linalg.norm(v)
            processed = processed + variables[f"{scope}/attention_b"]
        score = (v * np.tanh(keys + processed)).sum(-1)
    else:
        score = np.einsum("bd,btd->bt", query, keys)
        if flag:
            score = variables[f"{scope}/attention_g"] * score
    if kind.endswith("monotonic"):
        score = score + variables[f"{scope}/attention_score_bias"]
        p_choose = 1 / (1 + np.exp(-np.where(within, score, -np.inf)))
        alignments = numpy_monotonic(p_choose, previous)
    else:
        alignments = softmax(np.where(within, score, -np.inf))
    return alignments, np.einsum("bt,btd->bd", alignments, masked)


MECHANISMS = {
    ("bahdanau", False): lambda m, n: seq2seq.BahdanauAttention(5, m, n),
    ("bahdanau", True): lambda m, n: seq2seq.BahdanauAttention(5, m, n, normalize=True),
    ("luong", False): lambda m, n: seq2seq.LuongAttention(5, m, n),
    ("luong", True): lambda m, n: seq2seq.LuongAttention(5, m, n, scale=True),
    ("bahdanau_monotonic", True): lambda m, n: seq2seq.BahdanauMonotonicAttention(
        5, m, n, normalize=True, mode="recursive"),
    ("luong_monotonic", True): lambda m, n: seq2seq.LuongMonotonicAttention(
        5, m, n, scale=True, mode="recursive"),
}  # fmt: skip


@pytest.mark.parametrize("kind,flag", sorted(MECHANISMS))
def test_attention_wrapper_steps_equal_numpy(graph, kind, flag):
    rng = np.random.default_rng(3)
    memory = rng.normal(size=(2, 4, 3)).astype(np.float32)
    lengths = np.array([4, 2], np.int32)
    inputs = rng.normal(size=(2, 2, 2)).astype(np.float32)
    mechanism = MECHANISMS[kind, flag](memory, lengths)
    cell = seq2seq.AttentionWrapper(BasicRNNCell(5), mechanism, attention_layer_size=3,
                                    alignment_history=True)  # fmt: skip
    state, outputs, states = cell.zero_state(2, tf.float32), [], []
    for t in range(2):
        output, state = cell(inputs[:, t], state)
        outputs.append(output)
        states.append(state)
    scope = f"attention_wrapper/{kind}_attention"
    expected_names = {"memory_layer/kernel", "attention_wrapper/attention_layer/kernel",
                      "attention_wrapper/basic_rnn_cell/kernel",
                      "attention_wrapper/basic_rnn_cell/bias"}  # fmt: skip
    if kind.startswith("bahdanau"):
        expected_names |= {f"{scope}/query_layer/kernel", f"{scope}/attention_v"}
        if flag:
            expected_names |= {f"{scope}/attention_g", f"{scope}/attention_b"}
    elif flag:
        expected_names |= {f"{scope}/attention_g"}
    if kind.endswith("monotonic"):
        expected_names |= {f"{scope}/attention_score_bias"}
    assert names() == sorted(expected_names)  # the second step made no variable
    assign = {name: rng.normal(size=v.shape).astype(np.float32)
              for name, v in ((v.name[:-2], v) for v in v1.global_variables())}
    history = states[-1].alignment_history.stack()
    states = [state._replace(alignment_history=()) for state in states]  # not fetchable
    (outputs, states, history), variables = run([outputs, states, history], assign)
    h = np.zeros((2, 5), np.float32)
    attention = np.zeros((2, 3), np.float32)
    alignments = np.eye(4)[[0, 0]]  # a monotonic mechanism starts at the first entry
    kernel, bias = (variables[f"attention_wrapper/basic_rnn_cell/{name}"]
                    for name in ("kernel", "bias"))  # fmt: skip
    for t in range(2):
        h, _ = basic_rnn_step(kernel, bias, np.concatenate([inputs[:, t], attention], 1), h)
        alignments, context = numpy_attention(kind, flag, variables, memory, lengths, h,
                                               alignments)  # fmt: skip
        attention = np.concatenate([h, context], 1) @ variables[
            "attention_wrapper/attention_layer/kernel"]
        np.testing.assert_allclose(states[t].alignments, alignments, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(history[t], alignments, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(states[t].attention, attention, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(outputs[t], attention, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(states[t].cell_state, h, rtol=1e-4, atol=1e-5)
        assert states[t].time == t + 1
    assert (history[:, 1, 2:] == 0).all()  # past the memory's length


def test_attention_wrapper_state_structure_and_names_in_a_decoder(graph):
    memory = tf.random.normal([2, 6, 3])
    mechanisms = [seq2seq.BahdanauAttention(4, memory), seq2seq.LuongAttention(4, memory)]
    cell = seq2seq.AttentionWrapper(BasicRNNCell(4), mechanisms,
                                    attention_layer_size=[3, 2], output_attention=False)
    assert cell.output_size == 4 and cell.state_size.attention == 5
    assert cell.state_size.alignments == (6, 6)
    assert cell.state_size.alignment_history == ((), ())
    encoder_state = tf.random.normal([2, 4])
    state = cell.zero_state(2, tf.float32).clone(cell_state=encoder_state)
    assert state.cell_state.shape.as_list() == [2, 4]
    assert state.attention.shape.as_list() == [2, 5]
    helper = seq2seq.TrainingHelper(tf.random.normal([2, 3, 1]), [3, 3])
    outputs, final, _ = seq2seq.dynamic_decode(seq2seq.BasicDecoder(cell, helper, state))
    assert isinstance(final, seq2seq.AttentionWrapperState)
    assert names() == [
        "decoder/attention_wrapper/attention_layer/kernel",
        "decoder/attention_wrapper/attention_layer_1/kernel",
        "decoder/attention_wrapper/bahdanau_attention/attention_v",
        "decoder/attention_wrapper/bahdanau_attention/query_layer/kernel",
        "decoder/attention_wrapper/basic_rnn_cell/bias",
        "decoder/attention_wrapper/basic_rnn_cell/kernel",
        "memory_layer/kernel", "memory_layer_1/kernel",
    ]  # fmt: skip
    (found, cell_state), _ = run([outputs.rnn_output, final.cell_state])
    np.testing.assert_allclose(found[:, -1], cell_state, rtol=1e-6)  # the cell's output


def test_hardmax_safe_cumprod_and_monotonic_attention_equal_numpy(graph):
    rng = np.random.default_rng(4)
    logits = rng.normal(size=(3, 5)).astype(np.float32)
    p = rng.uniform(0.05, 0.95, (3, 5)).astype(np.float32)
    previous = softmax(rng.normal(size=(3, 5))).astype(np.float32)
    hard_p = (rng.uniform(size=(3, 5)) > 0.5).astype(np.float32)
    hard_previous = np.eye(5, dtype=np.float32)[[0, 2, 4]]
    found, _ = run([
        seq2seq.hardmax(logits), seq2seq.safe_cumprod(p, axis=1),
        seq2seq.monotonic_attention(p, previous, "recursive"),
        seq2seq.monotonic_attention(p, previous, "parallel"),
        seq2seq.monotonic_attention(hard_p, hard_previous, "hard"),
    ])  # fmt: skip
    np.testing.assert_array_equal(found[0], np.eye(5)[logits.argmax(1)])
    np.testing.assert_allclose(found[1], np.cumprod(p, 1), rtol=1e-5)
    expected = numpy_monotonic(p, previous)
    np.testing.assert_allclose(found[2], expected, rtol=1e-5)
    np.testing.assert_allclose(found[3], expected, rtol=1e-4, atol=1e-6)
    for b, start in enumerate([0, 2, 4]):
        chosen = [j for j in range(start, 5) if hard_p[b, j]]
        np.testing.assert_array_equal(found[4][b], np.eye(5)[chosen[0]] if chosen else 0)


def numpy_gather_tree(step_ids, parent_ids, lengths, end_token):
    """Each beam followed back from its length; end_token after the first one."""
    steps, batch, beam = step_ids.shape
    out = np.full_like(step_ids, end_token)
    for b in range(batch):
        for k in range(beam):
            current = k
            for t in reversed(range(min(steps, lengths[b]))):
                out[t, b, k] = step_ids[t, b, current]
                current = parent_ids[t, b, current]
            ended = np.cumsum(out[:, b, k] == end_token) - (out[:, b, k] == end_token) > 0
            out[ended, b, k] = end_token
    return out


def test_gather_tree_equals_a_numpy_backtrack(graph):
    rng = np.random.default_rng(5)
    step_ids = rng.integers(0, 9, (7, 3, 4)).astype(np.int32)
    parent_ids = rng.integers(0, 4, (7, 3, 4)).astype(np.int32)
    lengths = np.array([7, 4, 0], np.int32)
    found, _ = run(seq2seq.gather_tree(step_ids, parent_ids, lengths, end_token=8))
    expected = numpy_gather_tree(step_ids, parent_ids, lengths, 8)
    assert (expected == 8).any() and (expected[:4, 1] != 8).any()
    np.testing.assert_array_equal(found, expected)


def test_tile_batch_repeats_each_entry_in_place(graph):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    tiled = seq2seq.tile_batch((x, x[:, 0]), 3)
    assert tiled[0].shape.as_list() == [6, 3]
    (matrix, vector), _ = run(tiled)
    np.testing.assert_array_equal(matrix, np.repeat(x, 3, axis=0))
    np.testing.assert_array_equal(vector, np.repeat(x[:, 0], 3))


# A chain of tokens: EOS 0, GO 1, A 2, B 3, C 4, D 5, E 6; P[previous, next].
P = np.zeros((7, 7))
P[1, 2], P[1, 3] = 0.4, 0.6  # GO -> A | B
P[2, 0] = 1.0  # A -> EOS
P[3, 4], P[3, 0] = 0.6, 0.4  # B -> C | EOS
P[4, 5] = P[5, 6] = P[6, 0] = P[0, 0] = 1.0  # C -> D -> E -> EOS
LOGITS = np.where(P > 0, np.log(np.maximum(P, 1e-30)), -30.0).astype(np.float32)


def numpy_beam_search(start, beam, alpha, steps):
    """TF 1.15's beam search step on the chain: scores divided by ((5 + length) / 6) **
    alpha (length without this step's EOS), a finished beam only continues with EOS."""
    vocab = len(LOGITS)
    step_log_probs = log_softmax(LOGITS.astype(np.float64))
    only_end = np.where(np.arange(vocab) == 0, 0.0, np.finfo(np.float32).min)
    batch = len(start)
    log_probs = np.tile([0.0] + [-np.inf] * (beam - 1), (batch, 1))
    finished = np.tile([False] + [True] * (beam - 1), (batch, 1))
    lengths = np.zeros((batch, beam), int)
    previous = np.tile(np.array(start)[:, None], (1, beam))
    scores, words, parents = [], [], []
    for _ in range(steps):
        total = log_probs[..., None] + np.where(finished[..., None], only_end,
                                                step_log_probs[previous])  # fmt: skip
        grown = lengths[..., None] + (np.arange(vocab) != 0) * ~finished[..., None]
        flat = (total / ((5.0 + grown) / 6.0) ** alpha).reshape(batch, -1)
        best = np.argsort(-flat, axis=1, kind="stable")[:, :beam]
        word, parent = best % vocab, best // vocab
        log_probs = np.take_along_axis(total.reshape(batch, -1), best, 1)
        parent_finished = np.take_along_axis(finished, parent, 1)
        lengths = np.take_along_axis(lengths, parent, 1) + ~parent_finished
        finished = parent_finished | (word == 0)
        previous = word
        scores.append(np.take_along_axis(flat, best, 1))
        words.append(word)
        parents.append(parent)
        if finished.all():
            break
    words, parents = np.stack(words), np.stack(parents)
    ids = numpy_gather_tree(words, parents, lengths.max(1), 0)
    return np.stack(scores, 1), ids.transpose(1, 0, 2), parents.transpose(1, 0, 2)


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_beam_search_returns_the_best_scoring_beams(graph, alpha):
    cell = IdentityCell(7)
    logits = tf.constant_initializer(LOGITS)
    projection = tf1.Dense(7, use_bias=False, kernel_initializer=logits)
    decoder = seq2seq.BeamSearchDecoder(
        cell, np.eye(7, dtype=np.float32), start_tokens=[1, 3], end_token=0,
        initial_state=seq2seq.tile_batch(cell.zero_state(2, tf.float32), 2), beam_width=2,
        output_layer=projection, length_penalty_weight=alpha,
    )  # fmt: skip
    outputs, state, lengths = seq2seq.dynamic_decode(decoder, maximum_iterations=6)
    (outputs, state), _ = run([outputs, state])
    scores, ids, parents = numpy_beam_search([1, 3], 2, alpha, 6)
    np.testing.assert_array_equal(outputs.predicted_ids, ids)
    np.testing.assert_array_equal(outputs.beam_search_decoder_output.parent_ids, parents)
    np.testing.assert_allclose(outputs.beam_search_decoder_output.scores, scores, rtol=1e-5)
    # By hand: "A EOS" has log p = log 0.4, "B C D E EOS" log 0.6 + log 0.6 with three
    # more tokens; at the last step a length penalty of weight 1 divides the first by
    # (5 + 2) / 6 (TF 1.15 counts EOS once a beam finished) and the second by (5 + 4) / 6
    # (not yet its EOS): the long one wins only with the penalty.
    short, long = [2, 0, 0, 0, 0], [3, 4, 5, 6, 0]
    best, second = (long, short) if alpha else (short, long)
    np.testing.assert_array_equal(outputs.predicted_ids[0].T, [best, second])
    last = [np.log(0.4) / (7 / 6) ** alpha, 2 * np.log(0.6) / (9 / 6) ** alpha]
    np.testing.assert_allclose(outputs.beam_search_decoder_output.scores[0, -1],
                               sorted(last, reverse=True), rtol=1e-5)  # fmt: skip
    np.testing.assert_array_equal(state.lengths[0], [5, 2] if alpha else [2, 5])


SEARCH_SEED = 0


def test_beam_search_over_attention_penalizes_coverage_and_reorders_the_history(graph):
    v1.set_random_seed(SEARCH_SEED)  # weights under which the beams change places
    memory = seq2seq.tile_batch(tf.random.normal([2, 5, 3], seed=1), 3)
    mechanism = seq2seq.LuongAttention(4, memory)
    cell = seq2seq.AttentionWrapper(BasicRNNCell(4), mechanism, alignment_history=True)
    projection, found = tf1.Dense(6, name="logits"), {}
    for reorder in (True, False):
        decoder = seq2seq.BeamSearchDecoder(
            cell, tf.eye(6), [1, 2], 0, cell.zero_state(6, tf.float32), 3,
            output_layer=projection, coverage_penalty_weight=0.4,
            reorder_tensor_arrays=reorder,
        )  # fmt: skip
        outputs, state, _ = seq2seq.dynamic_decode(decoder, maximum_iterations=4)
        history = state.cell_state.alignment_history.stack()
        found[reorder] = (outputs.beam_search_decoder_output.parent_ids, state.lengths,
                          history, outputs.beam_search_decoder_output.scores)  # fmt: skip
    # the first step again, outside the search: the same variables
    first_output, first_state = cell(tf.gather(tf.eye(6), [1, 1, 1, 2, 2, 2]),
                                     cell.zero_state(6, tf.float32))  # fmt: skip
    first = (projection(first_output), first_state.alignments)
    (reordered, kept, (logits, alignments)), _ = run([found[True], found[False], first])
    parents, lengths, history, scores = kept
    for b in range(2):  # only beam 0 is alive at the start; coverage: sum log alignments
        candidates = log_softmax(logits[3 * b]) + 0.4 * np.log(alignments[3 * b]).sum()
        np.testing.assert_allclose(scores[b, 0], np.sort(candidates)[::-1][:3], rtol=1e-5)
    steps = history.shape[0]
    history = history.reshape(steps, 2, 3, 5)
    beams = np.broadcast_to(np.arange(3), (steps, 2, 3)).astype(np.int32)
    ancestors = numpy_gather_tree(beams, parents.transpose(1, 0, 2), lengths.max(1), 4)
    ancestors = np.where(np.arange(steps)[:, None, None] < lengths[None], ancestors, beams)
    expected = np.take_along_axis(history, ancestors[..., None], 2)
    assert not np.allclose(expected, history)  # the beams did change places
    np.testing.assert_allclose(reordered[2].reshape(steps, 2, 3, 5), expected, rtol=1e-6)
    np.testing.assert_array_equal(reordered[0], parents)  # the same search


def test_scheduled_helpers_feed_samples_or_outputs(graph):
    rng = np.random.default_rng(6)
    inputs = rng.normal(size=(2, 4, 3)).astype(np.float32)
    embedding = rng.normal(size=(3, 3)).astype(np.float32)
    lengths = [4, 4]
    cell, projection = BasicRNNCell(3), tf1.Dense(3, name="projection")
    helpers = {
        "never": seq2seq.ScheduledEmbeddingTrainingHelper(inputs, lengths, embedding, 0.0),
        "always": seq2seq.ScheduledEmbeddingTrainingHelper(inputs, lengths, embedding, 1.0),
        "outputs": seq2seq.ScheduledOutputTrainingHelper(inputs, lengths, 1.0),
    }
    decoded = {
        name: seq2seq.dynamic_decode(seq2seq.BasicDecoder(
            cell, helper, cell.zero_state(2, tf.float32), output_layer=projection
        ))[0] for name, helper in helpers.items()
    }  # fmt: skip
    found, variables = run(decoded)
    given = lambda t, _: inputs[:, t]  # noqa: E731
    expected = numpy_unroll(variables, given, 4)[0]
    np.testing.assert_allclose(found["never"].rnn_output, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(found["never"].sample_id, -1)
    drawn = found["always"].sample_id
    assert ((drawn >= 0) & (drawn < 3)).all()
    fed = lambda t, _: inputs[:, 0] if t == 0 else embedding[drawn[:, t - 1]]  # noqa: E731
    expected = numpy_unroll(variables, fed, 4)[0]
    np.testing.assert_allclose(found["always"].rnn_output, expected, rtol=1e-5, atol=1e-6)
    logits = found["outputs"].rnn_output  # the projected output is fed back
    fed_back = lambda t, _: inputs[:, 0] if t == 0 else logits[:, t - 1]  # noqa: E731
    np.testing.assert_allclose(logits, numpy_unroll(variables, fed_back, 4)[0], rtol=1e-5,
                               atol=1e-6)  # fmt: skip
    assert found["outputs"].sample_id.dtype == bool and found["outputs"].sample_id.all()


def test_bad_input_names_the_owner_and_both_structures(graph):
    cell = BasicRNNCell(4)
    pair = (tf.zeros([2, 4]), tf.zeros([2, 4]))
    helper = seq2seq.TrainingHelper(tf.zeros([2, 3, 1]), [3, 3])
    with pytest.raises(ZooError, match=(
        r"basic_rnn_cell \(BasicRNNCell\): expected a BasicDecoder initial_state of the "
        r"structure of its state_size, 4, found \(TensorShape\(\[2, 4\]\), "
        r"TensorShape\(\[2, 4\]\)\); pass cell.zero_state\(batch_size, dtype\)"
    )):  # fmt: skip
        seq2seq.BasicDecoder(cell, helper, pair)
    memory = tf.zeros([2, 5, 4])
    wrapper = seq2seq.AttentionWrapper(cell, seq2seq.LuongAttention(4, memory))
    with pytest.raises(ZooError, match=(
        r"attention_wrapper \(AttentionWrapper\): expected a state of the structure of "
        r"its state_size, AttentionWrapperState\(cell_state=4, attention=4, .*\), "
        r"found \(2, 4\)"
    )):  # fmt: skip
        wrapper(tf.zeros([2, 1]), pair[0])
    with pytest.raises(ZooError, match=(
        r"AttentionWrapperState.clone: expected cell_state structured as \(2, 4\), found "
        r"\(TensorShape\(\[2, 4\]\), TensorShape\(\[2, 4\]\)\)"
    )):  # fmt: skip
        wrapper.zero_state(2, tf.float32).clone(cell_state=pair)
    with pytest.raises(ZooError, match=(
        "attention_wrapper: expected a zero_state batch_size of the memory's batch size 2, "
        "found 6; with a BeamSearchDecoder, tile"
    )):  # fmt: skip
        wrapper.zero_state(6, tf.float32)
    with pytest.raises(ShapeError, match=(
        r"BeamSearchDecoder: expected a state of shape \(6, 4\) \(\[batch \* beam_width, "
        r"\.\.\.\], beam_width 3\), found shape \(2, 4\); tile"
    )):  # fmt: skip
        seq2seq.BeamSearchDecoder(cell, tf.eye(3), [0, 0], 1, pair[0], 3)
    luong = seq2seq.AttentionWrapper(cell, seq2seq.LuongAttention(3, memory))
    with pytest.raises(ShapeError, match=(
        "LuongAttention: expected a query of the keys' depth 3, found 4; set num_units"
    )):  # fmt: skip
        luong(tf.zeros([2, 1]), luong.zero_state(2, tf.float32))
    with pytest.raises(ZooError, match=(
        r"GreedyEmbeddingHelper: expected start_tokens \[batch\], found rank 2"
    )):  # fmt: skip
        seq2seq.GreedyEmbeddingHelper(tf.eye(3), [[0, 1]], 2)
    with pytest.raises(ZooError, match="dynamic_decode: expected a Decoder, found BasicRN"):
        seq2seq.dynamic_decode(cell)
    with pytest.raises(ZooError, match="CustomHelper: expected initialize.. to have run"):
        seq2seq.CustomHelper(None, None, None).batch_size  # noqa: B018


def translator(source, source_lengths, target_in=None, target_lengths=None, beam_width=0):
    """An attention translator in the idioms of TF 1.x's NMT tutorial: a two-layer
    LSTM encoder, a Luong-attention decoder, training by teacher forcing or beam
    search inference. Returns the training logits or the beam search output."""
    from layers.tf1 import rnn_cell  # noqa: PLC0415  (as a TF 1.x program imports it)

    embedding = v1.get_variable("embedding", [6, 8])
    layers_ = lambda: rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(16) for _ in range(2)])  # noqa: E731
    with v1.variable_scope("encoder"):
        memory, state = v1.nn.dynamic_rnn(
            layers_(), tf.nn.embedding_lookup(embedding, source), source_lengths,
            dtype=tf.float32,
        )  # fmt: skip
    batch = tf.size(source_lengths)
    if beam_width:
        memory, source_lengths, state = seq2seq.tile_batch(
            (memory, source_lengths, state), beam_width)
        batch = batch * beam_width  # fmt: skip
    mechanism = seq2seq.LuongAttention(16, memory, source_lengths, scale=True)
    cell = seq2seq.AttentionWrapper(layers_(), mechanism, attention_layer_size=16)
    initial = cell.zero_state(batch, tf.float32).clone(cell_state=state)
    projection = tf1.Dense(6, use_bias=False, name="output_projection")
    if beam_width:
        decoder = seq2seq.BeamSearchDecoder(
            cell, embedding, tf.fill([tf.size(source_lengths) // beam_width], 1), 0,
            initial, beam_width, output_layer=projection, length_penalty_weight=0.6,
        )  # fmt: skip
        return seq2seq.dynamic_decode(decoder, maximum_iterations=6, scope="decoder")[0]
    helper = seq2seq.TrainingHelper(tf.nn.embedding_lookup(embedding, target_in),
                                    target_lengths)  # fmt: skip
    decoder = seq2seq.BasicDecoder(cell, helper, initial, output_layer=projection)
    return seq2seq.dynamic_decode(decoder, scope="decoder")[0].rnn_output


@pytest.mark.slow  # about 13 s on 2 cores: graph building, gradients through while loops
def test_an_attention_translator_trains_saves_and_decodes_by_beam_search(tmp_path):
    rng = np.random.default_rng(10)
    source = rng.integers(2, 6, (8, 4)).astype(np.int32)  # copy the source, then EOS 0
    target_in = np.concatenate([np.ones((8, 1), np.int32), source], 1)
    target_out = np.concatenate([source, np.zeros((8, 1), np.int32)], 1)
    lengths = np.full(8, 4, np.int32)
    with tf.Graph().as_default():
        logits = translator(source, lengths, target_in, lengths + 1)
        loss = seq2seq.sequence_loss(logits, target_out, tf.ones([8, 5]))
        train = v1.train.AdamOptimizer(0.02).minimize(loss)
        trained = names()
        assert {"decoder/attention_wrapper/multi_rnn_cell/cell_0/basic_lstm_cell/kernel",
                "decoder/attention_wrapper/luong_attention/attention_g",
                "decoder/attention_wrapper/attention_layer/kernel", "memory_layer/kernel",
                "decoder/output_projection/kernel",
                "encoder/rnn/multi_rnn_cell/cell_1/basic_lstm_cell/bias"} <= set(trained)
        saver = v1.train.Saver(v1.trainable_variables())
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            first = session.run(loss)
            for _ in range(40):
                session.run(train)
            last = session.run(loss)
            path = saver.save(session, str(tmp_path / "model"))
            saved = values(session)
    assert last < 0.5 * first
    with tf.Graph().as_default():
        outputs = translator(source[:2], lengths[:2], beam_width=3)
        assert {v.name[:-2] for v in v1.trainable_variables()} <= set(trained)
        with v1.Session() as session:
            v1.train.Saver().restore(session, path)
            found = session.run(outputs)
            restored = values(session)
    for name, value in restored.items():
        np.testing.assert_array_equal(value, saved[name])
    assert found.predicted_ids.shape[::2] == (2, 3)
    scores = found.beam_search_decoder_output.scores[:, -1]
    assert (np.diff(scores, axis=1) <= 0).all()  # beam 0 the best


def test_unknown_batch_and_memory_time_decode_by_beam_search(graph):
    memory = v1.placeholder(tf.float32, [None, None, 3])
    lengths = v1.placeholder(tf.int32, [None])
    batch = tf.shape(memory)[0]
    tiled, tiled_lengths = seq2seq.tile_batch((memory, lengths), 2)
    mechanism = seq2seq.BahdanauMonotonicAttention(4, tiled, tiled_lengths)
    cell = seq2seq.AttentionWrapper(BasicRNNCell(4), mechanism, attention_layer_size=3)
    decoder = seq2seq.BeamSearchDecoder(
        cell, tf.eye(5), tf.fill([batch], 1), 0, cell.zero_state(batch * 2, tf.float32), 2,
        output_layer=tf1.Dense(5), coverage_penalty_weight=0.1,
    )  # fmt: skip
    outputs, state, _ = seq2seq.dynamic_decode(decoder, maximum_iterations=3)
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        found, alignments = session.run(
            [outputs.predicted_ids, state.cell_state.alignments],
            {memory: np.ones((3, 7, 3)), lengths: [7, 2, 5]},
        )  # fmt: skip
    assert found.shape[::2] == (3, 2) and alignments.shape == (3, 2, 7)
    assert (alignments[1, :, 2:] == 0).all()  # past the second entry's length
