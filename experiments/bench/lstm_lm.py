"""Speed of a TF1 LSTM language model on our cells against TensorFlow's legacy cells.

One TF1 program, written as TF 1.x language models were (``import
tensorflow.compat.v1 as tf``; ``tf.nn.rnn_cell.MultiRNNCell`` of two
``DropoutWrapper(BasicLSTMCell)``, ``tf.nn.dynamic_rnn``, a softmax over the
vocabulary, SGD with the gradients clipped to a global norm of 5, one step per
``session.run``), trained on a fixed batch of tokens drawn from the vocabulary,
runs in one process per side:

* ``ours``: after ``zoo.compat.install()``, ``tf.nn.rnn_cell`` is
  :mod:`layers.tf1.rnn_cell` (TensorFlow 2.21 with Keras 3);
* ``legacy``: under ``TF_USE_LEGACY_KERAS=1`` with tf_keras, TensorFlow's own
  legacy cells: what a TF1 user runs without us.

Each side is timed at its best: plain sessions and sessions with XLA's
auto-clustering (``global_jit_level``), in interleaved rounds after a warm-up,
the faster kept. The sides run one after the other, twice each, in the order
``ours``, ``legacy``, ``legacy``, ``ours`` (``--quick``: once each), so that a load
that rises or falls through the row meets both sides alike; each side's fastest
process kept. ``ratio_legacy`` is ours over legacy (goal: >= 1.0); ``cpu_ratio_legacy``
the same in CPU time per step, which the load of other processes disturbs less.

Processes run at different times meet different load on a shared machine, so the
row also times both programs in one process (``same_process``), their rounds
interleaved: ours from :mod:`layers.tf1.rnn_cell`, TensorFlow's legacy cells
imported from tf_keras's modules (``tf_keras.src.layers.rnn.legacy_cells``,
``legacy_cell_wrappers``: what ``TF_USE_LEGACY_KERAS=1`` makes
``tf.compat.v1.nn.rnn_cell``), both on the same TensorFlow.

:func:`bench` is what :mod:`experiments.bench.speed` calls (the row
``lstm_lm``); the row alone, or one side in this process::

    python -m experiments.bench.lstm_lm --json /tmp/lstm_lm.json
    python -m experiments.bench.lstm_lm ours --steps 40 --json /tmp/ours.json
    python -m experiments.bench.lstm_lm both --steps 40 --json /tmp/both.json
"""

import argparse
import dataclasses
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]  # where ``-m`` finds this module
SIDES = ("ours", "legacy")
SAME_PROCESS = "both"  # the side argument that times both sides in one process
PROCESSES_PER_SIDE = 2  # --quick: 1
STEPS_FRACTION = 1 / 12  # of --steps and --warmup: a step here is ~12 of the MLP's
CLIP_NORM = 5.0
LEARNING_RATE = 1.0


@dataclasses.dataclass(frozen=True)
class Sizes:
    """The language model's sizes: TF's PTB tutorial's small model, a smaller vocabulary."""

    batch: int = 20
    steps: int = 20
    hidden: int = 200
    layers: int = 2
    vocabulary: int = 2000


QUICK_SIZES = Sizes(batch=4, steps=5, hidden=16, layers=2, vocabulary=50)


def language_model(tf, sizes, keep_prob=1.0, rnn_cell=None):
    """The TF1 program: returns the training op of its loss.

    Args:
        tf: ``tensorflow.compat.v1``, as the program imports it.
        sizes: a :class:`Sizes`.
        keep_prob: the output keep probability of each layer's dropout.
        rnn_cell: the cells' namespace; None: ``tf.nn.rnn_cell``.
    """
    rnn_cell = rnn_cell or tf.nn.rnn_cell
    tokens = np.random.default_rng(0).integers(0, sizes.vocabulary,
                                               (sizes.batch, sizes.steps + 1))  # fmt: skip
    data = tf.constant(tokens, tf.int32)
    inputs, targets = data[:, :-1], data[:, 1:]
    with tf.variable_scope("model"):
        embedding = tf.get_variable("embedding", [sizes.vocabulary, sizes.hidden])
        cells = [
            rnn_cell.DropoutWrapper(
                rnn_cell.BasicLSTMCell(sizes.hidden, forget_bias=0.0),
                output_keep_prob=keep_prob,
            )
            for _ in range(sizes.layers)
        ]
        outputs, _ = tf.nn.dynamic_rnn(
            rnn_cell.MultiRNNCell(cells),
            tf.nn.embedding_lookup(embedding, inputs),
            dtype=tf.float32,
        )
        softmax_w = tf.get_variable("softmax_w", [sizes.hidden, sizes.vocabulary])
        softmax_b = tf.get_variable("softmax_b", [sizes.vocabulary])
        logits = tf.matmul(tf.reshape(outputs, [-1, sizes.hidden]), softmax_w) + softmax_b
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=tf.reshape(targets, [-1]), logits=logits
            )
        )
    variables = tf.trainable_variables()
    gradients, _ = tf.clip_by_global_norm(tf.gradients(loss, variables), CLIP_NORM)
    optimizer = tf.train.GradientDescentOptimizer(LEARNING_RATE)
    return optimizer.apply_gradients(zip(gradients, variables, strict=True))


def session_runs(tf, sizes, cells, xla=True):
    """``{"<prefix>no_xla": run(steps), "<prefix>xla": run(steps)}`` for each
    ``prefix: rnn_cell`` of ``cells``: the program trained in a plain session and in
    one with XLA's auto-clustering (unless not ``xla``), each in a graph of its own."""
    runs = {}
    for prefix, rnn_cell in cells.items():
        for name, jit in (("no_xla", "OFF"), ("xla", "ON_1"))[: 1 + xla]:
            graph = tf.Graph()
            with graph.as_default():
                train = language_model(tf, sizes, 0.5, rnn_cell)
                initialize = tf.global_variables_initializer()
            config = tf.ConfigProto()
            config.graph_options.optimizer_options.global_jit_level = getattr(
                tf.OptimizerOptions, jit
            )
            session = tf.Session(graph=graph, config=config)
            session.run(initialize)

            def run(steps, session=session, train=train):
                for _ in range(steps):
                    session.run(train)

            runs[prefix + name] = run
    return runs


def tensorflow_legacy_cells():
    """TensorFlow's legacy cells from tf_keras's own modules, as
    ``TF_USE_LEGACY_KERAS=1`` makes them ``tf.compat.v1.nn.rnn_cell``."""
    import types  # noqa: PLC0415

    from tf_keras.src.layers.rnn import legacy_cell_wrappers, legacy_cells  # noqa: PLC0415

    return types.SimpleNamespace(
        BasicLSTMCell=legacy_cells.BasicLSTMCell,
        MultiRNNCell=legacy_cells.MultiRNNCell,
        DropoutWrapper=legacy_cell_wrappers.DropoutWrapper,
    )


def time_side(side, sizes, steps, rounds, warmup, xla=True):
    """Times one side in this process (its environment set by :func:`run_side`), or
    both (``side`` :data:`SAME_PROCESS`).

    Returns:
        :func:`experiments.bench.speed.time_rounds`'s tables (one side: settings
        ``no_xla``, ``xla``; both: ``ours_no_xla``, ... ``legacy_xla``; not
        ``xla``: the ``no_xla`` ones only) and ``cells``: ``{prefix: the module of
        its LSTM cell}``.
    """
    from experiments.bench.speed import time_rounds  # noqa: PLC0415
    from experiments.harness import startup  # noqa: PLC0415

    startup.import_tensorflow()
    import tensorflow.compat.v1 as tf  # noqa: PLC0415  (the program's own import)

    tf.disable_v2_behavior()
    if side == SAME_PROCESS:
        from layers.tf1 import rnn_cell  # noqa: PLC0415

        cells = {"ours_": rnn_cell, "legacy_": tensorflow_legacy_cells()}
    else:
        if side == "ours":
            import zoo.compat  # noqa: PLC0415

            zoo.compat.install()
        cells = {"": tf.nn.rnn_cell}
    timing = time_rounds(session_runs(tf, sizes, cells, xla), steps, rounds, warmup)
    modules = {prefix: rnn.BasicLSTMCell.__module__ for prefix, rnn in cells.items()}
    return {**timing, "cells": modules}


def run_side(side, sizes, steps, rounds, warmup, xla=True):
    """Runs :func:`time_side` in a new process (``legacy``: with
    ``TF_USE_LEGACY_KERAS=1``); returns its result."""
    env = {
        **os.environ,
        "TF_USE_LEGACY_KERAS": "1" if side == "legacy" else "0",
        "TF_XLA_FLAGS": "--tf_xla_cpu_global_jit",
    }  # XLA may cluster on a CPU
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "side.json")
        command = [
            sys.executable, "-m", __spec__.name, side, "--json", path,
            "--steps", str(steps), "--rounds", str(rounds), "--warmup", str(warmup),
            "--sizes", json.dumps(dataclasses.asdict(sizes)),
            *([] if xla else ["--no-xla"]),
        ]  # fmt: skip
        subprocess.run(command, env=env, cwd=ROOT, check=True, capture_output=True)
        with open(path) as f:
            return json.load(f)


def best_setting(timing, prefix=""):
    """The fastest of the settings named ``<prefix>...`` in ``timing``: ``{"setting",
    "steps_per_s", "cpu_ms_per_step"}``."""
    speeds = timing["steps_per_s"]
    setting = max((name for name in speeds if name.startswith(prefix)), key=speeds.get)
    return {"setting": setting, "steps_per_s": speeds[setting],
            "cpu_ms_per_step": timing["cpu_ms_per_step"][setting]}  # fmt: skip


def versus(best):
    """``{side: best_setting(...)}`` as the row reports it: each side's setting,
    steps/s and CPU ms per step, ``ratio_legacy`` and ``cpu_ratio_legacy``."""
    table = {key: {side: best[side][key] for side in SIDES} for key in best["ours"]}
    speeds, cpu_ms = table["steps_per_s"], table["cpu_ms_per_step"]
    return {**table, "ratio_legacy": speeds["ours"] / speeds["legacy"],
            "cpu_ratio_legacy": cpu_ms["legacy"] / cpu_ms["ours"]}  # fmt: skip


def row(sizes, steps, rounds, warmup, processes_per_side=PROCESSES_PER_SIDE, xla=True):
    """Times both sides, ``processes_per_side`` processes each, alternating (ours
    first, then legacy first, and so on), then both in one process.

    Args:
        sizes: a :class:`Sizes`.
        steps, rounds, warmup: each process's timed steps per setting, its
            interleaved rounds, its untimed steps per setting first.
        processes_per_side: processes per side.
        xla: False: each side timed in plain sessions only.

    Returns:
        :func:`versus` of each side's fastest process, with ``"sizes"``,
        ``"processes": {side: [each process's result]}`` and ``"same_process"``:
        :func:`versus` of the sides timed in one process, with its ``"cells"``.
    """
    print(f"lstm_lm (batch {sizes.batch}, {sizes.steps} steps, {sizes.hidden} units, "
          f"vocabulary {sizes.vocabulary})...", flush=True)  # fmt: skip
    processes = {side: [] for side in SIDES}
    for index in range(processes_per_side):  # ABBA: a load that drifts hits both alike
        for side in SIDES[:: -1 if index % 2 else 1]:
            processes[side].append(run_side(side, sizes, steps, rounds, warmup, xla))
    fastest = {
        side: max(map(best_setting, results), key=lambda best: best["steps_per_s"])
        for side, results in processes.items()
    }
    both = run_side(SAME_PROCESS, sizes, steps, rounds, warmup, xla)
    same_process = versus({side: best_setting(both, f"{side}_") for side in SIDES})
    result = {
        "sizes": dataclasses.asdict(sizes),
        **versus(fastest),
        "processes": processes,
        "same_process": {**same_process, "cells": both["cells"]},
    }
    for name, figures in (("a process per side", result), ("one process", same_process)):
        speeds = figures["steps_per_s"]
        print(f"lstm_lm, {name}: best steps/s ours {speeds['ours']:.2f}, legacy "
              f"{speeds['legacy']:.2f}; ratio_legacy {figures['ratio_legacy']:.2f} "
              f"(CPU {figures['cpu_ratio_legacy']:.2f})", flush=True)  # fmt: skip
    return result


def bench(train, args, timed, ratios):
    """The row ``lstm_lm`` of :mod:`experiments.bench.speed`: :func:`row` with a
    twelfth of its ``--steps`` and ``--warmup`` (a step here is ~12 of the MLP's);
    ``--quick``: :data:`QUICK_SIZES`, one process per side, plain sessions only.

    Args:
        train, timed, ratios: unused (each side times itself in its process).
        args: the bench's flags (``--quick``, ``--steps``, ``--rounds``,
            ``--warmup``).

    Returns:
        ``{"lstm_lm": row(...)}``.
    """
    del train, timed, ratios
    steps = max(args.rounds, int(args.steps * STEPS_FRACTION))
    warmup = max(1, int(args.warmup * STEPS_FRACTION))  # XLA compiles in its first
    if args.quick:
        return {"lstm_lm": row(QUICK_SIZES, steps, args.rounds, warmup, 1, xla=False)}
    return {"lstm_lm": row(Sizes(), steps, args.rounds, warmup)}


def command(argv=None):
    """The row alone, or one side of it, or both sides in this process (as
    :func:`run_side` starts them); writes the result to ``--json``.

    Not an experiment's ``main``: the row belongs to ``make bench``
    (:mod:`experiments.bench.speed`); this is the entry of its processes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sides = (*SIDES, SAME_PROCESS)
    one_side = "time one side, or both, in this process (default: the row)"
    parser.add_argument("side", nargs="?", choices=sides, help=one_side)
    parser.add_argument("--json", required=True, help="the result file to write")
    parser.add_argument("--steps", type=int, default=100, help="timed steps per setting")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds")
    parser.add_argument("--warmup", type=int, default=4, help="untimed steps first")
    parser.add_argument("--sizes", default="{}", help="Sizes as JSON (default: full)")
    plain = "plain sessions only (default: also XLA's auto-clustering)"
    parser.add_argument("--no-xla", dest="xla", action="store_false", help=plain)
    args = parser.parse_args(argv)
    sizes = Sizes(**json.loads(args.sizes))
    timing = args.steps, args.rounds, args.warmup
    if args.side:
        result = time_side(args.side, sizes, *timing, xla=args.xla)
    else:
        result = row(sizes, *timing, xla=args.xla)
    with open(args.json, "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(command())
