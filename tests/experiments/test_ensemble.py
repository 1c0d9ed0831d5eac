"""The two-MLP ensemble experiment: outputs of a quick run, sharing, bad flags."""

import json
import math

import pytest

from experiments import ensemble
from experiments.harness import datasets, entry, flags, rundir
from tests.conftest import make_idx_dir, refused_before_any_work
from tests.experiments.test_autoencoder import assert_png, quick_argv, read_events


@pytest.mark.slow
def test_quick_run_writes_every_output_and_shares(tiny_data_dir, tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        ensemble.main(quick_argv(tiny_data_dir, out, "--steps", "40", "--batch-size", "20"))
        == 0
    )

    results = json.loads((out / "results.json").read_text())
    assert results["dataset"] == f"idx:{tiny_data_dir}" and results["steps"] == 40
    cases = results["cases"]
    assert set(cases) == {"shared", "independent"}
    for case, result in cases.items():
        for network in result["networks"].values():
            steps, losses, _ = zip(*network["log"], strict=True)
            assert steps == (0, 8, 16, 24, 32)
            assert all(math.isfinite(loss) for loss in losses)
            assert losses[-1] < losses[0]
            assert network["train_examples"] == 600
            assert network["test_accuracy"] >= 0.9  # the stripes are easy to learn
            assert network["steps_per_second"] > 0
        tags, has_graph = read_events(out / "tensorboard" / case)
        assert has_graph
        assert {"mlp1/loss", "mlp2/batch_accuracy", "mlp2/test_accuracy"} <= tags
    assert_png(out / "accuracy.png")

    shared, independent = cases["shared"]["networks"], cases["independent"]["networks"]
    # Built and fed identically, mlp1 is the same network in both cases.
    assert shared["mlp1"]["log"] == independent["mlp1"]["log"]
    # Shared: mlp2 continues from mlp1's weights; independent: it starts afresh.
    assert cases["shared"]["mlp2_first_loss_over_mlp1_first_loss"] < 0.5
    assert independent["mlp2"]["log"][0][1] > 2 * shared["mlp2"]["log"][0][1]
    assert "average_accuracy" not in cases["shared"]
    assert cases["independent"]["average_accuracy"] >= 0.9

    printed = capsys.readouterr().out
    assert "  step, loss, accurary =      0: " in printed
    assert "accuracy (model averaged) = " in printed


@pytest.mark.slow
def test_same_seed_gives_same_numbers(tiny_data_dir, tmp_path):
    argv = [
        "--data-dir",
        tiny_data_dir,
        "--validation",
        "0",
        "--steps",
        "10",
        "--seed",
        "5",
    ]
    runs = []
    for name in "ab":
        args = flags.parse_args(
            ensemble.build_parser(),
            [*argv, "--batch-size", "20", "--out", str(tmp_path / name)],
        )
        data = datasets.load(args)
        runs.append(ensemble.run_case("independent", args, data, rundir.run_dir(args, "e")))
    first, again = runs
    for name in ensemble.NETWORKS:
        assert first["networks"][name]["log"] == again["networks"][name]["log"]
    assert first["average_accuracy"] == again["average_accuracy"]


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--steps", "0"], "--steps: expected an int in [1, 2147483647], found 0"),
        (["--dataset", "svhn"], "--dataset: expected one of mnist, fashion_mnist"),
        ([], "--data-dir: expected an existing directory, found nothing at"),
    ],
)
def test_bad_flags_exit_with_one_line(tmp_path, capsys, flags, message):
    assert message in refused_before_any_work(ensemble.main, flags, tmp_path, capsys)


def test_too_little_training_data_is_one_clear_line(tmp_path, capsys):
    data_dir = make_idx_dir(tmp_path, n_train=150, n_test=20)
    argv = ["--data-dir", data_dir, "--validation", "0", "--out", str(tmp_path / "run")]
    with pytest.raises(SystemExit):
        entry.entry_point(ensemble.main, argv)
    assert (
        "expected at least 200 training images (two halves of one batch each), found 150"
        in (capsys.readouterr().err)
    )
