"""The benchmark: its matmul count, its flag checks and a --quick smoke run (no timing)."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from experiments.bench import (
    bf16_widths,
    canned,
    contenders,
    precision,
    rnn_siamese,
    tf1_layers,
)
from experiments.bench import speed as bench
from experiments.harness import datasets, flags, record, rundir
from layers.errors import ZooError
from tests.experiments import test_bench_lstm_lm
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
        (["--models", "mlp,vae"], r"--models: expected rows from autoencoder, mlp, gan"),
    ],
)
def test_bad_rounds_or_warmup_are_refused_before_any_work(
    argv, message, tmp_path, tiny_data_dir, monkeypatch
):
    monkeypatch.setattr(datasets, "load", lambda *a, **k: pytest.fail("work started"))
    with pytest.raises(ZooError, match=message):
        bench.main([*argv, "--data-dir", tiny_data_dir, "--json", str(tmp_path / "x.json")])


def test_no_warm_up_runs_no_contender_for_zero_steps():
    """run(0) would be endless for Keras (fit with steps_per_epoch=0)."""
    steps = []

    bench.time_rounds({"keras": steps.append}, 4, 2, warmup=0, multiple=2)

    assert steps == [2, 2]


def test_each_contender_goes_first_in_turn():
    order = []
    runs = {name: lambda steps, name=name: order.append(name) for name in "abc"}

    bench.time_rounds(runs, 3, 3, warmup=0)

    assert order == list("abc" "bca" "cab")


def test_help_offers_no_checkpoint_flags_and_refuses_them(capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--help"])
    assert exit_info.value.code == 0
    assert "--resume" not in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--checkpoint-every", "5"])
    assert exit_info.value.code == 2


# Smaller than --quick alone (20 steps, 2 rounds, 2 warm-up, K=32 at batch 128): each
# contender runs 2 warm-up and 2 timed calls of 2 steps, every key is still written.
SMALLEST = ["--steps", "4", "--rounds", "2", "--warmup", "1", "--steps-per-run", "2",
            "--batch-size", "16", "--mlp-batch-size", "16"]  # fmt: skip


# The rows the smoke run times; those with a test of their own (which runs the row and
# checks its keys: test_bench_zoo_layer_resnet.py, test_bench_estimator.py,
# test_bench_tf1_keras.py) are left out.
OWN_TESTED = ("zoo_layer_resnet", "estimator", "tf1_keras")
SMOKED = [row for row in bench.ROWS if row not in ("gan", *OWN_TESTED)]


@pytest.mark.slow
def test_quick_run_writes_every_key_with_positive_numbers(tiny_data_dir, tmp_path):
    """The rows timed in this one process, as a row's process times its row (a run gives
    each row a process of its own: six starts of TensorFlow would double this test's
    time; the run's merge of its rows is tested on its own, below)."""
    path = tmp_path / "bench.json"
    argv = ["--quick", *SMALLEST, "--models", ",".join(SMOKED)]
    args = flags.parse_args(bench.build_parser(), [*argv, "--data-dir", tiny_data_dir])

    rundir.write_bench_results(None, bench.time_rows(args), path)

    results = json.loads(path.read_text())
    assert not {"gan", *OWN_TESTED} & set(results)  # rows --models leaves out
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
    test_bench_lstm_lm.check_quick_row(results["lstm_lm"])
    canned_rows = results["canned"]  # ours at 1 and K steps per run, TF 2.15 if installed
    reference = {"tf215"} if os.path.exists(canned.REFERENCE_PYTHON) else set()
    assert set(canned_rows) == {"ours", "ours_k2", *reference}
    for row in canned_rows.values():
        assert row["steps_per_second"] > 0 and row["steps_per_cpu_second"] > 0
        for key in ("steps_per_second", "steps_per_cpu_second"):
            if reference:
                assert row[f"ratio_{key}"] == row[key] / canned_rows["tf215"][key]
    for program, row in results["tf1_layers"].items():  # each side in its own process
        sides = tf1_layers.PROGRAM_SIDES[program]
        for table in ("steps_per_s", "median_steps_per_s", "cpu_ms_per_step"):
            assert set(row[table]) == set(sides)
            assert all(v > 0 and math.isfinite(v) for v in row[table].values())
        speeds, cpu = row["steps_per_s"], row["cpu_ms_per_step"]
        for side in sides[1:]:
            assert row["ratio" + side.removeprefix("tf_keras")] == (
                speeds["ours"] / speeds[side]
            )
        assert row["cpu_ratio"] == cpu["tf_keras"] / cpu["ours"]
        graphs = row["graph"]
        assert graphs["ours"]["layers"].startswith("layers.tf1")
        assert graphs["tf_keras"]["layers"].startswith("tf_keras")
        for counts in graphs.values():
            assert counts["step_ops"] == sum(counts["by_type"].values()) > 0
            assert counts["step_ops"] == sum(counts["by_layer"].values())
            assert counts["executed_ops"] > 0  # after grappler, one traced run
    assert set(results["tf1_layers"]) == set(tf1_layers.PROGRAMS)
    fused = results["tf1_layers"]["dcgan"]["graph"]  # TF's batch norm: fused unless told
    assert fused["tf_keras"]["by_type"]["FusedBatchNormV3"] > 0
    assert fused["ours"]["by_type"]["FusedBatchNormV3"] > 0  # training: TF's kernel too
    assert "FusedBatchNormV3" not in fused["tf_keras_unfused"]["by_type"]
    assert results["bf16"]["policy"] == "mixed_bfloat16"
    assert set(results["bf16"]["cpu_bf16_flags"]) <= {"avx512_bf16", "amx_bf16"}
    rows = ("autoencoder", "mlp", "rnn", "siamese")
    assert set(results["bf16"]["goals"]["ratio_keras_best >= 1.2"]["rows"]) == set(rows)
    for model in rows:
        variants = results[model]["variants"].values()
        for timing in variants:
            mixed, fp32 = timing["bf16"], timing["steps_per_s"]
            speeds = mixed["steps_per_s"]
            assert {"ours_no_xla", "keras_spe"} <= set(speeds)
            assert not any(name.startswith(precision.PREFIX) for name in fp32)
            assert mixed["ratio_fp32"] == speeds["ours_best"] / fp32["ours_best"]
            assert mixed["ratio_keras_best"] == speeds["ours_best"] / speeds["keras_best"]
        for key in precision.RATIOS:
            assert results[model]["bf16"][key] == min(t["bf16"][key] for t in variants)
        chosen = results["bf16"]["recommended"][model]  # bf16 only where it was faster
        assert chosen == precision.recommended(results[model]["bf16"])
    widths = results["bf16_widths"]["widths"]  # --quick: two widths, uncompiled
    assert list(widths) == [str(width) for width in bf16_widths.QUICK_WIDTHS]
    for entry in widths.values():
        speeds = entry["steps_per_s"]
        assert set(speeds) == {"fp32_no_xla", "bf16_no_xla", "fp32_best", "bf16_best"}
        assert entry["ratio"] == speeds["bf16_best"] / speeds["fp32_best"] > 0
    least = results["bf16_widths"]["break_even"]
    assert results["bf16"]["break_even_width"] == least
    assert least == bf16_widths.break_even(widths)


def timed_row(speeds, cpu_ms):
    """A row's ``best, timing`` as :func:`bench.timed` returns them, bfloat16's included."""
    best = {"ours_best": "ours", "bf16_ours_best": "bf16_ours_no_xla"}
    best["bf16_keras_best"] = "bf16_keras_spe"
    tables = {"steps_per_s": speeds, "cpu_ms_per_step": cpu_ms}
    for values in tables.values():
        for reference, name in best.items():
            values[reference] = values[name]
    return best, tables


def test_split_moves_bf16_contenders_into_the_row_s_entry_with_its_ratios():
    best, timing = timed_row(
        {"ours": 400.0, "bf16_ours_no_xla": 600.0, "bf16_keras_spe": 250.0},
        {"ours": 5.0, "bf16_ours_no_xla": 4.0, "bf16_keras_spe": 8.0},
    )

    best, timing, mixed = precision.split(best, timing)

    assert best == {"ours_best": "ours"}
    assert timing["steps_per_s"] == {"ours": 400.0, "ours_best": 400.0}
    assert mixed["ours_best"] == "ours_no_xla" and mixed["keras_best"] == "keras_spe"
    assert mixed["steps_per_s"] == {
        "ours_no_xla": 600.0,
        "keras_spe": 250.0,
        "ours_best": 600.0,
        "keras_best": 250.0,
    }
    assert (mixed["ratio_fp32"], mixed["cpu_ratio_fp32"]) == (1.5, 1.25)
    assert (mixed["ratio_keras_best"], mixed["cpu_ratio_keras_best"]) == (2.4, 2.0)


@pytest.mark.parametrize("flags", [["avx512_bf16"], []])
def test_summary_says_which_goals_hold_and_where_they_do_not_apply(flags):
    results = {
        "settings": {"steps": 20},
        "autoencoder": {"bf16": {"ratio_fp32": 1.4, "ratio_keras_best": 1.3}},
        "mlp": {"bf16": {"ratio_fp32": 1.1, "ratio_keras_best": 1.5}},
        "rnn": {"bf16": {"ratio_fp32": 0.7, "ratio_keras_best": 1.25}},
        "zoo_layer_resnet": {"ratio": 0.8},
        "bf16_widths": {"widths": {"64": {}, "1024": {}}, "break_even": 1024},
    }
    cpu_ratios = {"autoencoder": 1.2, "mlp": 0.98, "rnn": 0.8}  # the MLP: slower in CPU
    for model, ratio in cpu_ratios.items():
        results[model]["bf16"]["cpu_ratio_fp32"] = ratio
    for model in ("autoencoder", "mlp", "rnn"):
        results[model]["variants"] = {}

    results["bf16"] = summary = precision.summary(results, flags)

    assert summary["goals_apply"] == bool(flags)
    assert summary["goals"] == {
        "ratio_keras_best >= 1.2": {
            "asked_of": "every row",
            "rows": {"autoencoder": 1.3, "mlp": 1.5, "rnn": 1.25},
            "holds": True,
        },
        "ratio_fp32 >= 1.3": {
            "asked_of": "autoencoder, mlp",
            "rows": {"autoencoder": 1.4, "mlp": 1.1},
            "holds": False,
        },
    }
    verdict = "does NOT hold"
    if not flags:
        verdict = (
            "not applicable, this CPU has none of avx512_bf16, amx_bf16 "
            "(measured: does not hold)"
        )
    assert summary["recommended"] == {
        "autoencoder": "mixed_bfloat16",  # faster in wall and CPU time
        "mlp": "float32",
        "rnn": "float32",
    }
    assert (summary["break_even_width"], summary["widths_timed"]) == (1024, [64, 1024])
    lines = precision.report(results).splitlines()
    assert lines[-5:-2] == [
        "recommended float32: mlp, rnn",
        "recommended mixed_bfloat16: autoencoder",
        "mixed_bfloat16 pays from hidden width 1024 on (MLP, widths 64, 1024)",
    ]
    last = lines[-1]
    assert last == (
        f"bf16 goal ratio_fp32 >= 1.3 (autoencoder, mlp): {verdict}; "
        "autoencoder 1.40, mlp 1.10"
    )


def test_one_copy_s_arrays_view_the_variables_every_tf2_pipeline_reads():
    """Once four copies of the training images: numpy, the TF2 contenders' eager copy,
    tf.data's copy of it when iterated, the graph's; now numpy views the eager copy."""
    from zoo.data.loaders import DataSet

    rng = np.random.default_rng(0)
    loaded = DataSet(rng.random((16, 4), np.float32), np.eye(4, dtype=np.float32)[[0] * 16])
    train = contenders.one_copy(loaded)
    pipelines = [iter(contenders.eager_batches(train, 4, seed)) for seed in (0, 1)]
    drawn = [next(pipeline)[0].numpy() for pipeline in pipelines for _ in range(5)]
    contenders.release()  # between the cases of a row: the data stays

    images, labels, variables = contenders._EAGER_COPIES[id(train.images)]
    assert images is train.images and labels is train.labels
    for array, variable in zip((images, labels), variables, strict=True):
        assert np.shares_memory(array, np.asarray(variable.value()))
    np.testing.assert_array_equal(train.images, loaded.images)
    assert all(np.isin(rows, loaded.images).all() for rows in drawn)


# A run of several rows, its row processes faked: each copies a row's results from the
# directory argv[1] names; the run must import no TensorFlow (it prints what it did).
PARENT = """
import json, shutil, subprocess, sys
from experiments.bench import speed

real_run = subprocess.run

def copy_row(command, **settings):
    if command[1:3] != ["-m", "experiments.bench.speed"]:  # not a row: platform's
        return real_run(command, **settings)
    with open(sys.argv[1] + "/commands", "a") as log:
        log.write(json.dumps(command) + "\\n")
    with open(sys.argv[1] + "/row_processes", "a") as log:
        log.write(settings["env"][speed.ROW_PROCESS] + "\\n")
    shutil.copy(f"{sys.argv[1]}/{command[-3]}.json", command[-1])
    return subprocess.CompletedProcess(command, 0)

subprocess.run = copy_row
speed.main(sys.argv[2:])
print(sorted(name for name in ("tensorflow", "keras") if name in sys.modules))
"""


def row_results(peak, **models):
    """A row process's JSON: ``models`` maps each model to its bf16 ratio_keras_best."""
    results = {
        "machine": {"devices": "CPU", "first": peak},
        "settings": {"steps": 4, "load_average_start": [99.0, 99.0, 99.0]},
        "bf16": {"cpu_bf16_flags": ["avx512_bf16"]},
        "peak_rss_mib": peak,
    }
    for model, ratio in models.items():
        bf16 = {"ratio_fp32": 1.0, "cpu_ratio_fp32": 1.0, "ratio_keras_best": ratio}
        results[model] = {"bf16": bf16, "variants": {}}
    return results


def test_rows_run_in_processes_of_their_own_merged_as_one_without_tensorflow(
    tmp_path, tiny_data_dir
):
    rows = {"autoencoder": row_results(900.0, autoencoder=1.5)}
    rows["rnn_siamese"] = row_results(1200.0, rnn=1.1, siamese=1.3)
    for row, results in rows.items():
        (tmp_path / f"{row}.json").write_text(json.dumps(results))
    merged_path = tmp_path / "bench.json"
    argv = ["--quick", "--data-dir", tiny_data_dir, "--models", "rnn_siamese,autoencoder"]
    argv += ["--json", str(merged_path)]

    probed = {**os.environ, record.ONEDNN_KERNEL: "_MklMatMul"}  # as by the probe

    parent = subprocess.run(
        [sys.executable, "-c", PARENT, str(tmp_path), *argv],
        capture_output=True,
        text=True,
        check=False,
        env=probed,
    )

    assert parent.returncode == 0, parent.stderr
    assert parent.stdout.startswith(f"CPU: {record.cpu()['name']} (")  # first, named
    assert "; oneDNN on (TF_ENABLE_ONEDNN_OPTS " in parent.stdout.splitlines()[0]
    assert parent.stdout.splitlines()[-1] == "[]"  # neither TensorFlow nor Keras
    commands = [
        json.loads(line) for line in (tmp_path / "commands").read_text().splitlines()
    ]
    assert [c[-4:-1] for c in commands] == [  # the rows in ROWS order, argv passed on
        ["--models", "autoencoder", "--json"],
        ["--models", "rnn_siamese", "--json"],
    ]
    assert all(c[1:-4] == ["-m", "experiments.bench.speed", *argv] for c in commands)
    row_processes = (tmp_path / "row_processes").read_text().split()
    assert row_processes == ["autoencoder", "rnn_siamese"]  # each told it is a row's
    merged = json.loads(merged_path.read_text())
    assert merged["peak_rss_mib"] == 1200.0
    assert merged["peak_rss_mib_per_row"] == {"autoencoder": 900.0, "rnn_siamese": 1200.0}
    assert merged["machine"]["first"] == 900.0  # the first row's machine and settings
    assert merged["settings"]["steps"] == 4
    assert merged["settings"]["load_average_start"] != [99.0, 99.0, 99.0]  # the run's
    goal = merged["bf16"]["goals"]["ratio_keras_best >= 1.2"]
    assert goal == {
        "asked_of": "every row",
        "rows": {"autoencoder": 1.5, "rnn": 1.1, "siamese": 1.3},
        "holds": False,
    }
    every_row = {**rows["autoencoder"], **rows["rnn_siamese"]}
    for model in ("autoencoder", "rnn", "siamese"):
        assert merged[model] == every_row[model]


@pytest.mark.parametrize("row_process", [None, "mlp"])
def test_the_cpu_line_is_printed_once_by_the_top_process(
    row_process, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv(record.ONEDNN_KERNEL, "MatMul")  # no probe's process
    monkeypatch.setattr(bench, "time_rows", lambda args: {"mlp": {}})
    if row_process:
        monkeypatch.setenv(bench.ROW_PROCESS, row_process)
    else:
        monkeypatch.delenv(bench.ROW_PROCESS, raising=False)

    bench.main(["--models", "mlp", "--json", str(tmp_path / "bench.json")])

    printed = capsys.readouterr().out.splitlines()
    assert [line.startswith("CPU: ") for line in printed].count(True) == (not row_process)
    assert printed[-1].startswith("wrote ")


def test_a_failed_row_process_stops_the_run_naming_the_row(
    tmp_path, tiny_data_dir, monkeypatch
):
    def failed(command, check, env):
        return subprocess.CompletedProcess(command, 3)

    monkeypatch.setattr(subprocess, "run", failed)
    monkeypatch.setenv(record.ONEDNN_KERNEL, "MatMul")  # no probe's process
    argv = ["--models", "mlp,canned", "--data-dir", tiny_data_dir]
    with pytest.raises(
        ZooError, match=r"bench row mlp: expected exit status 0, found 3; see its output"
    ):
        bench.main([*argv, "--json", str(tmp_path / "bench.json")])


CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu avx2 avx512f avx512_bf16 amx_bf16 amx_tile

processor\t: 1
model name\t: another
flags\t\t: avx512_vnni amx_int8
"""


def test_cpu_names_the_first_processor_and_the_flags_that_choose_kernels(tmp_path):
    (tmp_path / "cpuinfo").write_text(CPUINFO)

    found = record.cpu(str(tmp_path / "cpuinfo"))

    assert found == {
        "name": "Intel(R) Xeon(R) Platinum 8480+",
        "vendor": "GenuineIntel",
        "family": "6",
        "model": "143",
        "flags": ["avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16"],
    }
    facts = {**record.machine(), "cpu": found, "cores": 2, "onednn_opts": "default"}
    facts["onednn"] = {"on": True, "kernel": "_MklMatMul"}
    assert record.describe_cpu(facts) == (
        "CPU: Intel(R) Xeon(R) Platinum 8480+ (GenuineIntel family 6 model 143), 2 "
        "cores; flags: avx2 avx512f avx512_bf16 amx_tile amx_bf16; not shown: "
        "avx512_vnni amx_int8; oneDNN on (TF_ENABLE_ONEDNN_OPTS default; a MatMul runs "
        "as _MklMatMul)"
    )


def test_onednn_probe_names_the_kernel_a_session_runs_and_tells_its_children(
    monkeypatch,
):
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")  # off on every CPU
    monkeypatch.setenv(record.ONEDNN_KERNEL, "")  # not probed yet
    assert record.machine()["onednn"] == {"on": None, "kernel": None}

    assert record.machine(probe_onednn=True)["onednn"] == {"on": False, "kernel": "MatMul"}
    assert os.environ[record.ONEDNN_KERNEL] == "MatMul"  # what the rows' processes read
    assert record.machine()["onednn"] == {"on": False, "kernel": "MatMul"}


def test_break_even_is_the_least_width_from_which_on_bfloat16_wins_in_both():
    def widths(*ratios):
        pairs = zip((64, 256, 1024), ratios, strict=True)
        return {width: {"ratio": r, "cpu_ratio": c} for width, (r, c) in pairs}

    assert bf16_widths.break_even(widths((0.8, 0.9), (1.1, 1.05), (1.3, 1.2))) == 256
    assert bf16_widths.break_even(widths((1.2, 1.1), (0.9, 1.0), (1.3, 1.2))) == 1024
    assert bf16_widths.break_even(widths((1.2, 1.1), (1.1, 1.05), (1.3, 0.99))) is None
