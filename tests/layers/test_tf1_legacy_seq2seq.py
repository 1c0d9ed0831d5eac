"""layers.tf1.legacy_seq2seq: TF 1.15's tf.contrib.legacy_seq2seq, its variable names
and its decoders checked against numpy on the same weights."""

import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from layers.errors import ZooError
from layers.tf1 import legacy_seq2seq
from layers.tf1.rnn_cell import BasicLSTMCell, BasicRNNCell, LSTMStateTuple
from tests.layers.test_tf1_seq2seq import log_softmax, names, run, softmax
from tests.layers.tf1_cells import basic_rnn_step

v1 = tf.compat.v1


def test_rnn_decoder_equals_numpy_with_and_without_a_loop_function(graph):
    rng = np.random.default_rng(7)
    inputs = [rng.normal(size=(2, 3)).astype(np.float32) for _ in range(3)]
    start = rng.normal(size=(2, 3)).astype(np.float32)
    cell = BasicRNNCell(3)
    plain = legacy_seq2seq.rnn_decoder(inputs, start, cell)
    fed = legacy_seq2seq.rnn_decoder(inputs, start, cell, loop_function=lambda p, i: p)
    scope = "rnn_decoder/basic_rnn_cell"
    assert names() == [f"{scope}/bias", f"{scope}/kernel"]
    (plain, fed), variables = run([plain, fed])
    kernel, bias = variables[f"{scope}/kernel"], variables[f"{scope}/bias"]
    for loop, (outputs, state) in ((False, plain), (True, fed)):
        h, previous = start, None
        for t, x in enumerate(inputs):
            previous, h = basic_rnn_step(kernel, bias, previous if loop and t else x, h)
            np.testing.assert_allclose(outputs[t], previous, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(state, h, rtol=1e-5, atol=1e-6)


def numpy_attention_decoder(variables, inputs, start, memory, heads, initial_attention):
    """TF 1.15's attention_decoder: Bahdanau attention per head on the cell state."""
    scope = "attention_decoder"
    features = [memory @ variables[f"{scope}/AttnW_{a}"][0, 0] for a in range(heads)]

    def attention(query):
        reads = []
        for a in range(heads):
            y = query @ variables[f"{scope}/Attention_{a}/kernel"]
            y = y + variables[f"{scope}/Attention_{a}/bias"]
            v = variables[f"{scope}/AttnV_{a}"]
            s = (v * np.tanh(features[a] + y[:, None])).sum(-1)
            reads.append(np.einsum("bt,btd->bd", softmax(s), memory))
        return reads

    def linear(args, name):
        joined = np.concatenate(args, 1)
        return joined @ variables[f"{name}/kernel"] + variables[f"{name}/bias"]

    kernel, bias = (variables[f"{scope}/basic_rnn_cell/{n}"] for n in ("kernel", "bias"))
    state = start
    reads = attention(state) if initial_attention else [np.zeros_like(memory[:, 0])] * heads
    outputs = []
    for x in inputs:
        cell_output, state = basic_rnn_step(kernel, bias, linear([x, *reads], scope), state)
        reads = attention(state)
        outputs.append(linear([cell_output, *reads], f"{scope}/AttnOutputProjection"))
    return outputs, state


@pytest.mark.parametrize("heads,initial_attention", [(1, False), (2, True)])
def test_attention_decoder_equals_numpy_on_the_same_weights(graph, heads,
                                                            initial_attention):
    rng = np.random.default_rng(8)
    inputs = [rng.normal(size=(2, 3)).astype(np.float32) for _ in range(3)]
    start = rng.normal(size=(2, 4)).astype(np.float32)
    memory = rng.normal(size=(2, 5, 6)).astype(np.float32)
    outputs, state = legacy_seq2seq.attention_decoder(
        inputs, start, memory, BasicRNNCell(4), output_size=7, num_heads=heads,
        initial_state_attention=initial_attention,
    )  # fmt: skip
    scope = "attention_decoder"
    parts = ("kernel", "bias", "basic_rnn_cell/kernel", "basic_rnn_cell/bias",
             "AttnOutputProjection/kernel", "AttnOutputProjection/bias")
    expected = {f"{scope}/{part}" for part in parts}
    for a in range(heads):
        expected |= {f"{scope}/AttnW_{a}", f"{scope}/AttnV_{a}",
                     f"{scope}/Attention_{a}/kernel", f"{scope}/Attention_{a}/bias"}
    assert names() == sorted(expected)
    assign = {v.name[:-2]: rng.normal(size=v.shape).astype(np.float32) * 0.5
              for v in v1.global_variables()}  # fmt: skip
    (outputs, state), variables = run([outputs, state], assign)
    expected_outputs, expected_state = numpy_attention_decoder(
        variables, inputs, start, memory, heads, initial_attention
    )
    np.testing.assert_allclose(outputs, expected_outputs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(state, expected_state, rtol=1e-4, atol=1e-5)


def test_sequence_losses_equal_numpy(graph):
    rng = np.random.default_rng(9)
    logits = [rng.normal(size=(3, 4)).astype(np.float32) for _ in range(2)]
    targets = [rng.integers(0, 4, 3).astype(np.int32) for _ in range(2)]
    weights = [np.array([1, 1, 0.5], np.float32), np.array([1, 0, 1], np.float32)]
    found, _ = run([
        legacy_seq2seq.sequence_loss_by_example(logits, targets, weights),
        legacy_seq2seq.sequence_loss_by_example(logits, targets, weights, False),
        legacy_seq2seq.sequence_loss(logits, targets, weights),
        legacy_seq2seq.sequence_loss(logits, targets, weights, average_across_batch=False),
    ])  # fmt: skip
    crossent = sum(-log_softmax(x)[np.arange(3), y] * w
                   for x, y, w in zip(logits, targets, weights, strict=True))  # fmt: skip
    per_example = crossent / (weights[0] + weights[1] + 1e-12)
    for value, expected in zip(found, [per_example, crossent, per_example.sum() / 3,
                                       per_example.sum()], strict=True):  # fmt: skip
        np.testing.assert_allclose(value, expected, rtol=1e-5)


def test_seq2seq_models_keep_tf_1_15s_names_and_share_across_buckets(graph):
    encoder = [tf.zeros([2], tf.int32)] * 3
    decoder = [tf.zeros([2], tf.int32)] * 2
    legacy_seq2seq.embedding_attention_seq2seq(encoder, decoder, BasicRNNCell(4), 5, 6, 3,
                                               feed_previous=tf.constant(True))  # fmt: skip
    top = "embedding_attention_seq2seq"
    inner = f"{top}/embedding_attention_decoder/attention_decoder"
    assert names() == sorted([
        f"{top}/rnn/embedding_wrapper/embedding",
        f"{top}/rnn/embedding_wrapper/basic_rnn_cell/kernel",
        f"{top}/rnn/embedding_wrapper/basic_rnn_cell/bias",
        f"{top}/embedding_attention_decoder/embedding",
        f"{inner}/AttnW_0", f"{inner}/AttnV_0", f"{inner}/kernel", f"{inner}/bias",
        f"{inner}/output_projection_wrapper/basic_rnn_cell/kernel",
        f"{inner}/output_projection_wrapper/basic_rnn_cell/bias",
        f"{inner}/output_projection_wrapper/kernel",
        f"{inner}/output_projection_wrapper/bias",
        f"{inner}/Attention_0/kernel", f"{inner}/Attention_0/bias",
        f"{inner}/AttnOutputProjection/kernel", f"{inner}/AttnOutputProjection/bias",
    ])  # fmt: skip
    with v1.variable_scope("tied"):
        legacy_seq2seq.tied_rnn_seq2seq([tf.zeros([2, 3])] * 2, [tf.zeros([2, 3])] * 2,
                                        BasicRNNCell(3))  # fmt: skip
    assert [n for n in names() if n.startswith("tied/")] == [
        "tied/combined_tied_rnn_seq2seq/tied_rnn_seq2seq/basic_rnn_cell/bias",
        "tied/combined_tied_rnn_seq2seq/tied_rnn_seq2seq/basic_rnn_cell/kernel",
    ]  # fmt: skip
    with v1.variable_scope("buckets"):
        outputs, losses = legacy_seq2seq.model_with_buckets(
            [tf.zeros([2, 3])] * 4, [tf.zeros([2, 3])] * 3, [tf.zeros([2], tf.int32)] * 3,
            [tf.ones([2])] * 3, [(2, 2), (4, 3)],
            lambda x, y: legacy_seq2seq.basic_rnn_seq2seq(x, y, BasicRNNCell(3)),
        )  # fmt: skip
    assert [n for n in names() if n.startswith("buckets/")] == [
        "buckets/basic_rnn_seq2seq/rnn/basic_rnn_cell/bias",
        "buckets/basic_rnn_seq2seq/rnn/basic_rnn_cell/kernel",
        "buckets/basic_rnn_seq2seq/rnn_decoder/basic_rnn_cell/bias",
        "buckets/basic_rnn_seq2seq/rnn_decoder/basic_rnn_cell/kernel",
    ]  # fmt: skip
    assert [len(o) for o in outputs] == [2, 3] and len(losses) == 2


def test_tied_and_one_to_many_models_keep_tf_1_15s_names(graph):
    ids = [tf.zeros([2], tf.int32)] * 3
    _, state = legacy_seq2seq.embedding_tied_rnn_seq2seq(
        ids, ids[:2], BasicLSTMCell(4), 5, 3, feed_previous=tf.constant(True)
    )
    assert isinstance(state, LSTMStateTuple)  # packed again after the tf.cond
    outputs, _ = legacy_seq2seq.one2many_rnn_seq2seq(
        ids, {"a": ids[:2], "b": ids}, BasicRNNCell(4),
        {"a": BasicRNNCell(4), "b": BasicRNNCell(4)}, 5, {"a": 6, "b": 7}, 3,
    )  # fmt: skip
    assert {name: len(o) for name, o in outputs.items()} == {"a": 2, "b": 3}
    tied = "embedding_tied_rnn_seq2seq/combined_tied_rnn_seq2seq/tied_rnn_seq2seq"
    one = "one2many_rnn_seq2seq"
    expected = [
        "embedding_tied_rnn_seq2seq/embedding",
        *(f"{tied}/output_projection_wrapper/{n}" for n in (
            "basic_lstm_cell/kernel", "basic_lstm_cell/bias", "kernel", "bias")),
        *(f"{one}/rnn/embedding_wrapper/{n}" for n in (
            "embedding", "basic_rnn_cell/kernel", "basic_rnn_cell/bias")),
    ]  # fmt: skip
    for name in "ab":
        decoder = f"{one}/one2many_decoder_{name}/embedding_rnn_decoder"
        expected += [f"{decoder}/embedding", *(
            f"{decoder}/rnn_decoder/output_projection_wrapper/{n}" for n in (
                "basic_rnn_cell/kernel", "basic_rnn_cell/bias", "kernel", "bias"))]
    assert names() == sorted(expected)  # fmt: skip


def test_bad_input_names_the_function_and_both_structures(graph):
    cell = BasicRNNCell(3)
    pair = (tf.zeros([2, 3]), tf.zeros([2, 3]))
    with pytest.raises(ZooError, match=(
        r"basic_rnn_cell \(BasicRNNCell\): expected an rnn_decoder initial_state of the "
        r"structure of its state_size, 3, found \(TensorShape\(\[2, 3\]\), "
    )):  # fmt: skip
        legacy_seq2seq.rnn_decoder([tf.zeros([2, 3])], pair, cell)
    with pytest.raises(ZooError, match="attention_decoder: expected at least one decoder "
                       "input, found none"):  # fmt: skip
        legacy_seq2seq.attention_decoder([], pair[0], tf.zeros([2, 4, 3]), cell)
    with pytest.raises(ZooError, match=(
        r"sequence_loss_by_example: expected as many logits, weights and targets, "
        r"found \(2, 1, 2\)"
    )):  # fmt: skip
        targets = [tf.zeros([2], tf.int32)] * 2
        legacy_seq2seq.sequence_loss_by_example([pair[0]] * 2, targets, [tf.ones([2])])
    with pytest.raises(ZooError, match="model_with_buckets: expected at least 3 targets"):
        legacy_seq2seq.model_with_buckets([pair[0]] * 2, [pair[0]] * 3, [pair[0]] * 2,
                                          [pair[0]] * 3, [(2, 3)], None)  # fmt: skip
    legacy_seq2seq.rnn_decoder([pair[0]], pair[0], cell)
    with pytest.raises(ZooError, match=(
        "basic_rnn_seq2seq: expected a cell not called yet .it is copied for the encoder., "
        "found BasicRNNCell with variables; make a new cell inside the function"
    )):  # fmt: skip
        legacy_seq2seq.basic_rnn_seq2seq([pair[0]], [pair[0]], cell)


TF1_BEHAVIOUR_PROGRAM = """
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()  # TF1's Dimension shapes, as the upgraded programs run
from layers import tf1
from layers.tf1 import legacy_seq2seq, rnn_cell, seq2seq

source = tf.placeholder(tf.int32, [None, None])
lengths = tf.placeholder(tf.int32, [None])
embedding = tf.get_variable("embedding", [7, 4])
memory, state = tf.nn.dynamic_rnn(rnn_cell.GRUCell(8), tf.nn.embedding_lookup(
    embedding, source), lengths, dtype=tf.float32)
memory, state, tiled = seq2seq.tile_batch((memory, state, lengths), 2)
cell = seq2seq.AttentionWrapper(rnn_cell.GRUCell(8), seq2seq.BahdanauAttention(
    8, memory, tiled), attention_layer_size=8)
batch = tf.shape(source)[0]
decoder = seq2seq.BeamSearchDecoder(
    cell, embedding, tf.fill([batch], 1), 0,
    cell.zero_state(2 * batch, tf.float32).clone(cell_state=state), 2,
    output_layer=tf1.Dense(7))
outputs = seq2seq.dynamic_decode(decoder, maximum_iterations=4)[0]
ids = [tf.placeholder(tf.int32, [None]) for _ in range(3)]
logits, _ = legacy_seq2seq.embedding_attention_seq2seq(
    ids, ids, rnn_cell.GRUCell(5), 7, 7, 4, num_heads=2,
    feed_previous=tf.placeholder_with_default(False, []))
loss = legacy_seq2seq.sequence_loss(logits, ids, [tf.ones(tf.shape(ids[0]))] * 3)
with tf.Session() as session:
    session.run(tf.global_variables_initializer())
    fed = {source: np.ones((3, 5)), lengths: [5, 2, 4]}
    found = session.run(outputs.predicted_ids, fed)
    feed = dict(zip(ids, np.ones((3, 2), np.int32)))
    assert np.isfinite(session.run(loss, feed))
print(found.shape[0], found.shape[2])
"""


@pytest.mark.slow  # a TensorFlow process of its own: disable_v2_behavior is for a process
def test_seq2seq_builds_and_runs_under_tf1_behaviour(tmp_path):
    program = tmp_path / "program.py"
    program.write_text(TF1_BEHAVIOUR_PROGRAM)
    done = subprocess.run([sys.executable, str(program)], capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["3", "2"]
