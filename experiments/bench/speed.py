"""Speed of our training loop against Keras 3, a ``tf.function`` loop and the matmul limit.

For each model (the 784-625-784 autoencoder untied and tied, batch 128; the
784-625-625-10 MLP classifier, batch 100), all with Adagrad 0.1 on the same
training images, in one process:

* ``ours``: the graph built by ``zoo`` reading its batches from
  :class:`zoo.batches.GraphBatches` (gathered in the graph, in the DataSet's
  order, no ``feed_dict``), ``--steps-per-run`` steps per ``session.run``
  (:func:`zoo.training.repeat_step`), compiled with XLA unless ``--no-xla``,
  trained with ``training.train_loop`` as the autoencoder experiment does
  with the same flags;
* ``ours_no_xla``: the same loop uncompiled (TensorFlow's kernels op by op);
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

The contenders run in interleaved rounds after a warm-up, so load from other
processes hits them alike; each reports its fastest round (and the median, and
CPU time per step). Speed goals are reported as ratios, never asserted.

Usage::

    python -m experiments.bench.speed --dataset fashion_mnist \
        --data-dir /usr/share/datasets/fashion-mnist --json runs/bench.json
    python -m experiments.bench.speed --quick --data-dir DIR --json /tmp/bench.json
"""

import dataclasses
import json
import os
import platform
import resource
import statistics
import time

import keras
import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

from experiments.harness import flags, rundir
from layers.errors import ZooError
from zoo import files, training
from zoo.batches import GraphBatches, batch_dataset
from zoo.models import autoencoder, mlp_classifier

LEARNING_RATE = 0.1
N_HIDDEN = 625
MLP_HIDDEN = (625, 625)
MLP_L2 = 0.01
RATIOS = {
    "ratio_keras": "keras",
    "ratio_keras_best": "keras_best",
    "ratio_tf_function": "tf_function",
    "ratio_tf_function_loop": "tf_function_loop",
    "ratio_compute_limit": "compute_limit",
    "ratio_limit": "limit",
}
RATIO_NAMES = tuple(RATIOS.values())
BEST_OF = {  # a reference at its best: the faster of its settings in this run
    "keras_best": ("keras_spe", "keras_spe_xla"),
    "compute_limit": ("compute_limit_xla", "compute_limit_no_xla"),
}
QUICK = {"steps": 20, "rounds": 2, "warmup": 2}


@dataclasses.dataclass(frozen=True)
class Case:
    """One model to time: ``model`` is "autoencoder" or "mlp"."""

    model: str
    variant: str
    batch_size: int

    @property
    def tied(self):
        return self.variant == "tied"


# --------------------------------------------------------------------------- ours


def build_ours(case, x, y):
    """Builds the zoo model on ``x``/``y`` and returns its loss."""
    if case.model == "autoencoder":
        return autoencoder(x, tied=case.tied, scope="ae").loss
    return mlp_classifier(x, y, scope="mlp", hidden=MLP_HIDDEN, l2=MLP_L2).loss


def session_config(args):
    """Returns the ``ConfigProto`` of the session-based contenders from the flags."""
    return tf.compat.v1.ConfigProto(
        inter_op_parallelism_threads=args.inter_op,
        intra_op_parallelism_threads=args.intra_op,
    )


def ours(case, train, args, source="graph", steps_per_run=1, xla=False):
    """Returns ``run(steps)`` for our training loop.

    Args:
        case: the :class:`Case`.
        train: the training :class:`zoo.data.DataSet` (copied, so every
            contender starts at the same batch).
        args: the flags (session config, seed).
        source: ``"graph"`` (:class:`zoo.batches.GraphBatches`, as the
            autoencoder experiment does), ``"feed"`` (``next_batch`` through
            ``feed_dict``), or ``"fixed"`` (one batch held in a variable: no
            input cost at all); the first two run ``training.train_loop``.
        steps_per_run: training steps per ``session.run`` (a ``tf.while_loop``
            of :func:`zoo.training.repeat_step` when above 1).
        xla: compile the loop with XLA (``repeat_step(jit_compile=True)``).
    """
    batches = dataclasses.replace(train, epoch=0, position=0)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(args.seed)
        optimizer = tf.compat.v1.train.AdagradOptimizer(LEARNING_RATE)
        if source in ("graph", "fixed"):
            source_batches = (GraphBatches if source == "graph" else FixedBatch)(
                batches, case.batch_size
            )
            train_op = training.repeat_step(
                lambda x, y: build_ours(case, x, y),
                optimizer,
                source_batches,
                steps_per_run,
                jit_compile=xla,
            )
            loss = None
        else:
            x = tf.compat.v1.placeholder(tf.float32, [None, train.images.shape[1]], "x")
            y = tf.compat.v1.placeholder(tf.float32, [None, train.labels.shape[1]], "y")
            loss = build_ours(case, x, y)
            train_op = optimizer.minimize(loss)
        init = tf.compat.v1.global_variables_initializer()
    graph.finalize()
    session = tf.compat.v1.Session(graph=graph, config=session_config(args))
    session.run(init)
    feed = None
    if source == "graph":
        batches = source_batches
        batches.initialize(session)
    elif source == "feed":

        def feed(images, labels):
            return {x: images} if case.model == "autoencoder" else {x: images, y: labels}

    if source == "fixed":
        return repeat_callable(session.make_callable(train_op.train_op), steps_per_run)

    def run(steps):
        training.train_loop(session, train_op, loss, batches, steps, case.batch_size, feed)

    return run


class FixedBatch:
    """One batch held in variables, drawn again by every step: no input cost at all.

    It has what :func:`zoo.training.repeat_step` reads of a
    :class:`zoo.batches.GraphBatches` (``images``, ``labels``, ``draw()``,
    ``window``).
    """

    window = 256

    def __init__(self, train, batch_size):
        self.images, self.labels = (
            tf.Variable(array, trainable=False).value()
            for array in train.next_batch(batch_size)
        )

    def draw(self):
        return self.images, self.labels


def repeat_callable(step, steps_per_run):
    """Returns ``run(steps)`` calling ``step()`` (``steps_per_run`` steps a call).

    ``steps`` must be a multiple of ``steps_per_run`` (:func:`time_rounds` makes
    its rounds so), or the run would train more steps than it counts.
    """

    def run(steps):
        assert steps % steps_per_run == 0, (steps, steps_per_run)
        for _ in range(steps // steps_per_run):
            step()

    return run


def needed_matmuls(case, n_in, n_classes):
    """Lists the matrix products a training step of ``case`` cannot do without.

    They are read from the graph of the loss and its gradients with respect to
    the trainable variables, so products no variable needs (the gradient of the
    input) are left out even where ``minimize`` computes them.

    Returns:
        A list of ``(a_shape, b_shape, transpose_a, transpose_b)``.
    """
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [case.batch_size, n_in])
        y = tf.compat.v1.placeholder(tf.float32, [case.batch_size, n_classes])
        grads = tf.gradients(build_ours(case, x, y), tf.compat.v1.trainable_variables())
    needed = tf.compat.v1.graph_util.extract_sub_graph(
        graph.as_graph_def(), [g.op.name for g in grads]
    )
    shapes = []
    for node in needed.node:
        if node.op == "MatMul":
            op = graph.get_operation_by_name(node.name)
            a, b = (t.shape.as_list() for t in op.inputs)
            shapes.append((a, b, op.get_attr("transpose_a"), op.get_attr("transpose_b")))
    return shapes


def matmul_limit(shapes, args):
    """Returns ``run(steps)`` running only the given matrix products per step.

    Grappler's dependency optimizer would drop products whose results nothing
    reads, so it is switched off for this session.
    """
    graph = tf.Graph()
    with graph.as_default():
        rng = np.random.default_rng(args.seed)
        products = []
        for a_shape, b_shape, transpose_a, transpose_b in shapes:
            a = tf.Variable(rng.random(a_shape, dtype=np.float32))
            b = tf.Variable(rng.random(b_shape, dtype=np.float32))
            products.append(
                tf.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
            )
        step = tf.group(*products)
        init = tf.compat.v1.global_variables_initializer()
    graph.finalize()
    config = session_config(args)
    config.graph_options.rewrite_options.dependency_optimization = RewriterConfig.OFF
    session = tf.compat.v1.Session(graph=graph, config=config)
    session.run(init)

    def run(steps):
        for _ in range(steps):
            session.run(step)

    return run


# --------------------------------------------------------------------------- TF2


def eager_batches(train, batch_size, seed):
    """Returns the endless ``tf.data`` batches of ``train`` for the TF2 contenders."""
    return batch_dataset(
        tf.constant(train.images), tf.constant(train.labels), batch_size, seed
    )


class TiedAutoencoder(keras.layers.Layer):
    """Keras layer ``sigmoid(x @ W + b) @ W.T + c``: the decoder reads the encoder's kernel.

    Args:
        units: width of the code.
    """

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        n_in = input_shape[-1]
        truncated = keras.initializers.TruncatedNormal(stddev=0.05)
        self.kernel = self.add_weight(shape=(n_in, self.units), initializer=truncated)
        self.encoder_bias = self.add_weight(shape=(self.units,), initializer="zeros")
        self.decoder_bias = self.add_weight(shape=(n_in,), initializer="zeros")

    def call(self, x):
        code = keras.ops.sigmoid(keras.ops.matmul(x, self.kernel) + self.encoder_bias)
        return keras.ops.matmul(code, keras.ops.transpose(self.kernel)) + self.decoder_bias


def keras_model(case, n_in, n_classes, steps_per_execution=1, jit_compile="auto"):
    """Returns the compiled Keras 3 model of ``case`` (outputs are logits)."""
    truncated = keras.initializers.TruncatedNormal(stddev=0.05)
    if case.model == "autoencoder":
        if case.tied:
            layers = [TiedAutoencoder(N_HIDDEN)]
        else:
            layers = [
                keras.layers.Dense(N_HIDDEN, "sigmoid", kernel_initializer=truncated),
                keras.layers.Dense(n_in, kernel_initializer=truncated),
            ]
        loss = keras.losses.BinaryCrossentropy(from_logits=True)
    else:
        l2 = keras.regularizers.L2(MLP_L2 / 2)  # tf.nn.l2_loss is sum(w**2) / 2
        layers = [
            keras.layers.Dense(
                n, "relu", kernel_initializer=truncated, kernel_regularizer=l2
            )
            for n in MLP_HIDDEN
        ]
        layers.append(
            keras.layers.Dense(
                n_classes, kernel_initializer=keras.initializers.RandomNormal(stddev=0.05)
            )
        )
        loss = keras.losses.CategoricalCrossentropy(from_logits=True, reduction="sum")
    model = keras.Sequential([keras.Input((n_in,)), *layers])
    model.compile(
        optimizer=keras.optimizers.Adagrad(LEARNING_RATE),
        loss=loss,
        steps_per_execution=steps_per_execution,
        jit_compile=jit_compile,
    )
    return model


def keras_fit(case, train, args, steps_per_execution=1, jit_compile="auto"):
    """Returns ``run(steps)`` calling ``model.fit`` for ``steps`` steps.

    Args:
        case, train, args: as :func:`ours`.
        steps_per_execution: Keras's steps per call of its compiled function.
        jit_compile: Keras's ``compile(jit_compile=...)``: "auto", True or False.
    """
    keras.utils.set_random_seed(args.seed)
    model = keras_model(
        case, train.images.shape[1], train.labels.shape[1], steps_per_execution, jit_compile
    )
    dataset = eager_batches(train, case.batch_size, args.seed)
    if case.model == "autoencoder":

        @tf.autograph.experimental.do_not_convert
        def images_as_targets(images, _labels):
            return images, images

        dataset = dataset.map(images_as_targets)

    def run(steps):
        model.fit(dataset, epochs=1, steps_per_epoch=steps, shuffle=False, verbose=0)

    return run


def tf_function(case, train, args, steps_per_call=1):
    """Returns ``run(steps)`` of a hand-written ``tf.function`` + ``GradientTape`` loop.

    Args:
        case, train, args: as :func:`ours`.
        steps_per_call: training steps per ``tf.function`` call (a
            ``tf.while_loop`` inside it, the step compiled with XLA, when above 1).
    """
    tf.random.set_seed(args.seed)
    n_in, n_classes = train.images.shape[1], train.labels.shape[1]
    if case.model == "autoencoder":
        widths = [n_in, N_HIDDEN] if case.tied else [n_in, N_HIDDEN, n_in]
    else:
        widths = [n_in, *MLP_HIDDEN, n_classes]
    weights = [
        tf.Variable(tf.random.truncated_normal([m, n], stddev=0.05))
        for m, n in zip(widths[:-1], widths[1:], strict=False)
    ]
    out_widths = [N_HIDDEN, n_in] if case.model == "autoencoder" else widths[1:]
    biases = [tf.Variable(tf.zeros([n])) for n in out_widths]
    params = weights + biases
    accumulators = [tf.Variable(tf.fill(p.shape, 0.1)) for p in params]

    def loss_of(images, labels):
        if case.model == "autoencoder":
            decoder_w = tf.transpose(weights[0]) if case.tied else weights[1]
            code = tf.sigmoid(images @ weights[0] + biases[0])
            logits = code @ decoder_w + biases[1]
            return tf.reduce_mean(
                tf.nn.sigmoid_cross_entropy_with_logits(labels=images, logits=logits)
            )
        h = images
        for w, b in zip(weights[:-1], biases[:-1], strict=True):
            h = tf.nn.relu(h @ w + b)
        logits = h @ weights[-1] + biases[-1]
        cross_entropy = tf.reduce_sum(
            tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        )
        return cross_entropy + MLP_L2 * tf.add_n([tf.nn.l2_loss(w) for w in weights[:-1]])

    def step(images, labels):
        with tf.GradientTape() as tape:
            loss = loss_of(images, labels)
        updates = [
            tf.raw_ops.ResourceApplyAdagradV2(
                var=param.handle,
                accum=accumulator.handle,
                lr=tf.constant(LEARNING_RATE),
                epsilon=tf.constant(0.0),
                grad=grad,
            )
            for param, accumulator, grad in zip(
                params, accumulators, tape.gradient(loss, params), strict=True
            )
        ]
        with tf.control_dependencies(updates):
            return tf.identity(loss)

    # As Keras does: the step compiled, the loop around it not (it reads tf.data).
    compiled_step = tf.function(step, jit_compile=True, autograph=False)

    @tf.function(autograph=False)
    def steps_in_one_call(iterator):
        if steps_per_call == 1:
            step(*iterator.get_next())
            return None

        def body(i):
            with tf.control_dependencies([compiled_step(*iterator.get_next())]):
                return i + 1

        return tf.while_loop(lambda i: i < steps_per_call, body, [tf.constant(0)])

    iterator = iter(eager_batches(train, case.batch_size, args.seed))
    return repeat_callable(lambda: steps_in_one_call(iterator), steps_per_call)


# --------------------------------------------------------------------------- timing


def contenders(case, train, args):
    """Returns ``{name: run(steps)}`` for the contenders of ``case``."""
    n_in, n_classes = train.images.shape[1], train.labels.shape[1]
    k = args.steps_per_run
    return {
        "ours": ours(case, train, args, steps_per_run=k, xla=args.xla),
        "ours_no_xla": ours(case, train, args, steps_per_run=k),
        "ours_one_step": ours(case, train, args),
        "ours_feed_dict": ours(case, train, args, source="feed"),
        "ours_graph_input": ours(case, train, args, source="fixed"),
        "keras": keras_fit(case, train, args),
        "keras_spe": keras_fit(case, train, args, k, jit_compile=False),
        "keras_spe_xla": keras_fit(case, train, args, k, jit_compile=True),
        "tf_function": tf_function(case, train, args),
        "tf_function_loop": tf_function(case, train, args, steps_per_call=k),
        "compute_limit_xla": ours(case, train, args, "fixed", steps_per_run=k, xla=True),
        "compute_limit_no_xla": ours(case, train, args, "fixed", steps_per_run=k),
        "limit": matmul_limit(needed_matmuls(case, n_in, n_classes), args),
    }


def time_rounds(runs, steps, rounds, warmup, multiple=1):
    """Times each ``run(steps)`` in interleaved rounds after a warm-up.

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

    for run in runs.values():
        run(rounded(warmup))
    per_round = rounded(max(1, steps // rounds))
    wall = {name: [] for name in runs}
    cpu = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            start_wall, start_cpu = time.perf_counter(), time.process_time()
            run(per_round)
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
    """
    speeds, cpu = timing["steps_per_s"], timing["cpu_ms_per_step"]
    result = {key: speeds["ours"] / speeds[name] for key, name in RATIOS.items()}
    result.update({f"cpu_{key}": cpu[name] / cpu["ours"] for key, name in RATIOS.items()})
    fractions = (
        ("feed_fraction", "ours_feed_dict", "ours_graph_input"),
        ("input_fraction", "ours", "compute_limit"),
    )
    for key, name, reference in fractions:
        result[key] = 1.0 - speeds[name] / speeds[reference]
        result[f"cpu_{key}"] = 1.0 - cpu[reference] / cpu[name]
    return result


def machine():
    """Returns the cores, CPU, TensorFlow/Keras versions and devices of this run."""
    cpu = platform.processor()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if "model name" in line]
        cpu = names[0] if names else cpu
    return {
        "cores": len(os.sched_getaffinity(0)),
        "cpu": cpu,
        "device": ", ".join(d.device_type for d in tf.config.list_physical_devices()),
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "python": platform.python_version(),
        "load_average": os.getloadavg(),
        "onednn_opts": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "default"),
    }


def cases(args):
    """Returns ``{model: [Case, ...]}`` for the flags' batch sizes."""
    return {
        "autoencoder": [
            Case("autoencoder", variant, args.batch_size) for variant in ("untied", "tied")
        ],
        "mlp": [Case("mlp", "625-625", args.mlp_batch_size)],
    }


def next_batch_ms(train, batch_size, repeats=200):
    """Returns the milliseconds one ``next_batch`` call takes (on a copy of ``train``)."""
    batches = dataclasses.replace(train, epoch=0, position=0)
    batches.next_batch(batch_size)
    start = time.perf_counter()
    for _ in range(repeats):
        batches.next_batch(batch_size)
    return 1e3 * (time.perf_counter() - start) / repeats


def time_case(case, train, args):
    """Times the contenders of ``case``; returns speeds, ratios and the feed cost."""
    timing = time_rounds(
        contenders(case, train, args),
        args.steps,
        args.rounds,
        args.warmup,
        multiple=args.steps_per_run,
    )
    best = {}
    for name, candidates in BEST_OF.items():
        best[name] = max(candidates, key=timing["steps_per_s"].get)
        for values in timing.values():
            values[name] = values[best[name]]
    return {
        **best,
        **timing,
        **ratios(timing),
        "next_batch_ms": next_batch_ms(train, case.batch_size),
    }


def table(results, models):
    """Returns the steps/s and ratios of ``models`` as a text table, a line per variant."""
    columns = " ".join(f"{n[:6]:>6}" for n in ("ours", *RATIO_NAMES))
    references = " ".join(f"{n[:6]:>6}" for n in RATIO_NAMES)
    title = f"{'steps/s, model/variant':26}{columns}"
    lines = [f"{title} | ours / {references} | CPU: {references} | CPU feed, input"]
    for model in models:
        for variant, v in results[model]["variants"].items():
            speeds = " ".join(f"{v['steps_per_s'][n]:6.1f}" for n in ("ours", *RATIO_NAMES))
            wall = " ".join(f"{v[key]:6.2f}" for key in RATIOS)
            cpu = " ".join(f"{v['cpu_' + key]:6.2f}" for key in RATIOS)
            lines.append(
                f"{model + '/' + variant:26}{speeds} |        {wall} |      {cpu} | "
                f"{v['cpu_feed_fraction']:6.1%} {v['cpu_input_fraction']:6.1%}"
            )
    return "\n".join(lines)


def check_flags(args):
    """Raises ZooError unless rounds, warm-up and steps fit together."""
    if args.rounds <= 0 or args.warmup < 0 or args.steps < args.rounds:
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
    flags.add_loop_flags(p, xla=True)
    p.add_argument(
        "--rounds", type=int, default=8, help="interleaved timing rounds (--quick: 2)"
    )
    p.add_argument(
        "--warmup",
        type=int,
        default=50,
        help="untimed steps per contender (--quick: 2)",
        check=flags.integer(0),
    )
    p.add_argument(
        "--inter-op", type=int, default=0, help="session inter-op threads (0: TF default)"
    )
    p.add_argument(
        "--intra-op", type=int, default=0, help="session intra-op threads (0: TF default)"
    )
    p.add_argument(
        "--json",
        default=None,
        check=flags.new_file,
        help="write the results to this JSON file instead of <run directory>/results.json",
    )
    return p


def main(argv=None):
    args = flags.parse_args(build_parser(), argv)
    if args.quick:
        args.rounds, args.warmup = QUICK["rounds"], QUICK["warmup"]
    check_flags(args)
    run = None if args.json else rundir.run_dir(args, "bench")
    data = flags.load_data(args, validation=0)
    train = data.train if data.train.num_examples else data.test
    results = {
        "machine": machine(),
        "settings": {
            "dataset": data.name,
            "split": "train" if train is data.train else "test",
            "examples": train.num_examples,
            **{
                flag: getattr(args, flag)
                for flag in (
                    "steps",
                    "rounds",
                    "warmup",
                    "inter_op",
                    "intra_op",
                    "xla",
                    "steps_per_run",
                )
            },
        },
    }
    for model, model_cases in cases(args).items():
        variants = {}
        for case in model_cases:
            print(f"{model} {case.variant} (batch {case.batch_size})...", flush=True)
            variants[case.variant] = time_case(case, train, args)
        results[model] = {
            "batch_size": model_cases[0].batch_size,
            **{key: min(v[key] for v in variants.values()) for key in RATIOS},
            "variants": variants,
        }
    results["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(table(results, cases(args)))
    if args.json:
        files.atomic_write(args.json, json.dumps(results, indent=2) + "\n")
    else:
        run.write_json("results.json", results)
        print(f"wrote {run.file('results.json')}")
    return 0


if __name__ == "__main__":
    flags.entry_point(main)
