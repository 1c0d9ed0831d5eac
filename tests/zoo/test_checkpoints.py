"""Hostile or corrupt checkpoints: a clear ZooError, never a hang, a TypeError or a
restore of someone else's variables.

The loop checkpoint under test holds numpy arrays (no graph), so hypothesis can
try many mutated states cheaply; what it checks is what ``train_loop`` restores.
"""

import io
import json
import os

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layers.errors import DataError, ZooError
from zoo.data import DataSet
from zoo.parallel.distributed import train_worker
from zoo.sharing.inspect import inspect_checkpoint
from zoo.sharing.restore import restore_scope
from zoo.sharing.share import restore_by_name
from zoo.training.checkpoints import (
    Checkpointer,
    LoopCheckpoint,
    latest_tf_checkpoint,
    open_tf_checkpoint,
)

N = 8
FIELDS = ("step", "batch_size", "seed", "examples", "data", "rng", "logged", "seconds")


class ArrayCheckpoint(LoopCheckpoint):
    """A loop checkpoint of a dict of numpy arrays."""

    def __init__(self, owner, path, batches, variables):
        super().__init__(owner, path, batches, "loop", steps=10, batch_size=2)
        self.variables = variables

    def shapes(self):
        return {name: list(value.shape) for name, value in self.variables.items()}

    def values(self):
        return dict(self.variables)

    def assign(self, values):
        self.variables.update(values)


def dataset():
    return DataSet(np.zeros((N, 784), np.float32), np.zeros((N, 10), np.float32), seed=0)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A valid checkpoint's arrays and state, saved at step 3 (position 6 of 8)."""
    directory = str(tmp_path_factory.mktemp("run"))
    batches = dataset()
    batches.next_indices(6)
    loop = ArrayCheckpoint(
        Checkpointer(directory), os.path.join(directory, "c.npz"), batches, weights()
    )
    loop.save(3, [[0, 0.7], [2, 0.5]], 1.25)
    with np.load(loop.path) as archive:
        arrays = {key: archive[key] for key in archive.files}
    return arrays, json.loads(str(arrays.pop("__state__")))


def weights():
    return {"w": np.ones((2, 3), np.float32), "b": np.zeros(3, np.float32)}


def restore(path, arrays, state):
    """Writes ``arrays`` + ``state`` as a checkpoint at ``path`` and restores it."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays, __state__=np.array(json.dumps(state)))
    with open(path, "wb") as f:
        f.write(buffer.getvalue())
    batches = dataset()
    owner = Checkpointer(os.path.dirname(path), resume=True)
    loop = ArrayCheckpoint(owner, path, batches, weights())
    return loop.restore(), batches


def test_a_valid_checkpoint_restores(tmp_path, saved):
    (step, logged, seconds), batches = restore(str(tmp_path / "c.npz"), *saved)
    assert (step, logged, seconds) == (3, [(0, 0.7), (2, 0.5)], 1.25)
    assert batches.state() == {"epoch": 0, "position": 6}


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("data", {"epoch": 0, "position": N}, r"data position .* 0 <= position < 8"),
        ("data", {"epoch": 0, "position": -1}, r"data position"),
        ("data", {"epoch": 0, "position": 10**30}, r"data position"),
        ("data", {"epoch": "0", "position": 0}, r"data position"),
        ("step", "3", r"found step '3' \(expected an int >= 0\)"),
        ("step", -4, r"found step -4"),
        ("step", True, r"found step True"),
        ("batch_size", 2.0, r"found batch_size 2.0"),
        ("seconds", float("nan"), r"found seconds nan"),
        ("seconds", "1", r"found seconds '1'"),
        ("logged", [[0, float("inf")]], r"found logged"),
        ("logged", [["0", 0.5]], r"found logged"),
        ("logged", {"0": 0.5}, r"found logged"),
        ("rng", {"numpy": [], "python": []}, r"found rng"),
        ("rng", None, r"found rng"),
    ],
)
def test_a_corrupt_state_is_refused(tmp_path, saved, field, value, message):
    arrays, state = saved
    with pytest.raises(
        ZooError, match=r"c.npz: expected a checkpoint written by .*" + message
    ):
        restore(str(tmp_path / "c.npz"), arrays, {**state, field: value})


def test_non_finite_or_non_numeric_variables_are_refused(tmp_path, saved):
    arrays, state = saved
    for bad in (np.full((2, 3), np.nan, np.float32), np.array([["a"] * 3] * 2)):
        with pytest.raises(ZooError, match=r"c.npz: expected finite numeric variables"):
            restore(str(tmp_path / "c.npz"), {**arrays, "var:w": bad}, state)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


@settings(
    max_examples=250,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    replaced=st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=3),
    position=st.integers(-(2**40), 2**40),
    dropped=st.sets(st.sampled_from(FIELDS), max_size=2),
)
def test_fuzzed_states_restore_or_are_refused(tmp_path, saved, replaced, position, dropped):
    """Any state: a ZooError, or a restore after which the next batch comes at once."""
    arrays, state = saved
    state = {**state, "data": {"epoch": 0, "position": position}, **replaced}
    state = {key: value for key, value in state.items() if key not in dropped}
    try:
        _, batches = restore(str(tmp_path / "c.npz"), arrays, state)
    except ZooError:
        return
    assert 0 <= batches.position < N and batches.epoch >= 0
    assert batches.next_indices(2).shape == (2,)


def save_v(directory):
    """Saves a graph holding ``v = 1.0`` with a Saver in ``directory``; its prefix."""
    with tf.Graph().as_default():
        tf.compat.v1.get_variable("v", initializer=1.0)
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            return saver.save(session, str(directory / "model.ckpt"), global_step=1)


def point_outside(directory, foreign="/etc/model.ckpt-1"):
    """Rewrites ``directory``'s ``checkpoint`` file to name ``foreign``."""
    (directory / "checkpoint").write_text(
        f'model_checkpoint_path: "{foreign}"\nall_model_checkpoint_paths: "{foreign}"\n'
    )


def test_a_checkpoint_file_pointing_outside_the_run_is_refused(tmp_path):
    inside = tmp_path / "run" / "checkpoints"
    inside.mkdir(parents=True)
    assert latest_tf_checkpoint(str(inside)) is None
    prefix = save_v(inside)
    assert latest_tf_checkpoint(str(inside)) == prefix
    for foreign in ("/etc/model.ckpt-1", "../../elsewhere/model.ckpt-1"):
        point_outside(inside, foreign)
        with pytest.raises(
            ZooError,
            match=rf"checkpoint: expected checkpoints inside .*, found '.*{foreign}'",
        ):
            latest_tf_checkpoint(str(inside))


def test_open_tf_checkpoint_takes_a_prefix_or_a_directory(tmp_path):
    prefix = save_v(tmp_path)
    for path in (prefix, str(tmp_path), tmp_path):
        opened, reader = open_tf_checkpoint(path)
        assert opened == prefix and reader.get_tensor("v") == 1.0
    (tmp_path / "empty").mkdir()
    missing = (
        "expected a TensorFlow checkpoint (a prefix, or a directory with a 'checkpoint' "
        "file), found"
    )
    for path, found in (
        (tmp_path / "absent.ckpt-1", "none readable"),
        (tmp_path / "empty", "none readable"),
    ):
        with pytest.raises(DataError) as caught:
            open_tf_checkpoint(path)
        assert str(caught.value).startswith(f"{path}: {missing} {found}; pass the prefix")
    with open(prefix + ".index", "wb") as index:  # the directory still names it
        index.write(b"not an index")
    with pytest.raises(DataError) as caught:
        open_tf_checkpoint(tmp_path)
    assert str(caught.value).startswith(f"{tmp_path}: {missing} {prefix} unreadable; ")


def _restore_scope(directory):
    with tf.Graph().as_default():
        return restore_scope(directory, "saved", "loaded")


def _train_worker(directory):
    """Refuses before it looks for the ps: no cluster, server or model is needed."""
    return train_worker(
        None, None, 0, None, None, batch_size=1, last_step=1, checkpoint_dir=directory
    )


@pytest.mark.parametrize(
    "reader",
    [
        open_tf_checkpoint,
        inspect_checkpoint,
        lambda directory: restore_by_name([], directory),
        _restore_scope,
        _train_worker,
    ],
    ids=["open_tf_checkpoint", "inspect", "restore_by_name", "restore_scope", "ps_worker"],
)
def test_every_reader_refuses_a_checkpoint_file_leading_outside(tmp_path, reader):
    save_v(tmp_path)
    point_outside(tmp_path)
    with pytest.raises(ZooError, match=r"checkpoint: expected checkpoints inside .*/etc/"):
        reader(str(tmp_path))
