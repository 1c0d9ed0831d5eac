"""Where bfloat16 pays on this CPU: float32 against ``mixed_bfloat16`` by layer width.

The bench's MLP classifier (784-w-w-10, ReLU, Adagrad 0.1, batch 100) at hidden
widths w of :data:`WIDTHS`, on one batch held in memory (no input cost), K steps
per ``session.run`` (``--steps-per-run``), each width built four ways and timed in
interleaved rounds of one process (:func:`experiments.bench.speed.timed`): float32
and under ``zoo.precision.policy("mixed_bfloat16")``, each uncompiled and compiled
with XLA. ``ratio`` is bfloat16 at its best over float32 at its best at each width
(steps/s of the fastest round), ``cpu_ratio`` float32's CPU time per step over
bfloat16's; ``break_even`` the least width from which on bfloat16 is faster in both
at every width timed, None where it is at none (bfloat16 does not pay here).

A row of ``make bench`` (:data:`experiments.bench.speed.OWN_BENCHES`), key
``bf16_widths``; the JSON's top-level ``bf16`` takes its ``break_even``
(:func:`experiments.bench.precision.summary`). ``--quick``: two widths, uncompiled.
"""

import dataclasses

from experiments.bench import contenders, precision
from experiments.bench.rnn_siamese import xla_suffix

WIDTHS = (64, 128, 256, 512, 1024, 2048)
QUICK_WIDTHS = (64, 256)
BATCH_SIZE = 100
POLICIES = {"fp32": "float32", "bf16": precision.POLICY}
ROUNDS = 4  # of K steps each per width: the widest steps are 10-100 times the MLP's


def width_runs(width, train, args):
    """Returns ``{"<fp32|bf16>_<xla|no_xla>": run(steps)}`` of the MLP at ``width``."""
    from experiments.bench.speed import Case
    from zoo.models.mlp import mlp_classifier

    def loss_of(x, y):
        hidden = (width, width)
        return mlp_classifier(x, y, scope="mlp", hidden=hidden, l2=contenders.MLP_L2).loss

    case = Case("mlp", f"{width}-{width}", BATCH_SIZE)
    step = contenders.zoo_step(case, loss_of)
    compiled = (False,) if args.quick else (False, True)
    return {
        f"{short}_{xla_suffix(xla)}": contenders.ours(
            case, train, args, "fixed", args.steps_per_run, xla, step, policy
        )
        for short, policy in POLICIES.items()
        for xla in compiled
    }


def break_even(widths):
    """Returns the least width from which on bfloat16 wins in wall and CPU time at
    every wider one, or None; ``widths`` maps each width to its ``ratio`` and
    ``cpu_ratio``."""
    least = None
    for width in sorted(widths, key=int, reverse=True):  # int or, from JSON, str
        if min(widths[width]["ratio"], widths[width]["cpu_ratio"]) <= 1.0:
            break
        least = int(width)
    return least


def bench(train, args, timed, ratios=None):
    """Times each width's four contenders; returns ``{"bf16_widths": {...}}``.

    Args:
        train: the training :class:`zoo.data.DataSet`.
        args: the bench's flags (``--steps-per-run``, ``--quick``, ``--seed``, threads).
        timed: :func:`experiments.bench.speed.timed`.
        ratios: unused.
    """
    del ratios
    k = args.steps_per_run
    widths = {}
    for width in QUICK_WIDTHS if args.quick else WIDTHS:
        print(f"bf16_widths {width}-{width} (batch {BATCH_SIZE})...", flush=True)
        runs = width_runs(width, train, args)
        best_of = {f"{s}_best": [n for n in runs if n.startswith(s)] for s in POLICIES}
        rounds = min(ROUNDS, args.rounds)  # a call of K steps each, after one untimed
        best, timing = timed(runs, best_of, rounds * k, _Rounds(rounds, k, k))
        speeds, cpu = timing["steps_per_s"], timing["cpu_ms_per_step"]
        widths[width] = {
            **{f"{short}_best": best[f"{short}_best"] for short in POLICIES},
            **timing,
            "ratio": speeds["bf16_best"] / speeds["fp32_best"],
            "cpu_ratio": cpu["fp32_best"] / cpu["bf16_best"],
        }
        contenders.release()
        print(
            f"  float32 {speeds['fp32_best']:.1f} ({best['fp32_best']}), bfloat16 "
            f"{speeds['bf16_best']:.1f} ({best['bf16_best']}) steps/s: "
            f"{widths[width]['ratio']:.2f} (CPU {widths[width]['cpu_ratio']:.2f})",
            flush=True,
        )
    return {
        "bf16_widths": {
            "batch_size": BATCH_SIZE,
            "widths": widths,
            "break_even": break_even(widths),
        }
    }


@dataclasses.dataclass
class _Rounds:
    """The flags :func:`experiments.bench.speed.timed` reads, a width's own."""

    rounds: int
    warmup: int
    steps_per_run: int
