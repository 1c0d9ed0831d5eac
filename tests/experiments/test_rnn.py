"""The RNN experiment: a short real-data run of both variants, exact resume, bad flags."""

import json
import signal

import pytest

from experiments import rnn
from experiments.harness import entry
from tests.conftest import on_graph_batch, raising, refused_before_any_work
from tests.experiments.test_autoencoder import assert_png, read_events


@pytest.mark.slow
def test_quick_fashion_run_shared_and_per_step(fashion_dir, tmp_path):
    out = tmp_path / "run"
    argv = ["--quick", "--steps", "150", "--hidden", "32", "--learning-rate", "0.005"]
    argv += ["--no-xla"]  # the compiles cost more than the 150 steps; conformance compiles
    argv += ["--dataset", "fashion_mnist"]
    argv += ["--data-dir", fashion_dir, "--out", str(out)]
    assert rnn.main(argv) == 0

    results = json.loads((out / "results.json").read_text())
    assert results["dataset"] == "fashion_mnist" and results["flags"]["hidden"] == 32
    shared, per_step = results["variants"]["shared"], results["variants"]["per_step"]
    cell = (28 + 32) * 64 + 64 + (28 + 32) * 32 + 32
    assert shared["parameters"] == {
        "cells": cell,
        "cell_variables": 4,
        "readout": 32 * 10 + 10,
        "total": cell + 330,
    }
    assert per_step["parameters"]["cells"] == 28 * cell
    assert per_step["parameters"]["cell_variables"] == 28 * 4
    for variant, result in results["variants"].items():
        assert result["test_accuracy"] > 0.6  # chance is 0.1
        assert result["losses"][-1][1] < result["losses"][0][1] / 2
        assert len(result["batch_accuracy"]) == len(result["losses"]) == 5
        tags, has_graph = read_events(out / "tensorboard" / variant)
        assert has_graph and {f"{variant}/loss", f"{variant}/test_accuracy"} <= tags
    assert_png(out / "loss_curves.png")
    assert_png(out / "accuracy.png")


def tiny_argv(data_dir, out, *extra):
    return ["--data-dir", data_dir, "--validation", "0", "--steps", "12", "--batch-size",
            "32", "--checkpoint-every", "5", "--variant", "shared", "--hidden", "8",
            "--time-steps", "14", "--no-xla", "--out", str(out), *extra]  # fmt: skip


def result_of(out):
    return json.loads((out / "results.json").read_text())["variants"]["shared"]


@pytest.mark.slow
def test_interrupted_run_resumes_to_the_same_numbers(tiny_data_dir, tmp_path, monkeypatch):
    """32 steps per run (cut at checkpoints), uninterrupted, against 2 cut at step 7."""
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert rnn.main(tiny_argv(tiny_data_dir, whole)) == 0
    looped = tiny_argv(tiny_data_dir, cut, "--steps-per-run", "2")
    # Runs of 2 steps, cut at the checkpoint every 5: [0, 1], [2, 3], [4], [5, 6], ...
    on_graph_batch(monkeypatch, 3, raising(signal.SIGTERM))
    with pytest.raises(SystemExit) as exit_info:
        entry.entry_point(rnn.main, looped)
    assert exit_info.value.code == 128 + signal.SIGTERM
    assert not (cut / "results.json").exists()
    assert json.loads((cut / "partial.json").read_text())["step"] == 7
    monkeypatch.undo()
    assert rnn.main([*looped, "--resume", str(cut)]) == 0

    whole, resumed = result_of(whole), result_of(cut)
    for key in ("losses", "batch_accuracy", "test_accuracy", "parameters"):
        assert resumed[key] == whole[key]
    assert (whole["steps_per_run"], resumed["steps_per_run"]) == (32, 2)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--time-steps", "27"], "--time-steps: expected a divisor of the 784 pixels of "
         "an image, found 27"),
        (["--time-steps", "0"], "--time-steps: expected an int in [1, 2147483647], "
         "found 0"),
        (["--hidden", "0"], "--hidden: expected an int in [1, 2147483647], found 0"),
        (["--steps-per-run", "0"], "--steps-per-run: expected an int in [1, 256]"),
        (["--learning-rate", "-1"], "--learning-rate: expected a finite number in "
         "(0, 1e+09], found -1.0"),
        (["--variant", "bidirectional"], "argument --variant: invalid choice"),
    ],
)  # fmt: skip
def test_bad_flags_exit_with_one_line_before_any_work(
    tiny_data_dir, tmp_path, capsys, flags, message
):
    err = refused_before_any_work(rnn.main, flags, tmp_path, capsys, tiny_data_dir)
    assert message in err
