"""bfloat16 rows of the speed bench: our loop and Keras 3, both in mixed precision.

For the autoencoder (untied, tied), the MLP, the DCGAN, the GRU classifier and
the siamese twins, timed in interleaved rounds in one process
(:func:`experiments.bench.speed.timed`):

* ``ours_fp32_xla``, ``ours_fp32_no_xla``: our K-step loop in float32, as the
  speed bench times it; ``ours_fp32_best`` the faster;
* ``ours_bf16_xla``, ``ours_bf16_no_xla``: the same loop built under
  ``zoo.precision.policy("mixed_bfloat16")`` (float32 variables read in
  bfloat16); ``ours_bf16_best`` the faster;
* ``keras_bf16_spe``, ``keras_bf16_spe_xla`` (and the RNN's unrolled pair):
  the speed bench's Keras 3 models built under
  ``keras.mixed_precision.set_global_policy("mixed_bfloat16")``,
  ``steps_per_execution=K``, without and with ``jit_compile``;
  ``keras_bf16_best`` the fastest.

``ratio_fp32`` is ``ours_bf16_best / ours_fp32_best``, ``ratio_keras_best``
``ours_bf16_best / keras_bf16_best`` (``cpu_*``: the same from CPU time per
step). The JSON's ``bf16`` key also records the CPU's bfloat16 flags
(``avx512_bf16``, ``amx_bf16``: :func:`zoo.training.precision.cpu_bf16_flags`) and
the load average before and after: without those flags bfloat16 is emulated and
the goals do not apply. The DCGAN's loop is timed uncompiled only (compiled
with XLA it runs at about 1 step/s: see docs/precision.md); ``--quick`` times
nothing compiled.

Run alone with the speed bench's flags::

    python -m experiments.bench.precision --dataset fashion_mnist \\
        --data-dir /usr/share/datasets/fashion-mnist --json runs/bench-bf16.json

``make bench`` runs it after the other rows (:data:`speed.OWN_BENCHES`).
"""

import contextlib
import os

from experiments.bench import speed
from experiments.harness import entry, rundir

POLICY = "mixed_bfloat16"
BEST_OF = {
    "ours_fp32_best": "ours_fp32_",
    "ours_bf16_best": "ours_bf16_",
    "keras_bf16_best": "keras_bf16_",
}
RATIOS = {"ratio_fp32": "ours_fp32_best", "ratio_keras_best": "keras_bf16_best"}


@contextlib.contextmanager
def keras_policy(name):
    """Keras 3's global dtype policy ``name`` while the models are built."""
    import keras  # here, not at import: --help answers without TensorFlow

    before = keras.mixed_precision.global_policy().name
    keras.mixed_precision.set_global_policy(name)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(before)


def contenders(train, args):
    """Yields ``(row, {name: run(steps)}, steps)`` for every bfloat16 row."""
    from experiments.bench import contenders as common
    from experiments.bench import gan, rnn_siamese

    compiled = (False,) if args.quick else (False, True)
    k = args.steps_per_run
    for model, cases in speed.cases(args).items():
        for case in cases:
            row = f"autoencoder_{case.variant}" if model == "autoencoder" else model
            step = gan.zoo_gan_step(case) if model == "gan" else None
            keras_fit = gan.keras_fit if model == "gan" else common.keras_fit
            ours_compiled = (False,) if model == "gan" else compiled

            def ours(policy, xla, case=case, step=step):
                return common.ours(
                    case, train, args, steps_per_run=k, xla=xla, step=step, policy=policy
                )

            def keras_run(xla, case=case, keras_fit=keras_fit):
                return keras_fit(case, train, args, k, jit_compile=xla)

            runs = _runs(ours, {"": keras_run}, ours_compiled, compiled)
            yield row, runs, case.steps or args.steps
    for model in rnn_siamese.models(args.quick).values():

        def ours(policy, xla, model=model):
            return rnn_siamese.ours(model, train, args, xla, policy=policy)

        keras_runs = {
            suffix: lambda xla, model=model, settings=settings: rnn_siamese.keras_fit(
                model, train, args, xla, **settings
            )
            for suffix, settings in model.keras_settings.items()
        }
        steps = max(args.rounds, int(args.steps * model.steps_fraction))
        yield model.name, _runs(ours, keras_runs, compiled, compiled), steps


def _runs(ours, keras_runs, ours_compiled, keras_compiled):
    """The contenders of one row: ours in float32 and bfloat16, Keras in bfloat16."""
    from experiments.bench.rnn_siamese import xla_suffix

    runs = {}
    for label, policy in (("fp32", "float32"), ("bf16", POLICY)):
        for xla in ours_compiled:
            runs[f"ours_{label}_{xla_suffix(xla)}"] = ours(policy, xla)
    with keras_policy(POLICY):
        for suffix, keras_run in keras_runs.items():
            for xla in keras_compiled:
                runs["keras_bf16_spe" + ("_xla" if xla else "") + suffix] = keras_run(xla)
    return runs


def row_results(timing, best):
    """The row's speeds, which setting won, and the two ratios (wall and CPU)."""
    speeds, cpu = timing["steps_per_s"], timing["cpu_ms_per_step"]
    ratios = {key: speeds["ours_bf16_best"] / speeds[name] for key, name in RATIOS.items()}
    ratios.update(
        {f"cpu_{key}": cpu[name] / cpu["ours_bf16_best"] for key, name in RATIOS.items()}
    )
    return {**best, **timing, **ratios}


def bench(train, args, timed, ratios):
    """Times every bfloat16 row; returns ``{"bf16": {...}}`` for the bench's JSON.

    Args:
        train: the training :class:`zoo.data.DataSet`.
        args: the speed bench's flags.
        timed: :func:`experiments.bench.speed.timed`.
        ratios: unused (the bfloat16 rows have ratios of their own: :data:`RATIOS`).
    """
    from zoo.training.precision import cpu_bf16_flags

    del ratios
    flags_found = cpu_bf16_flags()
    results = {
        "policy": POLICY,
        "cpu_bf16_flags": flags_found,
        "goals_apply": bool(flags_found),
        "load_average_before": os.getloadavg(),
    }
    if not flags_found:
        print("bf16: this CPU has no avx512_bf16 or amx_bf16: bfloat16 is emulated")
    for row, runs, steps in contenders(train, args):
        print(f"{row} in {POLICY}...", flush=True)
        best_of = {
            reference: [name for name in runs if name.startswith(prefix)]
            for reference, prefix in BEST_OF.items()
        }
        best, timing = timed(runs, best_of, steps, args)
        results[row] = row_results(timing, best)
        print(table_line(row, results[row]), flush=True)
    results["load_average_after"] = os.getloadavg()
    return {"bf16": results}


def table_line(row, result):
    """One line: each contender's best steps/s, then the two ratios."""
    speeds = ", ".join(f"{k} {v:.1f}" for k, v in result["steps_per_s"].items())
    return (
        f"{row}, best steps/s: {speeds}; ratio_fp32 {result['ratio_fp32']:.2f}, "
        f"ratio_keras_best {result['ratio_keras_best']:.2f}"
    )


build_parser = speed.build_parser  # the bfloat16 rows take the speed bench's flags


def main(argv=None):
    """Runs the bfloat16 rows alone, with the speed bench's flags."""
    args, run, _, train = speed.start_with_tensorflow(argv)
    results = bench(train, args, speed.timed, speed.ratios)
    print(f"wrote {rundir.write_bench_results(run, results, args.json)}")
    return 0


if __name__ == "__main__":
    entry.entry_point(main)
