"""The past-vs-current snapshot experiment and the state benchmark, as quick runs."""

import csv
import json
import signal

import pytest

from experiments import snapshot
from experiments.bench import state as bench_state
from experiments.harness import entry
from tests.conftest import on_batch, raising
from zoo import training


@pytest.mark.slow
def test_quick_snapshot_run_writes_its_files(tiny_data_dir, tmp_path):
    out = tmp_path / "run"
    argv = ["--data-dir", tiny_data_dir, "--quick", "--hidden", "32", "--out", str(out)]
    snapshot.main(argv)
    results = json.loads((out / "results.json").read_text())
    assert results["steps"] == 50
    # The past network holds exactly the parameters from before the last update.
    assert results["past_lags_one_step_max_abs_diff"] < 1e-6
    assert results["kl_first_step"] == pytest.approx(0.0, abs=1e-6)  # synced at start
    assert results["kl_mean"] > 0.0  # afterwards one training step apart
    with open(out / "divergence.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 50
    assert {"step", "kl", "mean_abs_diff", "disagreement"} <= set(rows[0])
    assert (out / "divergence.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sigterm_then_resume_gives_the_uninterrupted_rows(
    tiny_data_dir, tmp_path, monkeypatch
):
    flags = ["--data-dir", tiny_data_dir, "--steps", "24", "--hidden", "16"]
    flags += ["--checkpoint-every", "5"]
    straight, broken = tmp_path / "straight", tmp_path / "broken"
    snapshot.main([*flags, "--out", str(straight)])
    on_batch(monkeypatch, 13, raising(signal.SIGTERM))
    with pytest.raises(training.RunInterrupted, match="at step 14 of 24"):
        snapshot.main([*flags, "--out", str(broken)])
    monkeypatch.undo()
    snapshot.main([*flags, "--resume", str(broken)])

    expected, resumed = (
        json.loads((run / "results.json").read_text()) for run in (straight, broken)
    )
    for key in ("test_accuracy", "kl_mean", "kl_last_step", "disagreement_mean"):
        assert resumed[key] == expected[key]
    assert resumed["past_lags_one_step_max_abs_diff"] < 1e-6
    rows = [(run / "divergence.csv").read_text() for run in (straight, broken)]
    assert rows[0] == rows[1]


def test_snapshot_rejects_bad_flags(tiny_data_dir, tmp_path, capsys):
    argv = ["--data-dir", tiny_data_dir, "--learning-rate", "-1", "--out", str(tmp_path)]
    with pytest.raises(SystemExit) as exit_info:
        entry.entry_point(snapshot.main, argv)
    assert exit_info.value.code == 2
    assert (
        "--learning-rate: expected a finite number in (0, 1e+09], found -1.0"
        in capsys.readouterr().err
    )


@pytest.mark.slow
def test_bench_state_quick_writes_every_key(tmp_path):
    path = tmp_path / "bench.json"
    bench_state.main(["--quick", "--json", str(path)])
    results = json.loads(path.read_text())
    assert len(results["networks"]) == 2
    for network in results["networks"].values():
        assert network["sync_copies_exactly"] is True
        for key in ("sync_vs_checkpoint_speedup", "sync_vs_memcpy_ratio"):
            assert network[key] > 0
        assert all(seconds > 0 for seconds in network["median_seconds"].values())
