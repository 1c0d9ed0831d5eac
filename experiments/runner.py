"""What every experiment shares: flags, run directory, data, training loop, exit codes.

An experiment is a thin script::

    def main(argv=None):
        parser = runner.parser("Tied vs untied autoencoder.", steps=10001, batch_size=128)
        args = runner.parse_args(parser, argv)
        run = runner.RunDir(args.out or runner.default_out("autoencoder"), args.overwrite)
        data = runner.load_data(args)
        ...
        run.write_json("results.json", results)

    if __name__ == "__main__":
        runner.entry_point(main)

Files in the run directory are written atomically (temporary file, then rename
in the same directory), so a crash never leaves a truncated result.
"""

import argparse
import contextlib
import csv
import io
import json
import os
import sys
import tempfile
import time

import numpy as np
import tensorflow as tf
from tqdm import tqdm

from layers.errors import ZooError
from zoo.data import DATASETS, load_mnist


def parser(description, steps, batch_size, quick_steps=300):
    """Returns an ``ArgumentParser`` with the flags every experiment shares.

    Args:
        description: what the experiment reproduces (shown by ``--help``).
        steps: default number of training steps.
        batch_size: default batch size.
        quick_steps: steps used by ``--quick``.
    """
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--steps", type=int, default=steps, help="training steps per network")
    p.add_argument("--batch-size", type=int, default=batch_size, help="examples per step")
    p.add_argument("--dataset", default="mnist", help=f"one of {', '.join(DATASETS)}")
    p.add_argument(
        "--data-dir",
        default=None,
        help="directory of the four IDX files (.gz or raw); default $ZOO_DATA_DIR, "
        "then tensorflow-datasets",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of weights and batch order")
    p.add_argument(
        "--out", default=None, help="run directory (default runs/<experiment>/<timestamp>)"
    )
    p.add_argument(
        "--overwrite", action="store_true", help="write into an existing run directory"
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"a short run ({quick_steps} steps) that checks the pipeline, for CI",
    )
    p.set_defaults(quick_steps=quick_steps)
    return p


def parse_args(p, argv=None):
    """Parses ``argv`` and checks the shared flags.

    Returns:
        The namespace; with ``--quick``, ``steps`` is the quick step count.

    Raises:
        ZooError: non-positive steps or batch size, or an unknown dataset.
    """
    args = p.parse_args(argv)
    if args.quick:
        args.steps = min(args.steps, args.quick_steps)
    for flag in ("steps", "batch_size"):
        if getattr(args, flag) <= 0:
            raise ZooError(
                f"--{flag.replace('_', '-')}: expected a positive integer, found "
                f"{getattr(args, flag)}; pass a value > 0"
            )
    if args.dataset not in DATASETS:
        raise ZooError(
            f"--dataset: expected one of {', '.join(DATASETS)}, found {args.dataset!r}; "
            "pick one of those"
        )
    return args


def default_out(experiment):
    """Returns ``runs/<experiment>/<timestamp>``."""
    return os.path.join("runs", experiment, time.strftime("%Y%m%d-%H%M%S"))


def load_data(args, validation=5000):
    """Loads ``args.dataset`` from ``args.data_dir`` (see :func:`zoo.data.load_mnist`)."""
    return load_mnist(
        args.dataset, data_dir=args.data_dir, validation=validation, seed=args.seed
    )


def atomic_write(path, data):
    """Writes ``data`` (bytes or str) to ``path`` through a temporary file and a rename."""
    directory = os.path.dirname(os.path.abspath(path))
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, mode) as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


class RunDir:
    """A run directory whose files are written atomically.

    Args:
        path: the directory; created if absent.
        overwrite: allow a directory that already holds results.

    Raises:
        ZooError: the directory already holds files and ``overwrite`` is False.
    """

    def __init__(self, path, overwrite=False):
        if os.path.isdir(path) and os.listdir(path) and not overwrite:
            raise ZooError(
                f"{path}: expected an empty or new run directory, found existing files; "
                "pass --overwrite to replace them, or choose another --out"
            )
        os.makedirs(path, exist_ok=True)
        self.path = path

    def file(self, name):
        """Returns the path of ``name`` inside the run directory."""
        return os.path.join(self.path, name)

    def write_json(self, name, obj):
        """Writes ``obj`` as indented JSON (numpy scalars become numbers)."""
        text = json.dumps(obj, indent=2, default=_json_default) + "\n"
        atomic_write(self.file(name), text)

    def write_csv(self, name, rows):
        """Writes a list of dicts as CSV with the first row's keys as header."""
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        atomic_write(self.file(name), buffer.getvalue())

    def save_figure(self, name, figure):
        """Saves a matplotlib figure as PNG and closes it."""
        import matplotlib.pyplot as plt

        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
        plt.close(figure)
        atomic_write(self.file(name), buffer.getvalue())

    def summary_writer(self, name, graph=None):
        """Returns a TensorBoard ``FileWriter`` in ``<run>/tensorboard/<name>``."""
        return tf.compat.v1.summary.FileWriter(
            os.path.join(self.path, "tensorboard", name), graph=graph
        )


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def train_loop(
    session,
    train_op,
    loss,
    batches,
    steps,
    batch_size,
    feed,
    *,
    log_every=1000,
    desc="train",
    on_log=None,
    writer=None,
):
    """Runs ``steps`` training steps, fetching the loss every ``log_every`` steps.

    Args:
        session: the ``tf.compat.v1.Session``.
        train_op: the op to run each step.
        loss: scalar tensor fetched at steps 0, log_every, 2*log_every, ...
        batches: a :class:`zoo.data.DataSet` (its ``next_batch`` is called).
        steps: number of steps.
        batch_size: examples per step.
        feed: function ``(images, labels) -> feed_dict``.
        log_every: logging period in steps.
        desc: label of the progress bar.
        on_log: optional ``on_log(step, loss)`` called at each logged step.
        writer: optional TensorBoard writer that receives the logged loss.

    Returns:
        ``(logged, steps_per_second)``: the list of ``(step, loss)`` pairs and
        the speed over the whole loop.
    """
    logged = []
    start = time.perf_counter()
    for step in tqdm(range(steps), desc=desc, disable=None, leave=False):
        feed_dict = feed(*batches.next_batch(batch_size))
        if step % log_every:
            session.run(train_op, feed_dict)
            continue
        _, value = session.run([train_op, loss], feed_dict)
        logged.append((step, float(value)))
        if on_log:
            on_log(step, float(value))
        if writer:
            summary = tf.compat.v1.Summary(
                value=[
                    tf.compat.v1.Summary.Value(
                        tag=f"{desc}/loss", simple_value=float(value)
                    )
                ]
            )
            writer.add_summary(summary, step)
    return logged, steps / (time.perf_counter() - start)


def entry_point(main, argv=None):
    """Runs ``main(argv)`` and exits: 0 on success, 2 with one clear line on a zoo error."""
    try:
        code = main(argv)
    except ZooError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    sys.exit(code or 0)
