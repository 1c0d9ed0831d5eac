"""The benchmark: its matmul count, its flag checks and a --quick smoke run (no timing)."""

import json
import math

import pytest
import tensorflow as tf

from experiments.bench import contenders, rnn_siamese
from experiments.bench import speed as bench
from experiments.harness import datasets
from layers.errors import ZooError
from zoo.models.gan import trainable_under

CONTENDERS = {
    "ours",
    "ours_best",
    "ours_no_xla",
    "ours_one_step",
    "ours_feed_dict",
    "ours_graph_input",
    "keras",
    "keras_spe",
    "keras_spe_xla",
    "keras_best",
    "tf_function",
    "tf_function_loop",
    "compute_limit",
    "compute_limit_xla",
    "compute_limit_no_xla",
    "limit",
}


@pytest.mark.parametrize("variant", ["untied", "tied"])
def test_autoencoder_step_needs_two_forward_and_three_backward_products(variant):
    shapes = contenders.needed_matmuls(bench.Case("autoencoder", variant, 128), 784, 10)

    outputs = sorted(
        (a[1] if ta else a[0], b[0] if tb else b[1]) for a, b, ta, tb in shapes
    )
    # forward x@W, code@W_dec; backward d_code, dW_dec, dW_enc; never d_x [128, 784].
    # Tied, the decoder's share of dW comes out as [784, 625] (no transposed copy).
    dw_dec = (784, 625) if variant == "tied" else (625, 784)
    assert outputs == sorted([(128, 625), (128, 625), (128, 784), dw_dec, (784, 625)])


def test_keras_gan_has_our_gan_variables_shapes(graph):
    """The Keras contender is our DCGAN: the same weights, shape by shape."""
    from experiments.bench import gan as gan_bench

    case = bench.Case("gan", "dcgan", 8)
    x = tf.compat.v1.placeholder(tf.float32, [8, 784])
    gan_bench.update_fn(case.batch_size)(x, None)
    ours = {
        scope: [v.shape.as_list() for v in trainable_under(f"gan/{scope}")]
        for scope in ("generator", "discriminator")
    }
    generator, discriminator = gan_bench.keras_players()
    assert ours == {
        "generator": [list(w.shape) for w in generator.weights],
        "discriminator": [list(w.shape) for w in discriminator.weights],
    }
    assert ours["generator"] == [
        [64, 3136],
        [3136],
        [5, 5, 32, 64],
        [32],
        [5, 5, 32, 1],
        [1],
    ]


def test_mlp_step_needs_three_forward_and_five_backward_products():
    shapes = contenders.needed_matmuls(bench.Case("mlp", "625-625", 100), 784, 10)

    assert len(shapes) == 8


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--rounds", "0"], r"--rounds: expected an int in \[1, \d+\], found 0"),
        (["--warmup", "-1"], r"--warmup: expected an int in \[0, \d+\], found -1"),
        (["--steps", "3", "--rounds", "4"], r"--rounds/--warmup: expected rounds > 0"),
        (["--models", "mlp,vae"], r"--models: expected models from autoencoder, mlp, gan"),
    ],
)
def test_bad_rounds_or_warmup_are_refused_before_any_work(
    argv, message, tmp_path, tiny_data_dir, monkeypatch
):
    monkeypatch.setattr(datasets, "load", lambda *a, **k: pytest.fail("work started"))
    with pytest.raises(ZooError, match=message):
        bench.main([*argv, "--data-dir", tiny_data_dir, "--json", str(tmp_path / "x.json")])


def test_help_offers_no_checkpoint_flags_and_refuses_them(capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--help"])
    assert exit_info.value.code == 0
    assert "--resume" not in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--checkpoint-every", "5"])
    assert exit_info.value.code == 2


@pytest.mark.slow
def test_quick_run_writes_every_key_with_positive_numbers(tiny_data_dir, tmp_path):
    path = tmp_path / "bench.json"

    argv = ["--quick", "--models", "autoencoder,mlp", "--data-dir", tiny_data_dir]
    assert bench.main([*argv, "--json", str(path)]) == 0

    results = json.loads(path.read_text())
    assert results["machine"]["cores"] > 0
    assert results["machine"]["tensorflow"] and results["machine"]["devices"]
    assert results["peak_rss_mib"] > 0
    for model, variants in (("autoencoder", {"untied", "tied"}), ("mlp", {"625-625"})):
        entry = results[model]
        for key in bench.RATIOS:
            assert entry[key] > 0
        assert set(entry["variants"]) == variants
        for timing in entry["variants"].values():
            for table in ("steps_per_s", "median_steps_per_s", "cpu_ms_per_step"):
                assert set(timing[table]) == CONTENDERS
                assert all(v > 0 and math.isfinite(v) for v in timing[table].values())
            assert timing["next_batch_ms"] > 0
            for name, candidates in bench.BEST_OF.items():
                assert timing[name] in candidates
                assert timing["steps_per_s"][name] == max(
                    timing["steps_per_s"][k] for k in candidates
                )
            assert math.isfinite(timing["feed_fraction"])
            assert math.isfinite(timing["cpu_feed_fraction"])
            assert math.isfinite(timing["input_fraction"])
    for model, keras in (
        ("rnn", {"keras_spe", "keras_spe_unroll"}),
        ("siamese", {"keras_spe"}),
    ):
        entry = results[model]
        assert entry["batch_size"] == rnn_siamese.QUICK_SIZES.batch
        assert set(entry["variants"]) == {"shared"}
        timing = entry["variants"]["shared"]
        names = {"ours_no_xla", "compute_limit_no_xla", *keras}  # --quick: not compiled
        references = {"ours_best", "keras_best", "compute_limit"}
        assert set(timing["steps_per_s"]) == names | references
        for key, reference in rnn_siamese.RATIOS.items():
            assert (
                entry[key]
                == timing["steps_per_s"]["ours_best"] / timing["steps_per_s"][reference]
            )
        for reference in references:
            assert (
                timing["steps_per_s"][reference] == timing["steps_per_s"][timing[reference]]
            )
    bf16 = results["bf16"]
    assert bf16["policy"] == "mixed_bfloat16"
    assert set(bf16["cpu_bf16_flags"]) <= {"avx512_bf16", "amx_bf16"}
    for row in ("autoencoder_untied", "autoencoder_tied", "mlp", "rnn", "siamese"):
        speeds = bf16[row]["steps_per_s"]
        assert {"ours_fp32_no_xla", "ours_bf16_no_xla", "keras_bf16_spe"} <= set(speeds)
        assert (
            bf16[row]["ratio_fp32"] == speeds["ours_bf16_best"] / speeds["ours_fp32_best"]
        )
        assert (
            bf16[row]["ratio_keras_best"]
            == speeds["ours_bf16_best"] / speeds["keras_bf16_best"]
        )
