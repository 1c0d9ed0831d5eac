"""Speed of our training loop against Keras 3, a ``tf.function`` loop and the matmul limit.

For each model (the 784-625-784 autoencoder untied and tied, batch 128; the
784-625-625-10 MLP classifier, batch 100), all with Adagrad 0.1 on the same
training images, each model in a process of its own:

* ``ours``: the graph built by ``zoo`` reading its batches from
  :class:`zoo.data.batches.GraphBatches` (gathered in the graph, in the DataSet's
  order, no ``feed_dict``), ``--steps-per-run`` steps per ``session.run``
  (:func:`zoo.training.repeat_step`), compiled with XLA unless ``--no-xla``,
  trained with ``training.train_loop`` as the autoencoder experiment does
  with the same flags;
* ``ours_no_xla``: the same loop uncompiled (TensorFlow's kernels op by op);
  ``ours_best`` in the ratios is the faster of ``ours`` and ``ours_no_xla``,
  as ``keras_best`` is Keras' faster setting (on some CPUs XLA slows our
  step down; the JSON says which setting won);
* ``ours_one_step``: one uncompiled step per run (``steps_per_run=1``);
* ``ours_feed_dict``: the same graph and loop fed ``DataSet.next_batch``
  through ``feed_dict``, one step per run;
* ``ours_graph_input``: the same graph reading one batch held in a variable,
  one step per run, so ``1 - ours_feed_dict / ours_graph_input`` is what
  feeding costs;
* ``keras``: ``keras.Sequential`` trained with ``model.fit`` on a ``tf.data``
  pipeline (the tied autoencoder is one custom layer), Keras defaults;
* ``keras_spe``, ``keras_spe_xla``: the same at its best settings,
  ``steps_per_execution=--steps-per-run``, without and with ``jit_compile``;
  ``keras_best`` in the ratios is the faster of the two;
* ``tf_function``: a hand-written ``tf.function`` step with ``tf.GradientTape``
  and the fused Adagrad kernel, iterating the same ``tf.data`` pipeline;
* ``tf_function_loop``: the same step run ``--steps-per-run`` times inside
  one ``tf.function`` call (a ``tf.while_loop`` reading ``tf.data``), the
  step compiled with XLA as Keras does (its best setting);
* ``compute_limit_xla``, ``compute_limit_no_xla``: every kernel of our
  training step (its matrix products, Adagrad's kernels, its elementwise
  work) on one batch held in memory, ``--steps-per-run`` steps per run,
  compiled or not: no input and no per-step dispatch; ``compute_limit`` in
  the ratios is the faster of the two;
* ``limit``: only the matrix products a training step needs (the same shapes
  and count, read from the graph of our loss and its gradients), run in a
  session loop: the highest steps/s this machine reaches for the model.

The GRU classifier and the siamese twins (Adam, each against its own Keras 3 model
and compute limit) are timed by :mod:`experiments.bench.rnn_siamese`, listed in
:data:`OWN_BENCHES`, into top-level keys ``rnn`` and ``siamese`` of the same shape.
Also listed there: :mod:`experiments.bench.zoo_layer_resnet` (``ZooLayer`` in ``fit``
vs the TF1 program), :mod:`experiments.bench.tf1_layers` (tf.layers programs on
``layers.tf1`` vs tf_keras' legacy layers, a subprocess per side),
:mod:`experiments.bench.lstm_lm` (a TF1 LSTM language model on our cells vs
TensorFlow's legacy cells, a process per side), :mod:`experiments.bench.estimator`
(``Estimator.train`` vs a session loop), :mod:`experiments.bench.canned` (a canned
``DNNClassifier`` vs TensorFlow 2.15's), :mod:`experiments.bench.tf1_keras` (tf.keras
in a TF1 program, ``fit`` and in a model_fn, vs TensorFlow 2.15's) and
:mod:`experiments.bench.bf16_widths` (the MLP in float32 and bfloat16 at hidden widths
64 to 2048: where bfloat16 starts to pay).

Every model row (the GRU and siamese rows too) also times our loop and its Keras 3
model in ``mixed_bfloat16`` among its own contenders, in the same rounds, and reports
them in its ``bf16`` entry: :mod:`experiments.bench.precision`, whose ratio
``ratio_fp32`` compares them with the row's own float32 ``ours_best`` (the GRU's part
``rnn_bf16``: with the float32 loops timed in its rounds). The JSON's
top-level ``bf16`` records the CPU's bfloat16 flags, which bfloat16 goals hold, the
policy each row recommends (bfloat16 only where it measured faster than float32 in
wall and CPU time) and the break-even width.

Each row (``--models`` names them: :data:`ROWS`) runs in a process of its own,
``python -m experiments.bench.speed --models ROW`` with the other flags, so a row
starts from a fresh process and its memory goes with it; the run merges the rows'
results into one JSON (``peak_rss_mib``: the largest row's peak, each row's in
``peak_rss_mib_per_row``) and imports no TensorFlow itself. A row of :data:`ROW_PARTS`
(``rnn_siamese``, whose contenders alive at once held 2.2 GB) is timed the same way
part by part (``--part``; ``peak_rss_mib_per_part``). Within a row, the
contenders run in interleaved rounds after a warm-up, so load from other
processes hits them alike; each reports its fastest round (and the median, and
CPU time per step). Speed goals are reported as ratios, never asserted.

The run prints first the CPU it runs on (its name, family and model, the flags that
choose TensorFlow's kernels: AVX2, AVX-512, VNNI, AVX512_BF16, AMX) and whether
TensorFlow runs oneDNN's kernels there, and its JSON's ``machine`` holds the same
(``cpu``, ``onednn``: :func:`experiments.harness.record.machine`), so a figure is read
beside the CPU kind that made it.

Usage::

    python -m experiments.bench.speed --dataset fashion_mnist \
        --data-dir /usr/share/datasets/fashion-mnist --json runs/bench.json
    python -m experiments.bench.speed --quick --data-dir DIR --json /tmp/bench.json
"""

import dataclasses
import importlib
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from experiments.bench import precision as bf16
from experiments.harness import datasets, entry, flags, record, rundir, startup
from layers.errors import ZooError

RATIOS = {
    "ratio_keras": "keras",
    "ratio_keras_best": "keras_best",
    "ratio_tf_function": "tf_function",
    "ratio_tf_function_loop": "tf_function_loop",
    "ratio_compute_limit": "compute_limit",
    "ratio_limit": "limit",
}
RATIO_NAMES = tuple(RATIOS.values())
BEST_OF = {  # each at its best: the faster of its settings in this run
    "ours_best": ("ours", "ours_no_xla"),
    "keras_best": ("keras_spe", "keras_spe_xla"),
    "compute_limit": ("compute_limit_xla", "compute_limit_no_xla"),
}
QUICK = {"steps": 20, "rounds": 2, "warmup": 2}
# Models timed by a module of their own: its bench(train, args, timed) returns
# {model: results shaped as the MLP's}.
OWN_BENCHES = (
    "experiments.bench.rnn_siamese",
    "experiments.bench.zoo_layer_resnet",
    "experiments.bench.tf1_layers",
    "experiments.bench.lstm_lm",
    "experiments.bench.estimator",
    "experiments.bench.canned",
    "experiments.bench.tf1_keras",
    "experiments.bench.bf16_widths",
)
CASE_MODELS = ("autoencoder", "mlp", "gan")
SETTINGS = ("steps", "rounds", "warmup", "inter_op", "intra_op", "xla", "steps_per_run")
# What --models names: the models timed here, then each own bench by its module's name.
ROWS = (*CASE_MODELS, *(module.rpartition(".")[2] for module in OWN_BENCHES))
# Rows timed part by part, each part (--part) in a process of its own: its module's
# bench times args.part alone (experiments.bench.rnn_siamese.PARTS).
ROW_PARTS = {"rnn_siamese": ("rnn", "rnn_bf16", "siamese")}
# set (to the row's or part's name) in the processes in_processes starts: what the
# whole run prints once (the CPU line) they leave to their parent
ROW_PROCESS = "ZOO_BENCH_ROW_PROCESS"


@dataclasses.dataclass(frozen=True)
class Case:
    """One model to time: ``model`` is "autoencoder", "mlp" or "gan".

    ``steps`` (timed steps) replaces ``--steps`` for a slower model, and
    ``contenders`` names the module whose ``contenders(case, train, args)`` it times.
    """

    model: str
    variant: str
    batch_size: int
    steps: int | None = None
    contenders: str = "experiments.bench.contenders"

    @property
    def tied(self):
        return self.variant == "tied"


# --------------------------------------------------------------------------- timing


def time_rounds(runs, steps, rounds, warmup, multiple=1):
    """Times each ``run(steps)`` in interleaved rounds after a warm-up, each contender
    first in turn (none always runs first, right after the warm-up or a pause).

    Other processes slow some rounds down; the fastest round of each contender
    is the one least disturbed, so it is the speed reported (as ``timeit`` does),
    with the median beside it. CPU time (all threads of this process) per step
    is less sensitive to that load.

    Args:
        runs: ``{name: run(steps)}``.
        steps: timed steps per contender, split evenly over the rounds.
        rounds: number of rounds.
        warmup: untimed steps per contender first.
        multiple: steps per round and warm-up are rounded up to a multiple of
            it (the contenders' steps per call).

    Returns:
        ``{"steps_per_s": best, "median_steps_per_s": ..., "cpu_ms_per_step": median}``,
        each a dict ``{name: value}``.
    """

    def rounded(count):
        return -(-count // multiple) * multiple

    if warmup:  # run(0) would not do: Keras' fit with steps_per_epoch=0 never ends
        for run in runs.values():
            run(rounded(warmup))
    per_round = rounded(max(1, steps // rounds))
    wall = {name: [] for name in runs}
    cpu = {name: [] for name in runs}
    names = list(runs)
    for index in range(rounds):  # each contender goes first in turn
        for name in names[index % len(names) :] + names[: index % len(names)]:
            start_wall, start_cpu = time.perf_counter(), time.process_time()
            runs[name](per_round)
            wall[name].append(per_round / (time.perf_counter() - start_wall))
            cpu[name].append(1e3 * (time.process_time() - start_cpu) / per_round)
    return {
        "steps_per_s": {name: max(values) for name, values in wall.items()},
        "median_steps_per_s": {name: statistics.median(v) for name, v in wall.items()},
        "cpu_ms_per_step": {name: statistics.median(v) for name, v in cpu.items()},
    }


def ratios(timing):
    """Returns the ``ratio_*`` of ours to each reference and the input's share.

    Ratios use the fastest rounds; ``cpu_*`` keys compare CPU time per step,
    which other processes' load disturbs less. ``feed_fraction``
    is the share of a one-step ``feed_dict`` step spent feeding;
    ``input_fraction`` the share of our looped step spent on the in-graph input
    (against the compute limit, which loops the same steps on a fixed batch).
    A ratio or share whose contenders a model does not time is left out (the
    GAN has no ``limit``; the RNN and siamese rows time no feeding).
    """
    speeds, cpu = timing["steps_per_s"], timing["cpu_ms_per_step"]
    timed = {key: name for key, name in RATIOS.items() if name in speeds}
    result = {key: speeds["ours_best"] / speeds[name] for key, name in timed.items()}
    result.update(
        {f"cpu_{key}": cpu[name] / cpu["ours_best"] for key, name in timed.items()}
    )
    fractions = (
        ("feed_fraction", "ours_feed_dict", "ours_graph_input"),
        ("input_fraction", "ours_best", "compute_limit"),
    )
    for key, name, reference in fractions:
        if name not in speeds or reference not in speeds:
            continue
        result[key] = 1.0 - speeds[name] / speeds[reference]
        result[f"cpu_{key}"] = 1.0 - cpu[reference] / cpu[name]
    return result


def cases(args):
    """Returns ``{model: [Case, ...]}`` for the flags' batch sizes and ``--models``."""
    every = {
        "autoencoder": [
            Case("autoencoder", variant, args.batch_size) for variant in ("untied", "tied")
        ],
        "mlp": [Case("mlp", "625-625", args.mlp_batch_size)],
        "gan": [
            Case(
                "gan",
                "dcgan",
                64,
                args.steps if args.quick else args.gan_steps,
                "experiments.bench.gan",
            )
        ],
    }
    return {model: every[model] for model in args.models.split(",") if model in every}


def own_benches(args):
    """Returns the modules of :data:`OWN_BENCHES` that ``--models`` names."""
    names = args.models.split(",")
    return [module for module in OWN_BENCHES if module.rpartition(".")[2] in names]


def next_batch_ms(train, batch_size, repeats=200):
    """Returns the milliseconds one ``next_batch`` call takes (on a copy of ``train``)."""
    batches = dataclasses.replace(train, epoch=0, position=0)
    batches.next_batch(batch_size)
    start = time.perf_counter()
    for _ in range(repeats):
        batches.next_batch(batch_size)
    return 1e3 * (time.perf_counter() - start) / repeats


def timed(runs, best_of, steps, args):
    """Times ``runs`` (:func:`time_rounds`, the flags' rounds), each reference at its best.

    Args:
        runs: ``{name: run(steps)}``.
        best_of: ``{reference: names}``: the reference is the fastest of those
            names that ``runs`` has.
        steps: timed steps per contender.
        args: the flags (``--rounds``, ``--warmup``, ``--steps-per-run``).

    Returns:
        ``(best, timing)``: ``{reference: the name chosen}`` and
        :func:`time_rounds`'s tables, with each reference's values added.
    """
    timing = time_rounds(runs, steps, args.rounds, args.warmup, args.steps_per_run)
    best = {}
    for name, candidates in best_of.items():
        timed_here = [c for c in candidates if c in timing["steps_per_s"]]
        best[name] = max(timed_here, key=timing["steps_per_s"].get)
        for values in timing.values():
            values[name] = values[best[name]]
    return best, timing


def release():
    """Frees what the last case's contenders held before the next case is built (the
    bench's peak memory is then its largest case's, not the sum of them all)."""
    importlib.import_module("experiments.bench.contenders").release()


def time_case(case, train, args):
    """Times the contenders of ``case``; returns speeds, ratios, the feed cost and
    the ``bf16`` entry (:func:`experiments.bench.precision.split`)."""
    runs = importlib.import_module(case.contenders).contenders(case, train, args)
    best_of = {**BEST_OF, **bf16.best_of(runs)}
    best, timing = timed(runs, best_of, case.steps or args.steps, args)
    best, timing, mixed = bf16.split(best, timing)
    del runs
    release()
    return {
        **best,
        **timing,
        **ratios(timing),
        "next_batch_ms": next_batch_ms(train, case.batch_size),
        "bf16": mixed,
    }


def table(results, models):
    """Returns the steps/s and ratios of ``models`` as a text table, a line per variant."""
    columns = " ".join(f"{n[:6]:>6}" for n in ("ours_best", *RATIO_NAMES))
    references = " ".join(f"{n[:6]:>6}" for n in RATIO_NAMES)
    title = f"{'steps/s, model/variant':26}{columns}"
    lines = [f"{title} | ours / {references} | CPU: {references} | CPU feed, input"]
    for model in models:
        for variant, v in results[model]["variants"].items():
            speeds = " ".join(
                f"{v['steps_per_s'].get(n, math.nan):6.1f}"
                for n in ("ours_best", *RATIO_NAMES)
            )
            wall = " ".join(f"{v.get(key, math.nan):6.2f}" for key in RATIOS)
            cpu = " ".join(f"{v.get('cpu_' + key, math.nan):6.2f}" for key in RATIOS)
            lines.append(
                f"{model + '/' + variant:26}{speeds} |        {wall} |      {cpu} | "
                f"{v['cpu_feed_fraction']:6.1%} {v['cpu_input_fraction']:6.1%}"
            )
    return "\n".join(lines)


def check_models(models):
    """Check of ``--models``: names from :data:`ROWS`, comma-separated."""
    unknown = [name for name in models.split(",") if name not in ROWS]
    if unknown:
        return (
            f"expected rows from {', '.join(ROWS)}, comma-separated, found "
            f"{models!r}; pass e.g. --models autoencoder,gan,lstm_lm"
        )
    return None


def parts_text():
    """Returns :data:`ROW_PARTS` as ``--help`` and errors say it."""
    return "; ".join(f"{row}: {', '.join(parts)}" for row, parts in ROW_PARTS.items())


def check_part(args):
    """Raises ZooError unless ``--part`` is a part of the one row ``--models`` names."""
    if args.part is not None and args.part not in ROW_PARTS.get(args.models, ()):
        raise ZooError(
            f"--part: expected a part of the one row --models names ({parts_text()}), "
            f"found --part {args.part} --models {args.models}; pass e.g. --models "
            "rnn_siamese --part rnn, or no --part (a run times every part)"
        )


def check_rounds(args):
    """Raises ZooError unless ``--steps`` holds a step per round (``--quick``: 2 rounds).

    ``--rounds`` > 0 and ``--warmup`` >= 0 are their flags' own checks.
    """
    if args.steps < args.rounds:
        raise ZooError(
            f"--rounds/--warmup: expected rounds > 0, warmup >= 0 and steps >= rounds, "
            f"found rounds={args.rounds}, warmup={args.warmup}, steps={args.steps}; "
            "pass --rounds 1..steps and a non-negative --warmup"
        )


def build_parser():
    """Returns the bench's argument parser."""
    p = flags.parser(
        "Steps/s of our training loop vs Keras 3 model.fit, a tf.function loop and the "
        "matmul limit, for the autoencoder and the MLP classifier.",
        steps=1200,
        batch_size=128,
        quick_steps=QUICK["steps"],
        resumable=False,
    )
    p.add_argument("--mlp-batch-size", type=int, default=100, help="MLP batch size")
    p.add_argument(
        "--models",
        default=",".join(ROWS),
        check=check_models,
        help="the rows to time, comma-separated (default: all): the models timed here "
        "(autoencoder, mlp, gan), then the rows of their own modules (rnn_siamese: the "
        "rnn and siamese rows, zoo_layer_resnet, tf1_layers, lstm_lm, estimator, canned, "
        "bf16_widths: float32 against bfloat16 by hidden width)",
    )
    p.add_argument(
        "--gan-steps",
        type=int,
        default=256,
        help="timed steps per contender of the GAN (batch 64; one of its steps is a "
        "discriminator's and a generator's update); --quick: 32",
    )
    flags.add_loop_flags(p, xla=True, precision=False)
    p.add_argument(
        "--rounds",
        type=int,
        default=8,
        quick=QUICK["rounds"],
        help=f"interleaved timing rounds (--quick: {QUICK['rounds']})",
    )
    flags.add_count_flag(
        p,
        "--warmup",
        50,
        f"untimed steps per contender (--quick: {QUICK['warmup']})",
        quick=QUICK["warmup"],
    )
    for kind in ("inter", "intra"):
        p.add_argument(
            f"--{kind}-op",
            type=int,
            default=0,
            help=f"session {kind}-op threads; 0, the default, lets TensorFlow choose",
        )
    p.add_argument(
        "--part",
        help=f"time only this part of the row --models names ({parts_text()}; "
        "default: every part, each in a process of its own, merged)",
    )
    flags.add_json_flag(p)
    p.add_check(check_rounds)
    p.add_check(check_part)
    return p


def start_with_tensorflow(args):
    """Starts TensorFlow and loads the data, the training images held once
    (:func:`experiments.bench.contenders.one_copy`).

    Args:
        args: the bench's flags (``--dataset``, ``--data-dir``, ``--seed``).

    Returns:
        ``(data, train)``: ``data`` the ``settings`` keys that name the data, ``train``
        the training split, or the test split when the data has only that (the real
        MNIST test split).
    """
    startup.import_tensorflow()
    loaded = datasets.load(args, validation=0)
    train = loaded.train if loaded.train.num_examples else loaded.test
    data = {
        "dataset": loaded.name,
        "split": "train" if train is loaded.train else "test",
        "examples": train.num_examples,
    }
    return data, importlib.import_module("experiments.bench.contenders").one_copy(train)


def time_rows(args):
    """Times the rows ``--models`` names, one after the other in this process.

    Args:
        args: the bench's flags.

    Returns:
        The results as the JSON holds them (``machine`` aside), ``peak_rss_mib`` this
        process's peak.
    """
    data, train = start_with_tensorflow(args)
    from zoo.training import precision  # after TensorFlow's start

    cpu_flags = precision.cpu_bf16_flags()
    if not cpu_flags and ROW_PROCESS not in os.environ:
        flags_wanted = ", ".join(precision.CPU_BF16_FLAGS)
        print(f"this CPU has none of {flags_wanted}: the bfloat16 goals do not apply")
    results = {
        "settings": {
            **data,
            **{flag: getattr(args, flag) for flag in SETTINGS},
            "load_average_start": os.getloadavg(),
        },
    }
    for model, model_cases in cases(args).items():
        variants = {}
        for case in model_cases:
            print(f"{model} {case.variant} (batch {case.batch_size})...", flush=True)
            variants[case.variant] = time_case(case, train, args)
        results[model] = {
            "batch_size": model_cases[0].batch_size,
            **{
                key: min(v[key] for v in variants.values())
                for key in RATIOS
                if all(key in v for v in variants.values())
            },
            "bf16": bf16.worst(variants.values()),
            "variants": variants,
        }
    for module in own_benches(args):
        results.update(importlib.import_module(module).bench(train, args, timed, ratios))
        release()
    results["bf16"] = bf16.summary(results, cpu_flags)
    results["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(table(results, cases(args)))
    print(bf16.report(results))
    return results


def in_processes(argv, runs, kind="row"):
    """Times each row, or each part of one row, in a process of its own (``argv`` and
    its flags), one after the other; returns their results merged as one process's.

    ``peak_rss_mib`` is the largest process's, ``peak_rss_mib_per_{kind}`` each one's;
    the results are merged key by key (:func:`merge`: the first process's settings and
    machine, a row's entries from each of its parts); the load average is this run's at
    its start; the top-level ``bf16`` is summed up again over every row.

    Args:
        argv: the run's flags, passed on to every process.
        runs: ``{name: its own flags}`` (``--models ROW``, ``--part PART`` besides), in
            order.
        kind: ``"row"`` or ``"part"``, what ``runs`` names.

    Raises:
        ZooError: a process failed (it printed why).
    """
    load_average = os.getloadavg()
    merged, peaks = {}, {}
    with tempfile.TemporaryDirectory(prefix="bench-rows-") as directory:
        for name, own_flags in runs.items():
            path = os.path.join(directory, f"{name}.json")
            command = [sys.executable, "-m", __spec__.name, *argv]  # this module's name
            done = subprocess.run(
                [*command, *own_flags, "--json", path],
                check=False,
                env={**os.environ, ROW_PROCESS: name},
            )
            if done.returncode:
                raise ZooError(
                    f"bench {kind} {name}: expected exit status 0, found "
                    f"{done.returncode}; see its output above, run it alone with "
                    + " ".join(own_flags)
                )
            with open(path) as file:
                results = json.load(file)
            peaks[name] = results.pop("peak_rss_mib")
            merge(merged, results)
    merged["settings"]["load_average_start"] = load_average
    merged["bf16"] = bf16.summary(merged, merged.pop("bf16")["cpu_bf16_flags"])
    merged["peak_rss_mib"] = max(peaks.values())
    merged[f"peak_rss_mib_per_{kind}"] = peaks
    models = [model for model in CASE_MODELS if model in merged]
    if models:
        print(table(merged, models))
    each = ", ".join(f"{name} {peak:.0f}" for name, peak in peaks.items())
    print(f"peak resident MiB per {kind}: {each}")
    return merged


def merge(merged, results):
    """Adds ``results`` to ``merged`` key by key, dicts within dicts too; where both
    hold a value, ``merged``'s stays."""
    for key, value in results.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merge(merged[key], value)
        else:
            merged.setdefault(key, value)


def main(argv=None):
    """Runs the benchmark; see ``--help``. A run of several rows times each in a process
    of its own, and a row of :data:`ROW_PARTS` each of its parts (:func:`in_processes`):
    such a run imports no TensorFlow itself."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = flags.parse_args(build_parser(), argv)
    run = None if args.json else rundir.run_dir(args, "bench")
    rows = [row for row in ROWS if row in args.models.split(",")]
    if ROW_PROCESS not in os.environ:  # (a row's process: its parent named the CPU)
        print(record.describe_cpu(record.machine(probe_onednn=True)), flush=True)
    if len(rows) > 1:
        results = in_processes(argv, {row: ["--models", row] for row in rows})
    elif args.part is None and rows[0] in ROW_PARTS:
        parts = {part: ["--models", rows[0], "--part", part] for part in ROW_PARTS[rows[0]]}
        results = in_processes(argv, parts, "part")
    else:
        results = time_rows(args)
    print(f"wrote {rundir.write_bench_results(run, results, args.json)}")
    return 0


if __name__ == "__main__":
    entry.entry_point(main)
