"""The tf.layers row of the speed bench: our TF 1.15 layers vs tf_keras', in graph mode.

Two TF1 programs written once against ``tf.compat.v1.layers`` (:data:`PROGRAMS`),
each trained in a ``tf.Graph`` with a ``Session``, one step per ``session.run``, on
one batch held in the graph (28x28x1 images, fixed seed):

* ``dcgan``: a DCGAN step, the discriminator's Adam update then the generator's
  (generator: dense to 7x7x64, batch norm, two transposed convolutions, the first
  with batch norm; discriminator: two strided convolutions, the second with batch
  norm, a dense logit; built on real and on generated images, ``reuse=True``),
  batch 64, each update run after its batch-norm ``UPDATE_OPS``;
* ``cnn``: a small CNN classifier step (two convolutions with max pooling, a dense
  layer with an L2 ``kernel_regularizer``, dropout, a dense read-out; the loss adds
  ``get_regularization_loss()``), momentum SGD, batch ``--batch-size``.

Each program runs on two sides, a worker subprocess per side that holds every program
it runs (``python -m experiments.bench.tf1_layers --worker SIDE PROGRAM=BATCH ...``):
``ours``, ``tf.compat.v1.layers`` after ``zoo.compat.install()`` (:mod:`layers.tf1`);
``tf_keras``, TensorFlow's own legacy layers under ``TF_USE_LEGACY_KERAS=1``. The
parent times them in interleaved rounds (:func:`experiments.bench.speed.timed`):
each round asks each worker for the same steps, the fastest round is each side's
speed. ``ratio`` is ours / tf_keras in steps/s (goal: at least 1.0), ``cpu_ratio``
the same from the workers' CPU time per step. Each worker also counts its graph:
the ops one step runs (``step_ops``, those the train op needs), by op type and by
layer (the name scope of each layer), so a difference in speed can be traced to
the ops that make it; and the ops a step executes once grappler has rewritten the
graph (``executed_ops``, from a traced run's step statistics), which no load on the
machine changes.
"""

import collections
import functools
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import time
import types
import warnings

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
SIDE, NOISE = 28, 64
LEGACY = {"TF_USE_LEGACY_KERAS": "1"}
# side -> (its environment, the program's batch norm: None is TF 1.15's default, fused
# where it can be; False its other path)
SIDES = {
    "ours": ({}, None),
    "tf_keras": (LEGACY, None),
    "tf_keras_unfused": (LEGACY, False),
}
DCGAN_BATCH = 64


def dcgan(L, images, fused=None):
    """The DCGAN step's train op: D's Adam update, then G's (non-saturating losses);
    ``fused`` is each batch norm's."""
    import tensorflow as tf  # noqa: PLC0415  (in the worker, after its environment)

    v1 = tf.compat.v1
    batch = images.shape[0]

    def normalized(h):
        return L.batch_normalization(h, training=True, fused=fused)

    def generator(noise):
        with v1.variable_scope("generator"):
            h = L.dense(noise, 7 * 7 * 64, use_bias=False)
            h = tf.reshape(tf.nn.relu(normalized(h)), [batch, 7, 7, 64])
            h = L.conv2d_transpose(h, 32, 5, strides=2, padding="same", use_bias=False)
            h = tf.nn.relu(normalized(h))
            return L.conv2d_transpose(
                h, 1, 5, strides=2, padding="same", activation=tf.tanh
            )

    def discriminator(x, reuse=None):
        with v1.variable_scope("discriminator", reuse=reuse):
            h = tf.nn.leaky_relu(L.conv2d(x, 32, 5, strides=2, padding="same"), 0.2)
            h = L.conv2d(h, 64, 5, strides=2, padding="same", use_bias=False)
            h = tf.nn.leaky_relu(normalized(h), 0.2)
            return L.dense(L.flatten(h), 1)

    fake = generator(tf.random.normal([batch, NOISE]))
    real_logits, fake_logits = discriminator(images), discriminator(fake, reuse=True)

    def cross_entropy(logits, label):
        return tf.reduce_mean(
            tf.nn.sigmoid_cross_entropy_with_logits(
                labels=tf.fill(tf.shape(logits), label), logits=logits
            )
        )

    d_loss = cross_entropy(real_logits, 1.0) + cross_entropy(fake_logits, 0.0)
    g_loss = cross_entropy(fake_logits, 1.0)

    def update(loss, scope, after=()):
        variables = v1.trainable_variables(scope)
        updates = v1.get_collection(v1.GraphKeys.UPDATE_OPS, scope)
        with tf.control_dependencies([*updates, *after]):
            return v1.train.AdamOptimizer(2e-4, beta1=0.5).minimize(
                loss, var_list=variables
            )

    return update(g_loss, "generator", [update(d_loss, "discriminator")])


def cnn(L, images, fused=None):
    """The CNN step's train op: momentum SGD on cross entropy and weight decay
    (``fused`` unused: no batch norm)."""
    del fused
    import tensorflow as tf  # noqa: PLC0415  (in the worker, after its environment)

    v1 = tf.compat.v1
    labels = tf.constant(np.arange(images.shape[0]) % 10)
    h = L.conv2d(images, 32, 3, padding="same", activation=tf.nn.relu, name="conv1")
    h = L.max_pooling2d(h, 2, 2)
    h = L.conv2d(h, 64, 3, padding="same", activation=tf.nn.relu, name="conv2")
    h = L.max_pooling2d(h, 2, 2)
    h = L.dense(
        L.flatten(h),
        128,
        activation=tf.nn.relu,
        kernel_regularizer=lambda w: 1e-4 * tf.nn.l2_loss(w),
        name="hidden",
    )
    logits = L.dense(L.dropout(h, 0.5, training=True), 10, name="logits")
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    loss += v1.losses.get_regularization_loss()
    with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
        return v1.train.MomentumOptimizer(0.01, 0.9).minimize(loss)


PROGRAMS = {"dcgan": dcgan, "cnn": cnn}
# program -> its sides: the unfused one shows what batch norm's fused kernel is worth
PROGRAM_SIDES = {"dcgan": tuple(SIDES), "cnn": ("ours", "tf_keras")}


# ----------------------------------------------------------------------- the worker


def step_ops(train):
    """The ops one run of ``train`` executes: those it needs, inputs and control."""
    seen, pending = set(), [train]
    while pending:
        op = pending.pop()
        if op not in seen:
            seen.add(op)
            pending.extend(t.op for t in op.inputs)
            pending.extend(op.control_inputs)
    return seen


def layer_of(op):
    """The layer an op belongs to, forward or backward: its name scope up to the
    layer's name (``discriminator/conv2d_1``, ``conv1``), without ``gradients/``;
    an optimizer's update ops are its own (``Adam``)."""
    parts = op.name.split("/")[:-1]
    if parts and re.fullmatch(r"gradients(_\d+)?", parts[0]):
        parts = parts[1:]
    depth = 2 if parts and re.match(r"(generator|discriminator)", parts[0]) else 1
    return "/".join(parts[:depth])


def graph_counts(ops):
    """``{"step_ops", "by_type", "by_layer"}`` of a step's ops."""
    return {
        "step_ops": len(ops),
        "by_type": dict(collections.Counter(op.type for op in ops).most_common()),
        "by_layer": dict(collections.Counter(map(layer_of, ops)).most_common()),
    }


def executed_ops(session, train):
    """The ops one run of ``train`` executes after grappler's rewrites (constants
    folded, kernels fused), counted in a traced run's step statistics."""
    import tensorflow as tf  # noqa: PLC0415  (in the worker, after its environment)

    v1 = tf.compat.v1
    metadata = v1.RunMetadata()
    trace = v1.RunOptions(trace_level=v1.RunOptions.FULL_TRACE)
    session.run(train, options=trace, run_metadata=metadata)
    nodes = [n for d in metadata.step_stats.dev_stats for n in d.node_stats]
    return sum(n.node_name != "_SOURCE" for n in nodes)


def worker(side, programs):
    """Builds each of ``programs`` (``{program: batch}``) on ``side``'s layers, each in
    a graph and session of its own; then answers lines of stdin.

    It prints ``{program: its graph's counts}`` as one JSON line; then for each line
    ``PROGRAM N`` runs N steps of it and prints ``{"wall": seconds, "cpu": seconds}``;
    it ends at EOF.
    """
    import tensorflow as tf  # noqa: PLC0415  (after the side's environment)

    warnings.simplefilter("ignore")  # tf_keras: "`tf.layers.dense` is deprecated"
    tf.get_logger().setLevel("ERROR")
    if side == "ours":
        import zoo.compat  # noqa: PLC0415

        zoo.compat.install()
    v1 = tf.compat.v1
    steps, counts = {}, {}
    for program, batch in programs.items():
        images = np.random.default_rng(0).random((batch, SIDE, SIDE, 1), np.float32)
        graph = tf.Graph()
        with graph.as_default():
            v1.set_random_seed(0)
            train = PROGRAMS[program](
                v1.layers, tf.constant(2 * images - 1), SIDES[side][1]
            )
            init = v1.global_variables_initializer()
        graph.finalize()
        session = v1.Session(graph=graph)
        session.run(init)
        steps[program] = session.make_callable(train)
        counts[program] = {
            "layers": v1.layers.dense.__module__,
            **graph_counts(step_ops(train)),
            "executed_ops": executed_ops(session, train),
        }
    print(json.dumps(counts))
    sys.stdout.flush()
    for line in sys.stdin:
        program, n = line.split()
        step = steps[program]
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(int(n)):
            step()
        wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
        print(json.dumps({"wall": wall, "cpu": cpu}), flush=True)


# ----------------------------------------------------------------------- the parent


class Worker:
    """A worker subprocess of one side, holding its programs (``{program: batch}``);
    ``run(program, steps)`` times steps there.

    It starts building at once; :meth:`ready` waits for its graphs' counts.
    """

    def __init__(self, side, programs):
        pairs = [f"{program}={batch}" for program, batch in programs.items()]
        command = [sys.executable, "-m", __name__, "--worker", side, *pairs]
        env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        self.process = subprocess.Popen(
            command,
            cwd=REPO,
            env={**env, **SIDES[side][0]},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.name = side
        self.counts = None
        self.cpu_per_step = {program: [] for program in programs}

    def ready(self):
        """Waits until the worker has built its programs; notes their graphs' counts."""
        self.counts = self._answer()

    def _answer(self):
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(
                f"{self.name}: the worker ended with code {self.process.wait()}; its "
                "error is above"
            )
        return json.loads(line)

    def run(self, program, steps):
        """Runs ``steps`` steps of ``program``; notes its CPU time per step."""
        self.process.stdin.write(f"{program} {steps}\n")
        self.process.stdin.flush()
        answer = self._answer()
        self.cpu_per_step[program].append(1e3 * answer["cpu"] / max(steps, 1))

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def bench(train, args, timed, ratios):
    """Times both sides of each program; returns ``{"tf1_layers": {...}}`` for the JSON.

    One worker per side holds every program that side runs (:data:`PROGRAM_SIDES`).

    Args:
        train: unused (the programs hold a batch of their own).
        args: the speed bench's flags (``--batch-size``, ``--steps``, ``--rounds``,
            ``--warmup``).
        timed: :func:`experiments.bench.speed.timed`.
        ratios: unused (this row's ratios are its own).
    """
    del train, ratios
    one_step = types.SimpleNamespace(
        rounds=args.rounds, warmup=args.warmup, steps_per_run=1
    )
    batches = {"dcgan": DCGAN_BATCH, "cnn": args.batch_size}
    plan = {side: {} for side in SIDES}
    for program, sides in PROGRAM_SIDES.items():
        for side in sides:
            plan[side][program] = batches[program]
    result = {}
    print("tf1_layers: building...", flush=True)
    workers = {side: Worker(side, programs) for side, programs in plan.items()}
    try:
        for w in workers.values():
            w.ready()
        for program, sides in PROGRAM_SIDES.items():
            print(f"tf1_layers {program}...", flush=True)
            runs = {side: functools.partial(workers[side].run, program) for side in sides}
            steps = max(args.rounds, args.steps // 8)
            _, timing = timed(runs, {}, steps, one_step)
            timed_workers = {side: workers[side] for side in sides}
            result[program] = program_result(
                program, batches[program], timing, timed_workers, args.rounds
            )
    finally:
        for w in workers.values():
            w.close()
    return {"tf1_layers": result}


def program_result(program, batch, timing, workers, rounds):
    """One program's entry of the JSON, from its timing and its sides' workers."""
    speeds = timing["steps_per_s"]
    cpu = {
        s: statistics.median(w.cpu_per_step[program][-rounds:]) for s, w in workers.items()
    }
    counts = {side: w.counts[program] for side, w in workers.items()}
    result = {
        "batch_size": batch,
        "steps_per_s": speeds,
        "median_steps_per_s": timing["median_steps_per_s"],
        "cpu_ms_per_step": cpu,
        **{
            f"ratio{side.removeprefix('tf_keras')}": speeds["ours"] / speeds[side]
            for side in workers
            if side != "ours"
        },
        "cpu_ratio": cpu["tf_keras"] / cpu["ours"],
        "graph": counts,
    }
    print(
        f"tf1_layers {program}: ratio {result['ratio']:.2f}, step ops "
        f"{counts['ours']['step_ops']} ours vs {counts['tf_keras']['step_ops']} tf_keras, "
        f"executed {counts['ours']['executed_ops']} vs "
        f"{counts['tf_keras']['executed_ops']}",
        flush=True,
    )
    return result


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        pairs = (pair.split("=") for pair in sys.argv[3:])
        worker(sys.argv[2], {program: int(batch) for program, batch in pairs})
