"""The one-graph sweep: same start per configuration, direction of effects, files."""

import argparse
import json

import numpy as np
import pytest

from experiments import sweep
from layers import ZooError
from zoo.data import load_mnist

TINY = dict(hidden=(16,), seed=0, steps=40, batch_size=32, precision="float32")


@pytest.fixture
def tiny_data(tiny_data_dir):
    return load_mnist(data_dir=tiny_data_dir, validation=200)


def test_learning_rate_zero_keeps_weights_and_rebuild_agrees(tiny_data):
    args = argparse.Namespace(**TINY)
    configurations = [
        {"learning_rate": 0.01, "keep_prob": 1.0, "l2": 0.0},
        {"learning_rate": 0.0, "keep_prob": 1.0, "l2": 0.0},
    ]
    _, (trained, frozen) = sweep.sweep_one_graph(configurations, tiny_data, args)
    assert frozen["weight_change"] == 0.0  # re-initialized to the start, then no step
    assert trained["weight_change"] > 0.05
    assert trained["validation_accuracy"] > 0.9
    assert trained["validation_accuracy"] > frozen["validation_accuracy"] + 0.3
    # A new graph per configuration starts from the same weights and sees the same
    # batches: without dropout the results are the same numbers.
    rebuilt = sweep.sweep_rebuild(configurations, tiny_data, args)
    for one_graph, rebuild in zip((trained, frozen), rebuilt, strict=True):
        assert rebuild["validation_accuracy"] == one_graph["validation_accuracy"]
        np.testing.assert_allclose(rebuild["last_loss"], one_graph["last_loss"], rtol=1e-5)


@pytest.mark.slow
def test_quick_run_writes_results(tiny_data_dir, tmp_path):
    out = tmp_path / "run"
    argv = ["--data-dir", tiny_data_dir, "--quick", "--validation", "200", "--hidden",
            "16", "--batch-size", "32", "--out", str(out)]  # fmt: skip
    assert sweep.main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    assert len(results["configurations"]) == 8
    for key in ("setup_seconds_one_graph", "setup_seconds_rebuild", "setup_speedup"):
        assert results[key] > 0
    assert results["setup_speedup"] == pytest.approx(
        results["setup_seconds_rebuild"] / results["setup_seconds_one_graph"]
    )
    assert results["best"]["validation_accuracy"] == max(
        row["validation_accuracy_one_graph"] for row in results["configurations"]
    )
    csv_lines = (out / "results.csv").read_text().splitlines()
    assert len(csv_lines) == 9 and csv_lines[0].startswith("learning_rate,keep_prob,l2,")
    assert (out / "sweep.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--keep-probs", "0.5,1.5"],
            r"--keep-probs: expected a finite number in \(0, 1\], found 1.5; pass one in "
            r"that range$",
        ),  # fmt: skip
        (["--learning-rates", "-1"], r"--learning-rates: expected a finite number in \[0,"),
        (["--l2s", "a,b"], r"--l2s: expected comma-separated numbers, found 'a,b'"),
        (["--hidden", "16,0"], r"--hidden: expected comma-separated integers >= 1, found"),
        (["--hidden", "1.5"], r"--hidden: expected comma-separated integers >= 1, found"),
    ],
)
def test_bad_flags_raise_before_any_work(tmp_path, tiny_data_dir, flags, message):
    out = tmp_path / "run"
    with pytest.raises(ZooError, match=message):
        sweep.main(["--data-dir", tiny_data_dir, "--out", str(out), *flags])
    assert not out.exists()


def test_bad_flag_exits_2_with_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        sweep.entry.entry_point(sweep.main, ["--keep-probs", "0", "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1
