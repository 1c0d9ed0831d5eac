"""A hyperparameter sweep of the MLP classifier in one graph, against one graph per point.

The grid is learning rate x keep probability x L2 weight. The one-graph sweep builds
the classifier once with its hyperparameters as :class:`zoo.HParams` inputs,
finalizes the graph and, in one session, for each configuration updates the values and
puts every variable back to the same starting weights. The naive sweep builds a new
graph and session per configuration. Both train the same steps on the same batches, so
their accuracies agree (exactly where there is no dropout); what differs is the setup.

Usage::

    python -m experiments.sweep --dataset fashion_mnist \\
        --data-dir /usr/share/datasets/fashion-mnist --steps 1000
    make experiment-sweep DATASET=fashion_mnist DATA_DIR=... ARGS="--quick"

Files in the run directory:

* ``results.json``: ``configurations`` (one record per grid point), the mean setup
  seconds per configuration ``setup_seconds_one_graph`` and ``setup_seconds_rebuild``,
  their ratio ``setup_speedup`` (and ``setup_speedup_median``), the totals, and
  ``best`` (by validation accuracy);
* ``results.csv``: the ``configurations`` table;
* ``sweep.png``: validation accuracy and setup time per configuration, both ways.
"""

import time

import numpy as np

from experiments.harness import entry, figures, flags, rundir
from zoo.data import N_CLASSES, N_PIXELS

# The grid: hyperparameter -> its flag, default values, range of each value, help.
GRID = {
    "learning_rate": (
        "--learning-rates", "0.0005,0.002", flags.real(0.0, inclusive=True),
        "comma-separated SGD learning rates (>= 0; the loss is summed over the batch)",
    ),
    "keep_prob": (
        "--keep-probs", "0.5,1.0", flags.real(0.0, maximum=1.0),
        "comma-separated dropout keep probabilities in (0, 1]",
    ),
    "l2": (
        "--l2s", "0.0,0.001", flags.real(0.0, inclusive=True),
        "comma-separated L2 weights of the hidden weights (>= 0)",
    ),
}  # fmt: skip


def build_network(args, **values):
    """Returns the MLP classifier and its SGD step in a finalized graph with a session.

    The graph is a :class:`zoo.training.hparams.SweepGraph` (its hyperparameters
    :class:`zoo.HParams` inputs, its starting weights kept); its ``built`` is
    ``(x, y, model, train_op)``: the placeholders, the classifier, the SGD step.

    Args:
        args: ``--hidden``, ``--seed`` (two networks built with one seed start from
            the same weights, draw the same dropout masks), ``--precision``.
        **values: initial ``learning_rate``, ``keep_prob`` and ``l2``.

    Raises:
        ZooError: a bad hyperparameter value.
    """
    import tensorflow as tf

    from experiments.harness.train import loss_scaled
    from zoo.models import mlp_classifier
    from zoo.training import precision
    from zoo.training.hparams import SweepGraph

    hidden = flags.integers(args.hidden)

    def build(hparams):
        x = tf.compat.v1.placeholder(tf.float32, [None, N_PIXELS], name="x")
        y = tf.compat.v1.placeholder(tf.float32, [None, N_CLASSES], name="y")
        with precision.policy(args.precision):
            model = mlp_classifier(
                x, y, hidden=hidden, l2=hparams["l2"], keep_prob=hparams["keep_prob"]
            )
        sgd = tf.compat.v1.train.GradientDescentOptimizer(hparams["learning_rate"])
        return x, y, model, loss_scaled(sgd, args).minimize(model.loss)

    return SweepGraph(build, args.seed, **values)


def run_configuration(network, config, data, args, setup_start, checkpointer=None):
    """Restarts ``network`` with ``config``, trains it and evaluates it.

    Args:
        network: a :func:`build_network`.
        config: ``{"learning_rate": ..., "keep_prob": ..., "l2": ...}``.
        data: :class:`zoo.data.DataSets`; training restarts at its first batch.
        args: the parsed flags (``steps``, ``batch_size``).
        setup_start: ``time.perf_counter()`` when the setup of this configuration
            began; setup ends when the variables are re-initialized.
        checkpointer: optional :class:`zoo.training.checkpoints.Checkpointer`; on
            ``--resume`` a finished configuration is restored, not trained again.

    Returns:
        A dict of setup and training seconds, first and last logged batch loss,
        validation and test accuracy and relative weight change.
    """
    from zoo import training

    x, y, model, train_op = network.built
    network.restart(**config)
    setup_seconds = time.perf_counter() - setup_start
    data.train.restore({"epoch": 0, "position": 0})
    start = time.perf_counter()
    logged, _ = training.train_loop(
        network.session,
        train_op,
        model.loss,
        data.train,
        args.steps,
        args.batch_size,
        lambda images, labels: network.feed({x: images, y: labels}),
        log_every=max(1, args.steps // 10),
        desc=" ".join(f"{name}={value:g}" for name, value in config.items()),
        checkpointer=checkpointer,
        nan_guard=False,  # a diverging configuration is a result, not a failure
    )

    def accuracy(split):  # without dropout
        feeds = {x: split.images, y: split.labels}
        return float(network.run(model.accuracy, feeds, keep_prob=1.0))

    return {
        "setup_seconds": setup_seconds,
        "train_seconds": time.perf_counter() - start,
        "first_loss": logged[0][1],
        "last_loss": logged[-1][1],
        "validation_accuracy": accuracy(data.validation),
        "test_accuracy": accuracy(data.test),
        "weight_change": network.relative_change(),
    }


def sweep_one_graph(configurations, data, args, checkpointer=None):
    """Runs every configuration in one finalized graph and one session.

    ``checkpointer`` is passed to :func:`run_configuration`.

    Returns:
        ``(build_seconds, results)``: the one-time build and the list of
        :func:`run_configuration` dicts.
    """
    start = time.perf_counter()
    network = build_network(args, **configurations[0])
    build_seconds = time.perf_counter() - start
    with network:
        results = [
            run_configuration(
                network, config, data, args, time.perf_counter(), checkpointer
            )
            for config in configurations
        ]
    return build_seconds, results


def sweep_rebuild(configurations, data, args, checkpointer=None):
    """Runs every configuration in a new graph and session (the naive way).

    ``checkpointer`` is passed to :func:`run_configuration`.

    Returns:
        The list of :func:`run_configuration` dicts; setup includes the build.
    """
    results = []
    for config in configurations:
        setup_start = time.perf_counter()
        with build_network(args, **config) as network:
            results.append(
                run_configuration(network, config, data, args, setup_start, checkpointer)
            )
    return results


def grid(args):
    """Returns the list of configurations (dicts), learning rate varying slowest.

    The grid's flags were checked by :func:`flags.real_list` when they were parsed:
    each by the range that :data:`zoo.training.hparams.KINDS` gives it (which
    ``HParams`` checks again), so a bad value is refused before TensorFlow starts.
    """
    from zoo.training import hparams

    return hparams.hparam_grid(**{name: flags.reals(args.flags[name]) for name in GRID})


def plot(rows):
    """Returns a figure: validation accuracy and setup seconds per configuration."""
    labels = [
        f"lr={r['learning_rate']:g}\nkp={r['keep_prob']:g}\nl2={r['l2']:g}" for r in rows
    ]
    figure, (top, bottom) = figures.pyplot().subplots(
        2, 1, figsize=(max(8, len(rows)), 8), sharex=True
    )
    for axes, key in ((top, "validation_accuracy"), (bottom, "setup_seconds")):
        series = {
            method.replace("_", " "): [r[f"{key}_{method}"] for r in rows]
            for method in ("one_graph", "rebuild")
        }
        figures.grouped_bars(axes, labels, series)
    accuracies = [
        r[f"validation_accuracy_{m}"] for r in rows for m in ("one_graph", "rebuild")
    ]
    top.set_ylim(max(0.0, min(accuracies) - 0.02), min(1.0, max(accuracies) + 0.02))
    top.set_ylabel("validation accuracy")
    top.legend(loc="upper left")
    bottom.set_yscale("log")
    bottom.set_ylabel("setup seconds (log)")
    bottom.tick_params(axis="x", labelsize=8)
    figure.suptitle("One graph with HParams vs a new graph per configuration")
    return figure


def summarize(configurations, build_seconds, one_graph, rebuild, totals):
    """Returns the results dict and the table rows of both sweeps."""
    rows = []
    for config, first, second in zip(configurations, one_graph, rebuild, strict=True):
        row = dict(config)
        row.update({f"{key}_one_graph": value for key, value in first.items()})
        row.update({f"{key}_rebuild": value for key, value in second.items()})
        rows.append(row)
    setups = [[r["setup_seconds"] for r in runs] for runs in (one_graph, rebuild)]
    setup_one, setup_rebuild = (float(np.mean(seconds)) for seconds in setups)
    best = max(rows, key=lambda r: r["validation_accuracy_one_graph"])
    results = {
        "configurations": rows,
        "setup_seconds_one_graph": setup_one,
        "setup_seconds_rebuild": setup_rebuild,
        "setup_speedup": setup_rebuild / setup_one,
        # the median ignores the first run's kernel creation and a busy machine's spikes
        "setup_speedup_median": float(np.median(setups[1]) / np.median(setups[0])),
        "build_seconds_one_graph": build_seconds,
        "setup_total_seconds_one_graph": build_seconds + sum(setups[0]),
        "setup_total_seconds_rebuild": sum(setups[1]),
        "total_seconds_one_graph": totals[0],
        "total_seconds_rebuild": totals[1],
        "best": {
            **{name: best[name] for name in GRID},
            "validation_accuracy": best["validation_accuracy_one_graph"],
            "test_accuracy": best["test_accuracy_one_graph"],
        },
    }
    return results, rows


def build_parser():
    """Returns the sweep's argument parser (shared flags plus the grid)."""
    parser = flags.parser(
        "Sweep learning rate x keep probability x L2 of the MLP classifier in one "
        "finalized graph (hyperparameters as HParams inputs), and again with a new "
        "graph per configuration; compare setup time per configuration.",
        steps=1000,
        batch_size=128,
        quick_steps=50,
    )
    for dest, (flag, default, check, text) in GRID.items():
        parser.add_argument(
            flag, dest=dest, default=default, check=flags.real_list(check), help=text
        )
    flags.add_hidden_flag(parser, "625,625")
    flags.add_validation_flag(
        parser, "training examples held out to pick the best configuration"
    )
    flags.add_precision_flag(parser)
    return parser


def main(argv=None):
    """Runs both sweeps and writes results.json, results.csv and sweep.png."""
    args, data, run = rundir.start_with_tensorflow(build_parser(), argv, "sweep")
    configurations = grid(args)

    start = time.perf_counter()
    build_seconds, one_graph = sweep_one_graph(configurations, data, args, run.checkpointer)
    middle = time.perf_counter()
    rebuild = sweep_rebuild(configurations, data, args, run.checkpointer)
    totals = (middle - start, time.perf_counter() - middle)

    results, rows = summarize(configurations, build_seconds, one_graph, rebuild, totals)
    results.update(dataset=data.name, steps=args.steps, batch_size=args.batch_size,
                   hidden=list(flags.integers(args.hidden)), seed=args.seed)  # fmt: skip
    run.write_results(results)
    run.write_csv("results.csv", rows)
    run.save_figure("sweep.png", plot(rows))
    print(
        f"{len(rows)} configurations: setup {results['setup_seconds_one_graph']:.4f} s "
        f"(one graph) vs {results['setup_seconds_rebuild']:.4f} s (rebuild), "
        f"{results['setup_speedup']:.0f}x; best {results['best']}; wrote {run.path}"
    )
    return 0


if __name__ == "__main__":
    entry.entry_point(main)
