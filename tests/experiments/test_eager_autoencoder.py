"""experiments.eager_autoencoder: eager and graph training agree; flags fail clearly."""

import json
import math

import pytest

from experiments import eager_autoencoder
from layers import ZooError


def run_args(data_dir, out, *more):
    return [
        "--data-dir", data_dir, "--steps", "30", "--batch-size", "32",
        "--validation", "100", "--out", str(out), *more,
    ]  # fmt: skip


@pytest.mark.slow
def test_eager_and_graph_runs_reach_the_same_test_loss(tiny_data_dir, tmp_path):
    assert eager_autoencoder.main(run_args(tiny_data_dir, tmp_path / "run")) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    eager, graph = results["eager"], results["graph"]
    assert math.isfinite(eager["test_loss"]) and results["within_tolerance"]
    assert results["difference"] == abs(eager["test_loss"] - graph["test_loss"]) <= 1e-3
    assert [s for s, _ in eager["losses"]] == [s for s, _ in graph["losses"]] == [
        0, 6, 12, 18, 24,
    ]  # fmt: skip
    assert eager["losses"][0][1] == pytest.approx(graph["losses"][0][1], abs=1e-6)
    assert eager["losses"][-1][1] < eager["losses"][0][1] - 0.05
    lines = (tmp_path / "run" / "losses.csv").read_text().splitlines()
    assert lines[0] == "step,eager,graph" and len(lines) == 6
    assert (tmp_path / "run" / "loss_curves.png").stat().st_size > 0


def test_a_zero_tolerance_that_is_missed_exits_1(tiny_data_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(eager_autoencoder, "train_eager", lambda *a: fake(0.5))
    monkeypatch.setattr(eager_autoencoder, "train_graph", lambda *a: fake(0.6))
    args = run_args(tiny_data_dir, tmp_path / "run", "--tolerance", "0")
    assert eager_autoencoder.main(args) == 1
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["difference"] == pytest.approx(0.1) and not results["within_tolerance"]


def fake(test_loss):
    return {"test_loss": test_loss, "losses": [(0, 0.7)], "steps_per_second": 1.0}


def test_bad_flags_raise(tiny_data_dir, tmp_path):
    with pytest.raises(ZooError, match="--tolerance: expected a number >= 0, found -1"):
        eager_autoencoder.main(run_args(tiny_data_dir, tmp_path, "--tolerance", "-1"))
    with pytest.raises(ZooError, match="this experiment does not support"):
        eager_autoencoder.main(run_args(tiny_data_dir, tmp_path, "--resume", str(tmp_path)))


def test_help_documents_every_flag(capsys):
    with pytest.raises(SystemExit) as exit_info:
        eager_autoencoder.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--tolerance", "--validation", "--steps", "--seed", "--data-dir"):
        assert flag in out
