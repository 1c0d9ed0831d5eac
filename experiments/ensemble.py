"""Two MLP classifiers on two halves of the data, shared or independent (seed 003).

Each network is 784-625-625-10 (ReLU hidden layers, softmax read-out), trained
for 5,001 steps (0 to 5,000, as the seed's table) of 100 examples on the summed
cross-entropy plus 0.01 times the ``l2_loss`` of the two hidden weights, each on
its half of the training data and each with its own optimizer (:data:`OPTIMIZERS`).

- Case ``shared``: ``mlp2`` is built under ``mlp1``'s scope with ``reuse=True``,
  so training it continues from ``mlp1``'s weights; each network's test accuracy
  is measured right after its own training.
- Case ``independent``: ``mlp2`` has its own scope; the two networks' softmax
  outputs are averaged (``zoo.models.model_average``).

Test accuracies come from a second build of each network with ``reuse=True``.

Usage::

    python -m experiments.ensemble --dataset fashion_mnist \
        --data-dir /usr/share/datasets/fashion-mnist --out runs/ensemble/full
    python -m experiments.ensemble --quick --case independent --data-dir DIR

Writes ``results.json``, ``accuracy.png`` and TensorBoard events under
``tensorboard/<case>/`` into the run directory.
"""

import time

from experiments.harness import datasets, entry, figures, flags, rundir, seeds, startup
from layers.errors import ZooError
from zoo.data import N_CLASSES, N_PIXELS, DataSet

CASES = ("shared", "independent")
NETWORKS = ("mlp1", "mlp2")
# One optimizer per network, as in the seed (see docs/experiments.md for the choice):
# the name of its tf.compat.v1.train class, without "Optimizer", and its learning rate.
OPTIMIZERS = {"mlp1": ("Adam", 1e-3), "mlp2": ("GradientDescent", 1e-3)}
SEED_REFERENCE = seeds.reference("ensemble")  # the seed's MNIST figures


def build_parser():
    """Returns the experiment's argument parser (shared flags plus ``--case``)."""
    p = flags.parser(
        "Train two MLPs on two halves of the data, with shared weights and "
        "independently, and compare test accuracies with the model average.",
        steps=5001,
        batch_size=100,
    )
    p.add_argument(
        "--case",
        choices=(*CASES, "both"),
        default="both",
        help="shared: mlp2 reuses mlp1's variables; independent: two networks whose "
        "softmaxes are averaged; both: one after the other",
    )
    flags.add_validation_flag(p)
    flags.add_precision_flag(p)
    return p


def split_halves(train, seed):
    """Returns the first and second half of ``train`` as two seeded DataSets."""
    half = train.num_examples // 2
    return [
        DataSet(train.images[part], train.labels[part], seed=seed + i)
        for i, part in enumerate((slice(0, half), slice(half, 2 * half)))
    ]


def run_case(case, args, data, run):
    """Builds, trains and evaluates both networks of one case in its own graph.

    Args:
        case: ``"shared"`` or ``"independent"``.
        args: the parsed flags (the graph is built under ``--precision``).
        data: the :class:`zoo.data.DataSets`.
        run: the :class:`experiments.harness.rundir.RunDir`.

    Returns:
        The case's result dict.
    """
    import tensorflow as tf
    from tqdm import tqdm

    from experiments.harness.train import loss_scaled
    from zoo import training
    from zoo.models import mlp_classifier, model_average
    from zoo.training import precision

    start = time.perf_counter()
    shared = case == "shared"
    graph = tf.Graph()
    with graph.as_default(), precision.policy(args.precision):
        tf.compat.v1.set_random_seed(args.seed)
        x = tf.compat.v1.placeholder(tf.float32, [None, N_PIXELS], name="x")
        y = tf.compat.v1.placeholder(tf.float32, [None, N_CLASSES], name="y")
        scopes = ("mlp1", "mlp1") if shared else NETWORKS
        nets = [
            mlp_classifier(x, y, scope=scope, reuse=shared and i > 0)
            for i, scope in enumerate(scopes)
        ]
        train_ops = []
        for name, net in zip(NETWORKS, nets, strict=True):
            optimizer, learning_rate = OPTIMIZERS[name]
            make_optimizer = getattr(tf.compat.v1.train, f"{optimizer}Optimizer")
            variables = tf.compat.v1.trainable_variables(scope=net.scope_name + "/")
            scaled = loss_scaled(make_optimizer(learning_rate), args)  # float16
            train_ops.append(scaled.minimize(net.loss, var_list=variables))
        # The batch accuracy the seed prints: the step's batch just after its update, as
        # a metric fetched with the step (logged and checkpointed like the loss).
        accuracies_after_update = []
        for net, train_op in zip(nets, train_ops, strict=True):
            with tf.control_dependencies([train_op]):
                again = mlp_classifier(x, y, scope=net.scope_name, reuse=True)
            accuracies_after_update.append(again.accuracy)
        x_test = tf.compat.v1.placeholder(tf.float32, [None, N_PIXELS], name="x_test")
        y_test = tf.compat.v1.placeholder(tf.float32, [None, N_CLASSES], name="y_test")
        evaluations = [
            mlp_classifier(x_test, y_test, scope=net.scope_name, reuse=True) for net in nets
        ]
        average = None if shared else model_average(evaluations, y_test)
        init = tf.compat.v1.global_variables_initializer()
        writer = run.summary_writer(case, graph=graph)
    graph.finalize()

    test_feed = {x_test: data.test.images, y_test: data.test.labels}
    halves = split_halves(data.train, args.seed)
    result = {"networks": {}}
    print(f"Training ({case} weights)...")
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)
        for number, (name, net) in enumerate(zip(NETWORKS, nets, strict=True), start=1):
            print(f"  Network No.{number} :")
            network_start = time.perf_counter()
            logged, steps_per_second = training.train_loop(
                session,
                train_ops[number - 1],
                net.loss,
                halves[number - 1],
                args.steps,
                args.batch_size,
                lambda images, labels: {x: images, y: labels},
                log_every=entry.log_period(args.steps),
                desc=f"{case}/{name}",
                metrics={"batch_accuracy": accuracies_after_update[number - 1]},
                checkpointer=run.checkpointer,
            )
            log = [[step, loss, values["batch_accuracy"]] for step, loss, values in logged]
            for step, loss, accuracy in log:
                tqdm.write(
                    f"  step, loss, accurary = {step:6d}: {loss:7.3f}, {accuracy:7.3f}"
                )
                training.add_scalar(writer, f"{name}/loss", loss, step)
                training.add_scalar(writer, f"{name}/batch_accuracy", accuracy, step)
            accuracy = float(session.run(evaluations[number - 1].accuracy, test_feed))
            training.add_scalar(writer, f"{name}/test_accuracy", accuracy, args.steps)
            result["networks"][name] = {
                "test_accuracy": accuracy,
                "log": log,
                "optimizer": OPTIMIZERS[name][0],
                "learning_rate": OPTIMIZERS[name][1],
                "train_examples": halves[number - 1].num_examples,
                "wall_time_s": time.perf_counter() - network_start,
                "steps_per_second": steps_per_second,
            }
        accuracies = [result["networks"][name]["test_accuracy"] for name in NETWORKS]
        for number, accuracy in enumerate(accuracies, start=1):
            print(f"accuracy{number} = {accuracy:8.4f}")
        if average is not None:
            result["average_accuracy"] = float(session.run(average.accuracy, test_feed))
            result["average_beats_each"] = result["average_accuracy"] > max(accuracies)
            print(f"accuracy (model averaged) = {result['average_accuracy']:8.4f}")
            training.add_scalar(
                writer, "average/test_accuracy", result["average_accuracy"], 0
            )
    writer.close()
    first_losses = [result["networks"][name]["log"][0][1] for name in NETWORKS]
    result["mlp2_first_loss_over_mlp1_first_loss"] = first_losses[1] / first_losses[0]
    result["wall_time_s"] = time.perf_counter() - start
    result["reference"] = {"dataset": SEED_REFERENCE["dataset"], **SEED_REFERENCE[case]}
    return result


def plot_accuracies(results, dataset):
    """Returns a bar chart of the test accuracies: ours on ``dataset``, the seed's."""
    labels, ours, published = [], [], []
    for case, result in results.items():
        for name in NETWORKS:
            labels.append(f"{case}\n{name}")
            ours.append(result["networks"][name]["test_accuracy"])
            published.append(result["reference"][name]["test_accuracy"])
        if "average_accuracy" in result:
            labels.append(f"{case}\naverage")
            ours.append(result["average_accuracy"])
            published.append(result["reference"]["average_accuracy"])
    figure, axes = figures.pyplot().subplots(figsize=(1.6 * len(labels) + 2, 4.5))
    series = {f"ours ({dataset})": ours, f"seed ({SEED_REFERENCE['dataset']})": published}
    figures.grouped_bars(axes, labels, series, "%.4f")
    axes.set_ylim(max(0.0, min(ours + published) - 0.05), 1.0)
    axes.set_ylabel("test accuracy")
    axes.set_title("Two MLPs: shared weights vs independent networks and their average")
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2)
    return figure


def main(argv=None):
    """Runs the experiment; see ``--help``.

    Raises:
        ZooError: bad flags, an existing run directory, or missing/corrupt data.
    """
    args = flags.parse_args(build_parser(), argv)
    startup.import_tensorflow()
    data = datasets.load(args)
    if data.train.num_examples < 2 * args.batch_size:
        raise ZooError(
            f"{data.source}: expected at least {2 * args.batch_size} training images "
            f"(two halves of one batch each), found {data.train.num_examples}; use a "
            "smaller --batch-size or --validation"
        )
    run = rundir.run_dir(args, "ensemble")
    cases = CASES if args.case == "both" else (args.case,)
    results = {}
    for case in cases:
        results[case] = run_case(case, args, data, run)
    summary = {
        "experiment": "ensemble",
        "dataset": data.name,
        "data_source": data.source,
        "steps": args.steps,
        "batch_size": args.batch_size,
        "seed": args.seed,
        "cases": results,
    }
    run.write_results(summary)
    run.save_figure("accuracy.png", plot_accuracies(results, data.name))
    print(f"results in {run.path}")
    return 0


if __name__ == "__main__":
    entry.entry_point(main)
