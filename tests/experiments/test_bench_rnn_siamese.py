"""The RNN and siamese benchmark's Keras contenders compute our models' numbers; its
parts (the GRU's float32 and bfloat16 contenders apart) merge into the one row's keys."""

import json
import subprocess
import types

import numpy as np
import pytest
import tensorflow as tf

from experiments.bench import precision, rnn_siamese
from experiments.bench import speed as bench
from experiments.harness import datasets, record
from layers.errors import ZooError
from zoo.models import rnn_classifier
from zoo.models.siamese import siamese

SIZES = rnn_siamese.Sizes(batch=5, rnn_hidden=6, rows=3, tower_hidden=7, embedding=4)
N_IN, N_CLASSES = 12, 3


def ours_with_values(build):
    """Builds ``build()`` in a graph; returns (its value, {variable name: value})."""
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        output = build()
        session.run(tf.compat.v1.global_variables_initializer())
        variables = tf.compat.v1.global_variables()
        values = session.run([output, *variables])
    return values[0], {
        v.op.name: value for v, value in zip(variables, values[1:], strict=True)
    }


def test_keras_gru_without_reset_after_computes_our_gru_with_our_weights():
    rng = np.random.default_rng(0)
    x = rng.random((SIZES.batch, N_IN), dtype=np.float32)
    y = np.eye(N_CLASSES, dtype=np.float32)[rng.integers(0, N_CLASSES, SIZES.batch)]
    logits, w = ours_with_values(
        lambda: (
            rnn_classifier(
                tf.constant(x),
                tf.constant(y),
                n_hidden=SIZES.rnn_hidden,
                n_steps=SIZES.rows,
            ).logits
        )
    )
    model = rnn_siamese.models()["rnn"]
    net, _ = rnn_siamese.keras_model(
        rnn_siamese.Model("rnn", SIZES, {}, 1.0), N_IN, N_CLASSES
    )
    assert model.keras_settings["_unroll"] == {"unroll": True}
    # Keras orders the gates z, r, then the candidate, and splits the input rows
    # (kernel) from the state rows (recurrent_kernel); ours is r, z on [x, h].
    n_in, u = N_IN // SIZES.rows, SIZES.rnn_hidden
    gates, candidate = w["rnn/cell/gates/W"], w["rnn/cell/candidate/W"]
    kernel = np.concatenate([gates[:, u:], gates[:, :u], candidate], axis=1)
    bias = w["rnn/cell/gates/b"]
    net.set_weights(
        [
            kernel[:n_in],
            kernel[n_in:],
            np.concatenate([bias[u:], bias[:u], w["rnn/cell/candidate/b"]]),
            w["rnn/W_RO"],
            w["rnn/b_RO"],
        ]
    )

    np.testing.assert_allclose(net(x).numpy(), logits, rtol=1e-5, atol=1e-5)


def test_keras_siamese_is_one_tower_applied_twice_with_our_distance_and_loss():
    rng = np.random.default_rng(1)
    x1, x2 = rng.random((2, SIZES.batch, N_IN), dtype=np.float32)
    same = np.array([1, 0, 1, 0, 0], np.float32)

    def build():
        net = siamese(
            tf.constant(x1),
            tf.constant(x2),
            tf.constant(same),
            hidden=(SIZES.tower_hidden,),
            embedding_size=SIZES.embedding,
            margin=rnn_siamese.MARGIN,
        )
        return net.distance, net.loss

    (distance, loss), w = ours_with_values(build)
    net, keras_loss = rnn_siamese.keras_model(
        rnn_siamese.Model("siamese", SIZES, {}, 1.0), N_IN, N_CLASSES
    )
    assert len(net.weights) == 4  # one tower, read by both inputs
    tower = "siamese/tower/"
    net.set_weights(
        [w[tower + name] for name in ("W_hid_1", "b_hid_1", "W_embed", "b_embed")]
    )

    keras_distance = net([x1, x2]).numpy()
    np.testing.assert_allclose(keras_distance, distance, rtol=1e-5)
    keras_mean = np.mean(keras_loss(same, keras_distance).numpy())
    np.testing.assert_allclose(keras_mean, loss, rtol=1e-5)


FULL_RUN = types.SimpleNamespace(quick=False, steps=64, rounds=2, warmup=0, steps_per_run=2)


@pytest.fixture
def stub_contenders(monkeypatch):
    """Contenders that build nothing, timed at speeds of their names alone."""
    monkeypatch.setattr(rnn_siamese, "ours", lambda *args, **kwargs: lambda steps: None)
    monkeypatch.setattr(
        rnn_siamese, "keras_fit", lambda *args, **kwargs: lambda steps: None
    )

    def time_rounds(runs, *args):
        speeds = {name: 100.0 + sum(map(ord, name)) % 97 for name in runs}
        tables = ("steps_per_s", "median_steps_per_s")
        cpu = {name: 1e3 / speed for name, speed in speeds.items()}
        return {**{table: dict(speeds) for table in tables}, "cpu_ms_per_step": cpu}

    monkeypatch.setattr(bench, "time_rounds", time_rounds)


def timed_part(part):
    """The row's results of ``part`` (None: all at once), as its process returns them."""
    args = types.SimpleNamespace(**vars(FULL_RUN), part=part)
    return rnn_siamese.bench(None, args, bench.timed, bench.ratios)


def test_each_part_times_together_what_its_ratios_compare(stub_contenders):
    assert bench.ROW_PARTS["rnn_siamese"] == tuple(rnn_siamese.PARTS)
    model = rnn_siamese.models()["rnn"]
    every, _ = rnn_siamese.contenders(model, None, FULL_RUN)
    float32, fp32_best = rnn_siamese.contenders(model, None, FULL_RUN, ("float32",))
    mixed, mixed_best = rnn_siamese.contenders(model, None, FULL_RUN, ("bfloat16",))

    ours = {"ours_no_xla", "ours_xla"}
    assert len(every) == 14 and set(float32) | set(mixed) == set(every)
    assert set(float32) & set(mixed) == ours  # ratio_fp32's reference timed again
    assert set(fp32_best) == {"ours_best", *rnn_siamese.RATIOS.values()}
    assert all(not name.startswith(precision.PREFIX) for name in float32)
    assert set(mixed_best) == {"ours_best", "bf16_ours_best", "bf16_keras_best"}


def test_the_gru_s_parts_merged_hold_the_row_s_keys_and_figures(stub_contenders):
    merged = {}
    for part in ("rnn", "rnn_bf16"):
        bench.merge(merged, timed_part(part))
    together = timed_part(None)["rnn"]

    mixed = merged["rnn"]["variants"]["shared"]["bf16"]
    fp32 = mixed.pop("fp32")  # the float32 loops timed among the bfloat16 contenders
    assert merged["rnn"] == together  # speeds of names alone: the same figures
    assert set(fp32["steps_per_s"]) == {"ours_no_xla", "ours_xla", "ours_best"}
    speeds = mixed["steps_per_s"]
    assert mixed["ratio_fp32"] == speeds["ours_best"] / fp32["steps_per_s"]["ours_best"]
    assert fp32["steps_per_s"]["ours_best"] == max(fp32["steps_per_s"].values())


def test_a_run_of_the_row_times_each_part_in_a_process_of_its_own(
    tmp_path, tiny_data_dir, monkeypatch
):
    commands = []

    def part_process(command, check, env):
        commands.append(command)
        part = command[command.index("--part") + 1]
        assert env[bench.ROW_PROCESS] == part  # it leaves the CPU line to its parent
        model = rnn_siamese.PARTS[part][0]
        results = {
            "settings": {"part": part},
            "bf16": {"cpu_bf16_flags": []},
            "peak_rss_mib": 1000.0 + len(commands),
            model: {part: 1.0},
        }
        with open(command[-1], "w") as file:
            json.dump(results, file)
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(datasets, "load", lambda *a, **k: pytest.fail("TensorFlow's work"))
    monkeypatch.setenv(record.ONEDNN_KERNEL, "_MklMatMul")  # probed: no probe process
    monkeypatch.setattr(subprocess, "run", part_process)
    argv = ["--models", "rnn_siamese", "--data-dir", tiny_data_dir]
    bench.main([*argv, "--json", str(tmp_path / "bench.json")])

    assert [c[c.index("--part") :][:2] for c in commands] == [
        ["--part", part] for part in rnn_siamese.PARTS
    ]
    merged = json.loads((tmp_path / "bench.json").read_text())
    assert merged["rnn"] == {"rnn": 1.0, "rnn_bf16": 1.0}
    assert merged["siamese"] == {"siamese": 1.0}
    assert merged["settings"]["part"] == "rnn"  # the first part's settings
    assert merged["peak_rss_mib_per_part"] == {
        "rnn": 1001.0,
        "rnn_bf16": 1002.0,
        "siamese": 1003.0,
    }
    assert merged["peak_rss_mib"] == 1003.0


@pytest.mark.parametrize("models", ["mlp", "rnn_siamese,mlp"])
def test_a_part_of_another_row_is_refused_before_any_work(
    models, tmp_path, tiny_data_dir, monkeypatch
):
    monkeypatch.setattr(datasets, "load", lambda *a, **k: pytest.fail("work started"))
    argv = ["--models", models, "--part", "rnn", "--data-dir", tiny_data_dir]
    message = (
        r"--part: expected a part of the one row --models names \(rnn_siamese: rnn, "
        rf"rnn_bf16, siamese\), found --part rnn --models {models}; pass e.g."
    )
    with pytest.raises(ZooError, match=message):
        bench.main([*argv, "--json", str(tmp_path / "x.json")])


def test_a_failed_part_stops_the_run_naming_how_to_run_it_alone(
    tmp_path, tiny_data_dir, monkeypatch
):
    monkeypatch.setenv(record.ONEDNN_KERNEL, "_MklMatMul")  # probed: no probe process
    monkeypatch.setattr(
        subprocess, "run", lambda command, check, env: types.SimpleNamespace(returncode=3)
    )
    argv = ["--models", "rnn_siamese", "--data-dir", tiny_data_dir]
    message = (
        r"bench part rnn: expected exit status 0, found 3; see its output above, run it "
        r"alone with --models rnn_siamese --part rnn$"
    )
    with pytest.raises(ZooError, match=message):
        bench.main([*argv, "--json", str(tmp_path / "bench.json")])
