"""Benchmark: copying a network's state in memory vs through numpy vs a checkpoint.

For the MLP (784-625-625-10) and a 10x wider one (784-6250-6250-10), built under
``src`` and snapshotted by :func:`zoo.frozen_copy`, measures the median time of

* ``sync``: the snapshot's sync op, snapshot built with ``use_resource=False``
  (ref variables overwritten in their own buffers);
* ``sync_aliasing``: the same with resource variables (the default), whose assign
  aliases the source and leaves the copy to the source's next write;
* ``numpy_round_trip``: fetch every variable to numpy, then one assign per
  variable (the ``get_weights`` / ``assign`` pattern);
* ``checkpoint``: ``Saver.save`` to local disk + :func:`zoo.sharing.restore.restore_scope`;
* ``memcpy``: ``numpy.copyto`` of the same bytes, the floor for any copy, and
  ``memcpy_between_steps``: the same between numpy stand-ins of the optimizer step
  (the caches as the syncs find them);

and writes them with ``sync_vs_checkpoint_speedup`` (checkpoint / sync) and
``sync_vs_memcpy_ratio`` (sync / memcpy) per network as JSON. Both syncs are timed
with an optimizer step after each, minus the step alone, so any deferred copy
counts. Ops run through ``Session.make_callable``. Timings depend on the machine
and its load: they are results, never test assertions.

Usage::

    make bench-state ARGS="--json runs/bench_state.json"
    python -m experiments.bench.state --quick --json /tmp/bench_state.json
"""

import math
import os
import statistics
import tempfile
import time

import numpy as np

from experiments.harness import entry, flags, rundir, startup
from zoo.data import N_CLASSES, N_PIXELS

NETWORKS = {"mlp_784-625-625-10": 625, "wide_784-6250-6250-10": 6250}
QUICK_SHRINK = 10
MIN_BATCH_SECONDS = 0.05


def median_seconds(action, repeats, baseline=None):
    """Median seconds per call of ``action``, minus those of ``baseline`` if given.

    After one warm-up call of each, calls are timed in batches of at least
    ``MIN_BATCH_SECONDS`` so that sub-millisecond actions are not lost in timer and
    scheduler noise. With ``baseline``, each batch of ``action`` follows a batch of
    ``baseline`` and the median is taken over the per-call differences.
    """
    action()
    if baseline:
        baseline()
    start = time.perf_counter()
    action()
    batch = max(1, math.ceil(MIN_BATCH_SECONDS / (time.perf_counter() - start)))

    def per_call(fn):
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        return (time.perf_counter() - start) / batch

    samples = []
    for _ in range(repeats):
        base = per_call(baseline) if baseline else 0.0
        samples.append(per_call(action) - base)
    return max(statistics.median(samples), 1e-9)


def bench_network(hidden, repeats, checkpoint_dir):
    """Times the ways to copy ``src`` into a snapshot for one network width.

    Args:
        hidden: width of both hidden layers.
        repeats: timed batches per method (after one warm-up).
        checkpoint_dir: local directory for the checkpoint files.

    Returns:
        A dict of parameter count, bytes, median seconds per method and ratios.
    """
    import tensorflow as tf

    from zoo.models import mlp_classifier
    from zoo.sharing.restore import restore_scope
    from zoo.sharing.state import frozen_copy

    v1 = tf.compat.v1
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, N_PIXELS])
        y = v1.placeholder(tf.float32, [None, N_CLASSES])

        def builder(scope):
            return mlp_classifier(x, y, scope=scope, hidden=(hidden, hidden))

        builder("src")
        # dst: ref variables, overwritten in place; dst_aliasing: resource variables.
        snapshot = frozen_copy(builder, "src", "dst", use_resource=False)
        aliasing = frozen_copy(builder, "src", "dst_aliasing")
        src_vars = v1.trainable_variables("src/")  # in the order of the snapshots'
        dst_vars = list(snapshot.variables)
        feeds = [v1.placeholder(v.dtype.base_dtype, v.shape) for v in dst_vars]
        assigns = [
            v.assign(f, read_value=False) for v, f in zip(dst_vars, feeds, strict=True)
        ]
        saver = v1.train.Saver(var_list=src_vars, write_version=v1.train.SaverDef.V2)
        prefix = os.path.join(checkpoint_dir, f"bench-{hidden}")
        # A resource-variable assign aliases the source buffer; the copy happens
        # when the source is next written (copy on write), i.e. in the next
        # optimizer step. So every sync is timed together with an optimizer step
        # (zero gradients: values unchanged), minus that step alone.
        zero_step = v1.train.GradientDescentOptimizer(1.0).apply_gradients(
            [(tf.zeros_like(v), v) for v in src_vars]
        )
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            saver.save(sess, prefix, write_meta_graph=False, write_state=False)
            restore = sess.make_callable(restore_scope(prefix, "src", "dst").op)
            step = sess.make_callable(zero_step)

            def numpy_round_trip():
                for assign, feed, value in zip(
                    assigns, feeds, sess.run(src_vars), strict=True
                ):
                    sess.run(assign, {feed: value})

            def checkpoint():
                saver.save(sess, prefix, write_meta_graph=False, write_state=False)
                restore()

            def then_step(op):
                sync = sess.make_callable(op)
                return lambda: (sync(), step())

            seconds = {
                "sync_op_alone": median_seconds(
                    sess.make_callable(snapshot.sync_op), repeats
                ),
                "sync": median_seconds(then_step(snapshot.sync_op), repeats, step),
                "sync_aliasing": median_seconds(then_step(aliasing.sync_op), repeats, step),
                "numpy_round_trip": median_seconds(numpy_round_trip, repeats),
                "checkpoint": median_seconds(checkpoint, repeats),
            }
            sources = sess.run(src_vars)
            sess.run([snapshot.sync_op, aliasing.sync_op])
            exact = all(
                np.array_equal(a, b)
                for copies in sess.run([dst_vars, list(aliasing.variables)])
                for a, b in zip(sources, copies, strict=True)
            )
    targets = [np.empty_like(a) for a in sources]

    def memcpy():
        for target, source in zip(targets, sources, strict=True):
            np.copyto(target, source)

    def numpy_step():  # what the zero-gradient step does to the caches
        for source in sources:
            source -= np.zeros_like(source)

    seconds["memcpy"] = median_seconds(memcpy, repeats)
    seconds["memcpy_between_steps"] = median_seconds(
        lambda: (memcpy(), numpy_step()), repeats, numpy_step
    )
    n_bytes = sum(a.nbytes for a in sources)
    return {
        "hidden": hidden,
        "parameters": sum(a.size for a in sources),
        "bytes": n_bytes,
        "variables": len(sources),
        "sync_copies_exactly": exact,
        "median_seconds": seconds,
        "sync_gb_per_s": n_bytes / seconds["sync"] / 1e9,
        "sync_vs_checkpoint_speedup": seconds["checkpoint"] / seconds["sync"],
        "sync_vs_numpy_speedup": seconds["numpy_round_trip"] / seconds["sync"],
        "sync_vs_memcpy_ratio": seconds["sync"] / seconds["memcpy"],
        "sync_aliasing_vs_memcpy_ratio": seconds["sync_aliasing"] / seconds["memcpy"],
        "sync_vs_memcpy_between_steps_ratio": (
            seconds["sync"] / seconds["memcpy_between_steps"]
        ),
    }


def build_parser():
    """Returns the benchmark's argument parser (no shared flag: it loads no data)."""
    p = flags.bare_parser(
        "Time copying network state: grouped assign op vs numpy round trip "
        "vs checkpoint save+restore vs raw memcpy, on the MLP and a 10x wider one."
    )
    flags.add_json_flag(p)
    p.add_argument("--repeats", type=int, default=20, help="timed runs per method")
    p.add_argument(
        "--checkpoint-dir",
        default=None,
        check=flags.directory,
        help="local directory for the checkpoint files (default a temporary one)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"hidden widths / {QUICK_SHRINK} and 3 repeats: checks the pipeline, for CI",
    )
    return p


def main(argv=None):
    """Runs the benchmark; see ``--help``."""
    args = flags.parse_args(build_parser(), argv)
    startup.import_tensorflow()
    run = None if args.json else rundir.run_dir(args, "bench_state")
    repeats = 3 if args.quick else args.repeats
    shrink = QUICK_SHRINK if args.quick else 1
    with tempfile.TemporaryDirectory(dir=args.checkpoint_dir) as checkpoint_dir:
        networks = {
            name: bench_network(hidden // shrink, repeats, checkpoint_dir)
            for name, hidden in NETWORKS.items()
        }
    results = {"quick": args.quick, "repeats": repeats, "networks": networks}
    path = rundir.write_bench_results(run, results, args.json)
    for name, net in networks.items():
        print(
            f"{name}: sync {net['median_seconds']['sync'] * 1e3:.3f} ms, "
            f"{net['sync_vs_checkpoint_speedup']:.0f}x faster than a checkpoint, "
            f"{net['sync_vs_memcpy_ratio']:.2f}x memcpy"
        )
    print(f"results in {path}")


if __name__ == "__main__":
    entry.entry_point(main)
