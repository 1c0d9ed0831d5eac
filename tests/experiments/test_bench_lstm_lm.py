"""The lstm_lm bench row: the TF1 program runs our cells under install(), TensorFlow's
legacy cells in the other process, and the row's ratio is theirs."""

import dataclasses

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


def check_quick_row(row):
    """Asserts what a ``--quick`` row must hold: each side timed in its own process
    with its own cells (plain sessions), both in one, and the ratios of those speeds.
    ``tests/experiments/test_bench.py``'s quick run of the whole bench calls it."""
    assert row["sizes"] == dataclasses.asdict(lstm_lm.QUICK_SIZES)
    ours, legacy = "layers.tf1.rnn_cell", "tf_keras.src.layers.rnn.legacy_cells"
    cells = {side: [p["cells"] for p in row["processes"][side]] for side in lstm_lm.SIDES}
    assert cells == {"ours": [{"": ours}], "legacy": [{"": legacy}]}
    assert row["same_process"]["cells"] == {"ours_": ours, "legacy_": legacy}
    for side in lstm_lm.SIDES:
        (timing,) = row["processes"][side]
        assert set(timing["steps_per_s"]) == {"no_xla"}  # --quick: plain sessions only
        assert row["steps_per_s"][side] == timing["steps_per_s"]["no_xla"] > 0
        assert row["same_process"]["setting"][side] == f"{side}_no_xla"
    for figures in (row, row["same_process"]):
        speeds, cpu = figures["steps_per_s"], figures["cpu_ms_per_step"]
        assert figures["ratio_legacy"] == speeds["ours"] / speeds["legacy"]
        assert figures["cpu_ratio_legacy"] == cpu["legacy"] / cpu["ours"] > 0


def test_the_sides_processes_run_abba_so_a_drifting_load_meets_both(monkeypatch):
    order, speed = [], iter(range(1, 10))

    def run_side(side, sizes, steps, rounds, warmup, xla=True):
        order.append(side)
        timing = {"steps_per_s": {"no_xla": next(speed)}, "cpu_ms_per_step": {"no_xla": 1}}
        if side == lstm_lm.SAME_PROCESS:
            timing = {t: {f"{s}_no_xla": 1 for s in lstm_lm.SIDES} for t in timing}
        return {**timing, "cells": {}}

    monkeypatch.setattr(lstm_lm, "run_side", run_side)
    row = lstm_lm.row(lstm_lm.QUICK_SIZES, 4, 2, 1, processes_per_side=2, xla=False)

    assert order == ["ours", "legacy", "legacy", "ours", lstm_lm.SAME_PROCESS]
    assert row["steps_per_s"] == {"ours": 4, "legacy": 3}  # each side's fastest process
