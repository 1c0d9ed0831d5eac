"""The tied autoencoder trained eagerly (tf.function) and in graph mode, side by side.

The eager run builds the seed's tied 784-625-784 autoencoder through
``zoo.share`` and trains it with ``tf.GradientTape`` and Keras 3's Adagrad
(learning rate 0.1, initial accumulator 0.1) inside ``tf.function``. The graph
run builds the same model with ``zoo.autoencoder`` and trains it with
``tf.compat.v1.train.AdagradOptimizer`` (learning rate 0.1, initial accumulator
0.1). Both start from the same weights (the eager initial values, moved to the
graph by name through a checkpoint) and see the same batches, so their test
losses must agree within ``--tolerance``; the two optimizers differ only by
Keras's epsilon (1e-7) under the square root. Both run under ``--precision``
(float16 scales the loss: Keras's way eagerly, ``zoo.LossScaleOptimizer`` in graph).

Usage::

    python -m experiments.eager_autoencoder --dataset fashion_mnist \
        --data-dir /usr/share/datasets/fashion-mnist --steps 2000
    python -m experiments.eager_autoencoder --quick --data-dir DIR

Writes ``results.json`` (both test losses, their difference, the tolerance),
``losses.csv``, ``loss_curves.png`` and ``initial.ckpt*`` into the run
directory; exits 1 when the difference exceeds the tolerance.

Both loops checkpoint every ``--checkpoint-every`` steps into
``<run>/checkpoints`` (``eager.npz``: model and Keras optimizer variables;
``00-graph.npz``: the runner's), stop on SIGINT/SIGTERM with the command that
resumes, and stop at once on a NaN or Inf loss (see docs/reliability.md);
``--resume RUN_DIR`` ends with the numbers of an uninterrupted run.
"""

import os

from experiments.harness import entry, figures, flags, rundir
from layers.errors import ZooError
from zoo.data import N_PIXELS

SCOPE = "autoencoder"
EAGER_CHECKPOINT = "eager.npz"
INITIAL_ACCUMULATOR = 0.1  # Keras's Adagrad default, passed to TF1's explicitly
TOLERANCE = 1e-3  # absolute, on the mean binary cross-entropy (about 0.1 to 0.7)


def build_parser():
    """Returns the experiment's argument parser."""
    p = flags.parser(
        "Train the tied autoencoder eagerly (zoo.share, tf.GradientTape, Keras Adagrad "
        "under tf.function) and in graph mode (tf.compat.v1 Adagrad) from the same "
        "weights and batches, and compare the test losses.",
        steps=10001,
        batch_size=128,
    )
    p.add_argument(
        "--tolerance",
        type=float,
        default=TOLERANCE,
        help="largest accepted |eager - graph| test loss; the run exits 1 beyond it",
        check=flags.real(0.0, inclusive=True),
    )
    flags.add_validation_flag(p)
    flags.add_precision_flag(p)
    return p


def initial_weights(args, data, run):
    """Creates the eager model's variables from ``--seed``; saves them as a checkpoint.

    Returns:
        ``(model, checkpoint prefix)``: the ``zoo.share`` callable and the path.
    """
    import tensorflow as tf

    from zoo.models import autoencoder
    from zoo.sharing.share import save_by_name, share

    tf.random.set_seed(args.seed)
    model = share(autoencoder, SCOPE, tied=True)
    model(tf.constant(data.test.images[:1]))
    return model, save_by_name(model.variables, run.file("initial.ckpt"))


def eager_checkpoint(checkpointer, variables, batches, steps, batch_size):
    """Returns the eager loop's checkpoint ``<run>/checkpoints/eager.npz``.

    A :class:`zoo.training.checkpoints.LoopCheckpoint` in the runner's format (made
    here, where TensorFlow may be imported): every variable given (the model's, the
    optimizer's: accumulators, iteration count, learning rate, loss scale) by name,
    the step, batch position, RNG states and losses logged. A resume must have it.

    Args:
        checkpointer: the run's :class:`zoo.training.checkpoints.Checkpointer`.
        variables: the eager variables (``tf.Variable`` or ``keras.Variable``).
        batches: the training :class:`zoo.data.DataSet`.
        steps: the loop's length.
        batch_size: examples per step.
    """
    from zoo.training.checkpoints import LoopCheckpoint

    class EagerCheckpoint(LoopCheckpoint):
        def shapes(self):
            return {name: list(v.shape) for name, v in self.variables.items()}

        def values(self):
            return {name: v.numpy() for name, v in self.variables.items()}

        def assign(self, values):
            for name, variable in self.variables.items():
                variable.assign(values[name])

        def restore(self):
            """As the base's; raises ZooError when resuming a run without the file."""
            if self.owner.resume and not os.path.exists(self.path):
                raise ZooError(
                    f"{self.owner.directory}: expected a run of "
                    f"experiments.eager_autoencoder with {self.path}, found none; resume "
                    "the directory that experiment wrote to, or start afresh with "
                    "--overwrite"
                )
            return super().restore()

    path = os.path.join(checkpointer.root, EAGER_CHECKPOINT)
    checkpoint = EagerCheckpoint(checkpointer, path, batches, "eager", steps, batch_size)
    checkpoint.variables = {_checkpoint_name(v): v for v in variables}
    return checkpoint


def _checkpoint_name(variable):
    """A Keras variable's path (``adagrad/iteration``), else the TF name without ``:0``."""
    return getattr(variable, "path", None) or variable.name.split(":")[0]


def eager_step(model, optimizer, policy):
    """Returns the ``tf.function`` step: ``model`` (``zoo.share``) called under
    ``zoo.precision.policy(policy)``, its loss's gradients applied by ``optimizer``."""
    import tensorflow as tf

    from zoo.training import precision

    @tf.function
    def train_step(images):
        with tf.GradientTape() as tape, precision.policy(policy):
            loss = model(images).loss
            scaled = optimizer.scale_loss(loss)  # the loss itself unless loss-scaled
        variables = model.trainable_variables
        optimizer.apply_gradients(
            zip(tape.gradient(scaled, variables), variables, strict=True)
        )
        return loss

    return train_step


def train_eager(model, args, data, checkpointer):
    """Trains ``model`` with a GradientTape step under tf.function; returns the result.

    Checkpoints as :func:`training.train_loop` does (loop ``eager``).

    Raises:
        RunInterrupted: SIGINT/SIGTERM arrived; a checkpoint was written.
        NonFiniteLossError: the loss became NaN or Inf.
        ZooError: the checkpoint to resume from does not fit.
    """
    import keras
    import tensorflow as tf

    from experiments.harness.train import loss_scaled
    from zoo import training
    from zoo.models.autoencoder import LEARNING_RATE
    from zoo.training import precision

    adagrad = keras.optimizers.Adagrad(
        LEARNING_RATE,
        initial_accumulator_value=INITIAL_ACCUMULATOR,
        name="adagrad",  # fixed: Keras numbers unnamed ones (adagrad_1, ...) per process
    )
    optimizer = loss_scaled(adagrad, args)
    optimizer.build(model.trainable_variables)
    train_step = eager_step(model, optimizer, args.precision)
    checkpoint = eager_checkpoint(
        checkpointer,
        model.variables + optimizer.variables,
        data.train,
        args.steps,
        args.batch_size,
    )
    data.train.restore({"epoch": 0, "position": 0})

    def run_step(_count, _with_loss):  # one step a run; the NaN guard fetches each loss
        images = data.train.next_batch(args.batch_size)[0]
        return [train_step(tf.constant(images))], None

    logged, speed = training.run_steps(
        run_step,
        args.steps,
        checkpoint,
        log_every=entry.log_period(args.steps),
        desc="eager",
    )
    with precision.policy(args.precision):
        test_loss = float(model(tf.constant(data.test.images)).loss)
    return {"test_loss": test_loss, "losses": logged, "steps_per_second": speed}


def train_graph(initial, args, data, run):
    """Trains ``zoo.autoencoder`` in a graph from the ``initial`` checkpoint.

    Checkpoints through :func:`training.train_loop` (loop ``graph``).
    """
    import tensorflow as tf

    from experiments.harness.train import loss_scaled
    from zoo import training
    from zoo.models import autoencoder
    from zoo.models.autoencoder import LEARNING_RATE
    from zoo.sharing.share import restore_by_name
    from zoo.training import precision

    graph = tf.Graph()
    with graph.as_default(), precision.policy(args.precision):
        x = tf.compat.v1.placeholder(tf.float32, [None, N_PIXELS], name="x")
        model = autoencoder(x, tied=True, scope=SCOPE)
        optimizer = tf.compat.v1.train.AdagradOptimizer(
            LEARNING_RATE, initial_accumulator_value=INITIAL_ACCUMULATOR
        )
        train_op = loss_scaled(optimizer, args).minimize(model.loss)
        x_test = tf.compat.v1.placeholder(tf.float32, [None, N_PIXELS], name="x_test")
        evaluation = autoencoder(x_test, tied=True, scope=SCOPE, reuse=True)
        weights = tf.compat.v1.trainable_variables()
        init = tf.compat.v1.global_variables_initializer()
    data.train.restore({"epoch": 0, "position": 0})
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)
        restore_by_name(weights, initial, session)
        logged, speed = training.train_loop(
            session,
            train_op,
            model.loss,
            data.train,
            args.steps,
            args.batch_size,
            lambda images, _labels: {x: images},
            log_every=entry.log_period(args.steps),
            desc="graph",
            checkpointer=run.checkpointer,
        )
        test_loss = float(session.run(evaluation.loss, {x_test: data.test.images}))
    return {"test_loss": test_loss, "losses": logged, "steps_per_second": speed}


def plot_losses(eager, graph):
    """Returns a figure of both training-loss curves."""
    figure, axes = figures.pyplot().subplots(figsize=(6, 4))
    for label, result, style in (("eager", eager, "-"), ("graph", graph, "--")):
        steps, losses = zip(*result["losses"], strict=True)
        axes.plot(steps, losses, style, label=f"{label} (test {result['test_loss']:.4f})")
    axes.set(xlabel="step", ylabel="training loss (batch)", title="tied autoencoder")
    axes.legend()
    return figure


def main(argv=None):
    """Runs both trainings and writes the comparison; returns 1 beyond the tolerance.

    Raises:
        RunInterrupted: SIGINT/SIGTERM during training (checkpoint written).
        NonFiniteLossError: a NaN or Inf training loss.
        ZooError: bad flags, an existing run directory, a checkpoint that does not
            fit on ``--resume``, or missing/corrupt data.
    """
    args, data, run = rundir.start_with_tensorflow(
        build_parser(), argv, "eager_autoencoder"
    )
    model, initial = initial_weights(args, data, run)
    eager = train_eager(model, args, data, run.checkpointer)
    graph = train_graph(initial, args, data, run)
    difference = abs(eager["test_loss"] - graph["test_loss"])
    results = {
        "eager": eager, "graph": graph, "difference": difference,
        "tolerance": args.tolerance, "within_tolerance": difference <= args.tolerance,
        "dataset": data.name, "steps": args.steps, "batch_size": args.batch_size,
        "seed": args.seed,
    }  # fmt: skip
    run.write_results(results)
    run.write_csv(
        "losses.csv",
        [
            {"step": step, "eager": e, "graph": g}
            for (step, e), (_, g) in zip(eager["losses"], graph["losses"], strict=True)
        ],
    )
    run.save_figure("loss_curves.png", plot_losses(eager, graph))
    print(
        f"test loss: eager {eager['test_loss']:.6f}, graph {graph['test_loss']:.6f}, "
        f"difference {difference:.2e} (tolerance {args.tolerance:g})"
    )
    return 0 if results["within_tolerance"] else 1


if __name__ == "__main__":
    entry.entry_point(main)
