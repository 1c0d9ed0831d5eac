"""A run directory: run.json, a lock, results written atomically, the run's checkpointer.

Usage::

    args = flags.parse_args(parser, argv)         # every flag checked; --resume merged
    run = rundir.run_dir(args, "autoencoder")    # --out, --overwrite, --resume
    training.train_loop(..., checkpointer=run.checkpointer)
    run.write_json("results.json", results)
    run.save_figure("loss_curves.png", figure)

:func:`run_dir` writes ``run.json`` when the run starts (experiment, every flag,
the data's identity, code version, machine) and locks the directory while the
process lives; ``--resume`` reads ``run.json`` back (:func:`flags.parse_args`);
both through :mod:`experiments.harness.record`.
"""

import csv
import datetime
import fcntl
import io
import os
import secrets
import shutil
import socket

from experiments.harness import datasets, figures, flags, record, startup
from layers.errors import ZooError
from zoo.training.files import TEMPORARY_PREFIX, atomic_write, write_json

LOCK = ".lock"
_HELD = {}  # real path -> open, flocked lock file; released when the process exits


def default_out(experiment):
    """Returns ``runs/<experiment>/<timestamp>-<6 random hex digits>`` (unique)."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return os.path.join("runs", experiment, f"{stamp}-{secrets.token_hex(3)}")


class RunDir:
    """A run directory whose files are written atomically, locked while in use.

    Args:
        path: the directory; created if absent.
        overwrite: replace a run directory that already holds files (all of them
            are deleted, after the lock is taken); only a run's directory (one with
            a run.json) is cleared, never another directory given by mistake.
        resume: continue the run already in ``path`` (which must exist).
        lock: take the directory's lock (``.lock``, ``flock``) for as long as
            this process lives; False for a task that joins its launcher's run.

    Attributes:
        path: the directory.
        checkpointer: the run's :class:`Checkpointer` when made by :func:`run_dir`,
            else None.
        command: the shell command that resumes the run, or None.
        record: the run's run.json (as a dict) when made by :func:`run_dir`.

    Raises:
        ZooError: the directory already holds files and neither ``overwrite`` nor
            ``resume`` is set, or ``overwrite`` and no run.json; ``resume`` and the
            directory is missing; the path is a file; another process holds the lock.
    """

    def __init__(self, path, overwrite=False, resume=False, lock=True):
        if resume and not os.path.isdir(path):
            raise ZooError(
                f"{path}: expected an existing run directory to resume, found none; "
                "pass the directory the interrupted run wrote to"
            )
        if os.path.exists(path) and not os.path.isdir(path):
            raise ZooError(
                f"{path}: expected a run directory, found a file; choose another --out"
            )
        entries = _entries(path) if os.path.isdir(path) else []
        if entries and not (overwrite or resume):
            raise ZooError(
                f"{path}: expected an empty or new run directory, found existing files; "
                f"pass --resume {path} to continue that run, --overwrite to replace it, "
                "or choose another --out"
            )
        if entries and overwrite and record.RECORD not in entries:
            raise ZooError(
                f"{path}: expected a run directory (with {record.RECORD}) to overwrite, "
                f"found other files ({', '.join(sorted(entries)[:3])}...); choose another "
                "--out, or empty it yourself"
            )
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as err:
            raise ZooError(
                f"{path}: expected to create the run directory, found {err.strerror}; "
                "choose another --out"
            ) from None
        self.path, self.checkpointer, self.command, self.record = path, None, None, None
        if lock:
            _lock(path)
        if overwrite:
            _clear(path)
        if resume and lock:
            _remove_temporaries(path)

    def file(self, name):
        """Returns the path of ``name`` inside the run directory."""
        return os.path.join(self.path, name)

    def write_json(self, name, obj):
        """Writes ``obj`` as indented JSON (numpy scalars become numbers)."""
        self._write(name, lambda path: write_json(path, obj))

    def write_results(self, results, name="results.json"):
        """Writes ``results`` as ``results.json``, with what produced them first.

        Every experiment's results say the same of their origin: the
        experiment, its flags and data (from run.json), the code version, the
        machine at the end of the run (:func:`experiments.harness.record.machine`)
        and, with ``--precision``, :attr:`precision`.
        """
        saved = self.record or {}
        origin = {
            **{key: saved.get(key) for key in ("experiment", "flags", "data")},
            "code_version": saved.get("started", {}).get("code_version"),
            "machine": record.machine(),
        }
        if self.precision:
            origin["precision"] = self.precision
        self.write_json(name, {**origin, **results})

    @property
    def precision(self):
        """This process's ``--precision`` and whether it is emulated, as run.json
        records it (:func:`experiments.harness.record.precision`), or None."""
        saved = self.record or {}
        latest = (saved.get("resumes") or [saved.get("started") or {}])[-1]
        return latest.get("precision")

    def write_ablation(self, experiment, data, variants, loss_title, loss_label, **more):
        """Writes an ablation's ``results.json`` and ``loss_curves.png``.

        Args:
            experiment: the experiment's name.
            data: the :class:`zoo.data.DataSets` (its name and source are written).
            variants: variant -> result, each with its logged ``losses``.
            loss_title, loss_label: the loss figure's title and y axis label
                (:func:`experiments.harness.figures.loss_figure`).
            **more: more entries of results.json, before the variants.
        """
        self.write_results(
            {
                "experiment": experiment,
                "dataset": data.name,
                "data_source": data.source,
                **more,
                "variants": variants,
            }
        )
        figure = figures.loss_figure(variants, loss_title, loss_label)
        self.save_figure("loss_curves.png", figure)

    def write_csv(self, name, rows):
        """Writes a list of dicts as CSV with the first row's keys as header."""
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        self._write(name, lambda path: atomic_write(path, buffer.getvalue()))

    def save_figure(self, name, figure):
        """Saves a matplotlib figure as PNG and closes it."""
        import matplotlib.pyplot as plt

        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
        plt.close(figure)
        self._write(name, lambda path: atomic_write(path, buffer.getvalue()))

    def summary_writer(self, name, graph=None):
        """Returns a TensorBoard ``FileWriter`` in ``<run>/tensorboard/<name>``."""
        import tensorflow as tf

        return tf.compat.v1.summary.FileWriter(
            os.path.join(self.path, "tensorboard", name), graph=graph
        )

    def _write(self, name, write):
        """Runs ``write(path)``; an OSError (a full disk...) becomes one clear line.

        Raises:
            ZooError: naming the file, the cause and how to go on.
        """
        path = self.file(name)
        try:
            write(path)
        except OSError as err:
            then = f"resume with: {self.command}" if self.command else "run again"
            raise ZooError(
                f"{path}: expected to write it, found {err.strerror or err}; free disk "
                f"space or fix permissions, then {then}"
            ) from None


def write_bench_results(run, results, path=None):
    """Writes a benchmark's results: to ``path`` (its ``--json``), else to the run's.

    Args:
        run: the :class:`RunDir` (unused with ``path``).
        results: the dict to write.
        path: a file outside any run directory; it gets the machine
            (:func:`experiments.harness.record.machine`) besides ``results``.

    Returns:
        The path of the file written (``results.json`` of the run without ``path``,
        by :meth:`RunDir.write_results`).
    """
    if path:
        write_json(path, {"machine": record.machine(), **results})
        return path
    run.write_results(results)
    return run.file("results.json")


def _entries(path):
    return [name for name in os.listdir(path) if name != LOCK]


def _lock(path):
    """Takes ``path``'s lock for this process's lifetime, or raises ZooError."""
    key = os.path.realpath(path)
    if key in _HELD:
        return
    lock = open(os.path.join(path, LOCK), "a+")  # noqa: SIM115 (held until exit)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.seek(0)
        owner = lock.read().strip() or "another process"
        lock.close()
        raise ZooError(
            f"{path}: expected a run directory no other run is using, found it locked "
            f"by {owner}; wait for that run to end (or stop it), or choose another --out"
        ) from None
    lock.seek(0)
    lock.truncate()
    lock.write(f"pid {os.getpid()} on {socket.gethostname()} since {record.now()}\n")
    lock.flush()
    _HELD[key] = lock


def _remove_temporaries(path):
    """Deletes the half-written ``.tmp-*`` files of a killed process (the lock is ours)."""
    for directory, _, names in os.walk(path):
        for name in names:
            if name.startswith(TEMPORARY_PREFIX):
                os.remove(os.path.join(directory, name))


def _clear(path):
    """Deletes everything in ``path`` but its lock."""
    for name in _entries(path):
        entry = os.path.join(path, name)
        if os.path.isdir(entry) and not os.path.islink(entry):
            shutil.rmtree(entry)
        else:
            os.remove(entry)


def start_with_tensorflow(parser, argv, experiment):
    """Starts a run: every flag checked, then TensorFlow, the data, the run directory.

    Data comes before the directory, so missing or corrupt data leaves no
    directory behind.

    Args:
        parser: the experiment's parser (:func:`experiments.harness.flags.parser`).
        argv: the command line's arguments; None reads ``sys.argv``.
        experiment: the run directory's default name (:func:`run_dir`).

    Returns:
        ``(settings, data, run)``: the :class:`experiments.harness.flags.Settings`,
        the :class:`zoo.data.DataSets`, the :class:`RunDir`.

    Raises:
        ZooError: a bad flag, bad data, or a run directory that cannot be used.
    """
    settings = flags.parse_args(parser, argv)
    startup.import_tensorflow()
    data = datasets.load(settings)
    return settings, data, run_dir(settings, experiment)


def run_dir(settings, experiment, lock=True):
    """Returns the :class:`RunDir` the settings name, with its checkpointer and run.json.

    A new run writes ``run.json`` (experiment, every flag, the data's identity,
    code version, machine, command) and locks the directory; a resumed one
    (``--resume``, already checked and merged by :func:`.flags.parse_args`)
    appends to run.json's ``resumes``. A ``--precision`` this machine emulates
    (float16 without a GPU, bfloat16 on a CPU without bfloat16 instructions) is
    told so (run.json and results.json say so too).

    Args:
        settings: the run's :class:`experiments.harness.flags.Settings` (every
            flag it ``recorded`` goes to run.json).
        experiment: the name used by :func:`default_out` when ``--out`` is absent.
        lock: take the directory's lock (False: a task joining its launcher's run).

    Raises:
        ZooError: as :class:`RunDir`.

    Usage::

        run = rundir.run_dir(settings, "autoencoder")
        training.train_loop(..., checkpointer=run.checkpointer)
    """
    values = settings.flags
    path = values.get("out") or default_out(experiment)
    resume = bool(values.get("resume"))
    run = RunDir(path, values.get("overwrite", False), resume=resume, lock=lock)
    if "checkpoint_every" in values:
        from zoo.training.checkpoints import Checkpointer

        run.command = record.resume_command(run.path)
        run.checkpointer = Checkpointer(
            run.path, every=values["checkpoint_every"], resume=resume, command=run.command
        )
    run.record = record.write(run, settings, resume)
    emulated = run.precision and run.precision["emulated"]
    if emulated:
        print(f"warning: {emulated}")
    return run


def join_run(settings, experiment):
    """Joins the run the settings name as one of its tasks (``experiments.ps``' workers).

    When the directory has a run.json, its flags are taken (a passed flag that
    differs is refused) and nothing is written; else it is started as by
    :func:`run_dir`. No lock is taken: the launcher holds it.

    Returns:
        ``(settings, run)``: the settings with the run's flags, the :class:`RunDir`.

    Raises:
        ZooError: as :func:`run_dir`; a run.json of another experiment, other
            flags or other data.
    """
    path = settings.flags.get("out") or default_out(experiment)
    if not os.path.exists(os.path.join(path, record.RECORD)):
        return settings, run_dir(settings, experiment, lock=False)
    saved = record.read(path, settings.experiment)
    values = dict(settings.flags)
    record.merge(
        values, saved, path, settings.recorded, settings.given, settings.may_differ
    )
    record.check_same_data(saved, settings.data, path)
    run = RunDir(path, resume=True, lock=False)
    run.record = saved
    return settings.with_flags(**values), run
