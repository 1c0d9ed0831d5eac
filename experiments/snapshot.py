"""Past vs current: one network evaluated with last step's and this step's parameters.

The seed's question (Stack Overflow 48555964): evaluate network B on a batch with
its parameters from the previous step and from the current step, in the same
training step, without saving a checkpoint every step. Here B is the MLP
classifier built twice, under ``current`` and under a frozen ``past`` copy. One
``session.run`` per step

1. evaluates both on the batch and measures how far apart they are,
2. then syncs ``past := current`` (a grouped assign op),
3. then applies the optimizer to ``current``,

ordered by control dependencies. ``divergence.csv`` holds the per-step numbers,
``divergence.png`` the plot, ``results.json`` the summary and a check that the
past network really lags one step behind.

Usage::

    make experiment-snapshot DATA_DIR=/usr/share/datasets/fashion-mnist \\
        DATASET=fashion_mnist
    python -m experiments.snapshot --data-dir DIR --quick --out runs/snapshot/quick
"""

import io
import os

import numpy as np

from experiments.harness import datasets, entry, figures, flags, rundir, startup
from zoo.data import N_CLASSES, N_PIXELS

PROBE_SIZE = 256


def build_step(current, past, args):
    """Returns ``(metrics, step_op)``: evaluate both, then sync, then train.

    The metrics are computed before the sync (control dependencies), so
    fetching them in the run of ``step_op`` gives the values of that step.

    Args:
        current: the live :class:`zoo.models.Classifier` (scope ``current``).
        past: the :class:`zoo.sharing.state.Snapshot` of it.
        args: the flags (``--learning-rate``: Adam's; ``--precision``: float16
            scales the loss).

    Returns:
        A dict of scalar tensors (``kl``, ``mean_abs_diff``, ``disagreement``)
        and the op that syncs and trains after they (and the loss) are computed.
    """
    import tensorflow as tf

    from experiments.harness.train import loss_scaled
    from zoo.sharing.state import copy_scope

    past_out = past.output
    log_current = tf.nn.log_softmax(current.logits)
    log_past = tf.nn.log_softmax(past_out.logits)
    metrics = {
        "kl": tf.reduce_mean(
            tf.reduce_sum(tf.exp(log_current) * (log_current - log_past), axis=1)
        ),
        "mean_abs_diff": tf.reduce_mean(tf.abs(current.y_pred - past_out.y_pred)),
        "disagreement": tf.reduce_mean(
            tf.cast(
                tf.not_equal(tf.argmax(current.logits, 1), tf.argmax(past_out.logits, 1)),
                tf.float32,
            )
        ),
    }
    with tf.control_dependencies([*metrics.values(), current.loss]):
        sync = copy_scope(current.scope_name, past.scope_name)
    with tf.control_dependencies([sync.op]):
        adam = tf.compat.v1.train.AdamOptimizer(args.learning_rate)
        train = loss_scaled(adam, args).minimize(current.loss)
    return metrics, train


def plot(rows):
    """Returns a figure: KL(current || past) and argmax disagreement per step."""
    steps = [row["step"] for row in rows]
    figure, (top, bottom) = figures.pyplot().subplots(2, 1, figsize=(8, 6), sharex=True)
    top.semilogy(steps[1:], [row["kl"] for row in rows[1:]], lw=0.8)
    top.set_ylabel("KL(current || past)")
    top.set_title("Network B on the same batch: parameters of step t vs step t-1")
    bottom.plot(steps, [row["disagreement"] for row in rows], lw=0.8, color="tab:red")
    bottom.set_ylabel("argmax disagreement")
    bottom.set_xlabel("training step")
    return figure


def build_parser():
    """Returns the experiment's argument parser (shared flags, learning rate, widths)."""
    p = flags.parser(
        "Evaluate the MLP classifier with its previous and current parameters in one "
        "session.run per step, sync past := current, train; plot their divergence.",
        steps=2000,
        batch_size=100,
        quick_steps=50,
    )
    p.add_argument("--learning-rate", type=float, default=1e-3, help="Adam learning rate")
    flags.add_hidden_flag(p, "625,625")
    flags.add_precision_flag(p)
    return p


def train(args, hidden, data, run):
    """Trains ``current`` with its ``past`` snapshot a step behind; see the module.

    Args:
        args: the parsed flags (the graph is built under ``--precision``).
        hidden: the hidden layers' widths.
        data: the :class:`zoo.data.DataSets`.
        run: the :class:`experiments.harness.rundir.RunDir` (its checkpointer).

    Returns:
        ``(logged, steps_per_second, lag, test_accuracy)``: the loop's log (step,
        loss, metrics), its speed, the largest difference between the past
        network's outputs after the last step and the current network's before it
        (None for a run of fewer than 2 steps) and the test accuracy. The current
        network's probe outputs before the last
        step are kept in the run directory, so a resumed run that skips that step
        still makes the check.
    """
    import tensorflow as tf

    from zoo import training
    from zoo.models import mlp_classifier
    from zoo.sharing.state import frozen_copy
    from zoo.training import precision
    from zoo.training.files import atomic_write

    v1 = tf.compat.v1
    probe = data.test.images[:PROBE_SIZE]
    with tf.Graph().as_default(), precision.policy(args.precision):
        v1.set_random_seed(args.seed)
        x = v1.placeholder(tf.float32, [None, N_PIXELS], name="x")
        y = v1.placeholder(tf.float32, [None, N_CLASSES], name="y")

        def builder(scope):
            return mlp_classifier(x, y, scope=scope, hidden=hidden)

        current = builder("current")
        past = frozen_copy(builder, "current", "past")  # computes as current does
        metrics, step_op = build_step(current, past, args)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(past.sync_op)
            before_last = run.file(f"probe_before_step_{args.steps - 1}.npy")

            def on_log(step, _loss):
                if step == args.steps - 2:  # current now holds the last step's input
                    outputs = sess.run(current.y_pred, {x: probe})
                    atomic_write(before_last, _npy_bytes(outputs))

            logged, steps_per_second = training.train_loop(
                sess,
                step_op,
                current.loss,
                data.train,
                args.steps,
                args.batch_size,
                lambda images, labels: {x: images, y: labels},
                log_every=1,
                desc="snapshot",
                on_log=on_log,
                metrics=metrics,
                checkpointer=run.checkpointer,
            )
            past_after = sess.run(past.output.y_pred, {x: probe})
            test_accuracy = sess.run(
                current.accuracy, {x: data.test.images, y: data.test.labels}
            )
    if not os.path.exists(before_last):  # fewer than 2 steps: no step before the last
        return logged, steps_per_second, None, test_accuracy
    lag = float(np.abs(past_after - np.load(before_last)).max())
    return logged, steps_per_second, lag, test_accuracy


def _npy_bytes(array):
    """Returns ``array`` in the ``.npy`` format."""
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def main(argv=None):
    """Runs the experiment; see ``--help``."""
    args = flags.parse_args(build_parser(), argv)
    startup.import_tensorflow()
    hidden = flags.integers(args.hidden)
    run = rundir.run_dir(args, "snapshot")
    data = datasets.load(args, validation=0)
    logged, steps_per_second, lag, test_accuracy = train(args, hidden, data, run)
    rows = [{"step": step, **values, "loss": loss} for step, loss, values in logged]
    kl = np.array([row["kl"] for row in rows])
    results = {
        "dataset": data.name,
        "source": data.source,
        "steps": args.steps,
        "batch_size": args.batch_size,
        "hidden": list(hidden),
        "learning_rate": args.learning_rate,
        "seed": args.seed,
        "kl_first_step": kl[0],
        "kl_mean": kl[1:].mean() if len(kl) > 1 else 0.0,
        "kl_last_step": kl[-1],
        "disagreement_mean": float(np.mean([row["disagreement"] for row in rows])),
        # None when the step before the last ran in an earlier, interrupted process
        "past_lags_one_step_max_abs_diff": lag,
        "test_accuracy": test_accuracy,
        "steps_per_second": steps_per_second,
    }
    run.write_csv("divergence.csv", rows)
    run.save_figure("divergence.png", plot(rows))
    run.write_results(results)
    print(
        f"results in {run.path}: KL mean {results['kl_mean']:.3g}, "
        f"test accuracy {test_accuracy:.4f}"
    )
    return 0


if __name__ == "__main__":
    entry.entry_point(main)
