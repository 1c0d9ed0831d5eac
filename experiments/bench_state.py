"""Benchmark: copying a network's state in memory vs through numpy vs a checkpoint.

For the MLP (784-625-625-10) and a 10x wider one (784-6250-6250-10), built under
``src`` and ``dst``, measures the median time of

* ``sync``: one ``session.run`` of :func:`zoo.state.copy_scope`'s grouped op;
* ``numpy_round_trip``: fetch every variable to numpy, then one assign per
  variable (the ``get_weights`` / ``assign`` pattern);
* ``checkpoint``: ``Saver.save`` to local disk + :func:`zoo.state.restore_scope`;
* ``memcpy``: ``numpy.copyto`` of the same bytes, the floor for any copy;

and writes them with ``sync_vs_checkpoint_speedup`` (checkpoint / sync) and
``sync_vs_memcpy_ratio`` (sync / memcpy) per network as JSON. Timings depend on
the machine and its load: they are results, never test assertions.

Usage::

    make bench-state ARGS="--json runs/bench_state.json"
    python -m experiments.bench_state --quick --json /tmp/bench_state.json
"""

import argparse
import os
import platform
import statistics
import tempfile
import time

import numpy as np
import tensorflow as tf

from experiments import runner
from layers.errors import ZooError
from zoo.models import mlp_classifier
from zoo.state import copy_scope, restore_scope

v1 = tf.compat.v1
NETWORKS = {"mlp_784-625-625-10": 625, "wide_784-6250-6250-10": 6250}
QUICK_SHRINK = 10


def median_seconds(action, repeats):
    """Runs ``action`` once to warm up, then ``repeats`` times; returns the median."""
    action()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_network(hidden, repeats, checkpoint_dir):
    """Times the four ways to copy ``src`` into ``dst`` for one network width.

    Args:
        hidden: width of both hidden layers.
        repeats: timed repetitions per method (after one warm-up).
        checkpoint_dir: local directory for the checkpoint files.

    Returns:
        A dict of parameter count, bytes, median seconds per method and ratios.
    """
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 784])
        y = v1.placeholder(tf.float32, [None, 10])
        for scope in ("src", "dst"):
            mlp_classifier(x, y, scope=scope, hidden=(hidden, hidden))
        sync = copy_scope("src", "dst")
        src_vars = [src for src, _ in sync.pairs]
        dst_vars = [dst for _, dst in sync.pairs]
        feeds = [v1.placeholder(v.dtype.base_dtype, v.shape) for v in dst_vars]
        assigns = [
            v.assign(f, read_value=False) for v, f in zip(dst_vars, feeds, strict=True)
        ]
        saver = v1.train.Saver(var_list=src_vars, write_version=v1.train.SaverDef.V2)
        prefix = os.path.join(checkpoint_dir, f"bench-{hidden}")
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            saver.save(sess, prefix, write_meta_graph=False, write_state=False)
            restore = restore_scope(prefix, "src", "dst")

            def numpy_round_trip():
                for assign, feed, value in zip(
                    assigns, feeds, sess.run(src_vars), strict=True
                ):
                    sess.run(assign, {feed: value})

            def checkpoint():
                saver.save(sess, prefix, write_meta_graph=False, write_state=False)
                sess.run(restore.op)

            # A resource-variable assign aliases the source buffer; the copy happens
            # when the source is next written (copy on write), i.e. in the next
            # optimizer step. So the sync is timed together with an optimizer step
            # (zero gradients: values unchanged), minus that step alone.
            step = v1.train.GradientDescentOptimizer(1.0).apply_gradients(
                [(tf.zeros_like(v), v) for v in src_vars]
            )

            def sync_then_step():
                sess.run(sync.op)
                sess.run(step)

            step_alone = median_seconds(lambda: sess.run(step), repeats)
            seconds = {
                "sync_op_alone": median_seconds(lambda: sess.run(sync.op), repeats),
                "sync": max(median_seconds(sync_then_step, repeats) - step_alone, 1e-9),
                "numpy_round_trip": median_seconds(numpy_round_trip, repeats),
                "checkpoint": median_seconds(checkpoint, repeats),
            }
            sources = sess.run(src_vars)
            sess.run(sync.op)
            exact = all(
                np.array_equal(a, b)
                for a, b in zip(sources, sess.run(dst_vars), strict=True)
            )
    targets = [np.empty_like(a) for a in sources]

    def memcpy():
        for target, source in zip(targets, sources, strict=True):
            np.copyto(target, source)

    seconds["memcpy"] = median_seconds(memcpy, repeats)
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
    }


def main(argv=None):
    p = argparse.ArgumentParser(
        description="Time copying network state: grouped assign op vs numpy round trip "
        "vs checkpoint save+restore vs raw memcpy, on the MLP and a 10x wider one.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument(
        "--json",
        default=None,
        help="output file (default runs/bench_state/<timestamp>/results.json)",
    )
    p.add_argument("--repeats", type=int, default=20, help="timed runs per method")
    p.add_argument(
        "--checkpoint-dir",
        default=None,
        help="local directory for the checkpoint files (default a temporary one)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"hidden widths / {QUICK_SHRINK} and 3 repeats: checks the pipeline, for CI",
    )
    args = p.parse_args(argv)
    if args.repeats <= 0:
        raise ZooError(
            f"--repeats: expected a positive integer, found {args.repeats}; "
            "pass a value > 0"
        )
    repeats = 3 if args.quick else args.repeats
    shrink = QUICK_SHRINK if args.quick else 1
    with tempfile.TemporaryDirectory(dir=args.checkpoint_dir) as checkpoint_dir:
        networks = {
            name: bench_network(hidden // shrink, repeats, checkpoint_dir)
            for name, hidden in NETWORKS.items()
        }
    results = {
        "quick": args.quick,
        "repeats": repeats,
        "machine": {
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "tensorflow": tf.__version__,
        },
        "networks": networks,
    }
    if args.json:
        directory, filename = os.path.split(os.path.abspath(args.json))
        run = runner.RunDir(directory, overwrite=True)
    else:
        run, filename = runner.RunDir(runner.default_out("bench_state")), "results.json"
    run.write_json(filename, results)
    for name, net in networks.items():
        print(
            f"{name}: sync {net['median_seconds']['sync'] * 1e3:.3f} ms, "
            f"{net['sync_vs_checkpoint_speedup']:.0f}x faster than a checkpoint, "
            f"{net['sync_vs_memcpy_ratio']:.2f}x memcpy"
        )
    print(f"results in {run.file(filename)}")


if __name__ == "__main__":
    runner.entry_point(main)
