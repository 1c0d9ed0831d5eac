"""experiments.eager_autoencoder: eager and graph training agree; flags fail clearly;
interrupted runs resume to the uninterrupted numbers; NaN and foreign checkpoints stop it.
"""

import json
import math
import os
import re
import signal

import numpy as np
import pytest

from experiments import eager_autoencoder
from layers import ZooError
from tests.conftest import edit_run_record, on_batch, raising
from zoo import training


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
    with pytest.raises(
        ZooError, match=r"--tolerance: expected a finite number in \[0, 1e\+09\], found -1"
    ):
        eager_autoencoder.main(run_args(tiny_data_dir, tmp_path, "--tolerance", "-1"))


def test_help_documents_every_flag(capsys):
    with pytest.raises(SystemExit) as exit_info:
        eager_autoencoder.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--tolerance", "--validation", "--steps", "--seed", "--data-dir"):
        assert flag in out


def checkpoint(out, name):
    """Returns ``(arrays by key, state)`` of ``out/checkpoints/<name>``."""
    with np.load(os.path.join(out, "checkpoints", name)) as archive:
        arrays = {key: archive[key] for key in archive.files}
    return arrays, json.loads(str(arrays.pop("__state__")))


def results(out):
    with open(os.path.join(out, "results.json")) as f:
        return json.load(f)


def failed_run(error, argv):
    """Runs the experiment to ``error``; returns the exception, its traceback dropped.

    The traceback holds the model; without it the model is freed at once, so a
    later run in this process can claim its zoo.share scope again.
    """
    with pytest.raises(error) as info:
        eager_autoencoder.main(argv)
    exception = info.value.with_traceback(None)
    del info
    return exception


def test_interrupted_twice_then_resumed_gives_the_uninterrupted_numbers(
    tiny_data_dir, tmp_path, monkeypatch
):
    straight, broken = str(tmp_path / "straight"), str(tmp_path / "broken")
    flags = ["--checkpoint-every", "7"]
    assert eager_autoencoder.main(run_args(tiny_data_dir, straight, *flags)) == 0
    on_batch(monkeypatch, 11, raising(signal.SIGINT))  # eager step 11 of 30
    stop = failed_run(training.RunInterrupted, run_args(tiny_data_dir, broken, *flags))
    assert str(stop).startswith("eager: interrupted by SIGINT at step 12 of 30; checkpoint")
    assert stop.command.endswith(f"--resume {broken}") and "--out" not in stop.command
    partial = json.loads(open(os.path.join(broken, "partial.json")).read())
    assert (partial["loop"], partial["step"]) == ("eager", 12)
    assert checkpoint(broken, "eager.npz")[1]["step"] == 12
    resume = run_args(tiny_data_dir, broken, *flags, "--resume", broken)
    monkeypatch.undo()
    # the 18 eager steps left, then graph step 17
    on_batch(monkeypatch, 18 + 17, raising(signal.SIGTERM))
    stop = failed_run(training.RunInterrupted, resume)
    assert str(stop).startswith("graph: interrupted by SIGTERM at step 18 of 30")
    assert checkpoint(broken, "eager.npz")[1]["step"] == 30
    assert checkpoint(broken, "00-graph.npz")[1]["step"] == 18
    monkeypatch.undo()
    assert eager_autoencoder.main(resume) == 0
    expected, resumed = results(straight), results(broken)
    for loop in ("eager", "graph"):
        assert resumed[loop]["test_loss"] == expected[loop]["test_loss"]
        assert resumed[loop]["losses"] == expected[loop]["losses"]
    for name in ("eager.npz", "00-graph.npz"):
        arrays, want = checkpoint(broken, name)[0], checkpoint(straight, name)[0]
        assert sorted(arrays) == sorted(want)
        for key, value in want.items():
            assert np.array_equal(arrays[key], value), (name, key)
    assert {
        "var:autoencoder/encoder/W",
        "var:adagrad/autoencoder_encoder_W_0_accumulator",
        "var:adagrad/iteration",
    } <= set(checkpoint(broken, "eager.npz")[0])
    assert not os.path.exists(os.path.join(broken, "partial.json"))


def test_nan_loss_in_the_eager_loop_stops_at_once_and_keeps_the_last_checkpoint(
    tiny_data_dir, tmp_path, monkeypatch
):
    out = str(tmp_path / "run")
    on_batch(monkeypatch, 12, lambda images: np.full_like(images, np.nan))
    stop = failed_run(
        training.NonFiniteLossError, run_args(tiny_data_dir, out, "--checkpoint-every", "5")
    )
    assert re.fullmatch(
        r"eager: expected a finite loss, found nan at step 12; last finite loss "
        r"[0-9.]+ at step 11; last good checkpoint .*eager.npz left intact; .*",
        str(stop),
    )
    assert (stop.step, stop.last_finite[0]) == (12, 11)
    assert stop.checkpoint == os.path.join(out, "checkpoints", "eager.npz")
    arrays, state = checkpoint(out, "eager.npz")
    assert state["step"] == 10 and "var:adagrad/iteration" in arrays
    assert int(arrays["var:adagrad/iteration"]) == 10
    for name, value in arrays.items():
        assert np.all(np.isfinite(value)), name
    assert not os.path.exists(os.path.join(out, "results.json"))


def test_resume_with_other_flags_another_model_or_run_is_refused(
    tiny_data_dir, tmp_path, monkeypatch
):
    out = str(tmp_path / "run")
    eager_autoencoder.main(run_args(tiny_data_dir, out, "--steps", "10"))
    resume = ["--resume", out, "--steps", "10"]
    refusals = [
        (["--batch-size", "16"], "expected --batch-size 32 as the run was started with"),
        (["--seed", "3"], "expected --seed 0 as the run was started with"),
        (["--steps", "4"], "eager.npz: expected --steps of at least 10"),
        (["--validation", "200"], "expected --validation 100 as the run was started with"),
    ]
    for flags, message in refusals:
        with pytest.raises(ZooError, match=message):
            eager_autoencoder.main(run_args(tiny_data_dir, out, *resume, *flags))
    checkpoint_refusals = [  # a run.json that lies: the checkpoint still refuses
        ({"batch_size": 16}, "eager.npz: expected --batch-size 32 as when the"),
        ({"seed": 3}, "eager.npz: expected --seed 0 as when the checkpoint"),
        ({"validation": 200}, r"eager.npz: expected training examples .* 1100 "),
    ]
    for flags, message in checkpoint_refusals:
        edit_run_record(out, **flags)
        with pytest.raises(ZooError, match=message):
            eager_autoencoder.main(["--resume", out])
        edit_run_record(out, batch_size=32, seed=0, validation=100)
    monkeypatch.setattr(eager_autoencoder, "SCOPE", "other")
    with pytest.raises(
        ZooError,
        match=r"eager.npz: expected a checkpoint of this model, found one of another "
        r"model \(missing other/decoder/b, other/encoder/W, other/encoder/b, "
        r"adagrad/other_decoder_b_0_accumulator",
    ):
        eager_autoencoder.main(run_args(tiny_data_dir, out, *resume))
    monkeypatch.undo()
    with open(os.path.join(out, "checkpoints", "eager.npz"), "wb") as f:
        f.write(b"PK\x03\x04 truncated zip")
    with pytest.raises(ZooError, match=r"eager.npz: expected a checkpoint written by"):
        eager_autoencoder.main(run_args(tiny_data_dir, out, *resume))
    other = tmp_path / "other_experiment"
    (other / "checkpoints").mkdir(parents=True)
    (other / "checkpoints" / "00-tied.npz").write_bytes(b"")
    with pytest.raises(ZooError, match=r"other_experiment/run.json: expected the run.json"):
        eager_autoencoder.main(run_args(tiny_data_dir, other, "--resume", str(other)))
