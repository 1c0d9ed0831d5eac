"""A run directory: results and figures written atomically, and the run's checkpointer.

Usage::

    run = rundir.run_dir(args, "autoencoder")    # --out, --overwrite, --resume
    training.train_loop(..., checkpointer=run.checkpointer)
    run.write_json("results.json", results)
    run.save_figure("loss_curves.png", figure)
"""

import csv
import io
import json
import os
import shlex
import sys
import time

import tensorflow as tf

from layers.errors import ZooError
from zoo.checkpoints import Checkpointer
from zoo.files import atomic_write, write_json


def default_out(experiment):
    """Returns ``runs/<experiment>/<timestamp>``."""
    return os.path.join("runs", experiment, time.strftime("%Y%m%d-%H%M%S"))


class RunDir:
    """A run directory whose files are written atomically.

    Args:
        path: the directory; created if absent.
        overwrite: allow a directory that already holds results.
        resume: continue the run already in ``path`` (which must exist).

    Attributes:
        path: the directory.
        checkpointer: the run's :class:`Checkpointer` when made by :func:`run_dir`,
            else None.

    Raises:
        ZooError: the directory already holds files and neither ``overwrite`` nor
            ``resume`` is set, or ``resume`` is set and the directory is missing.
    """

    def __init__(self, path, overwrite=False, resume=False):
        if resume and not os.path.isdir(path):
            raise ZooError(
                f"{path}: expected an existing run directory to resume, found none; "
                "pass the directory the interrupted run wrote to"
            )
        if os.path.isdir(path) and os.listdir(path) and not (overwrite or resume):
            raise ZooError(
                f"{path}: expected an empty or new run directory, found existing files; "
                f"pass --resume {path} to continue that run, --overwrite to replace it, "
                "or choose another --out"
            )
        os.makedirs(path, exist_ok=True)
        self.path = path
        self.checkpointer = None

    def file(self, name):
        """Returns the path of ``name`` inside the run directory."""
        return os.path.join(self.path, name)

    def write_json(self, name, obj):
        """Writes ``obj`` as indented JSON (numpy scalars become numbers)."""
        write_json(self.file(name), obj)

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


def run_dir(args, experiment):
    """Returns the :class:`RunDir` the flags name, with its :class:`Checkpointer`.

    Args:
        args: the namespace of :func:`parse_args` (``out``, ``overwrite``,
            ``resume``, ``checkpoint_every``).
        experiment: the name used by :func:`default_out` when ``--out`` is absent.

    The directory's ``run.json`` names the experiment that made it; resuming
    it with another experiment is refused.

    Raises:
        ZooError: as :class:`RunDir`, or ``--resume`` names a run directory of
            another experiment.

    Usage::

        run = rundir.run_dir(args, "autoencoder")
        training.train_loop(..., checkpointer=run.checkpointer)
    """
    resume = bool(getattr(args, "resume", None))
    run = RunDir(args.out or default_out(experiment), args.overwrite, resume=resume)
    _claim(run, experiment, resume)
    run.checkpointer = Checkpointer(
        run.path,
        every=getattr(args, "checkpoint_every", 1000),
        resume=resume,
        command=_resume_command(getattr(args, "argv", sys.argv[1:]), run.path),
    )
    return run


RUN_FILE = "run.json"


def _claim(run, experiment, resume):
    """Writes ``run.json`` naming ``experiment``; on resume, checks it is the same."""
    path = run.file(RUN_FILE)
    if resume and os.path.exists(path):
        with open(path) as f:
            found = json.load(f).get("experiment")
        if found != experiment:
            raise ZooError(
                f"--resume {run.path}: expected a run directory of the {experiment} "
                f"experiment, found one of {found} ({path}); resume it with "
                f"`python -m experiments.{found}`, or start a new run"
            )
        return
    run.write_json(RUN_FILE, {"experiment": experiment})


def _resume_command(argv, run_path):
    """Returns the shell command that repeats ``argv`` with ``--resume run_path``."""
    kept, skip = [], False
    for arg in argv:
        flag = arg.split("=", 1)[0]
        if skip or arg == "--overwrite" or flag in ("--out", "--resume"):
            skip = flag in ("--out", "--resume") and "=" not in arg
            continue
        kept.append(arg)
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    program = ["-m", spec.name] if spec else [sys.argv[0]]
    return shlex.join(["python", *program, *kept, "--resume", run_path])
