"""The lstm_lm bench row: the TF1 program runs our cells under install(), TensorFlow's
legacy cells in the other process, and the row's ratio is theirs."""

import argparse
import dataclasses

import pytest
import tensorflow as tf

import zoo.compat
from experiments.bench import lstm_lm
from tests.conftest import variable_names


def test_the_program_builds_our_cells_under_install_with_tf1s_names():
    with zoo.compat.installed(), tf.Graph().as_default():
        lstm_lm.language_model(tf.compat.v1, lstm_lm.QUICK_SIZES)
        names = variable_names()
    cell = "model/rnn/multi_rnn_cell/cell_{}/basic_lstm_cell/{}"
    weights = [cell.format(i, w) for i in range(2) for w in ("bias", "kernel")]
    assert [n for n in names if "/rnn/" in n] == weights
    assert {"model/embedding", "model/softmax_w", "model/softmax_b"} <= set(names)


@pytest.mark.slow
def test_the_row_times_each_side_in_its_own_process_with_its_own_cells():
    args = argparse.Namespace(quick=True, steps=24, rounds=2, warmup=12)
    row = lstm_lm.bench(None, args, None, None)["lstm_lm"]
    assert row["sizes"] == dataclasses.asdict(lstm_lm.QUICK_SIZES)
    cells = {side: [p["cells"] for p in row["processes"][side]] for side in lstm_lm.SIDES}
    assert cells == {
        "ours": ["layers.tf1.rnn_cell"],
        "legacy": ["tf_keras.src.layers.rnn.legacy_cells"],
    }
    speeds = row["steps_per_s"]
    for side in lstm_lm.SIDES:
        (timing,) = row["processes"][side]
        assert speeds[side] == max(timing["steps_per_s"][s] for s in ("xla", "no_xla")) > 0
        assert row["setting"][side] == timing["setting"]
    assert row["ratio_legacy"] == speeds["ours"] / speeds["legacy"]
    cpu = row["cpu_ms_per_step"]
    assert row["cpu_ratio_legacy"] == cpu["legacy"] / cpu["ours"] and cpu["ours"] > 0
