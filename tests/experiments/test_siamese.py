"""The siamese experiment: a short real-data run, exact resume, bad flags, the metrics."""

import json
import signal

import numpy as np
import pytest

from experiments import siamese
from experiments.harness import entry
from tests.conftest import on_graph_batch, raising, refused_before_any_work
from tests.experiments.test_autoencoder import assert_png, read_events


@pytest.mark.slow
def test_quick_fashion_run_shared_and_two_towers(fashion_dir, tmp_path):
    out = tmp_path / "run"
    argv = ["--quick", "--steps", "200", "--dataset", "fashion_mnist", "--data-dir"]
    argv += [fashion_dir, "--validation", "1000", "--gallery", "5000", "--out", str(out)]
    assert siamese.main(argv) == 0

    results = json.loads((out / "results.json").read_text())
    assert results["dataset"] == "fashion_mnist" and results["flags"]["steps"] == 200
    shared, two = results["variants"]["shared"], results["variants"]["two_towers"]
    assert two["parameters"] == 2 * shared["parameters"] == 2 * (785 * 256 + 257 * 32)
    assert set(two["nearest_neighbour_accuracy"]) == {
        "tower_1",
        "tower_2",
        "tower_1 vs tower_2",
    }
    for variant, result in results["variants"].items():
        verification = result["verification"]
        assert verification["threshold_from"] == "validation pairs"
        assert verification["test_pairs"] == 10000
        assert 0.45 < verification["test_same_fraction"] < 0.55
        assert verification["test_accuracy"] > 0.75  # chance is 0.5
        assert min(result["nearest_neighbour_accuracy"].values()) > 0.5  # chance 0.1
        assert result["nearest_neighbour_gallery"] == 5000
        assert result["losses"][-1][1] < result["losses"][0][1]
        tags, has_graph = read_events(out / "tensorboard" / variant)
        assert has_graph and f"{variant}/verification/test_accuracy" in tags
    assert_png(out / "loss_curves.png")
    assert_png(out / "embedding.png")


def tiny_argv(data_dir, out, *extra):
    return ["--data-dir", data_dir, "--validation", "0", "--steps", "12", "--batch-size",
            "32", "--checkpoint-every", "5", "--variant", "shared", "--hidden", "16",
            "--embedding-size", "4", "--out", str(out), *extra]  # fmt: skip


def results_of(out):
    return json.loads((out / "results.json").read_text())["variants"]["shared"]


@pytest.mark.slow
def test_interrupted_run_resumes_to_the_same_numbers(tiny_data_dir, tmp_path, monkeypatch):
    """One step per run, uninterrupted, against 3 steps per run cut at step 8."""
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert siamese.main(tiny_argv(tiny_data_dir, whole, "--steps-per-run", "1")) == 0
    looped = tiny_argv(tiny_data_dir, cut, "--steps-per-run", "3")
    on_graph_batch(monkeypatch, 2, raising(signal.SIGINT))  # steps 5-7
    with pytest.raises(SystemExit) as exit_info:
        entry.entry_point(siamese.main, looped)
    assert exit_info.value.code == 128 + signal.SIGINT
    assert json.loads((cut / "partial.json").read_text())["step"] == 8
    monkeypatch.undo()
    assert siamese.main([*looped, "--resume", str(cut)]) == 0

    whole, resumed = results_of(whole), results_of(cut)
    assert resumed["losses"] == whole["losses"]
    assert resumed["verification"] == whole["verification"]
    assert resumed["verification"]["threshold_from"] == "train pairs"
    assert resumed["nearest_neighbour_accuracy"] == whole["nearest_neighbour_accuracy"]
    assert (whole["steps_per_run"], resumed["steps_per_run"]) == (1, 3)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--embedding-size", "0"], "--embedding-size: expected an int in [1, 2147483647]"),
        (["--gallery", "0"], "--gallery: expected an int in [1, 2147483647], found 0"),
        (["--hidden", "-3"], "--hidden: expected an int in [1, 2147483647], found -3"),
        (["--margin", "0"], "--margin: expected a finite number in (0, 1e+09], found 0.0"),
        (["--learning-rate", "nan"], "--learning-rate: expected a finite number in "
         "(0, 1e+09], found nan"),
        (["--variant", "triplets"], "argument --variant: invalid choice: 'triplets'"),
    ],
)  # fmt: skip
def test_bad_flags_exit_with_one_line_before_any_work(tmp_path, capsys, flags, message):
    assert message in refused_before_any_work(siamese.main, flags, tmp_path, capsys)


def test_best_threshold_is_the_most_accurate_cut():
    rng = np.random.default_rng(0)
    distances = rng.random(200)
    same = (distances + rng.normal(0, 0.2, 200) < 0.5).astype(float)
    threshold, accuracy = siamese.best_threshold(distances, same)
    cuts = np.concatenate([[-1.0], distances, [2.0]])
    best = max(np.mean((distances < t) == (same == 1)) for t in cuts + 1e-9)
    assert accuracy == pytest.approx(best)
    assert np.mean((distances < threshold) == (same == 1)) == pytest.approx(best)


def test_nearest_neighbour_accuracy_matches_brute_force():
    rng = np.random.default_rng(1)
    gallery, queries = rng.normal(size=(50, 3)), rng.normal(size=(23, 3))
    gallery_labels, query_labels = rng.integers(0, 3, 50), rng.integers(0, 3, 23)
    nearest = np.argmin(np.linalg.norm(queries[:, None] - gallery[None], axis=2), axis=1)
    expected = np.mean(gallery_labels[nearest] == query_labels)
    found = siamese.nearest_neighbour_accuracy(
        queries, query_labels, gallery, gallery_labels, chunk=7
    )
    assert found == pytest.approx(expected)
