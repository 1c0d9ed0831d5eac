"""Exact checkpoints of training loops: variables, step, batch position, RNG states.

A :class:`Checkpointer` owns ``<run>/checkpoints``; each training loop of the run
gets a :class:`LoopCheckpoint` file from it. :func:`zoo.training.train_loop` saves
and restores through it, so a run interrupted anywhere continues to the same
numbers. Saving and restoring add no op to the graph: finalized graphs work.

TensorFlow's own checkpoints (a ``Saver``'s prefix, a directory with a
``checkpoint`` file) are located by :func:`latest_tf_checkpoint` and opened by
:func:`open_tf_checkpoint`, the one way the zoo reads them (restores by name or
scope, the inspector, the parameter-server chief): a ``checkpoint`` file that
leads outside its directory is refused here, for every caller.
"""

import contextlib
import io
import json
import os
import random
import re
import shutil
import signal
import zipfile

import numpy as np
import tensorflow as tf

from layers.checks import int_problem, number_problem, require
from layers.errors import DataError, RunInterrupted, ZooError
from zoo.training.files import atomic_write, write_json

PARTIAL = "partial.json"
_STATE = "__state__"
_STATE_FIELDS = (
    "step",
    "batch_size",
    "seed",
    "examples",
    "data",
    "rng",
    "logged",
    "seconds",
)
_VARIABLE = "var:"


class Checkpointer:
    """Checkpoints the training loops of one run in ``<run>/checkpoints``.

    Pass the same Checkpointer to every :func:`train_loop` of the run. Loops are
    numbered in call order, each with its own checkpoint ``NN-<desc>.npz``, so a
    resumed run restores the loops that had finished (variables and all) without
    training them again and continues the one that was interrupted.

    A checkpoint is one file: the value of every initialized global variable
    (weights, optimizer slots, a global step if any) under its name, and the
    step, the batch iterator position, the numpy and Python RNG states and the
    losses logged so far. It is written to a temporary file and renamed over the
    previous one, so a crash while saving leaves the previous checkpoint whole.
    Saving and restoring add no op to the graph: finalized graphs work.

    Stateful TensorFlow random ops (``tf.nn.dropout``) restart their stream in
    the resumed session, so only runs without them resume to identical numbers;
    ``mlp_classifier``'s dropout is stateless (see
    :func:`zoo.models.mlp.resumable_dropout`) and resumes exactly.

    Args:
        directory: the run's directory; checkpoints go to ``<directory>/checkpoints``
            and, on SIGINT/SIGTERM, ``<directory>/partial.json``.
        every: save every ``every`` training steps (and at the end of each loop).
        resume: continue from the checkpoints already there; False deletes them.
        command: how to resume, named in the message of :class:`RunInterrupted`
            (experiments pass their shell command); None names ``resume=True``.

    Raises:
        ZooError: ``every`` is not a positive int.

    Usage::

        checkpointer = Checkpointer("runs/mine", every=500, resume=resuming)
        train_loop(..., checkpointer=checkpointer)
    """

    def __init__(self, directory, every=1000, resume=False, command=None):
        require(
            "Checkpointer",
            int_problem(every, name="every"),
            "pass every=1000 or another number of steps",
        )
        self.directory, self.every, self.resume = directory, every, bool(resume)
        self.command = command or f"the same code with resume=True on {directory}"
        self.root = os.path.join(directory, "checkpoints")
        self.loops = 0
        if self.resume:
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(directory, PARTIAL))
        else:
            shutil.rmtree(self.root, ignore_errors=True)

    def open(self, session, batches, desc, steps, batch_size):
        """Returns the checkpoint of the next training loop (used by train_loop)."""
        return SessionLoopCheckpoint(
            self, self.next_path(desc), session, batches, desc, steps, batch_size
        )

    def next_path(self, desc):
        """Returns the file of the next training loop's checkpoint: ``NN-<desc>.npz``.

        Loops that build their own :class:`LoopCheckpoint` take their path here,
        so they are numbered with the others.
        """
        name = f"{self.loops:02d}-{re.sub(r'[^A-Za-z0-9_.=-]+', '_', desc)}.npz"
        self.loops += 1
        return os.path.join(self.root, name)


class LoopCheckpoint:
    """Saves and restores one training loop's checkpoint file; see :class:`Checkpointer`.

    Subclasses say where the variables live: :meth:`shapes`, :meth:`values` and
    :meth:`assign` (``train_loop`` uses :class:`SessionLoopCheckpoint`; the eager
    autoencoder experiment one over eager variables).

    Args:
        owner: the run's :class:`Checkpointer`.
        path: the checkpoint file.
        batches: the training batches (``state``/``restore``, ``seed``,
            ``num_examples``).
        desc: the loop's name.
        steps: the loop's length.
        batch_size: examples per step.
    """

    def __init__(self, owner, path, batches, desc, steps, batch_size):
        self.owner, self.path, self.batches = owner, path, batches
        self.desc, self.steps, self.batch_size = desc, steps, batch_size
        self.step = None

    @property
    def last(self):
        """Path of the last good checkpoint of this loop, or None."""
        return self.path if self.step is not None else None

    def shapes(self):
        """Returns ``{name: shape list}`` of the variables to checkpoint."""
        raise NotImplementedError

    def values(self):
        """Returns ``{name: numpy array}``: the variables' current values."""
        raise NotImplementedError

    def assign(self, values):
        """Sets every variable from ``{name: numpy array}``."""
        raise NotImplementedError

    def restore(self):
        """Restores the loop's checkpoint when resuming and there is one.

        Returns:
            ``(step, logged, seconds)``: where to continue, the losses logged so
            far and the training time spent; ``(0, [], 0.0)`` without checkpoint.

        Raises:
            ZooError: the checkpoint is unreadable, of another model, or was
                written with another batch size, seed, data or a larger --steps.
        """
        if not self.owner.resume or not os.path.exists(self.path):
            return 0, [], 0.0
        values, state = _read_checkpoint(self.path)
        _check_state(self.path, state, self.batches.num_examples)
        self._check_compatible(state)
        _check_variables(self.path, values, self.shapes())
        self.assign(values)
        self.batches.restore(state["data"])
        _set_rng_state(state["rng"])
        self.step = state["step"]
        return self.step, [tuple(entry) for entry in state["logged"]], state["seconds"]

    def _check_compatible(self, state):
        """Raises ZooError unless the checkpoint's flags and data are the loop's."""
        found = (
            ("--batch-size", state["batch_size"], self.batch_size),
            ("--seed", state["seed"], self.batches.seed),
            (
                "training examples (--dataset, --data-dir)",
                state["examples"],
                self.batches.num_examples,
            ),
        )
        for what, saved, now in found:
            if saved != now:
                raise ZooError(
                    f"{self.path}: expected {what} {saved} as when the checkpoint was "
                    f"written, found {now}; resume with the flags and data of the "
                    "interrupted run"
                )
        if state["step"] > self.steps:
            raise ZooError(
                f"{self.path}: expected --steps of at least {state['step']} (the "
                f"checkpoint's step), found {self.steps}; resume with the flags of the "
                "interrupted run"
            )

    def save(self, step, logged, seconds):
        """Replaces the loop's checkpoint, atomically, by one at ``step``."""
        if step == self.step:
            return
        state = {
            "step": step,
            "steps": self.steps,
            "batch_size": self.batch_size,
            "seed": self.batches.seed,
            "examples": self.batches.num_examples,
            "data": self.batches.state(),
            "rng": _rng_state(),
            "logged": logged,
            "seconds": seconds,
        }
        arrays = {_VARIABLE + name: value for name, value in self.values().items()}
        buffer = io.BytesIO()
        np.savez(buffer, **arrays, **{_STATE: np.array(json.dumps(state))})
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            atomic_write(self.path, buffer.getvalue())
        except OSError as err:
            kept = f"checkpoint {self.last} kept" if self.last else "no checkpoint yet"
            raise ZooError(
                f"{self.path}: expected to write the checkpoint, found "
                f"{err.strerror or err}; {kept}; free disk space, then resume with: "
                f"{self.owner.command}"
            ) from None
        self.step = step

    def interrupted(self, signum, step, logged):
        """Writes ``partial.json`` and returns the :class:`RunInterrupted` to raise.

        Args:
            signum: the signal received.
            step: steps done in the loop.
            logged: the entries logged so far.
        """
        command = self.owner.command
        partial = os.path.join(self.owner.directory, PARTIAL)
        write_json(
            partial,
            {
                "loop": self.desc,
                "step": step,
                "steps": self.steps,
                "checkpoint": self.last,
                "logged": logged,
                "resume": command,
            },
        )
        return RunInterrupted(
            f"{self.desc}: interrupted by {signal.Signals(signum).name} at step {step} "
            f"of {self.steps}; checkpoint {self.last} and partial results "
            f"{partial} written; resume with: {command}",
            signum,
            command,
        )


class SessionLoopCheckpoint(LoopCheckpoint):
    """The checkpoint of a graph's initialized global variables, read through a session."""

    def __init__(self, owner, path, session, batches, desc, steps, batch_size):
        super().__init__(owner, path, batches, desc, steps, batch_size)
        self.session = session
        self.variables = _initialized_variables(session, desc)

    def shapes(self):
        return {v.op.name: v.shape.as_list() for v in self.variables}

    def values(self):
        arrays = self.session.run(self.variables)
        return {v.op.name: x for v, x in zip(self.variables, arrays, strict=True)}

    def assign(self, values):
        self.session.run(
            [v.initializer for v in self.variables],
            {v.initializer.inputs[1]: values[v.op.name] for v in self.variables},
        )


def _initialized_variables(session, desc):
    """The graph's global variables that hold a value (reading them adds no op).

    All of them are read in one run first: a run per variable costs about 0.1 s
    each in a large graph (a model unrolled over 28 steps has hundreds).
    """
    variables = session.graph.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)
    if variables:
        with contextlib.suppress(tf.errors.FailedPreconditionError):
            session.run(variables)
            return list(variables)
    initialized = []
    for variable in variables:
        with contextlib.suppress(tf.errors.FailedPreconditionError):
            session.run(variable)
            initialized.append(variable)
    if not initialized:
        raise ZooError(
            f"{desc}: expected initialized variables to checkpoint, found none; run the "
            "variable initializer before train_loop"
        )
    return initialized


def _read_checkpoint(path):
    """Returns ``(values by variable name, state)`` of a checkpoint file."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
        state = json.loads(str(arrays.pop(_STATE)))
        if not isinstance(state, dict):
            raise TypeError(f"a state of type {type(state).__name__}")
        missing = [field for field in _STATE_FIELDS if field not in state]
    except (OSError, EOFError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as err:
        problem = repr(err)
    else:
        if not missing:
            values = {k[len(_VARIABLE) :]: v for k, v in arrays.items()}
            return values, state
        problem = f"a state without {', '.join(missing)}"
    raise ZooError(
        f"{path}: expected a checkpoint written by zoo.training.checkpoints, found "
        f"{problem}; start a new run with --overwrite"
    )


def _state_problem(state, examples):
    """Returns what is wrong with a checkpoint's state, or None."""
    if not isinstance(state, dict):
        return f"a state of type {type(state).__name__}"
    for field in ("step", "batch_size", "seed", "examples"):
        if not _is_int(state[field], 0):
            return f"{field} {state[field]!r} (expected an int >= 0)"
    data = state["data"]
    # A DataSet's (epoch, position) is checked here; other batch sources (a
    # replay buffer's rollout) check their own state in ``restore``.
    dataset_state = not isinstance(data, dict) or set(data) <= {"epoch", "position"}
    if dataset_state and not (
        isinstance(data, dict)
        and _is_int(data.get("epoch"), 0)
        and _is_int(data.get("position"), 0, max(examples, 1) - 1)
    ):
        expected = f"epoch >= 0, 0 <= position < {examples}"
        return f"data position {data!r:.100} (expected {expected})"
    seconds = state["seconds"]
    if number_problem(seconds, 0):
        return f"seconds {seconds!r} (expected a finite number >= 0)"
    logged = state["logged"]
    if not isinstance(logged, list) or not all(_is_log_entry(e) for e in logged):
        return f"logged {logged!r:.100} (expected [step, finite loss(, metrics)] entries)"
    if not _is_rng_state(state["rng"]):
        return f"rng {state['rng']!r:.100} (expected numpy and Python RNG states)"
    return None


def _is_log_entry(entry):
    return (
        isinstance(entry, list)
        and len(entry) in (2, 3)
        and _is_int(entry[0])
        and _is_number(entry[1])
        and (len(entry) == 2 or isinstance(entry[2], dict))
    )


def _is_rng_state(rng):
    try:
        kind, keys, position, has_gauss, gauss = rng["numpy"]
        version, internal, gauss_next = rng["python"]
    except (TypeError, KeyError, ValueError):
        return False
    return (
        kind == "MT19937"
        and isinstance(keys, list)
        and len(keys) == 624
        and all(_is_int(k, 0, 2**32 - 1) for k in keys)
        and _is_int(position, 0, 624)
        and _is_int(has_gauss)
        and _is_number(gauss)
        and _is_int(version)
        and isinstance(internal, list)
        and len(internal) == 625
        and all(_is_int(k, 0, 2**32 - 1) for k in internal[:624])
        and _is_int(internal[624], 0, 624)
        and (gauss_next is None or _is_number(gauss_next))
    )


def _is_int(value, minimum=None, maximum=None):
    """Whether ``value`` is an int (not a bool) in ``[minimum, maximum]``."""
    return int_problem(value, minimum, maximum) is None


def _is_number(value):
    """Whether ``value`` is a finite real number (not a bool)."""
    return number_problem(value) is None


def _check_state(path, state, examples):
    """Raises ZooError unless the checkpoint's state is well formed for ``examples``."""
    problem = _state_problem(state, examples)
    if problem:
        raise ZooError(
            f"{path}: expected a checkpoint written by zoo.training.checkpoints, found "
            f"{problem}; "
            "the file is corrupt or of other data: start a new run with --overwrite"
        )


def _check_variables(path, values, shapes):
    """Raises ZooError unless ``values`` holds every variable, with its shape.

    Args:
        path: the checkpoint, for the message.
        values: dict variable name -> array, as :func:`_read_checkpoint` returns.
        shapes: dict variable name -> shape (list of ints) of the model's variables.
    """
    broken = [
        name
        for name, value in values.items()
        if value.dtype.kind not in "fiub" or not np.all(np.isfinite(value))
    ]
    if broken:
        raise ZooError(
            f"{path}: expected finite numeric variables, found {', '.join(broken[:5])} "
            "not; the file is corrupt: start a new run with --overwrite"
        )
    missing = [name for name in shapes if name not in values]
    reshaped = [
        f"{name} {list(values[name].shape)} (model: {shape})"
        for name, shape in shapes.items()
        if name in values and list(values[name].shape) != shape
    ]
    if missing or reshaped:
        problems = []
        if missing:
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            problems.append(f"missing {', '.join(missing[:5])}{more}")
        if reshaped:
            problems.append(f"other shapes {', '.join(reshaped[:5])}")
        raise ZooError(
            f"{path}: expected a checkpoint of this model, found one of another model "
            f"({'; '.join(problems)}); resume with the experiment and flags that wrote "
            "it, or start a new run"
        )


def _rng_state():
    kind, keys, position, has_gauss, gauss = np.random.get_state()
    version, internal, gauss_next = random.getstate()
    return {
        "numpy": [kind, keys.tolist(), position, has_gauss, gauss],
        "python": [version, list(internal), gauss_next],
    }


def _set_rng_state(state):
    kind, keys, position, has_gauss, gauss = state["numpy"]
    np.random.set_state((kind, np.array(keys, np.uint32), position, has_gauss, gauss))
    version, internal, gauss_next = state["python"]
    random.setstate((version, tuple(internal), gauss_next))


def latest_tf_checkpoint(directory):
    """Returns the checkpoint prefix that ``<directory>/checkpoint`` names, or None.

    ``tf.train.latest_checkpoint`` follows that small text file wherever it
    points; this refuses a path outside ``directory`` (a hostile or copied run
    directory would otherwise restore someone else's variables).

    Raises:
        ZooError: the file is unreadable or names a path outside ``directory``.
    """
    try:
        state = tf.train.get_checkpoint_state(directory)
    except (tf.errors.OpError, ValueError) as err:
        raise ZooError(
            f"{os.path.join(directory, 'checkpoint')}: expected a TensorFlow checkpoint "
            f"state file, found {type(err).__name__}; delete it or start a new run"
        ) from None
    if state is None:
        return None
    root = os.path.realpath(directory)
    paths = [state.model_checkpoint_path, *state.all_model_checkpoint_paths]
    for path in paths:
        resolved = os.path.realpath(os.path.join(directory, path))
        if os.path.commonpath([root, resolved]) != root:
            raise ZooError(
                f"{os.path.join(directory, 'checkpoint')}: expected checkpoints inside "
                f"{directory}, found {path!r}; delete that file or start a new run"
            )
    return tf.train.latest_checkpoint(directory)


def tf_checkpoint_step(path):
    """Returns the step a Saver's checkpoint prefix names (``.../model.ckpt-<step>``)."""
    return int(path.rsplit("-", 1)[1])


def open_tf_checkpoint(path):
    """Opens a TensorFlow checkpoint by its prefix, or the latest one of a directory.

    A directory is resolved by :func:`latest_tf_checkpoint`, so its ``checkpoint``
    file may not lead outside it.

    Args:
        path: a checkpoint prefix (``runs/x/model.ckpt-1000``, what
            ``tf.compat.v1.train.Saver.save`` returns), or the directory holding a
            ``checkpoint`` file.

    Returns:
        ``(prefix, reader)``: the prefix opened and its ``tf.train.CheckpointReader``.

    Raises:
        DataError: no readable checkpoint at ``path``.
        ZooError: the directory's ``checkpoint`` file is unreadable or names a path
            outside the directory.
    """
    path = os.fspath(path)
    prefix = latest_tf_checkpoint(path) if os.path.isdir(path) else path
    if prefix:
        try:
            return prefix, tf.train.load_checkpoint(prefix)
        except (ValueError, tf.errors.OpError):
            pass
    found = f"{prefix} unreadable" if prefix and prefix != path else "none readable"
    raise DataError(
        f"{path}: expected a TensorFlow checkpoint (a prefix, or a directory with a "
        f"'checkpoint' file), found {found}; pass the prefix "
        "tf.compat.v1.train.Saver.save returned (e.g. runs/x/model.ckpt-1000)"
    )
