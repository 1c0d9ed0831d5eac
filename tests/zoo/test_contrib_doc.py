"""docs/contrib.md's worked program runs as written: a TF 1.4 LSTM language model
trained in graph mode after install(), restored, then the same function in Keras 3."""

import pathlib
import re

import numpy as np
import tensorflow as tf

from tests.zoo.test_compat import uninstalled  # noqa: F401  (autouse: nothing installed)

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "contrib.md"
SECTION = "## A worked program: a TF 1.4 LSTM language model, graph mode to Keras 3"


def test_the_lstm_language_model_moves_from_graph_mode_to_keras(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the page writes lm/model.ckpt
    section = DOC.read_text().split(SECTION)[1].split("\n## ")[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(code.splitlines()) <= 90
    names = {"__name__": "contrib_doc"}
    try:
        exec(compile(code, "<docs/contrib.md>", "exec"), names)  # noqa: S102
        check_outcome(names)
    finally:
        names.clear()  # Keras's registry keeps lm, and so the page's globals, alive


def check_outcome(names):
    """TF 1.15's variable names on both sides, the checkpoint's values in the Keras
    weights, the same probabilities, and losses that fall in both trainings."""
    cells = [
        f"lm/rnn/multi_rnn_cell/cell_{i}/basic_lstm_cell/{part}"
        for i in range(2)
        for part in ("kernel", "bias")
    ]
    expected = ["lm/embedding", *cells, "lm/softmax_w", "lm/softmax_b"]
    layer = names["layer"]
    assert names["graph_names"] == layer.variable_names == expected
    assert layer.tf1_variables[cells[0]].shape == (32 + 32, 4 * 32)
    graph_probs, keras_probs = names["graph_probs"], names["keras_probs"]
    np.testing.assert_allclose(keras_probs, graph_probs, atol=1e-5)
    reader = tf.train.load_checkpoint(names["checkpoint"])
    weights = layer.tf1_variables
    assert not np.array_equal(weights[cells[0]].numpy(), reader.get_tensor(cells[0]))
    names["restore_by_name"](weights, names["checkpoint"])  # undo fit: the saved values
    for name in expected:
        np.testing.assert_array_equal(weights[name].numpy(), reader.get_tensor(name))
    again = tf.nn.softmax(names["net"].predict(names["test_ids"], verbose=0)).numpy()
    np.testing.assert_allclose(again, graph_probs, atol=1e-5)
    np.testing.assert_allclose(graph_probs.sum(-1), 1.0, rtol=1e-5)
    assert np.mean(graph_probs.argmax(-1) == names["test_next"]) > 0.9  # it learned
    assert pathlib.Path("lm.keras").exists()  # saved, loaded, the same predictions
    graph_losses, fit_losses = names["graph_losses"], names["fit_losses"]
    assert graph_losses[-1] < graph_losses[0] / 10
    assert fit_losses[-1] < fit_losses[0]
