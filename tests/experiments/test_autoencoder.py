"""The autoencoder experiment: outputs of a quick run, reproducibility, bad flags."""

import json
import math
import os

import numpy as np
import pytest
import tensorflow as tf

from experiments import autoencoder
from experiments.harness import datasets, entry, flags, rundir
from layers.errors import ZooError
from tests.conftest import refused_before_any_work

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def quick_argv(data_dir, out, *extra):
    return [
        "--quick",
        "--data-dir",
        data_dir,
        "--validation",
        "0",
        "--out",
        str(out),
        *extra,
    ]


def read_events(directory):
    """Returns (scalar tags, whether a graph was written) of a TensorBoard directory."""
    tags, has_graph = set(), False
    for name in os.listdir(directory):
        for event in tf.compat.v1.train.summary_iterator(os.path.join(directory, name)):
            has_graph |= bool(event.graph_def)
            tags.update(value.tag for value in event.summary.value)
    return tags, has_graph


def assert_png(path):
    with open(path, "rb") as f:
        assert f.read(8) == PNG_MAGIC


@pytest.mark.slow
def test_quick_run_writes_every_output(tiny_data_dir, tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        autoencoder.main(
            quick_argv(tiny_data_dir, out, "--steps", "60", "--batch-size", "32")
        )
        == 0
    )

    results = json.loads((out / "results.json").read_text())
    assert set(results["variants"]) == {"untied", "tied"}
    assert results["tied_below_untied"] == (
        results["variants"]["tied"]["test_loss"]
        < results["variants"]["untied"]["test_loss"]
    )
    for variant, result in results["variants"].items():
        steps, losses = zip(*result["losses"], strict=True)
        assert steps == (0, 12, 24, 36, 48)
        assert all(math.isfinite(loss) for loss in losses)
        assert losses[-1] < losses[0] - 0.05
        assert 0 < result["test_loss"] < losses[0]
        assert result["steps"] == 60 and result["seed"] == 0
        assert result["dataset"] == f"idx:{tiny_data_dir}"  # never a name it is not
        assert result["steps_per_second"] > 0 and result["wall_time_s"] > 0
        assert result["reference"]["test_loss"] == pytest.approx(
            {"untied": 0.183986, "tied": 0.147831}[variant]
        )
        tags, has_graph = read_events(out / "tensorboard" / variant)
        assert has_graph
        assert {f"{variant}/loss", f"{variant}/test_loss"} <= tags
    assert_png(out / "loss_curves.png")
    assert_png(out / "reconstructions.png")

    printed = capsys.readouterr().out
    assert "  step, loss =      0: " in printed
    assert printed.count(": test_loss = ") == 2


def test_resume_with_another_variant_is_refused_and_keeps_both(tiny_data_dir, tmp_path):
    out = tmp_path / "run"
    argv = ["--data-dir", tiny_data_dir, "--validation", "0", "--steps", "4"]
    autoencoder.main([*argv, "--batch-size", "8", "--out", str(out)])
    outputs = ("results.json", "loss_curves.png", "reconstructions.png")
    before = {name: (out / name).read_bytes() for name in outputs}
    results = json.loads(before["results.json"])
    assert set(results["variants"]) == {"untied", "tied"}
    assert {r["dataset"] for r in results["variants"].values()} == {f"idx:{tiny_data_dir}"}
    with pytest.raises(
        ZooError,
        match=r"expected --variant 'both' as the run was started with \(run.json\)",
    ):
        autoencoder.main(["--resume", str(out), "--variant", "untied"])
    assert {name: (out / name).read_bytes() for name in outputs} == before
    autoencoder.main(["--resume", str(out)])  # that run's settings: both variants
    again = json.loads((out / "results.json").read_text())
    for variant in ("untied", "tied"):
        assert (
            again["variants"][variant]["test_loss"]
            == results["variants"][variant]["test_loss"]
        )


def train_variant(data_dir, out, seed, steps_per_run="32", *extra):
    """Trains the tied variant 20 steps, no plots; returns (result, reconstructions)."""
    argv = ["--data-dir", data_dir, "--validation", "0", "--steps", "20", "--seed", seed]
    argv += ["--batch-size", "32", "--out", str(out), "--steps-per-run", steps_per_run]
    argv += extra
    args = flags.parse_args(autoencoder.build_parser(), argv)
    run = rundir.run_dir(args, "autoencoder")
    return autoencoder.run_variant("tied", args, datasets.load(args), run)


@pytest.mark.slow
def test_same_seed_gives_same_numbers(tiny_data_dir, tmp_path):
    first, first_images = train_variant(tiny_data_dir, tmp_path / "a", "3")
    again, again_images = train_variant(tiny_data_dir, tmp_path / "b", "3")
    other, _ = train_variant(tiny_data_dir, tmp_path / "c", "4")
    assert first["losses"] == again["losses"]
    assert first["test_loss"] == again["test_loss"]
    assert (first_images == again_images).all()
    assert first["losses"] != other["losses"]


@pytest.mark.slow
def test_steps_per_run_changes_no_number(tiny_data_dir, tmp_path):
    looped, looped_images = train_variant(tiny_data_dir, tmp_path / "a", "3", "7")
    single, single_images = train_variant(tiny_data_dir, tmp_path / "b", "3", "1")
    assert (looped["steps_per_run"], single["steps_per_run"]) == (7, 1)
    assert looped["losses"] == single["losses"]
    assert looped["test_loss"] == single["test_loss"]
    assert (looped_images == single_images).all()


@pytest.mark.slow
def test_xla_is_on_by_default_and_moves_numbers_only_by_round_off(tiny_data_dir, tmp_path):
    compiled, compiled_images = train_variant(tiny_data_dir, tmp_path / "a", "3")
    plain, plain_images = train_variant(
        tiny_data_dir, tmp_path / "b", "3", "32", "--no-xla"
    )
    assert (compiled["xla"], plain["xla"]) == (True, False)
    np.testing.assert_allclose(compiled["test_loss"], plain["test_loss"], rtol=1e-5)
    np.testing.assert_allclose(compiled_images, plain_images, atol=1e-5)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--steps", "-5"], "--steps: expected an int in [1, 2147483647], found -5"),
        (["--dataset", "cifar10"], "--dataset: expected one of mnist, fashion_mnist"),
        ([], "--data-dir: expected an existing directory, found nothing at"),
        (
            ["--validation", "-1"],
            "--validation: expected an int in [0, 2147483647], found -1",
        ),
        (["--steps-per-run", "0"], "--steps-per-run: expected an int in [1, 256]"),
        (
            ["--steps-per-run", "257"],
            "--steps-per-run: expected an int in [1, 256], found 257",
        ),
    ],
)
def test_bad_flags_exit_with_one_line(tmp_path, capsys, flags, message):
    assert message in refused_before_any_work(autoencoder.main, flags, tmp_path, capsys)


def test_help_documents_every_flag(capsys):
    with pytest.raises(SystemExit):
        autoencoder.main(["--help"])
    text = capsys.readouterr().out
    flags = ["--steps", "--batch-size", "--dataset", "--data-dir", "--seed", "--variant"]
    for flag in [*flags, "--out", "--quick", "--validation"]:
        assert flag in text


@pytest.mark.parametrize("steps, period", [(10001, 1000), (5000, 1000), (300, 60), (3, 1)])
def test_log_period(steps, period):
    assert entry.log_period(steps) == period


def test_precision_is_recorded_and_a_resume_keeps_it(tiny_data_dir, tmp_path):
    out = tmp_path / "run"
    argv = ["--data-dir", tiny_data_dir, "--validation", "0", "--steps", "4"]
    argv += ["--batch-size", "8", "--variant", "tied", "--no-xla"]
    autoencoder.main([*argv, "--precision", "mixed_float16", "--out", str(out)])
    result = json.loads((out / "results.json").read_text())["variants"]["tied"]
    assert result["precision"] == "mixed_float16" and math.isfinite(result["test_loss"])
    record = json.loads((out / "run.json").read_text())
    assert record["flags"]["precision"] == "mixed_float16"
    emulated = record["started"]["precision"]["emulated"]
    gpu = bool(tf.config.list_physical_devices("GPU"))
    assert (emulated is None) if gpu else ("emulates" in emulated)
    with pytest.raises(
        ZooError,
        match=r"expected --precision 'mixed_float16' as the run was started with "
        r"\(run.json\), found --precision 'float32'",
    ):
        autoencoder.main(["--resume", str(out), "--precision", "float32"])
    (checkpoint,) = (out / "checkpoints").glob("*tied.npz")
    with np.load(checkpoint) as saved:  # float32 variables, and the loss scale
        assert saved["var:autoencoder/encoder/W"].dtype == np.float32
        assert saved["var:loss_scale/scale"] >= 1.0
