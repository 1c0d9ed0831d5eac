"""Data-parallel towers on shared variables, with and without batch norm.

:func:`zoo.models.bn_conv.bn_conv_classifier` (two 5x5 convolutions, each with
batch norm, ReLU and 2x2 max-pooling, then a softmax read-out) is trained by
momentum SGD on the cross-entropy summed over the batch, as ``--towers N`` towers
(:func:`zoo.parallel.towers.data_parallel`): each tower reads ``batch / N`` examples on
its own device (a GPU, or one of N logical CPUs), all towers share one set of
variables (tower 0 creates them, the others read them with ``reuse=True``) and
one optimizer step applies their combined gradient. ``--batch-norm`` picks the
variants: ``none`` (no batch norm), ``per-tower`` (each tower normalizes with
its own shard's statistics; the moving statistics move once per step, from
tower 0) and ``sync`` (the towers' sums are added before normalizing: N towers
compute what one tower computes on the whole batch). Every variant trains the
same steps on the same batches (:func:`experiments.harness.train.train_variant`);
the test accuracy comes from a second build with ``reuse=True`` and
``training=False`` (the moving statistics).

``equal_to_one_tower`` trains each mode one step as one tower
and as N towers and gives the largest absolute difference of any variable
(``largest_variable`` names it):
float round-off for ``none`` and ``sync``, a real difference for ``per-tower``;
``round_off_floor`` the same for one tower against one tower whose batches
have their halves swapped (the same sums in another order);
``after_all_steps`` gives the same for the full runs, where round-off that
flips a ReLU or a max-pool choice near a tie has grown into real differences.

Usage::

    python -m experiments.towers --dataset fashion_mnist \\
        --data-dir /usr/share/datasets/fashion-mnist --out runs/towers/full
    python -m experiments.towers --quick --data-dir DIR --validation 0

Writes ``results.json``, ``loss_curves.png``, ``accuracy_and_speed.png`` and TensorBoard
events under ``tensorboard/<variant>/`` into the run directory.
"""

from experiments.harness import classifiers, entry, figures, flags, rundir
from layers.errors import ZooError

MODES = classifiers.BATCH_NORM
COMPARE_STEPS = 1  # steps of the one-tower-vs-N-towers comparison: one gradient's round-off
# The batch accuracy (mean of the last SMOOTHING logged) whose first step is given.
TARGET_ACCURACY = 0.8
MOMENTUM = 0.9
OPTIMIZER_SLOT = "Momentum"  # the name of MomentumOptimizer's slot variables
LOG_PERIOD = 50
EVAL_CHUNK = 2000
SMOOTHING = 4  # logged batch accuracies averaged for "steps to reach"


def build_parser():
    """Returns the experiment's argument parser."""
    p = flags.parser(
        "Train a batch-norm conv classifier as 1 and N data-parallel towers on shared "
        "variables: no batch norm, per-tower statistics, synchronized statistics; "
        "compare accuracy, speed and the weights against one tower.",
        steps=1000,
        batch_size=64,
    )
    p.add_argument(
        "--towers",
        default="1,2",
        check=flags.int_list(),
        help="comma-separated tower counts (GPUs when present, else logical CPUs)",
    )
    flags.add_variant_flag(
        p,
        MODES,
        "no batch norm (none), per-tower statistics, synchronized statistics (sync), "
        "or all three",
        every="all",
        name="--batch-norm",
    )
    p.add_argument(
        "--filters", default="8,16", check=flags.int_list(), help="channels of the 2 convs"
    )
    p.add_argument(
        "--learning-rate", type=float, default=5e-4, help="momentum SGD's rate (0.9)"
    )
    flags.add_validation_flag(p)
    flags.add_loop_flags(p, steps_per_run=16)
    p.add_check(check_sizes)
    return p


def check_sizes(args):
    """Raises ZooError unless every tower count splits the batch and 2 filters are given."""
    classifiers.check_tower_counts(flags.integers(args.towers), args.batch_size)
    if len(flags.integers(args.filters)) != 2:
        raise ZooError(
            f"--filters: expected 2 channel counts, found {args.filters!r}; pass e.g. 8,16"
        )


def run_variant(mode, towers, args, data, run, steps=None, reordered=False):
    """Trains and evaluates ``mode`` as ``towers`` towers.

    Args:
        mode: one of :data:`MODES`.
        towers: the tower count.
        args, data, run: as every variant.
        steps: train this many steps (the comparison) instead of ``--steps``.
        reordered: swap the two halves of every batch (the same examples, summed
            in another order: the round-off floor of the comparison).

    Returns:
        ``(result, weights)``: the variant's result dict and ``{name: array}`` of
        every variable of the model (optimizer slots left out).
    """
    import tensorflow as tf

    from experiments.harness.train import train_variant
    from zoo.parallel import towers as zoo_towers

    filters = flags.integers(args.filters)
    towers_loss = classifiers.towers_loss(mode, towers, filters)

    def loss_fn(images, labels):
        if reordered:
            images, labels = (tf.concat(tf.split(t, 2)[::-1], 0) for t in (images, labels))
        return towers_loss(images, labels)

    name = f"{mode}_x{towers}" + ("_compare" if steps else "") + ("_reordered" * reordered)
    return train_variant(
        name,
        args.with_flags(steps=steps or args.steps),
        data,
        run,
        loss_fn=loss_fn,
        optimizer=tf.compat.v1.train.MomentumOptimizer(args.learning_rate, MOMENTUM),
        evaluation=lambda: classifiers.towers_evaluation(
            data.test, mode, filters, EVAL_CHUNK, slots=(OPTIMIZER_SLOT,)
        ),
        log_period=LOG_PERIOD,
        session_config=zoo_towers.session_config(towers),
    )


def summarize(results, weights):
    """The comparisons of results.json: batch norm against none, per-tower against sync."""
    from experiments.harness.train import first_step_reaching
    from zoo.parallel.towers import largest_difference, statistics_differences

    counts = sorted({towers for _, towers in results})
    many = [towers for towers in counts if towers > 1]
    modes = sorted({mode for mode, _ in results}, key=MODES.index)
    summary = {}
    summary["batch_norm_vs_none"] = {
        str(towers): {
            "target_batch_accuracy": TARGET_ACCURACY,
            **{
                mode: {
                    "test_accuracy": results[mode, towers]["test_accuracy"],
                    "steps_to_reach_target": first_step_reaching(
                        results[mode, towers]["batch_accuracy"], TARGET_ACCURACY, SMOOTHING
                    ),
                }
                for mode in modes
            },
        }
        for towers in counts
    }
    if {"per-tower", "sync"} <= set(modes):
        summary["per_tower_vs_sync"] = {
            str(towers): {
                "test_accuracy_difference": results["per-tower", towers]["test_accuracy"]
                - results["sync", towers]["test_accuracy"],
                "moving_statistics_largest_difference": statistics_differences(
                    weights["per-tower", towers], weights["sync", towers]
                ),
                "weights_largest_difference": largest_difference(
                    weights["per-tower", towers], weights["sync", towers]
                ),
            }
            for towers in many
        }
    summary["steps_per_second"] = {
        mode: {str(towers): results[mode, towers]["steps_per_second"] for towers in counts}
        for mode in modes
    }
    return summary


def compare_to_one_tower(modes, counts, weights, args, data, run):
    """Compares N towers with one tower after ``COMPARE_STEPS`` steps and after all.

    Args:
        weights: ``{(mode, towers): {name: array}}`` after the full runs.

    Returns:
        results.json's ``equal_to_one_tower``: the largest difference per mode,
        ``per_tower_count`` maps each mode to ``{N: largest |weights of N towers -
        weights of one|}`` for every N > 1 (per-tower beside none and sync);
        ``round_off_floor`` maps each mode to the same difference between one tower
        and one tower on the same batches with their halves swapped (mathematically
        the same step: what float round-off alone does); ``largest_variable`` maps
        each mode to ``{N: the name of the variable that differs most}``;
        ``after_all_steps`` to ``{N: the difference after the full runs}``.
    """
    from zoo.parallel.towers import largest_difference, weight_differences

    compared, floor, largest_at = {}, {}, {}
    steps = COMPARE_STEPS
    for mode in modes:
        _, one = run_variant(mode, 1, args, data, run, steps)
        compared[mode], largest_at[mode] = {}, {}
        for towers in counts:
            if towers > 1:
                diffs = weight_differences(
                    one, run_variant(mode, towers, args, data, run, steps)[1]
                )
                compared[mode][str(towers)] = max(diffs.values())
                largest_at[mode][str(towers)] = max(diffs, key=diffs.get)
        _, swapped = run_variant(mode, 1, args, data, run, steps, reordered=True)
        floor[mode] = largest_difference(one, swapped)
    return {
        "steps": steps,
        **{mode: max(diffs.values()) for mode, diffs in compared.items()},
        "per_tower_count": compared,
        "largest_variable": largest_at,
        "round_off_floor": floor,
        "after_all_steps": {
            mode: {
                str(towers): largest_difference(weights[mode, 1], weights[mode, towers])
                for towers in counts
                if towers > 1
            }
            for mode in modes
            if (mode, 1) in weights
        },
    }


def accuracy_and_speed_figure(results):
    """Returns two panels: each variant's test accuracy and its steps per second."""
    figure, panels = figures.pyplot().subplots(1, 2, figsize=(11, 4.5))
    counts = sorted({towers for _, towers in results})
    modes = [mode for mode in MODES if (mode, counts[0]) in results]
    for panel, key in zip(panels, ("test_accuracy", "steps_per_second"), strict=True):
        series = {
            f"{towers} tower(s)": [results[mode, towers][key] for mode in modes]
            for towers in counts
        }
        figures.grouped_bars(panel, modes, series, "%.3g")
        panel.set_ylabel(key.replace("_", " "))
        panel.set_xlabel("batch norm")
    panels[0].set_ylim(0, 1.1)
    panels[0].legend(loc="lower right")
    figure.suptitle("Towers on shared variables: accuracy and speed per batch-norm mode")
    figure.tight_layout()
    return figure


def main(argv=None):
    """Runs the experiment (``--help``); raises ZooError as :func:`rundir.start`."""
    args, data, run = rundir.start_with_tensorflow(build_parser(), argv, "towers")
    modes = MODES if args.batch_norm == "all" else (args.batch_norm,)
    counts = sorted(set(flags.integers(args.towers)))
    results, weights = {}, {}
    for mode in modes:
        for towers in counts:
            results[mode, towers], weights[mode, towers] = run_variant(
                mode, towers, args, data, run
            )
    summary = {}
    if len(counts) > 1 or counts[0] > 1:
        compared = compare_to_one_tower(modes, counts, weights, args, data, run)
        summary["equal_to_one_tower"] = compared
    summary.update(summarize(results, weights))
    named = {f"{mode}_x{towers}": r for (mode, towers), r in results.items()}
    title = "Towers: no batch norm, per-tower and synchronized statistics"
    label = "cross-entropy summed over the batch"
    run.write_ablation("towers", data, named, title, label, **summary)
    run.save_figure("accuracy_and_speed.png", accuracy_and_speed_figure(results))
    print(f"results in {run.path}")
    return 0


if __name__ == "__main__":
    entry.entry_point(main)
