"""Gradients as data: the one-run claim, the numpy round-trip cost, ps workers.

Three measurements, written to ``bench.json`` in the run directory:

* ``one_run``: every gradient of the Deep MNIST conv net fetched by ONE
  ``session.run`` (:meth:`zoo.training.gradients.GradientStep.compute`) against the
  seed's loop that evaluates each gradient tensor on its own. Counter variables
  incremented where the forward pass reads the input and where the backward
  pass leaves the loss count the passes; ``RunMetadata`` step stats count the ops
  executed. Times are medians over ``--repeats``.
* ``step_overhead``: ms per training step of compute -> numpy -> apply through
  placeholders against the fused ``minimize`` step, same model and batches.
* ``parameter_server``: examples/s of asynchronous training with 1 and with 2
  workers (``python -m experiments.ps``, the MLP, run as a command), per worker and in
  total.

Usage::

    python -m experiments.bench.gradients --data-dir DIR --out runs/bench_gradients/a
    python -m experiments.bench.gradients --quick --ps-steps 0 --data-dir DIR
"""

import statistics
import time

from experiments.harness import (
    classifiers,
    cluster,
    datasets,
    entry,
    flags,
    rundir,
    startup,
)


def build_parser():
    """Returns the benchmark's argument parser."""
    p = flags.parser(
        "Benchmark one-run gradients, the numpy round trip and 1 vs 2 ps workers.",
        steps=30,
        batch_size=50,
        quick_steps=3,
        resumable=False,
    )
    p.add_argument(
        "--model",
        choices=classifiers.MODELS,
        default="conv",
        help="network for the one-run and overhead measurements",
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="timed repetitions of each gradient fetch (median reported)",
    )
    flags.add_count_flag(
        p, "--ps-steps", 1000, "global steps of each parameter-server run; 0 skips them"
    )
    p.add_argument(
        "--ps-workers",
        default="1,2",
        check=flags.int_list(1),
        help="worker counts of the parameter-server runs, comma separated",
    )
    return p


def build(model, x, y):
    """Builds ``model`` (the conv net with dropout) with pass counters.

    Two non-trainable int64 counters start at 0: ``forward`` gains 1 on each run
    that reads the input (every forward pass does), ``backward`` on each run that
    takes the gradient of the loss (every backward pass starts there).

    Returns:
        ``(loss, (forward, backward))``.
    """
    import tensorflow as tf

    v1 = tf.compat.v1
    forward, backward = (
        v1.get_variable(
            name, [], tf.int64, initializer=v1.zeros_initializer(), trainable=False
        )
        for name in ("forward_passes", "backward_passes")
    )
    with tf.control_dependencies([forward.assign_add(1)]):
        x = tf.identity(x)

    @tf.custom_gradient
    def count_backward(value):
        def grad(upstream):
            with tf.control_dependencies([backward.assign_add(1)]):
                return tf.identity(upstream)

        return tf.identity(value), grad

    loss = classifiers.build(model, x, y, keep_prob=0.5).loss
    return count_backward(loss), (forward, backward)


def measure_fetch(sess, fetch_all, counters, repeats):
    """Runs ``fetch_all`` ``repeats`` times; returns passes and ops of one call and ms."""
    import tensorflow as tf

    v1 = tf.compat.v1
    sess.run([c.initializer for c in counters])
    options = v1.RunOptions(trace_level=v1.RunOptions.FULL_TRACE)
    ops = 0

    def traced_run(fetches, feed):
        nonlocal ops
        metadata = v1.RunMetadata()
        out = sess.run(fetches, feed, options=options, run_metadata=metadata)
        ops += sum(len(device.node_stats) for device in metadata.step_stats.dev_stats)
        return out

    fetch_all(traced_run)
    forward, backward = sess.run(counters)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fetch_all(sess.run)
        times.append(1000 * (time.perf_counter() - start))
    return {
        "forward_passes": int(forward),
        "backward_passes": int(backward),
        "ops_executed": ops,
        "ms": statistics.median(times),
    }


def one_run_and_overhead(args, data):
    """Returns the ``one_run`` and ``step_overhead`` sections."""
    import tensorflow as tf

    from zoo.training.gradients import GradientStep

    v1 = tf.compat.v1
    with tf.Graph().as_default():
        v1.set_random_seed(args.seed)
        x = v1.placeholder(tf.float32, [None, data.train.images.shape[1]], name="x")
        y = v1.placeholder(tf.float32, [None, data.train.labels.shape[1]], name="y")
        loss, counters = build(args.model, x, y)
        step = GradientStep(loss, v1.train.AdamOptimizer(1e-4))
        fused = v1.train.AdamOptimizer(1e-4).minimize(loss)
        images, labels = data.train.next_batch(args.batch_size)
        feed = {x: images, y: labels}
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(step.gradients, feed)  # warm-up
            one = measure_fetch(
                sess, lambda run: run(step.gradients, feed), counters, args.repeats
            )
            per_tensor = measure_fetch(
                sess,
                lambda run: [run(g, feed) for g in step.gradients],
                counters,
                args.repeats,
            )
            numpy_ms, fused_ms = [], []
            for _ in range(args.steps):
                images, labels = data.train.next_batch(args.batch_size)
                feed = {x: images, y: labels}
                start = time.perf_counter()
                step.apply(sess, step.compute(sess, feed))
                middle = time.perf_counter()
                sess.run(fused, feed)
                numpy_ms.append(1000 * (middle - start))
                fused_ms.append(1000 * (time.perf_counter() - middle))
    numpy_step, fused_step = statistics.median(numpy_ms), statistics.median(fused_ms)
    return {
        "gradients": len(step.gradients),
        "batch_size": args.batch_size,
        "all_in_one_run": one,
        "per_tensor_eval_loop": per_tensor,
        "speedup": per_tensor["ms"] / one["ms"],
    }, {
        "steps": args.steps,
        "compute_numpy_apply_ms": numpy_step,
        "fused_minimize_ms": fused_step,
        "overhead_ms": numpy_step - fused_step,
        "overhead_ratio": numpy_step / fused_step,
    }


def parameter_server(args, run):
    """Runs ``python -m experiments.ps`` per worker count; returns their speeds.

    Raises:
        ZooError: a run that did not finish (its own error is on stderr above).
    """
    results = {}
    for workers in flags.integers(args.ps_workers):
        argv = [
            "--workers", str(workers), "--steps", str(args.ps_steps), "--overwrite",
            *flags.argv_of(args, ("batch_size", "seed", "dataset", "data_dir")),
        ]  # fmt: skip
        out = run.file(f"ps-{workers}")
        figures = cluster.run_launcher("experiments.ps", out, argv)
        per_worker = figures["examples_per_second_per_worker"]
        results[str(workers)] = {
            "examples_per_second_per_worker": per_worker,
            "examples_per_second_total": sum(per_worker),
            "test_accuracy": figures["test_accuracy"],
            "global_steps": figures["global_steps"],
        }
    return results


def main(argv=None):
    """Runs the three measurements and writes ``bench.json``."""
    args = flags.parse_args(build_parser(), argv)
    startup.import_tensorflow()
    run = rundir.run_dir(args, "bench_gradients")
    data = datasets.load(args, validation=0)
    one_run, overhead = one_run_and_overhead(args, data)
    results = {"model": args.model, "one_run": one_run, "step_overhead": overhead}
    if args.ps_steps:
        results["parameter_server"] = parameter_server(args, run)
    run.write_results(results, "bench.json")
    return 0


if __name__ == "__main__":
    entry.entry_point(main)
