"""The DQN experiment: bad flags (before TensorFlow), --quick, a quick run, resume.
The library it runs on is tested in tests/zoo/: test_replay.py, test_bursts.py,
test_returns.py, test_dqn_update.py."""

import json
import math
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest

from experiments import dqn
from experiments.harness import record, rundir
from layers.errors import ZooError
from tests.conftest import refused_in_one_line
from tests.experiments.test_autoencoder import assert_png, read_events
from zoo import training
from zoo.rl import replay

SMALL = ["--learning-starts", "40", "--buffer-size", "500", "--hidden", "16,16"]
SMALL += ["--train-every", "16", "--updates-per-run", "8", "--eval-episodes", "3"]


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--tau", "0"], r"--tau: expected a finite number in \(0, 1\], found 0.0; pass one in that range"),  # noqa: E501
        (["--tau", "1.5"], r"--tau: expected a finite number in \(0, 1\], found 1.5"),
        (["--target-period", "0"], r"--target-period: expected an int in \[1, \d+\], found 0"),  # noqa: E501
        (["--env", "CartPol-v1"], "--env: expected a gymnasium environment id, found "
         "'CartPol-v1' \\(not registered\\); did you mean CartPole-v1"),
        (["--env", "Pendulum-v1"], "--env: expected flat Box observations and Discrete "
         "actions"),
        (["--seeds", "0"], r"--seeds: expected an int in \[1, \d+\], found 0"),
        (["--epsilon-end", "2"], r"--epsilon-end: expected a finite number in \[0, 1\], found 2"),  # noqa: E501
        (["--gamma", "-0.1"], r"--gamma: expected a finite number in \[0, 1\], found -0.1"),
        (["--hidden", "16,0"], r"--hidden: expected comma-separated integers >= 1, found "
         "'16,0'"),
        (["--learning-starts", "-1"], r"--learning-starts: expected an int in \[0, \d+\]"),
        (["--max-grad-norm", "0"], r"--max-grad-norm: expected a finite number in \(0, "),
        (["--learning-rate-end", "-1"], r"--learning-rate-end: expected a finite number in \[0, "),  # noqa: E501
        (["--updates-per-run", "0"], r"--updates-per-run: expected an int in \[1, "),
        (["--variant", "triple"], r"--variant: invalid choice: 'triple'"),
    ],
)  # fmt: skip
def test_bad_flags_exit_with_one_line_before_any_work(tmp_path, capsys, flags, message):
    out = tmp_path / "run"
    err = refused_in_one_line(dqn.main, ["--quick", "--out", str(out), *flags], capsys)
    assert re.search(message, err), err
    assert not out.exists()


def answer_without_tensorflow(*argv):
    """Runs ``python -m experiments.dqn ARGV``; returns its output and whether it had
    imported TensorFlow (or gymnasium) by the time it exited."""
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['dqn', *{list(argv)!r}]\n"
        "try:\n"
        "    runpy.run_module('experiments.dqn', run_name='__main__')\n"
        "except SystemExit:\n"
        "    print('imported:', 'tensorflow' in sys.modules, 'gymnasium' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return done.stdout + done.stderr


def test_help_and_flag_errors_answer_before_tensorflow_starts():
    out = answer_without_tensorflow("--help")
    assert "--hidden HIDDEN" in out and "comma-separated" in out
    assert "imported: False False" in out  # not even gymnasium
    out = answer_without_tensorflow("--tau", "2")
    assert "error: --tau: expected a finite number in (0, 1], found 2.0" in out
    assert "imported: False" in out
    out = answer_without_tensorflow("--env", "CartPol-v1")  # checked with gymnasium
    assert "error: --env: expected a gymnasium environment id" in out
    assert "imported: False True" in out


def test_resume_with_other_flags_is_refused(tmp_path):
    out = str(tmp_path / "run")
    rundir.run_dir(dqn.parse_then_start_tensorflow(["--tau", "0.02", "--out", out]), "dqn")
    with pytest.raises(
        ZooError, match=r"expected --tau 0.02 as the run was started with \(run.json\)"
    ):
        dqn.main(["--resume", out, "--tau", "0.01"])
    assert sorted(os.listdir(out)) == [".lock", "run.json"]


def test_resume_of_another_experiment_is_refused(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"experiment": "experiments.sweep"}))
    with pytest.raises(ZooError, match=r"run: expected a run of experiments.dqn, found a "):
        dqn.main(["--resume", str(out)])
    assert sorted(os.listdir(out)) == ["run.json"]


def test_resume_may_use_other_jobs_and_profile_calls(tmp_path):
    out = str(tmp_path / "run")
    rundir.run_dir(dqn.parse_then_start_tensorflow(["--tau", "0.02", "--out", out]), "dqn")
    args = dqn.parse_then_start_tensorflow(
        ["--resume", out, "--jobs", "2", "--profile-calls", "0"]
    )
    assert (args.tau, args.jobs, args.profile_calls) == (0.02, 2, 0)


def test_quick_caps_the_flags_it_names():
    quick = dqn.parse_then_start_tensorflow(["--quick", "--learning-starts", "100"])
    assert quick.learning_starts == 100  # under its cap: kept
    capped = {flag[2:].replace("-", "_"): cap for flag, cap in dqn.QUICK.items()}
    del capped["learning_starts"]
    assert {name: getattr(quick, name) for name in capped} == capped
    assert quick.steps == 256
    full = dqn.parse_then_start_tensorflow([])
    assert (full.seeds, full.learning_starts, full.steps) == (5, 1000, 24576)


def test_settings_are_the_flags_that_shape_the_numbers():
    settings = dqn.settings(dqn.parse_then_start_tensorflow(["--hidden", "16,8"]))
    assert {"steps", "seed", "seeds", "updates_per_run", "threads", "env"} <= set(settings)
    assert not {"jobs", "profile_calls", "checkpoint_every", "out", "quick"} & set(settings)
    assert settings["hidden"] == [16, 8]


@pytest.mark.slow
def test_quick_run_writes_every_output(tmp_path):
    out = tmp_path / "run"
    argv = ["--quick", "--seeds", "1", "--steps", "20", "--out", str(out), *SMALL]
    argv += ["--updates-per-run", "1"]  # no loop to build: the other tests run bursts
    assert dqn.main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["experiment"] == "dqn" and results["env"] == "CartPole-v1"
    assert results["reward_threshold"] == 475
    assert results["machine"].keys() == record.machine().keys()  # the one machine()
    assert results["flags"]["hidden"] == "16,16"  # as given, in run.json too
    assert results["settings"]["hidden"] == [16, 16]
    assert set(results["variants"]) == {"none", "hard", "polyak", "double"}
    assert results["variants"]["double"]["sync"] == {
        "target_network": True, "double": True, "period": 128, "tau": 1.0
    }  # fmt: skip
    for variant, result in results["variants"].items():
        (run,) = result["runs"]
        assert run["env_steps"] == 40 + 20 * 16 and run["updates"] == 20  # 20 "bursts"
        assert len(run["eval_returns"]) == 3 and run["eval_mean"] > 0
        summary = result["summary"]
        assert summary["eval_mean"] == run["eval_mean"]
        assert summary["eval_solved"] == (run["eval_mean"] >= 475)
        assert sum(run["episode_returns"]) == run["episode_end_steps"][-1]
        assert run["episodes"] == len(run["episode_returns"]) > 0
        assert run["env_steps_per_second"] > 0
        assert set(run["seconds"]) == {"act", "env", "replay", "train", "other"}
        profile = result["step_profile_ms"]
        assert set(profile) == {"cpu_ms", "wall_ms"}
        for parts in profile.values():
            assert set(parts) == {
                "sample", "noop", "forward", "backward", "apply", "sync", "train_step",
                "burst_update", "burst_feed", "copy",
            }  # fmt: skip
            # times net of a no-op's, so they may dip below 0: no order asserted on a
            # shared machine, only that every part was measured
            assert all(math.isfinite(ms) for ms in parts.values())
        tags, has_graph = read_events(out / "tensorboard" / f"{variant}-seed0")
        assert has_graph
        assert {f"{variant}-seed0/loss", f"{variant}-seed0/episode_return"} <= tags
    assert_png(out / "returns.png")
    assert sorted(os.listdir(out / "checkpoints")) == [
        "00-none-seed0.npz", "01-hard-seed0.npz", "02-polyak-seed0.npz",
        "03-double-seed0.npz",
    ]  # fmt: skip


@pytest.mark.slow
def test_the_recipe_starts_learning_within_a_few_thousand_steps(tmp_path):
    """The defaults (rl-baselines3-zoo's recipe) cut to 20 bursts, 6,120 environment
    steps: the training episodes grow from random's ~20 steps, the greedy policy more."""
    out = tmp_path / "run"
    argv = ["--variant", "hard", "--seeds", "1", "--steps", "2560", "--eval-episodes", "5"]
    assert dqn.main([*argv, "--profile-calls", "0", "--out", str(out)]) == 0
    (run,) = json.loads((out / "results.json").read_text())["variants"]["hard"]["runs"]
    assert run["env_steps"] == 1000 + 20 * 256
    returns = run["episode_returns"]
    assert np.mean(returns[:20]) < 30  # acting at random
    assert np.mean(returns[-20:]) > 2 * np.mean(returns[:20])
    assert run["eval_mean"] > 80


def interrupt_at_update(monkeypatch, call):
    """Sends SIGINT to this process when sample call ``call`` (from 0) draws: one
    call per ``session.run`` of updates (a burst, or its part up to a checkpoint)."""
    real, calls = replay.Rollout.sample, []

    def sample(self, batch_size):
        calls.append(1)
        if len(calls) - 1 == call:
            signal.raise_signal(signal.SIGINT)
        return real(self, batch_size)

    monkeypatch.setattr(replay.Rollout, "sample", sample)


def final_state(out, name):
    with np.load(os.path.join(out, "checkpoints", name)) as archive:
        return {key: archive[key] for key in archive.files if key != "__state__"}


@pytest.mark.slow
def test_resume_equals_an_uninterrupted_run_in_processes(tmp_path, monkeypatch):
    flags = ["--variant", "polyak", "--seeds", "2", "--steps", "40", "--tau", "0.3"]
    flags += ["--checkpoint-every", "12", "--epsilon-decay", "150", "--profile-calls", "0"]
    flags += SMALL
    straight, broken = tmp_path / "straight", tmp_path / "broken"
    dqn.main([*flags, "--out", str(straight), "--jobs", "2"])  # in two processes
    # Bursts of 8 updates, checkpoints every 12: seed 0 samples in 8 runs (0-8, 8-12,
    # 12-16, 16-20, 20-24, 24-32, 32-36, 36-40); seed 1's second stops at update 12,
    # inside its second burst (after its environment steps, before its last 4 updates)
    interrupt_at_update(monkeypatch, 8 + 1)
    with pytest.raises(training.RunInterrupted, match="interrupted by SIGINT") as info:
        dqn.main([*flags, "--out", str(broken)])
    assert info.value.command.endswith(f"--resume {broken}")
    monkeypatch.undo()
    state = json.loads(
        str(np.load(broken / "checkpoints" / "01-polyak-seed1.npz")["__state__"])
    )
    assert state["step"] == 12 and state["data"]["actions"]  # inside an episode too
    assert state["data"]["env_steps"] == 40 + 2 * 16
    dqn.main([*flags, "--resume", str(broken)])

    expected = json.loads((straight / "results.json").read_text())["variants"]["polyak"]
    resumed = json.loads((broken / "results.json").read_text())["variants"]["polyak"]
    for a, b in zip(expected["runs"], resumed["runs"], strict=True):
        for key in ("episode_returns", "episode_end_steps", "losses", "env_steps"):
            assert a[key] == b[key]
    for name in ("00-polyak-seed0.npz", "01-polyak-seed1.npz"):
        a, b = final_state(straight, name), final_state(broken, name)
        assert sorted(a) == sorted(b)
        assert "var:dqn/target/W_out" in a and "var:replay/observations" in a
        assert all((a[key] == b[key]).all() for key in a)


@pytest.mark.slow
def test_nan_loss_stops_the_run_and_keeps_the_last_checkpoint(tmp_path, monkeypatch):
    real = replay.Rollout.sample

    def sample(self, batch_size):
        batch = real(self, batch_size)
        if self.env_steps >= 40 + 4 * 16:  # the 4th burst, updates 24-31
            batch[2] = np.full_like(batch[2], np.nan)  # rewards
        return batch

    monkeypatch.setattr(replay.Rollout, "sample", sample)
    out = tmp_path / "run"
    flags = [
        "--variant",
        "hard",
        "--seeds",
        "1",
        "--steps",
        "60",
        "--checkpoint-every",
        "20",
    ]
    with pytest.raises(training.NonFiniteLossError, match="hard-seed0: expected a finite"):
        dqn.main([*flags, "--profile-calls", "0", "--out", str(out), *SMALL])
    state = np.load(out / "checkpoints" / "00-hard-seed0.npz")["__state__"]
    assert json.loads(str(state))["step"] == 20
