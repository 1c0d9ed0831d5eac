"""layers.tf1.rnn_cell and layers.tf1.rnn: TF 1.15's RNN cells on get_variable, against
TensorFlow's legacy cells (tf_keras, in one subprocess) and numpy."""

import numpy as np
import pytest
import tensorflow as tf

import zoo
import zoo.compat
from layers.errors import EagerError, ShapeError, ZooError
from layers.tf1 import rnn, rnn_cell
from tests import tf1_programs, tf1_rnn_programs
from tests.conftest import LEGACY_REFERENCE, variable_names

v1 = tf.compat.v1


@pytest.fixture(scope="session")
def legacy_rnn_reference(legacy_files):
    """What TensorFlow's legacy cells compute (``tests/tf1_rnn_programs.py``, in the
    tests' one ``tf_keras`` subprocess): ``{key: array}``."""
    return dict(np.load(legacy_files["rnn_cell"]))


@LEGACY_REFERENCE
@pytest.mark.parametrize("program", sorted(tf1_rnn_programs.PROGRAMS))
def test_equal_to_tensorflow_legacy_cells_on_the_same_weights(
    legacy_rnn_reference, program
):
    expected = tf1_programs.unflat(legacy_rnn_reference, program)
    found = tf1_programs.run(tf1_rnn_programs.PROGRAMS[program], rnn_cell,
                             expected["variables"])  # fmt: skip
    assert sorted(found["variables"]) == sorted(expected["variables"])
    assert sorted(found["outputs"]) == sorted(expected["outputs"])
    for name, value in expected["outputs"].items():
        np.testing.assert_allclose(found["outputs"][name], value, rtol=1e-5, atol=1e-5)


@LEGACY_REFERENCE
@pytest.mark.parametrize("name", tf1_rnn_programs.CELLS)
def test_parameters_are_tensorflow_1_15s(legacy_rnn_reference, name):
    expected = list(legacy_rnn_reference[f"parameters|{name}|"])
    assert tf1_programs.parameters(getattr(rnn_cell, name)) == expected


@pytest.fixture(params=["tf2_graph", "tf1_behavior"])
def behavior(request):
    """TensorFlow 2's graph mode, or what ``disable_v2_behavior`` (in TF1 programs)
    changes that the cells meet: v1 while loops, reference variables, ``Dimension``
    shapes; put back after the test."""
    if request.param == "tf2_graph":
        yield request.param
        return
    assert v1.control_flow_v2_enabled() and v1.resource_variables_enabled()
    v1.disable_control_flow_v2()
    v1.disable_resource_variables()
    v1.disable_v2_tensorshape()
    try:
        yield request.param
    finally:
        v1.enable_control_flow_v2()
        v1.enable_resource_variables()
        v1.enable_v2_tensorshape()


def lstm_language_model(x, scope, reuse=None):
    with v1.variable_scope(scope, reuse=reuse):
        cells = [rnn_cell.BasicLSTMCell(4) for _ in range(2)]
        outputs, _ = v1.nn.dynamic_rnn(rnn_cell.MultiRNNCell(cells), x, dtype=tf.float32)
    return outputs


def test_variable_names_are_tensorflow_1_15s_and_reuse_shares_them(behavior, graph):
    x = v1.placeholder(tf.float32, [2, 3, 5])
    first = lstm_language_model(x, "lm")
    names = variable_names()
    again = lstm_language_model(2 * x, "lm", reuse=True)
    assert names == [
        "lm/rnn/multi_rnn_cell/cell_0/basic_lstm_cell/bias",
        "lm/rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel",
        "lm/rnn/multi_rnn_cell/cell_1/basic_lstm_cell/bias",
        "lm/rnn/multi_rnn_cell/cell_1/basic_lstm_cell/kernel",
    ]
    assert variable_names() == names
    kernel = v1.global_variables()[0]
    assert all(tf.gradients(y, kernel)[0] is not None for y in (first, again))
    with pytest.raises(ZooError, match="multi_rnn_cell/cell_0/basic_lstm_cell/kernel yet"):
        lstm_language_model(x, "lm")  # exists, reuse off


def test_a_cell_object_shares_its_variables_and_reports_them(graph):
    x = v1.placeholder(tf.float32, [2, 3, 5])
    cell = rnn_cell.LSTMCell(4, use_peepholes=True, num_proj=3)
    v1.nn.dynamic_rnn(cell, x, dtype=tf.float32, scope="encoder")
    count = len(v1.global_variables())
    v1.nn.static_rnn(cell, tf.unstack(x, axis=1), dtype=tf.float32, scope="encoder")
    assert len(v1.global_variables()) == count == 6
    assert [v.op.name for v in cell.trainable_weights] == [
        f"encoder/lstm_cell/{name}"
        for name in ("kernel", "bias", "w_f_diag", "w_i_diag", "w_o_diag",
                     "projection/kernel")
    ]  # fmt: skip
    wrapped = rnn_cell.DropoutWrapper(cell, output_keep_prob=0.5)
    assert wrapped.weights == cell.weights and wrapped.state_size == cell.state_size


def test_the_same_cell_object_in_a_second_layer_is_refused_with_the_fix(behavior, graph):
    x = v1.placeholder(tf.float32, [2, 3, 5])
    cell = rnn_cell.BasicLSTMCell(4)
    with pytest.raises(ShapeError) as error:
        v1.nn.dynamic_rnn(rnn_cell.MultiRNNCell([cell] * 2), x, dtype=tf.float32)
    assert str(error.value).startswith(
        "rnn/multi_rnn_cell/cell_0/basic_lstm_cell (BasicLSTMCell): expected inputs of "
        "depth 5, as on its first call, found depth 4 in scope 'rnn/multi_rnn_cell/cell_1'"
    )
    assert "MultiRNNCell([BasicLSTMCell(n) for _ in range(layers)])" in str(error.value)


def test_a_state_of_the_wrong_structure_names_the_cell_and_both_structures(graph):
    x = v1.placeholder(tf.float32, [2, 5])
    cell = rnn_cell.GRUCell(3)
    with v1.variable_scope("decoder"), pytest.raises(ZooError) as error:
        cell(x, rnn_cell.LSTMStateTuple(tf.zeros([2, 3]), tf.zeros([2, 3])))
    assert str(error.value) == (
        "decoder/gru_cell (GRUCell): expected a state of the structure of its "
        "state_size, 3, found LSTMStateTuple(c=TensorShape([2, 3]), "
        "h=TensorShape([2, 3])); pass cell.zero_state(batch_size, dtype), or the state "
        "this cell returned"
    )
    stacked = rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(3), rnn_cell.GRUCell(2)])
    with pytest.raises(
        ZooError,
        match=r"multi_rnn_cell \(MultiRNNCell\): expected a "
        r"state of the structure of its state_size, \(LSTMStateTuple",
    ):
        stacked(x, stacked.zero_state(2, tf.float32)[0])  # fmt: skip


def test_multi_rnn_cell_reads_state_size_first_when_its_state_is_needed(graph):
    """TF 1.15 stacks cells without asking their state_size (but to check
    ``state_is_tuple=False``): a cell that cannot say it fails where the state is made."""

    class Unsized(rnn_cell.RNNCell):  # a subclass that forgot state_size
        output_size = 2

    stacked = rnn_cell.MultiRNNCell([Unsized(), rnn_cell.GRUCell(2)])
    with pytest.raises(NotImplementedError, match="state_size"):
        stacked.zero_state(3, tf.float32)
    with pytest.raises(NotImplementedError, match="state_size"):
        rnn_cell.MultiRNNCell([Unsized()], state_is_tuple=False)


def test_bad_arguments_are_refused_with_the_value_and_the_fix(graph):
    cases = [
        (lambda: rnn_cell.BasicLSTMCell(0), "basic_lstm_cell: expected num_units to be "
         "an int >= 1, found 0"),
        (lambda: rnn_cell.MultiRNNCell([]), "multi_rnn_cell: expected a non-empty list "
         "of cells, found []"),
        (lambda: rnn_cell.DropoutWrapper(rnn_cell.GRUCell(2), output_keep_prob=1.5),
         "dropout_wrapper: expected output_keep_prob to be"),
        (lambda: rnn_cell.DropoutWrapper(rnn_cell.GRUCell(2), variational_recurrent=True),
         "dropout_wrapper: expected dtype with variational_recurrent=True, found None"),
        (lambda: rnn_cell.LSTMCell(4, num_unit_shards=2), "lstm_cell: expected no "
         "['num_unit_shards']"),
        (lambda: rnn_cell.ResidualWrapper("lstm"), "residual_wrapper: expected an RNN "
         "cell, found 'lstm' without"),
    ]  # fmt: skip
    for make, message in cases:
        with pytest.raises(ZooError) as error:
            make()
        assert str(error.value).startswith(message)


def test_layer_norm_basic_lstm_cell_is_the_math_of_ba_et_al(graph):
    x = v1.placeholder(tf.float32, [3, 4])
    c, h = (v1.placeholder(tf.float32, [3, 5]) for _ in range(2))
    cell = rnn_cell.LayerNormBasicLSTMCell(5, 0.5, norm_gain=1.5, norm_shift=0.2)
    output, state = cell(x, rnn_cell.LSTMStateTuple(c, h))
    assert variable_names() == sorted(
        ["layer_norm_basic_lstm_cell/kernel"] + [
            f"layer_norm_basic_lstm_cell/{part}/{name}"
            for part in ("input", "transform", "forget", "output", "state")
            for name in ("gamma", "beta")
        ]
    )  # fmt: skip
    rng = np.random.default_rng(3)
    fx, fc, fh = (rng.standard_normal(p.shape).astype(np.float32) for p in (x, c, h))
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        kernel = session.run(cell.weights[0])
        found = session.run([output, state.c], {x: fx, c: fc, h: fh})

    def norm(v):
        return 1.5 * (v - v.mean(1, keepdims=True)) / np.sqrt(v.var(1, keepdims=True)) + 0.2

    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    i, j, f, o = (norm(g) for g in np.split(np.concatenate([fx, fh], 1) @ kernel, 4, 1))
    new_c = norm(fc * sigmoid(f + 0.5) + sigmoid(i) * np.tanh(j))
    np.testing.assert_allclose(found[1], new_c, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(found[0], np.tanh(new_c) * sigmoid(o), rtol=1e-5, atol=1e-5)


def test_stacked_bidirectional_rnns_are_layers_of_tensorflows_bidirectional_rnns(graph):
    x = v1.placeholder(tf.float32, [2, 4, 3])
    lstms = [[rnn_cell.LSTMCell(n) for n in (3, 2)] for _ in range(2)]
    outputs, states_fw, states_bw = rnn.stack_bidirectional_dynamic_rnn(
        *lstms, x, dtype=tf.float32
    )
    static, _, _ = rnn.stack_bidirectional_rnn(
        *[[rnn_cell.GRUCell(2)] for _ in range(2)], tf.unstack(x, axis=1), dtype=tf.float32
    )  # fmt: skip
    names = variable_names()
    assert "stack_bidirectional_rnn/cell_1/bidirectional_rnn/bw/lstm_cell/kernel" in names
    assert "stack_bidirectional_rnn/cell_0/bw/gru_cell/gates/kernel" in names
    assert len(states_fw) == len(states_bw) == 2 and len(static) == 4
    layer_inputs = x
    with v1.variable_scope("stack_bidirectional_rnn", reuse=True):
        for i, n in enumerate((3, 2)):
            with v1.variable_scope(f"cell_{i}"):
                both, _ = v1.nn.bidirectional_dynamic_rnn(
                    rnn_cell.LSTMCell(n), rnn_cell.LSTMCell(n), layer_inputs,
                    dtype=tf.float32,
                )  # fmt: skip
            layer_inputs = tf.concat(both, 2)
    assert variable_names() == names
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        feed = {x: np.random.default_rng(4).standard_normal([2, 4, 3])}
        found, expected = session.run([outputs, layer_inputs], feed)
    assert found.shape == (2, 4, 4)
    np.testing.assert_allclose(found, expected, rtol=1e-6)
    with pytest.raises(
        ZooError,
        match="stack_bidirectional_rnn: expected as many "
        "backward cells as forward ones, found 2 forward and 1 backward",
    ):
        rnn.stack_bidirectional_dynamic_rnn(lstms[0], lstms[1][:1], x, dtype=tf.float32)


def test_install_makes_compat_v1_rnn_cell_this_module_and_uninstall_puts_it_back():
    import tensorflow.compat.v1 as tf_v1  # noqa: PLC0415  (as TF1 programs import it)

    before = tf_v1.nn.rnn_cell
    with zoo.compat.installed() as changed:
        assert tf_v1.nn.rnn_cell is rnn_cell and tf.compat.v1.nn.rnn_cell is rnn_cell
        assert any(name.endswith("nn.rnn_cell") for name in changed)
        with tf.Graph().as_default():
            x = v1.placeholder(tf.float32, [2, 3, 5])
            cell = tf_v1.nn.rnn_cell.MultiRNNCell(
                [tf_v1.nn.rnn_cell.DropoutWrapper(tf_v1.nn.rnn_cell.LSTMCell(4))]
            )
            tf_v1.nn.dynamic_rnn(cell, x, dtype=tf.float32)
            assert variable_names()[0] == "rnn/multi_rnn_cell/cell_0/lstm_cell/bias"
    assert tf_v1.nn.rnn_cell is before


def test_cells_run_eagerly_inside_a_sharing_template():
    def encoder(x):
        cell = rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(4) for _ in range(2)])
        return v1.nn.dynamic_rnn(cell, x, dtype=tf.float32)[0]

    shared = zoo.share(encoder, "encoder")
    x = tf.constant(np.random.default_rng(5).standard_normal([2, 3, 5]), tf.float32)
    first, doubled, again = shared(x), shared(2 * x), shared(x)
    np.testing.assert_array_equal(first.numpy(), again.numpy())
    assert not np.allclose(first.numpy(), doubled.numpy())
    assert sorted(v.name for v in shared.variables) == [
        f"encoder/rnn/multi_rnn_cell/cell_{i}/basic_lstm_cell/{w}:0"
        for i in range(2)
        for w in ("bias", "kernel")
    ]


def test_plain_eager_execution_is_refused():
    with pytest.raises(EagerError, match="gru_cell: expected a graph"):
        rnn_cell.GRUCell(3)(tf.ones([2, 4]), tf.zeros([2, 3]))
