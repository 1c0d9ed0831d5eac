"""The ``bf16`` entry of every model row of the speed bench: ours and Keras 3 in bfloat16.

Every model row of :mod:`experiments.bench.speed` (the autoencoder untied and tied,
the MLP, the DCGAN, the GRU classifier, the siamese twins) times these contenders
among its float32 ones, in the same interleaved rounds of one process:

* ``ours_no_xla``, ``ours_xla``: the row's K-step loop built under
  ``zoo.precision.policy("mixed_bfloat16")`` (float32 variables read in
  bfloat16), uncompiled and compiled; ``ours_best`` the faster. The DCGAN's
  loop is timed uncompiled only (compiled with XLA it runs at about 1 step/s:
  see docs/precision.md);
* ``keras_spe``, ``keras_spe_xla`` (and the RNN's ``_unroll`` pair): the row's
  Keras 3 model built under
  ``keras.mixed_precision.set_global_policy("mixed_bfloat16")``,
  ``steps_per_execution=K``, without and with ``jit_compile``; ``keras_best``
  the fastest.

``--quick`` times nothing compiled. While timed, their names carry :data:`PREFIX`;
:func:`split` then moves them into the row's ``bf16`` entry: their speed tables,
the setting each ``*_best`` took, ``ratio_fp32`` (bfloat16 ``ours_best`` / the
row's own float32 ``ours_best``, from the same rounds) and ``ratio_keras_best``
(bfloat16 ``ours_best`` / ``keras_best``), with their ``cpu_`` forms from CPU time
per step. A model's ``bf16`` holds the worst of each ratio over its variants;
the JSON's top-level ``bf16`` (:func:`summary`) the CPU's bfloat16 flags and
which :data:`GOALS` hold. Without those flags bfloat16 is emulated and the goals
do not apply.

This module imports neither TensorFlow nor Keras at import time.
"""

import contextlib

POLICY = "mixed_bfloat16"
PREFIX = "bf16_"
RATIOS = ("ratio_fp32", "ratio_keras_best")
WIDTHS = "bf16_widths"  # the row of experiments.bench.bf16_widths: the break-even
# (ratio, least value, the models it is asked of: None for every row)
GOALS = (
    ("ratio_keras_best", 1.2, None),
    ("ratio_fp32", 1.3, ("autoencoder", "mlp")),
)


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


def contenders(ours, keras_fits, quick, ours_compiled=True):
    """Returns a row's bfloat16 contenders, ``{PREFIX + name: run(steps)}``.

    Args:
        ours: ``ours(xla=..., policy=...)`` returns ``run(steps)`` of the row's
            K-step loop, compiled or not, built under the precision policy.
        keras_fits: ``{name suffix: keras_fit(jit_compile=...)}``, the row's Keras 3
            settings besides ``jit_compile`` (the RNN's ``unroll``), each returning
            ``run(steps)`` of ``model.fit`` at ``steps_per_execution=K``.
        quick: ``--quick``: nothing compiled.
        ours_compiled: whether our loop is timed compiled too (not the DCGAN's).
    """
    from experiments.bench.rnn_siamese import xla_suffix

    compiled = (False,) if quick else (False, True)
    runs = {
        f"{PREFIX}ours_{xla_suffix(xla)}": ours(xla=xla, policy=POLICY)
        for xla in compiled
        if ours_compiled or not xla
    }
    with keras_policy(POLICY):
        for suffix, keras_fit in keras_fits.items():
            for xla in compiled:
                name = f"{PREFIX}keras_spe{'_xla' if xla else ''}{suffix}"
                runs[name] = keras_fit(jit_compile=xla)
    return runs


def best_of(runs):
    """Returns ``{reference: names}``: the bfloat16 ``ours_best`` and ``keras_best``."""
    return {
        f"{PREFIX}{reference}": [name for name in runs if name.startswith(PREFIX + prefix)]
        for reference, prefix in (("ours_best", "ours_"), ("keras_best", "keras_"))
    }


def split(best, timing):
    """Moves the bfloat16 contenders of a timed row into its ``bf16`` entry.

    Args:
        best: ``{reference: the name chosen}`` of the row's timing
            (:func:`experiments.bench.speed.timed`), with :func:`best_of`'s.
        timing: the row's tables ``{table: {name: value}}``, its float32
            ``ours_best`` among them.

    Returns:
        ``(best, timing, entry)``: the first two without the bfloat16 names, and
        the ``bf16`` entry: their tables (names without :data:`PREFIX`), which
        setting each reference took, and :data:`RATIOS` with their ``cpu_`` forms.
    """

    def parts(table):
        fp32, mixed = {}, {}
        for name, value in table.items():
            if name.startswith(PREFIX):
                mixed[name.removeprefix(PREFIX)] = value
            else:
                fp32[name] = value
        return fp32, mixed

    best, mixed_best = parts(best)
    tables = {table: parts(values) for table, values in timing.items()}
    timing = {table: fp32 for table, (fp32, _) in tables.items()}
    entry = {
        **{reference: name.removeprefix(PREFIX) for reference, name in mixed_best.items()},
        **{table: mixed for table, (_, mixed) in tables.items()},
    }
    speeds, cpu = entry["steps_per_s"], entry["cpu_ms_per_step"]
    for key, (row, name) in (
        ("ratio_fp32", (timing, "ours_best")),
        ("ratio_keras_best", (entry, "keras_best")),
    ):
        entry[key] = speeds["ours_best"] / row["steps_per_s"][name]
        entry[f"cpu_{key}"] = row["cpu_ms_per_step"][name] / cpu["ours_best"]
    return best, timing, entry


def worst(variants):
    """Returns a model's ``bf16``: each of :data:`RATIOS` and its CPU-time form, the
    least over its variants."""
    keys = [name for key in RATIOS for name in (key, f"cpu_{key}")]
    return {key: min(variant["bf16"][key] for variant in variants) for key in keys}


def recommended(row):
    """Returns the policy a model's ``bf16`` entry recommends: bfloat16 only where it
    measured faster than float32 at its best in both wall and CPU time (every variant),
    else float32."""
    return POLICY if min(row["ratio_fp32"], row["cpu_ratio_fp32"]) > 1.0 else "float32"


def timed_rows(results):
    """Yields ``(model, row)`` for each row of the bench's results with a ``bf16`` entry."""
    for model, entry in results.items():
        if isinstance(entry, dict) and "bf16" in entry:
            yield model, entry


def summary(results, flags):
    """Returns the JSON's top-level ``bf16``: the policy, the CPU's flags, the goals.

    Args:
        results: the bench's results so far, ``{model: {"bf16": ..., ...}, ...}``.
        flags: the CPU's bfloat16 flags (:func:`zoo.training.precision.cpu_bf16_flags`).

    Returns:
        ``{"policy", "cpu_bf16_flags", "goals_apply", "goals", "recommended",
        "break_even_width"}``; ``goals`` maps each goal (``"ratio_fp32 >= 1.3"``) to
        ``{"asked_of", "rows": {model: ratio}, "holds": bool}`` over the models timed
        (``holds`` is false where none was); ``recommended`` each model's policy
        (:func:`recommended`); ``break_even_width`` the hidden width from which on
        bfloat16 pays (:mod:`experiments.bench.bf16_widths`; None where at none, or
        absent where not timed).
    """
    rows = {model: entry["bf16"] for model, entry in timed_rows(results)}
    goals = {}
    for key, least, models in GOALS:
        ratios = {m: row[key] for m, row in rows.items() if models is None or m in models}
        holds = bool(ratios) and min(ratios.values()) >= least
        goals[f"{key} >= {least}"] = {
            "asked_of": ", ".join(models) if models else "every row",
            "rows": ratios,
            "holds": holds,
        }
    found = {
        "policy": POLICY,
        "cpu_bf16_flags": flags,
        "goals_apply": bool(flags),
        "goals": goals,
        "recommended": {model: recommended(row) for model, row in rows.items()},
    }
    if WIDTHS in results:
        found["break_even_width"] = results[WIDTHS]["break_even"]
        found["widths_timed"] = [int(width) for width in results[WIDTHS]["widths"]]
    return found


def report(results):
    """Returns the bfloat16 lines of the bench's printout: a line per row, then the goals.

    Args:
        results: the bench's results with the top-level ``bf16`` (:func:`summary`); a
            ``bf16`` entry timed apart from its row's float32 contenders holds the float32
            tables of its own rounds as ``fp32`` (:mod:`experiments.bench.rnn_siamese`).
    """
    lines = [
        f"{POLICY:26}  ours fp32 ->    bf16 at its best     Keras bf16 at its best"
        "         | ratio_fp32 ratio_keras_best | CPU: the same"
    ]
    for model, entry in timed_rows(results):
        for variant, timing in entry["variants"].items():
            row, speeds = timing["bf16"], timing["bf16"]["steps_per_s"]
            fp32 = row.get("fp32", timing)["steps_per_s"]  # what ratio_fp32 divides by
            lines.append(
                f"{model + '/' + variant:26}{fp32['ours_best']:10.1f} -> "
                f"{speeds['ours_best']:7.1f} {'(' + row['ours_best'] + ')':14}"
                f"{speeds['keras_best']:7.1f} {'(' + row['keras_best'] + ')':23}| "
                f"{row['ratio_fp32']:10.2f} {row['ratio_keras_best']:16.2f} |"
                f" {row['cpu_ratio_fp32']:5.2f} {row['cpu_ratio_keras_best']:5.2f}"
            )
    from zoo.training.precision import CPU_BF16_FLAGS  # here: it imports TensorFlow

    record = results["bf16"]
    for policy in ("float32", POLICY):
        models = [m for m, chosen in record["recommended"].items() if chosen == policy]
        lines.append(f"recommended {policy}: {', '.join(models) or 'no row'}")
    if "break_even_width" in record:
        timed = ", ".join(map(str, record["widths_timed"]))
        least = record["break_even_width"]
        lines.append(
            f"{POLICY} pays from hidden width {least} on (MLP, widths {timed})"
            if least
            else f"{POLICY} pays at no hidden width timed (MLP, widths {timed})"
        )
    for goal, verdict in record["goals"].items():
        found = ", ".join(f"{m} {ratio:.2f}" for m, ratio in verdict["rows"].items())
        holds = "holds" if verdict["holds"] else "does NOT hold"
        if not record["goals_apply"]:
            holds = (
                f"not applicable, this CPU has none of {', '.join(CPU_BF16_FLAGS)} "
                f"(measured: {holds.lower()})"
            )
        lines.append(
            f"bf16 goal {goal} ({verdict['asked_of']}): {holds}; {found or 'not timed'}"
        )
    return "\n".join(lines)
