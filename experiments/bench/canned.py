"""Benchmark: a canned ``DNNClassifier`` trained through ``train()``: ours against
TensorFlow 2.15's own estimator (the reference venv, a subprocess).

The program is :mod:`experiments.bench.canned_timing`: the deep part of the census
wide & deep model (32 numeric inputs, hidden 100-75-50-25, 2 classes, batch 40,
Adagrad), where the work of each ``session.run`` outside the model counts. Rows,
each the best of ``--repeats`` runs (the runs alternate between the sides):

* ``tf215``: TensorFlow 2.15 + tensorflow-estimator 2.15, one step per
  ``session.run`` (its canned estimators have no other way on CPU);
* ``ours``: our ``tf.compat.v1.estimator.DNNClassifier``, one step per run;
* ``ours_k<K>``: the same model_fn under our ``TPUEstimator`` (``use_tpu=False``)
  with ``iterations_per_loop=K`` and our opt-in ``loop_on_cpu=True``: K steps per run.

Each row has ``steps_per_second`` (wall clock), ``steps_per_cpu_second`` (per
second of the process's CPU time, steadier on a shared machine) and the ratios of
both to ``tf215``'s. Timings depend on the machine and its load: they are results,
never test assertions.

``make bench`` times it too (:data:`experiments.bench.speed.OWN_BENCHES`, K =
its ``--steps-per-run``).

Usage::

    make bench-canned ARGS="--json runs/bench_canned.json"
    python -m experiments.bench.canned --quick --json /tmp/bench_canned.json
"""

import json
import os
import pathlib
import subprocess
import types

from experiments.harness import entry, flags, rundir, startup

# TensorFlow 2.15 + tensorflow-estimator 2.15, the reference for tf.estimator's behaviour:
# `make install` makes this venv (`make reference`); ZOO_TF215_PYTHON names another.
REFERENCE_PYTHON = os.environ.get(
    "ZOO_TF215_PYTHON",
    str(pathlib.Path(__file__).resolve().parents[2] / ".venv-tf215" / "bin" / "python"),
)
TIMING = pathlib.Path(__file__).with_name("canned_timing.py")


def _reference(steps, python):
    """TF 2.15's rates, from a subprocess of ``python`` running the timing program."""
    output = subprocess.run(
        [python, str(TIMING), str(steps)], check=True, capture_output=True, text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    ).stdout  # fmt: skip
    return json.loads(output.strip().splitlines()[-1])


def _ours(steps, steps_per_run):
    """Our rates; K > 1 steps per run through TPUEstimator's iterations_per_loop."""
    from experiments.bench import canned_timing  # noqa: PLC0415  (imports TensorFlow)
    from zoo.compat.estimator.canned.dnn import DNNClassifier  # noqa: PLC0415
    from zoo.compat.estimator.tpu import tpu_config, tpu_estimator  # noqa: PLC0415

    def classifier(hidden_units, feature_columns, model_dir, n_classes, config):
        canned = DNNClassifier(hidden_units, feature_columns, model_dir, n_classes,
                               config=config)  # fmt: skip
        if steps_per_run == 1:
            return canned
        loop = tpu_config.TPUConfig(iterations_per_loop=steps_per_run)
        return tpu_estimator.TPUEstimator(
            model_fn=lambda features, labels, mode, params, config: canned.model_fn(
                features, labels, mode, config
            ),
            model_dir=model_dir,
            config=tpu_config.RunConfig(tpu_config=loop),
            use_tpu=False,
            train_batch_size=canned_timing.BATCH,
            loop_on_cpu=True,  # ours: K steps per run on CPU (TF 1.15 ran one)
        )

    estimators = types.SimpleNamespace(DNNClassifier=classifier)
    return canned_timing.steps_per_second(estimators, steps, steps_per_run=steps_per_run)


def reference_parser(description, steps):
    """An argument parser for a row timed against TensorFlow 2.15 in its venv: the
    JSON file, ``--steps``, ``--repeats`` and ``--reference-python`` (no shared flag:
    such a row loads no data).

    Args:
        description: what the row times.
        steps: the default of ``--steps``.

    Returns:
        The parser, for the row to add its own flags.
    """
    p = flags.bare_parser(description)
    flags.add_json_flag(p)
    p.add_argument("--steps", type=int, default=steps, check=flags.integer(),
                   help="timed training steps per run")  # fmt: skip
    p.add_argument("--repeats", type=int, default=3, check=flags.integer(),
                   help="runs per row and side; the best is kept")  # fmt: skip
    p.add_argument("--reference-python", default=REFERENCE_PYTHON,
                   help="the python of the TensorFlow 2.15 + tensorflow-estimator "
                   "venv")  # fmt: skip
    return p


def build_parser():
    """Returns the benchmark's argument parser."""
    p = reference_parser(
        "Time a canned DNNClassifier through train(): ours (1 and K steps per run) "
        "against TensorFlow 2.15's estimator in its own venv.",
        steps=2000,
    )
    p.add_argument("--steps-per-run", default="10,100", check=flags.int_list(),
                   help="the K of the ours_k<K> rows, comma-separated")  # fmt: skip
    p.add_argument("--quick", action="store_true",
                   help="200 steps, 1 repeat, K=10: checks the pipeline")  # fmt: skip
    return p


def measure(steps, repeats, ks, python=REFERENCE_PYTHON):
    """The rows: each side's best of ``repeats`` alternating runs of ``steps`` steps.

    Args:
        steps: timed steps per run.
        repeats: runs per row.
        ks: the K of the ``ours_k<K>`` rows.
        python: the reference venv's python; without it, no ``tf215`` row and no
            ratios.

    Returns:
        row name -> rates (and their ratios to ``tf215``'s).
    """
    sides = {"ours": lambda: _ours(steps, 1)}
    sides.update({f"ours_k{k}": lambda k=k: _ours(steps, k) for k in ks})
    if os.path.exists(python):
        sides = {"tf215": lambda: _reference(steps, python), **sides}
    runs = {name: [] for name in sides}
    for _ in range(repeats):
        for name, side in sides.items():
            runs[name].append(side())
    rows = {
        name: {key: max(r[key] for r in results) for key in results[0]}
        for name, results in runs.items()
    }
    for row in rows.values() if "tf215" in rows else ():
        for key in ("steps_per_second", "steps_per_cpu_second"):
            row[f"ratio_{key}"] = row[key] / rows["tf215"][key]
    return rows


def bench(train, args, timed=None, ratios=None):
    """``make bench``'s canned row (:data:`experiments.bench.speed.OWN_BENCHES`):
    ``--steps`` steps, at most 3 of ``--rounds``, K = ``--steps-per-run``.

    Returns:
        ``{"canned": rows}`` (see :func:`measure`).
    """
    del train, timed, ratios  # its own data and timing
    print("canned DNNClassifier...", flush=True)
    return {"canned": measure(args.steps, min(args.rounds, 3), [args.steps_per_run])}


def main(argv=None):
    """Runs the benchmark; see ``--help``."""
    args = flags.parse_args(build_parser(), argv)
    startup.import_tensorflow()
    run = None if args.json else rundir.run_dir(args, "bench_canned")
    steps, repeats = (200, 1) if args.quick else (args.steps, args.repeats)
    ks = [10] if args.quick else [int(k) for k in args.steps_per_run.split(",")]
    rows = measure(steps, repeats, ks, args.reference_python)
    results = {"quick": args.quick, "steps": steps, "repeats": repeats, "rows": rows}
    path = rundir.write_bench_results(run, results, args.json)
    for name, row in rows.items():
        ratio = row.get("ratio_steps_per_cpu_second")
        print(f"{name}: {row['steps_per_second']:.0f} steps/s, "
              f"{row['steps_per_cpu_second']:.0f} per CPU s"
              + (f" ({ratio:.2f}x TF 2.15)" if ratio else ""))  # fmt: skip
    print(f"results in {path}")


if __name__ == "__main__":
    entry.entry_point(main)
