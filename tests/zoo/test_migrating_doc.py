"""docs/migrating.md runs as written: its Python blocks, in order, on small data."""

import linecache
import pathlib
import re

import numpy as np
import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "migrating.md"
SIZES = "STEPS, FINE_TUNE, BATCH = 1000, 100, 128"
SLIM_SIZES = "SLIM_STEPS, SLIM_FIT = 300, 50"


def doc_blocks():
    """The page's ```python blocks, in order."""
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def run_doc(data_dir, sizes):
    """Runs the page's code with another data directory and sizes; returns its names."""
    code = "\n".join(doc_blocks())
    assert (
        SIZES in code
        and SLIM_SIZES in code
        and 'DATA_DIR = "/usr/share/datasets/fashion-mnist"' in code
    )
    code = code.replace(SIZES, sizes).replace(SLIM_SIZES, "SLIM_STEPS, SLIM_FIT = 4, 2")
    code = code.replace("/usr/share/datasets/fashion-mnist", data_dir)
    filename = "<docs/migrating.md>"  # autograph reads tf.function sources from here
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    namespace = {"__name__": "migrating_doc"}
    exec(compile(code, filename, "exec"), namespace)  # noqa: S102
    return namespace


@pytest.mark.slow
def test_the_page_runs_and_every_path_restores_the_tf1_weights(
    tiny_data_dir, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    names = run_doc(tiny_data_dir, "STEPS, FINE_TUNE, BATCH = 12, 3, 32")
    try:
        check_outcome(names, tmp_path)
    finally:
        names.clear()  # Keras's registry keeps siamese, and so its globals, alive


def check_outcome(names, tmp_path):
    """Every path restored the TF1 weights; the report and the Keras layer are right."""
    tf1 = names["tf1_accuracy"]
    assert names["graph_accuracy"] == names["eager_accuracy"] == tf1
    assert abs(names["keras_accuracy"] - tf1) < 1e-3  # Keras's predict batches the pairs
    report = names["restore"].report
    assert [name for _, name in report.restored] == [
        f"siamese/tower/{n}" for n in ("W1", "b1", "W2", "b2")
    ]
    assert report.left_out_variables == (
        ("siamese/temperature", "no 'temperature' in checkpoint scope 'model'"),
    )
    assert len(names["layer"].losses) == 2 and (tmp_path / "siamese.keras").exists()
    check_cnn(names)


def check_cnn(names):
    """The CNN of TF1 idioms: restored exactly in graph mode and Keras, its decay a loss."""
    np.testing.assert_array_equal(names["keras_logits"], names["tf1_logits"])
    cnn = names["cnn"]
    moving = ["conv1/bn/moving_mean", "conv1/bn/moving_variance"]
    assert cnn.variable_names[-2:] == moving and len(cnn.variable_names) == 9
    restored = dict(names["root_restore"].report.restored)
    assert [restored[name] for name in moving] == [f"cnn/{name}" for name in moving]
    assert names["moved"] > 0 and (pathlib.Path("cnn.keras")).exists()
    check_slim_resnet(names)


def check_slim_resnet(names):
    """The TF-Slim ResNet: every backbone variable restored, the features those of the
    graph to the page's bound (grappler regroups each bottleneck's sum in the `Session`
    and in `predict` differently: about 1e-6 of the largest output, 0 on some CPUs)."""
    backbone = names["backbone"]
    assert len(names["resnet_restore"].restored) == len(backbone.variable_names) > 20
    assert not any("logits" in name for name in backbone.variable_names)
    expected = names["slim_features"].reshape(len(names["tuned"]), -1)
    np.testing.assert_allclose(
        names["restored_features"], expected, rtol=0, atol=2e-6 * np.abs(expected).max()
    )
    assert pathlib.Path("resnet.keras").exists() and names["zoo"].compat.uninstall() == []
