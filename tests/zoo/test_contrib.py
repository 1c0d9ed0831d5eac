"""zoo.compat.contrib: tf.contrib under install(), as attribute and module path, TF
1.15's names mapped to tf-slim, tf.data.experimental and ours, and the errors for
what is not mapped."""

import importlib
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_slim

import zoo.compat
from layers.errors import ZooError
from tests.zoo.test_compat import uninstalled  # noqa: F401  (autouse: nothing installed)
from zoo.compat import contrib
from zoo.compat.contrib import ContribError, ContribModule
from zoo.compat.contrib.names import NAMES
from zoo.compat.namespaces import v1_namespaces

v1 = tf.compat.v1


def contrib_modules():
    return sorted(name for name in sys.modules if name.startswith("tensorflow.contrib"))


def test_install_adds_tf_contrib_everywhere_once_and_uninstall_removes_it():
    assert contrib_modules() == [] and not hasattr(tf, "contrib")
    changed = zoo.compat.install()
    assert {"tensorflow.contrib", "sys.modules['tensorflow.contrib.rnn']"} <= set(changed)
    assert len(set(changed)) == len(changed)
    assert zoo.compat.install() == []
    namespaces = [tf, *v1_namespaces()]
    assert all(ns.contrib is sys.modules["tensorflow.contrib"] for ns in namespaces)
    assert set(contrib_modules()) >= {f"tensorflow.contrib.{m}" for m in contrib.SOURCES}
    zoo.compat.uninstall()
    assert contrib_modules() == []
    assert not any(hasattr(ns, "contrib") for ns in namespaces)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("tensorflow.contrib")


def test_module_paths_reach_tf_slim_and_ours():
    zoo.compat.install()
    import tensorflow.contrib.slim as slim
    from tensorflow.contrib import framework, layers
    from tensorflow.contrib.seq2seq.python.ops import attention_wrapper
    from tensorflow.contrib.training import HParams
    from tensorflow.contrib.training.python.training import hparam

    assert hparam.HParams is HParams  # cloudml-samples' Keras trainers import it so
    assert slim.conv2d is tf_slim.conv2d and slim.arg_scope is tf_slim.arg_scope
    assert layers.layer_norm is tf_slim.layer_norm
    assert layers.xavier_initializer is tf_slim.xavier_initializer
    assert framework.nest.map_structure is tf.nest.map_structure
    assert framework.add_arg_scope is tf_slim.add_arg_scope
    assert framework.list_variables is v1.train.list_variables
    assert HParams is contrib.training.HParams
    slim_training = importlib.import_module("tf_slim.training.training")
    assert tf.contrib.training.create_train_op is slim_training.create_train_op
    assert v1.contrib.data.map_and_batch is tf.data.experimental.map_and_batch
    assert tf.contrib.learn.ModeKeys.INFER == "infer"
    assert (
        attention_wrapper
        is sys.modules["tensorflow.contrib.seq2seq.python.ops.attention_wrapper"]
    )
    from tensorflow.contrib.slim.nets import resnet_v1

    assert resnet_v1 is importlib.import_module("tf_slim.nets.resnet_v1")
    assert {"LSTMCell", "MultiRNNCell", "static_bidirectional_rnn"} <= set(
        dir(tf.contrib.rnn)
    )


@pytest.mark.parametrize(
    "name, source",
    [
        ("rnn.LSTMCell", "layers.tf1.rnn_cell"),
        ("rnn.MultiRNNCell", "layers.tf1.rnn_cell"),
        ("rnn.stack_bidirectional_dynamic_rnn", "layers.tf1.rnn"),
        ("seq2seq.BeamSearchDecoder", "layers.tf1.seq2seq"),
        ("seq2seq.python.ops.attention_wrapper.AttentionWrapper", "layers.tf1.seq2seq"),
        ("legacy_seq2seq.sequence_loss_by_example", "layers.tf1.legacy_seq2seq"),
        ("tpu.TPUEstimator", "zoo.compat.estimator.tpu"),
    ],
)
def test_cells_decoders_and_tpu_come_from_their_modules(name, source):
    module = pytest.importorskip(source, reason="its branch is not merged yet")
    zoo.compat.install()
    path, _, attribute = name.rpartition(".")
    found = sys.modules[f"tensorflow.contrib.{path}"]
    assert getattr(found, attribute) is getattr(module, attribute)


def contrib_layers_net(x, reuse=None):
    """A TF1 program on tf.contrib.layers as people wrote it (BERT's layer_norm,
    a VAE's initializers, a DCGAN's batch_norm under arg_scope)."""
    layers = tf.contrib.layers
    with v1.variable_scope("net", reuse=reuse):
        with tf.contrib.framework.arg_scope(
            [layers.fully_connected],
            weights_initializer=layers.xavier_initializer(),
            weights_regularizer=layers.l2_regularizer(0.01),
        ):
            h = layers.fully_connected(x, 6, scope="fc1")
            h = layers.batch_norm(h, is_training=True, scope="bn")
            h = layers.fully_connected(h, 5, activation_fn=None, scope="fc2")
        return layers.layer_norm(h, begin_norm_axis=-1, begin_params_axis=-1, scope="ln")


def test_a_contrib_layers_program_has_tf1_names_shares_and_normalizes(graph):
    zoo.compat.install()
    x = v1.placeholder(tf.float32, [4, 3])
    y = contrib_layers_net(x)
    names = sorted(v.op.name for v in v1.trainable_variables())
    assert names == [
        "net/bn/beta",
        "net/fc1/biases",
        "net/fc1/weights",
        "net/fc2/biases",
        "net/fc2/weights",
        "net/ln/beta",
        "net/ln/gamma",
    ]
    assert len(v1.losses.get_regularization_losses()) == 2
    count = len(v1.global_variables())
    y_again = contrib_layers_net(x, reuse=True)
    assert len(v1.global_variables()) == count
    feed = np.random.default_rng(0).standard_normal((4, 3))
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        value, again = sess.run([y, y_again], {x: feed})
    # gamma 1, beta 0 at init: layer_norm is (h - mean) / sqrt(var + 1e-12) per row
    np.testing.assert_allclose(value.mean(-1), 0, atol=1e-5)
    np.testing.assert_allclose(value.std(-1), 1, atol=1e-3)
    np.testing.assert_allclose(value, again, rtol=1e-5)


@pytest.mark.parametrize(
    "name, words",
    [
        ("tf.contrib.rnn.Foo", "TF 1.15's tensorflow.contrib.rnn, found 'Foo', which "
         "TF 1.15 never had there"),
        ("tf.contrib.layers.layer_nrom", "never had there; did you mean layer_norm?"),
        ("tf.contrib.layers.real_valued_column", "found TF 1.15's tensorflow.contrib."
         "layers.real_valued_column, which it does not provide; use tf.feature_column."
         "numeric_column"),
        ("tf.contrib.distributions", "found TF 1.15's tensorflow.contrib.distributions, "
         "which it does not map; use tensorflow_probability.distributions"),
        ("tf.contrib.nope", "found 'nope', which TF 1.15 never had there"),
        ("tf.contrib.boosted_trees", "found TF 1.15's tensorflow.contrib.boosted_trees, "
         "which it does not map; use the tensorflow_decision_forests package"),
        ("tf.contrib.nccl", "tensorflow.contrib.nccl, which it does not map; use tf."),
        ("tf.contrib.data.sliding_window_batch", "use dataset.window(size, shift)"),
    ],
)  # fmt: skip
def test_what_is_not_mapped_names_tf_1_15s_module_and_the_replacement(name, words):
    zoo.compat.install()
    with pytest.raises(ContribError, match=f"^{name.replace('.', '[.]')}: expected") as err:
        eval(name)
    assert words in str(err.value)


def test_imports_of_what_is_not_mapped_raise_the_same_error():
    zoo.compat.install()
    assert not hasattr(tf.contrib.rnn, "Bar") and getattr(tf.contrib, "gan", 1) == 1
    with pytest.raises(ContribError, match="tensorflow.contrib.gan, which it does not map"):
        import tensorflow.contrib.gan  # noqa: F401
    with pytest.raises(ContribError, match="found 'Bar', which TF 1.15 never had"):
        from tensorflow.contrib.rnn import Bar  # noqa: F401
    with pytest.raises(ContribError, match=r"expected one of \['ops'\]"):
        import tensorflow.contrib.rnn.python.kernels  # noqa: F401


def test_a_missing_provider_is_named_with_its_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "tf_slim", None)  # as if tf-slim were not installed
    layers = ContribModule("layers", contrib.SOURCES["layers"], NAMES["layers"])
    with pytest.raises(
        ContribError, match="expected module tf_slim .*; pip install tf-slim"
    ):
        _ = layers.layer_norm
    rnn = ContribModule("rnn", ("layers.tf1.no_such_module",), NAMES["rnn"])
    with pytest.raises(ContribError, match="expected module layers.tf1.no_such_module"):
        _ = rnn.LSTMCell


def test_embed_sequence_and_bow_encoder_as_tf_1_15_named_and_computed_them(graph):
    zoo.compat.install()
    layers = tf.contrib.layers
    ids = np.array([[1, 4, 4, 0], [2, 0, 0, 0]])
    embedded = layers.embed_sequence(ids, vocab_size=5, embed_dim=3, scope="embed")
    unique = layers.embed_sequence(ids[::-1], unique=True, scope="embed", reuse=True)
    bow = layers.bow_encoder(ids, 5, 3)
    dense_bow = layers.bow_encoder(ids, 5, 3, sparse_lookup=False, scope="bow_encoder",
                                   reuse=True)  # fmt: skip
    layers.embed_sequence(ids, 5, 3)
    model_variables = v1.get_collection(v1.GraphKeys.MODEL_VARIABLES)
    names = [v.op.name for v in model_variables]
    assert names == [
        "embed/embeddings",
        "bow_encoder/embeddings",
        "EmbedSequence/embeddings",
    ]
    assert v1.trainable_variables() == model_variables
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        table, bow_table, _ = sess.run(model_variables)
        found = sess.run([embedded, unique, bow, dense_bow])
    np.testing.assert_allclose(found[0], table[ids], rtol=1e-6)
    np.testing.assert_allclose(found[1], table[ids[::-1]], rtol=1e-6)
    kept = [bow_table[row[row > 0]].mean(0) for row in ids]  # sparse: id 0 is padding
    np.testing.assert_allclose(found[2], kept, rtol=1e-5)
    np.testing.assert_allclose(found[3], bow_table[ids].mean(1), rtol=1e-5)
    with pytest.raises(ZooError, match="^embed_sequence: Must specify vocab size .* "
                       "Got vocab_size=5 and embed_dim=None"):  # fmt: skip
        layers.embed_sequence(ids, vocab_size=5)


@pytest.mark.parametrize(
    "options",
    [{}, {"use_peephole": True, "cell_clip": 0.3, "forget_bias": 0.5}],
    ids=["default", "peephole_clip"],
)
def test_lstm_block_cell_equals_tensorflows_fused_kernel(graph, options):
    pytest.importorskip("layers.tf1.rnn_cell", reason="its branch is not merged yet")
    zoo.compat.install()
    rng = np.random.default_rng(3)
    x, c, h = (rng.standard_normal((2, n)).astype(np.float32) for n in (3, 4, 4))
    cell = tf.contrib.rnn.LSTMBlockCell(4, **options)
    init = v1.random_normal_initializer(0.0, 0.5)
    with v1.variable_scope("rnn", initializer=init):
        output, state = cell(x, tf.contrib.rnn.LSTMStateTuple(c, h))
    found = {v.op.name: v for v in v1.trainable_variables()}
    peepholes = options.get("use_peephole", False)
    assert sorted(found) == sorted(
        ["rnn/lstm_cell/kernel", "rnn/lstm_cell/bias"]
        + [f"rnn/lstm_cell/w_{g}_diag" for g in "ifo" if peepholes]
    )
    diag = [found.get(f"rnn/lstm_cell/w_{g}_diag", tf.zeros([4])) for g in "ifo"]
    fused = tf.raw_ops.LSTMBlockCell(
        x=x, cs_prev=c, h_prev=h, w=found["rnn/lstm_cell/kernel"], wci=diag[0],
        wcf=diag[1], wco=diag[2], b=found["rnn/lstm_cell/bias"],
        forget_bias=options.get("forget_bias", 1.0),
        cell_clip=options.get("cell_clip", -1.0), use_peephole=peepholes,
    )  # fmt: skip
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        ours, reference = sess.run([(output, state.c), (fused.h, fused.cs)])
    np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-6)
