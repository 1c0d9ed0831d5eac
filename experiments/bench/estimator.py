"""Speed of ``tf.estimator`` under :func:`zoo.compat.install` against a plain session
loop on the same graph: the zoo's MLP (784-625-625-10, Adagrad 0.1, batch 100) from a
custom model_fn, its batches from the model_fn's ``tf.data`` input_fn (of the first
``EXAMPLES`` training images: as ``from_tensor_slices`` arrays they are constants of
every graph ``train()`` builds, and of its ``graph.pbtxt``).

* ``session_loop``: the graph ``Estimator.train`` builds (the same input_fn and
  model_fn), run one step per ``session.run`` in a plain ``tf.compat.v1.Session``;
* ``session_loop_loss``: the same fetching the loss too (``run([train_op, loss])``,
  as TF1 loops do and as the estimator's ``NanTensorHook`` does every step: the loss's
  value, its weight decay's ``L2Loss`` terms among it, is then computed, where the
  train op alone needs only its gradients);
* ``estimator``: ``Estimator.train``, one step per run in its
  ``MonitoredTrainingSession`` with its hooks (step counter, logging, summaries,
  NaN check; no checkpoint falls inside the timed steps);
* ``tpu_estimator``: ``TPUEstimator`` with ``iterations_per_loop=K``
  (``--steps-per-run``) and our opt-in ``loop_on_cpu=True``, K steps per run
  through :func:`zoo.training.repeat_updates`.

A train() call builds its graph and a new session first, whose first runs are slower
(about 50 steps of 5 ms where the session loop's take 4.2 on the Xeon of
docs/benchmark.md: a new session's kernels and input pipeline warming up, paid once
per call); each contender is timed at its steady pace, as the session loops are after
their warm-up: a train() call from the end of its ``--warmup``-th step to the end of its
last (its set-up and warm-up reported apart as ``estimator_setup_s``), in interleaved
rounds, fastest round reported. Goal:
``ratio_estimator`` (estimator / session_loop) >= 0.95; ``ratio_estimator_loss``
(estimator / session_loop_loss) leaves out what fetching the loss costs.

A row of ``make bench`` (:data:`experiments.bench.speed.OWN_BENCHES`), with its
flags (``--steps``, ``--rounds``, ``--warmup``, ``--steps-per-run``); its JSON key
is ``estimator``.
"""

import statistics
import tempfile
import time

import numpy as np
import tensorflow as tf

import zoo
import zoo.compat

v1 = tf.compat.v1
BATCH_SIZE = 100
EXAMPLES = 1000  # the input_fn's arrays become graph constants, written at each train()


def model_fn(features, labels, mode, params):
    """The zoo's MLP classifier trained with Adagrad 0.1 (a TPUEstimatorSpec when
    ``params["tpu"]``)."""
    model = zoo.mlp_classifier(features, labels)
    train_op = v1.train.AdagradOptimizer(0.1).minimize(
        model.loss, v1.train.get_global_step()
    )
    estimator = v1.estimator
    spec = estimator.tpu.TPUEstimatorSpec if params.get("tpu") else estimator.EstimatorSpec
    return spec(mode, loss=model.loss, train_op=train_op)


def input_fn(images, labels):
    """An input_fn of endless batches of ``BATCH_SIZE``, in order."""

    def fn():
        dataset = tf.data.Dataset.from_tensor_slices((images, labels)).repeat()
        return dataset.batch(BATCH_SIZE, drop_remainder=True).prefetch(2)

    return fn


class _Clock(v1.train.SessionRunHook):
    """Times a train() call from the end of its ``untimed``-th run to the end of its
    last: ``first`` and ``last`` hold (wall, this process's CPU) seconds, ``runs`` the
    runs between them."""

    def __init__(self, untimed):
        self._untimed = untimed

    def begin(self):
        self.runs, self.first, self.last = -self._untimed, None, None

    def after_run(self, run_context, run_values):
        self.runs += 1
        self.last = time.perf_counter(), time.process_time()
        if self.runs == 0:
            self.first = self.last


def session_loop(images, labels, fetch_loss=False):
    """``run(steps) -> (wall, CPU) seconds``: the estimator's graph in a plain session
    loop, the train op fetched (and the loss: ``fetch_loss``)."""
    graph = tf.Graph()
    with graph.as_default():
        v1.train.get_or_create_global_step()
        iterator = v1.data.make_one_shot_iterator(input_fn(images, labels)())
        features, targets = iterator.get_next()
        spec = model_fn(features, targets, "train", {})
        fetches = [spec.train_op, spec.loss] if fetch_loss else spec.train_op
        session = v1.Session(graph=graph)
        session.run(v1.global_variables_initializer())

    def run(steps):
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(steps):
            session.run(fetches)
        return time.perf_counter() - wall, time.process_time() - cpu

    return run


def estimator_run(images, labels, steps_per_run, setups, warmup):
    """``run(steps) -> (wall, CPU) seconds`` of Estimator.train (TPUEstimator with
    ``iterations_per_loop=steps_per_run`` when above 1), each call's first ``warmup``
    steps (at least one run) untimed; appends each call's set-up and warm-up time to
    ``setups``."""
    model_dir = tempfile.mkdtemp(prefix="bench_estimator_")
    settings = {"model_dir": model_dir, "save_checkpoints_secs": 3600}
    if steps_per_run > 1:
        tpu = v1.estimator.tpu
        config = tpu.RunConfig(tpu_config=tpu.TPUConfig(steps_per_run), **settings)
        estimator = tpu.TPUEstimator(
            model_fn, config=config, params={"tpu": True}, use_tpu=False,
            train_batch_size=BATCH_SIZE, loop_on_cpu=True,  # ours: K steps per run
        )  # fmt: skip
    else:
        config = v1.estimator.RunConfig(**settings)
        estimator = v1.estimator.Estimator(model_fn, config=config)
    train_fn = input_fn(images, labels)
    untimed = max(1, -(-warmup // steps_per_run))

    def run(steps):
        clock = _Clock(untimed)
        called = time.perf_counter()
        estimator.train(train_fn, steps=steps + untimed * steps_per_run, hooks=[clock])
        setups.append(clock.first[0] - called)
        share = steps / (clock.runs * steps_per_run)
        return tuple((b - a) * share for a, b in zip(clock.first, clock.last, strict=True))

    return run


def bench(train, args, timed=None, ratios=None):
    """Times the four contenders, each first in turn, in interleaved rounds; returns
    ``{"estimator": {...}}`` for the JSON: best rounds' steps/s and their ratios, and
    the median round's CPU milliseconds a step (``cpu_ratio_*``: the loop's over the
    estimator's), the steadier figures on a busy machine.

    Args:
        train: the training :class:`zoo.data.DataSet`.
        args: ``steps``, ``rounds``, ``warmup``, ``steps_per_run``.
        timed, ratios: unused (the speed bench's own timing calls run(steps) for
            its wall time, which would count train()'s set-up).
    """
    del timed, ratios
    images = np.asarray(train.images[:EXAMPLES], np.float32)
    labels = np.asarray(train.labels[:EXAMPLES], np.float32)
    k = args.steps_per_run
    print("estimator...", flush=True)
    setups = []
    with zoo.compat.installed():
        runs = {
            "session_loop": session_loop(images, labels),
            "session_loop_loss": session_loop(images, labels, fetch_loss=True),
            "estimator": estimator_run(images, labels, 1, setups, args.warmup),
            "tpu_estimator": estimator_run(images, labels, k, setups, args.warmup),
        }
        per_round = max(k, args.steps // args.rounds // k * k)
        for run in runs.values():
            run(max(k, args.warmup // k * k))
        speeds, cpu = {name: [] for name in runs}, {name: [] for name in runs}
        names = list(runs)
        for index in range(args.rounds):
            for name in names[index % len(names) :] + names[: index % len(names)]:
                wall, cpu_s = runs[name](per_round)
                speeds[name].append(per_round / wall)
                cpu[name].append(1e3 * cpu_s / per_round)
    best = {name: max(values) for name, values in speeds.items()}
    cpu_ms = {name: statistics.median(values) for name, values in cpu.items()}
    result = {
        "batch_size": BATCH_SIZE,
        "steps_per_run": k,
        "steps_per_s": best,
        "median_steps_per_s": {n: statistics.median(v) for n, v in speeds.items()},
        "cpu_ms_per_step": cpu_ms,
        "cpu_ratio_estimator": cpu_ms["session_loop"] / cpu_ms["estimator"],
        "cpu_ratio_estimator_loss": cpu_ms["session_loop_loss"] / cpu_ms["estimator"],
        "ratio_estimator": best["estimator"] / best["session_loop"],
        "ratio_estimator_loss": best["estimator"] / best["session_loop_loss"],
        "ratio_tpu_estimator": best["tpu_estimator"] / best["session_loop"],
        "ratio_tpu_to_estimator": best["tpu_estimator"] / best["estimator"],
        "estimator_setup_s": statistics.median(setups),
    }
    print(
        f"estimator: {result['ratio_estimator']:.3f} of the session loop (one step per "
        f"run; {result['ratio_estimator_loss']:.3f} of it fetching the loss too; CPU "
        f"{result['cpu_ratio_estimator']:.3f}, {result['cpu_ratio_estimator_loss']:.3f}), "
        f"TPUEstimator {result['ratio_tpu_estimator']:.2f} ({k} per run)",
        flush=True,
    )
    return {"estimator": result}
