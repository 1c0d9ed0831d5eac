"""The GAN experiment: a short real Fashion-MNIST run, exact resume, bad flags."""

import argparse
import json
import math
import os

import numpy as np
import pytest

from experiments import gan
from layers.errors import ZooError
from tests.conftest import refused_in_one_line
from tests.experiments.test_autoencoder import assert_png, read_events
from zoo.data import load_mnist
from zoo.frechet import train_feature_classifier

FASHION = "/usr/share/datasets/fashion-mnist"
SMALL = ["--samples", "200", "--classifier-steps", "100", "--batch-size", "32"]


@pytest.fixture
def fashion_dir():
    """The real Fashion-MNIST IDX files, or a skip."""
    if not os.path.exists(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz")):
        pytest.skip(f"Fashion-MNIST not found at {FASHION}")
    return FASHION


@pytest.mark.slow
def test_quick_fashion_run_writes_every_output(fashion_dir, tmp_path):
    out = tmp_path / "run"
    argv = ["--quick", "--dataset", "fashion_mnist", "--data-dir", fashion_dir]
    argv += [*SMALL, "--steps", "40", "--evals", "2", "--out", str(out)]
    assert gan.main(argv) == 0

    results = json.loads((out / "results.json").read_text())
    assert results["dataset"] == "fashion_mnist" and results["argv"] == argv
    assert "not the Inception FID" in results["metric"]
    assert results["classifier"]["steps"] == 100
    assert results["classifier"]["test_accuracy"] > 0.6  # chance is 0.1
    variants = results["variants"]
    assert set(variants) == {"shared", "unshared"}
    assert results["shared_below_unshared"] == (
        variants["shared"]["final_fcd"] < variants["unshared"]["final_fcd"]
    )
    for variant, result in variants.items():
        steps, distances = zip(*result["fcd"], strict=True)
        assert steps == (0, 20, 40)
        assert all(math.isfinite(d) and d > results["real_floor_fcd"] for d in distances)
        assert result["final_fcd"] == distances[-1]
        assert [row[0] for row in result["losses"]] == [
            begin + step for begin in (0, 20) for step in range(0, 20, 4)
        ]
        assert all(math.isfinite(value) for row in result["losses"] for value in row)
        assert result["steps"] == 40 and result["batch_size"] == 32
        assert result["dataset"] == "fashion_mnist" and result["steps_per_second"] > 0
        assert len(result["class_histogram"]) == 10
        assert math.isclose(sum(result["class_histogram"]), 1.0)
        tags, has_graph = read_events(out / "tensorboard" / variant)
        assert has_graph
        assert {f"{variant}/{n}" for n in ("fcd", "loss", "g_loss", "d_real")} <= tags
        assert_png(out / f"samples_{variant}.png")
    # One seed, one generator at step 0; the shared GAN has learnt something by step 40.
    assert variants["shared"]["fcd"][0] == variants["unshared"]["fcd"][0]
    assert variants["shared"]["final_fcd"] < variants["shared"]["fcd"][0][1]
    assert_png(out / "fcd.png")
    assert_png(out / "coverage.png")
    assert results["class_names"][-1] == "Ankle boot"
    assert max(results["test_class_histogram"]) < 0.2  # the test split is balanced


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--noise-dim", "0"], "--noise-dim: expected an int in [1, 2147483647], found 0"),
        (["--hidden", "-3"], "--hidden: expected an int in [1, 2147483647], found -3"),
        (
            ["--evals", "11", "--steps", "10"],
            "--evals: expected the number of evaluations to be an int in [1, 10], found "
            "11; at most one per step",
        ),
        (["--samples", "1"], "--samples: expected an int in [2, 2147483647], found 1"),
        (["--learning-rate", "0"], "--learning-rate: expected a finite number in (0, "),
        (["--classifier-steps", "0"], "--classifier-steps: expected an int in [1, "),
        (["--variant", "tied"], "argument --variant: invalid choice: 'tied'"),
    ],
)
def test_bad_flags_exit_with_one_line_before_any_work(
    tmp_path, tiny_data_dir, capsys, flags, message
):
    argv = ["--data-dir", tiny_data_dir, "--out", str(tmp_path / "run"), *flags]
    assert message in refused_in_one_line(gan.main, argv, capsys)
    assert not (tmp_path / "run").exists()


def test_help_documents_every_gan_flag():
    text = gan.build_parser().format_help()  # the conformance test runs --help itself
    gan_flags = ("--variant", "--noise-dim", "--hidden", "--evals", "--samples")
    assert all(flag in text for flag in (*gan_flags, "--classifier-steps", "--resume"))


def test_dcgan_widths_double_toward_the_coarse_maps():
    assert gan.widths("dcgan", 32) == ((64, 32), (32, 64))
    assert gan.widths("mlp", 256) == ((256,), (256,))


def test_feature_classifier_measures_images_in_its_last_hidden_layer(tiny_data_dir):
    data = load_mnist(None, data_dir=tiny_data_dir, validation=0, seed=0)
    classifier = train_feature_classifier(data, steps=20, seed=0)
    try:
        images = data.test.images[:50]
        real = classifier.statistics(images)
        assert real.mean.shape == (128,) and real.count == 50
        assert classifier.distance(real, images) == pytest.approx(0.0, abs=1e-6)
        assert classifier.distance(real, 1 - images) > 1.0
        logits = classifier.session.run(classifier.logits, {classifier.images: images})
        expected = np.bincount(logits.argmax(axis=1), minlength=10) / 50
        assert classifier.class_fractions(images) == expected.tolist()
        assert classifier.summary["steps"] == 20
        assert 0 <= classifier.summary["test_accuracy"] <= 1
    finally:
        classifier.close()


def test_evaluations_cut_the_steps_evenly_at_most_one_per_step():
    from experiments.harness.train import boundaries, train_updates

    assert boundaries(6000, 12)[:3] == [0, 500, 1000]
    assert boundaries(10, 3) == [0, 3, 7, 10]
    found = r"shared: expected evaluations to be an int in \[1, 10\], found 11; pass at"
    with pytest.raises(ZooError, match=found):
        train_updates("shared", argparse.Namespace(steps=10), *[None] * 4, evaluations=11)
