"""Benchmark: ``tf.keras`` in a TF1 program, ours (``zoo.compat.install()``: tf_keras
on TensorFlow 2.21) against TensorFlow 2.15's own tf.keras (the reference venv).

The program is :mod:`experiments.bench.tf1_keras_timing` (an MLP 784-256-256-10,
Adam, batch 100, v2 behaviour off), run by each side in a process of its own, the
sides alternating, ``--repeats`` runs each, the best kept. Parts:

* ``fit``: ``model.fit`` on numpy arrays in graph mode, timed from batch ends;
* ``estimator``: the same model called in an Estimator ``model_fn``, timed from
  session-run ends (ours: :mod:`zoo.compat.estimator`; TF 2.15: tensorflow-estimator);
* ``session``: the same MLP on ``get_variable`` in a plain session loop fed numpy
  batches (``session.run([train, loss], feed_dict)``, ours: :mod:`zoo.compat.session`),
  the runtime both parts above stand on.

Each part's row has ``steps_per_second`` (wall clock) and ``steps_per_cpu_second``
(per second of the process's CPU time, steadier on a shared machine) per side and
ours / TF 2.15 of both (goal: >= 1.0). Timings depend on the machine and its load:
results, never test assertions.

``make bench`` times it too (:data:`experiments.bench.speed.OWN_BENCHES`).

Usage::

    python -m experiments.bench.tf1_keras --json /tmp/bench_tf1_keras.json
"""

import json
import os
import pathlib
import subprocess
import sys

from experiments.bench import canned
from experiments.bench.canned import REFERENCE_PYTHON
from experiments.harness import entry, flags, rundir

TIMING = pathlib.Path(__file__).with_name("tf1_keras_timing.py")
ROOT = pathlib.Path(__file__).resolve().parents[2]


def _side(python, steps, zoo):
    """One run of the timing program by ``python`` (``zoo``: under install())."""
    command = [python, str(TIMING), *(["--zoo"] if zoo else []), str(steps)]
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}
    output = subprocess.run(command, check=True, capture_output=True, text=True,
                            env=environment).stdout  # fmt: skip
    return json.loads(output.strip().splitlines()[-1])


def measure(steps, repeats, python=REFERENCE_PYTHON):
    """Each part's rates: ``{part: {"ours": rates, "tf215": rates, "ratio_...": x}}``.

    Args:
        steps: timed steps per run.
        repeats: runs per side; the best of each rate is kept.
        python: the reference venv's python; without it, no ``tf215`` and no ratios.
    """
    sides = {"ours": (sys.executable, True)}
    if os.path.exists(python):
        sides["tf215"] = (python, False)
    runs = {name: [] for name in sides}
    for _ in range(repeats):
        for name, (side_python, zoo) in sides.items():
            runs[name].append(_side(side_python, steps, zoo))
    parts = {}
    for part in runs["ours"][0]:
        row = {
            name: {key: max(r[part][key] for r in results) for key in results[0][part]}
            for name, results in runs.items()
        }
        for key in row["ours"] if "tf215" in row else ():
            row[f"ratio_{key}"] = row["ours"][key] / row["tf215"][key]
        parts[part] = row
    return parts


def bench(train, args, timed=None, ratios=None):
    """``make bench``'s tf1_keras row (:data:`experiments.bench.speed.OWN_BENCHES`):
    ``--steps`` steps, at most 3 of ``--rounds`` runs per side.

    Returns:
        ``{"tf1_keras": parts}`` (see :func:`measure`).
    """
    del train, timed, ratios  # its own data and timing
    print("tf.keras in TF1 programs...", flush=True)
    return {"tf1_keras": measure(args.steps, min(args.rounds, 3))}


def build_parser():
    """Returns the benchmark's argument parser."""
    return canned.reference_parser(
        "Time tf.keras in a TF1 program (fit in graph mode; a Keras model in an "
        "Estimator): ours against TensorFlow 2.15's in its own venv.",
        steps=1000,
    )


def main(argv=None):
    """Runs the benchmark; see ``--help``."""
    args = flags.parse_args(build_parser(), argv)
    run = None if args.json else rundir.run_dir(args, "bench_tf1_keras")
    parts = measure(args.steps, args.repeats, args.reference_python)
    results = {"steps": args.steps, "repeats": args.repeats, "parts": parts}
    path = rundir.write_bench_results(run, results, args.json)
    for part, row in parts.items():
        ratio = row.get("ratio_steps_per_cpu_second")
        print(f"{part}: ours {row['ours']['steps_per_second']:.0f} steps/s"
              + (f", {row['ratio_steps_per_second']:.2f}x TF 2.15 (wall), {ratio:.2f}x "
                 "(CPU)" if ratio else ""))  # fmt: skip
    print(f"results in {path}")


if __name__ == "__main__":
    entry.entry_point(main)
