"""The sharing inspector: variables by scope, readers of tied weights, checkpoints, CLI."""

import os

import pytest
import tensorflow as tf

from layers import DataError, ZooError
from zoo.__main__ import main
from zoo.sharing.inspect import format_table, inspect_checkpoint, inspect_model

v1 = tf.compat.v1


def by_name(rows):
    return {row.name: row for row in rows}


def test_tied_autoencoder_has_no_decoder_w_and_two_readers_of_encoder_w():
    rows, _ = inspect_model("autoencoder", tied=True, n_hidden=8)
    table = by_name(rows)
    assert list(table) == ["ae/decoder/b", "ae/encoder/W", "ae/encoder/b"]
    w = table["ae/encoder/W"]
    assert (w.shape, w.dtype, w.parameters, w.trainable) == (
        [784, 8],
        "float32",
        6272,
        True,
    )
    assert w.readers == ("ae/encoder/MatMul", "ae/decoder/MatMul")
    assert table["ae/decoder/b"].readers == ("ae/decoder/BiasAdd",)


def test_untied_autoencoder_reads_each_weight_once():
    rows, _ = inspect_model("autoencoder", tied=False, n_hidden=8)
    table = by_name(rows)
    assert table["ae/decoder/W"].shape == [8, 784]
    assert all(len(row.readers) == 1 for row in rows) and len(rows) == 4


def test_format_table_groups_by_scope_with_totals():
    rows, _ = inspect_model("autoencoder", tied=True, n_hidden=8)
    lines = format_table(rows).splitlines()
    assert lines[0].split() == [
        "name",
        "shape",
        "dtype",
        "parameters",
        "trainable",
        "readers",
    ]
    assert lines[1].split() == ["[ae/decoder]", "784"]
    assert lines[3].split() == ["[ae/encoder]", f"{784 * 8 + 8:,}"]
    assert "ae/encoder/MatMul, ae/decoder/MatMul" in lines[4]
    assert lines[-1].split() == ["total:", "3", "variables", f"{784 * 8 + 8 + 784:,}"]


def test_mlp_classifier_gets_x_and_y_placeholders():
    rows, graph = inspect_model("mlp_classifier", hidden=(16,))
    assert [row.name for row in rows] == [
        "mlp/W_RO",
        "mlp/W_hid_1",
        "mlp/b_RO",
        "mlp/b_hid_1",
    ]
    assert graph.get_tensor_by_name("y:0").shape.as_list() == [None, 10]


def test_checkpoint_rows_take_trainable_and_readers_from_the_model(tmp_path):
    rows, graph = inspect_model("autoencoder", tied=True, n_hidden=8)
    with graph.as_default():
        loss = graph.get_tensor_by_name("ae/loss:0")
        v1.train.AdagradOptimizer(0.1).minimize(loss)
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            v1.train.Saver().save(session, str(tmp_path / "model.ckpt"))
    table = by_name(inspect_checkpoint(str(tmp_path), rows))
    assert table["ae/encoder/W"].readers == ("ae/encoder/MatMul", "ae/decoder/MatMul")
    assert table["ae/encoder/W/Adagrad"].trainable is None
    assert table["ae/encoder/W/Adagrad"].shape == [784, 8]
    assert "ae/decoder/W" not in table


def test_cli_prints_the_table_and_writes_the_graph(tmp_path, capsys):
    logdir = str(tmp_path / "graph")
    assert main(["inspect", "autoencoder", "--tied", "--logdir", logdir]) == 0
    out = capsys.readouterr().out
    assert "ae/encoder/MatMul, ae/decoder/MatMul" in out and "total: 3 variables" in out
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(logdir))


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["inspect", "resnet", "--logdir", str(tmp_path)]) == 2
    assert "Name of model unknown: 'resnet'" in capsys.readouterr().err
    assert main(["inspect", "mlp_classifier", "--tied", "--logdir", str(tmp_path)]) == 2
    assert "mlp_classifier: expected no tied argument" in capsys.readouterr().err


def test_inspect_errors():
    with pytest.raises(ZooError, match="drop --tied for this model"):
        inspect_model("mlp_classifier", tied=True)
    with pytest.raises(DataError, match="expected a TensorFlow checkpoint"):
        inspect_checkpoint("/nonexistent/model.ckpt")


def test_tied_conv_autoencoder_one_kernel_two_readers(tmp_path, capsys):
    logdir = str(tmp_path / "graph")
    assert main(["inspect", "conv_autoencoder", "--tied", "--logdir", logdir]) == 0
    out = capsys.readouterr().out
    assert "conv_ae/encoder/Conv2D, conv_ae/decoder/conv2d_transpose" in out
    assert "total: 3 variables" in out
    rows, _ = inspect_model("conv_autoencoder", tied=False)
    assert sorted(by_name(rows)) == [
        "conv_ae/decoder/W",
        "conv_ae/decoder/b",
        "conv_ae/encoder/W",
        "conv_ae/encoder/b",
    ]
    assert all(len(row.readers) == 1 for row in rows)


def test_your_own_function_by_module_path(tmp_path, capsys):
    logdir = str(tmp_path / "graph")
    argv = ["inspect", "tests.zoo.tf1_code:tied_bigram", "--input", "ids=5:int32"]
    assert main([*argv, "--logdir", logdir]) == 0
    out = capsys.readouterr().out
    assert "lm/embedding/embedding_lookup, lm/softmax/MatMul" in out
    assert "total: 2 variables" in out
    rows, _ = inspect_model(
        "tests.zoo.tf1_code:siamese",
        inputs={"left": (4, tf.float32), "right": (4, tf.float32)},
    )
    tower = by_name(rows)["tower/W"]
    assert {"tower/MatMul", "tower_1/MatMul"} <= set(tower.readers) and len(rows) == 2


def test_function_path_errors(tmp_path, capsys):
    assert main(["inspect", "tests.zoo.nowhere:f", "--logdir", str(tmp_path)]) == 2
    assert "expected an importable module:function" in capsys.readouterr().err
    assert main(["inspect", "tests.zoo.tf1_code:siamese", "--logdir", str(tmp_path)]) == 2
    assert "found none for ['left', 'right']; pass --input left=WIDTH" in (
        capsys.readouterr().err
    )
    argv = ["inspect", "tests.zoo.tf1_code:tied_bigram", "--input", "ids=five"]
    assert main([*argv, "--logdir", str(tmp_path)]) == 2
    assert "--input ids=five: expected NAME=WIDTH" in capsys.readouterr().err


def test_batch_norm_shows_four_variables_their_readers_and_updaters(capsys, tmp_path):
    argv = ["inspect", "tests.zoo.tf1_code:normalized_pair", "--input", "x=3"]
    assert main([*argv, "--logdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[-2:] == ["readers", "updaters"]
    assert "total: 4 variables" in out and "bn/moving_statistics/AssignSubVariableOp" in out
    table = by_name(
        inspect_model("tests.zoo.tf1_code:normalized_pair", inputs={"x": (3, tf.float32)})[
            0
        ]
    )
    assert list(table) == ["bn/beta", "bn/gamma", "bn/moving_mean", "bn/moving_variance"]
    assert [row.trainable for row in table.values()] == [True, True, False, False]
    mean = table["bn/moving_mean"]
    # the training call: the cond choosing the statistics and the update; evaluation
    assert mean.readers == ("bn/cond", "bn/moving_statistics/sub", "bn_1/batchnorm/mul_2")
    assert mean.updaters == ("bn/moving_statistics/AssignSubVariableOp",)
    assert table["bn/gamma"].updaters == ()
    assert table["bn/gamma"].readers == ("bn/batchnorm/mul", "bn_1/batchnorm/mul")
