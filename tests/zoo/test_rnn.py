"""The row-by-row GRU: one cell read at every step, the per-step ablation, the GRU
against numpy, errors, eager, and what the inspector prints."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from layers import ScopeError, ShapeError
from zoo import share
from zoo.__main__ import main
from zoo.models import gru_step, rnn_classifier
from zoo.sharing.inspect import describe_readers, inspect_model, readers

v1 = tf.compat.v1
_scopes = itertools.count()
CELL = ["candidate/W", "candidate/b", "gates/W", "gates/b"]


def names():
    return sorted(v.op.name for v in v1.global_variables())


def placeholders(width=784):
    return v1.placeholder(tf.float32, [None, width]), v1.placeholder(tf.float32, [None, 10])


def test_shared_cell_is_four_variables_read_at_every_step(graph):
    net = rnn_classifier(*placeholders(), n_hidden=8)
    assert names() == sorted([*(f"rnn/cell/{n}" for n in CELL), "rnn/W_RO", "rnn/b_RO"])
    assert len(net.steps) == len(net.states) == 28
    first = net.steps[0]
    assert all(step.params == first.params for step in net.steps)
    gates_w = first.gates.w
    assert gates_w.shape.as_list() == [28 + 8, 16]
    assert sorted(readers(gates_w)) == [
        f"rnn/step_{t:02d}/cell/gates/MatMul" for t in range(1, 29)
    ]
    assert readers(net.readout.w) == ("rnn/MatMul",)


def test_reuse_creates_nothing(graph):
    x, y = placeholders()
    net = rnn_classifier(x, y, n_hidden=8)
    again = rnn_classifier(x, y, scope="rnn", reuse=True, n_hidden=8)
    assert len(names()) == 6
    assert again.steps[5].candidate.w is net.steps[0].candidate.w
    with pytest.raises(ScopeError, match="rnn/cell/gates/W yet \\(reuse=False\\)"):
        rnn_classifier(x, y, n_hidden=8)


def test_per_step_cells_are_28_separate_sets(graph):
    net = rnn_classifier(*placeholders(), n_hidden=8, shared=False)
    expected = [f"rnn/cell_{t:02d}/{n}" for t in range(1, 29) for n in CELL]
    assert names() == sorted([*expected, "rnn/W_RO", "rnn/b_RO"])
    weights = [step.gates.w for step in net.steps]
    assert len({id(w) for w in weights}) == 28
    assert all(len(readers(v)) == 1 for v in v1.global_variables())
    cell = sum(np.prod(v.shape) for v in net.steps[0].params)
    total = sum(np.prod(v.shape) for v in v1.trainable_variables())
    assert total == 28 * cell + 8 * 10 + 10


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def numpy_gru(x, h, gates_w, gates_b, candidate_w, candidate_b):
    """Cho et al.'s GRU as TensorFlow's GRUCell computes it."""
    r, z = np.split(sigmoid(np.concatenate([x, h], 1) @ gates_w + gates_b), 2, axis=1)
    c = np.tanh(np.concatenate([x, r * h], 1) @ candidate_w + candidate_b)
    return z * h + (1 - z) * c


def randomize(session, rng):
    """Sets every variable to random values (the gate bias starts at 1 otherwise)."""
    for v in v1.global_variables():
        v.load(rng.normal(0, 0.5, v.shape.as_list()).astype(np.float32), session)


def test_gru_step_matches_numpy(graph):
    x, h = v1.placeholder(tf.float32, [None, 3]), v1.placeholder(tf.float32, [None, 4])
    with v1.variable_scope("cell"):
        step = gru_step(x, h, 3, 4)
    rng = np.random.default_rng(0)
    xv, hv = rng.normal(size=(5, 3)), rng.normal(size=(5, 4))
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        assert session.run(step.gates.b).tolist() == [1.0] * 8
        randomize(session, rng)
        state, params = session.run([step.state, step.params], {x: xv, h: hv})
    np.testing.assert_allclose(state, numpy_gru(xv, hv, *params), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shared", [True, False])
def test_classifier_unrolls_like_numpy(graph, shared):
    x, y = placeholders(width=12)
    net = rnn_classifier(x, y, n_hidden=4, n_steps=3, shared=shared)
    rng = np.random.default_rng(1)
    xv = rng.random((5, 12))
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        randomize(session, rng)
        logits, cells, readout = session.run(
            [net.logits, [s.params for s in net.steps], net.readout.params], {x: xv}
        )
    h = np.zeros((5, 4))
    for t, params in enumerate(cells):
        h = numpy_gru(xv[:, 4 * t : 4 * t + 4], h, *params)
    np.testing.assert_allclose(logits, h @ readout[0] + readout[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"n_hidden": 0}, "rnn: expected n_hidden to be a positive int, found 0"),
        ({"n_steps": 27}, "rnn: expected n_steps, a positive int that divides the 784 "
         "pixels of an image into rows, found n_steps=27"),
        ({"n_steps": 0}, "found n_steps=0"),
        ({"n_steps": 2.0}, "found n_steps=2.0"),
    ],
)  # fmt: skip
def test_sizes_that_do_not_fit_name_the_scope_before_any_variable(graph, kwargs, message):
    with pytest.raises(ShapeError, match=message):
        rnn_classifier(*placeholders(), **kwargs)
    assert v1.global_variables() == []


def test_eager_share_builds_the_cell_once():
    model = share(rnn_classifier, f"rnn{next(_scopes)}", n_hidden=4, n_steps=4)
    rng = np.random.default_rng(0)
    x = tf.constant(rng.random((3, 8), dtype=np.float32))
    y = tf.constant(np.eye(10, dtype=np.float32)[[1, 2, 3]])
    first = model(x, y)
    second = model(x, y)
    assert len(model.variables) == 6
    np.testing.assert_allclose(second.logits, first.logits)


def test_inspect_folds_the_28_readers_of_each_cell_variable(tmp_path, capsys):
    rows, _ = inspect_model("rnn_classifier", n_hidden=8)
    table = {row.name: row for row in rows}
    assert len(table) == 6 and len(table["rnn/cell/gates/W"].readers) == 28
    assert main(["inspect", "rnn_classifier", "--logdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "28 readers: rnn/step_{01..28}/cell/gates/MatMul" in out
    assert "28 readers: rnn/step_{01..28}/cell/candidate/BiasAdd" in out
    assert "total: 6 variables" in out


def test_describe_readers():
    assert describe_readers(()) == "-"
    assert describe_readers(("a/MatMul", "b/MatMul")) == "a/MatMul, b/MatMul"
    many = [f"s_{t}/MatMul" for t in (3, 1, 2, 4)] + ["other/Add"]
    assert describe_readers(many) == "5 readers: other/Add, s_{1..4}/MatMul"
    gaps = [f"s_{t}/MatMul" for t in (1, 3, 5, 7)]
    assert describe_readers(gaps) == "4 readers: s_{1,3,5,7}/MatMul"
