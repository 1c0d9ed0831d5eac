"""Shared fixtures: a fresh default graph, small IDX files, the real MNIST test split,
TensorFlow's legacy layers' reference results; helpers that interrupt or corrupt a
chosen training batch. Subprocesses import this tree's packages (PYTHONPATH)."""

import importlib.util
import json
import os
import pathlib
import signal

import numpy as np
import pytest

from experiments.harness import entry, startup
from zoo.data import FILES, DataSet, write_idx

tf = startup.import_tensorflow()  # as the experiments do: without its start-up lines

from zoo.data.batches import GraphBatches  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
SHARED_MNIST = REPO.parent / "shared" / "data" / "mnist"
FASHION_MNIST = pathlib.Path("/usr/share/datasets/fashion-mnist")

# A subprocess running a script file has only the script's directory on sys.path, and
# would import the editable install's checkout (another worktree) instead of this one.
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(REPO), os.environ.get("PYTHONPATH")])
)


def pytest_configure(config):
    """SIGINT as an interactive shell leaves it, in the main process and in each xdist
    worker: a test run started as a shell's background job (as CI's may be) inherits
    SIGINT ignored, and the tests of Ctrl-C, and the children they start, would never
    see it."""
    del config
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def graph():
    """A new graph as the default for the test's duration."""
    with tf.Graph().as_default() as g:
        yield g


# The mark of every test that reads legacy_files: one xdist group, one subprocess.
LEGACY_REFERENCE = pytest.mark.xdist_group("legacy_reference")


@pytest.fixture(scope="session")
def legacy_files(tmp_path_factory):
    """``{part: file}`` of what TensorFlow's own legacy layers, shim and cells compute,
    from one ``tf_keras`` subprocess per test process (:mod:`tests.legacy_reference`):
    mark its tests ``LEGACY_REFERENCE``, and ``make test`` starts it once."""
    if importlib.util.find_spec("tf_keras") is None:
        pytest.skip("tf_keras is not installed (pip install -e '.[dev]')")
    from tests import legacy_reference  # noqa: PLC0415  (imports layers.tf1)

    return legacy_reference.run(tmp_path_factory.mktemp("legacy"))


@pytest.fixture(scope="session")
def legacy_reference(legacy_files):
    """What TensorFlow's own ``tf.compat.v1.layers`` and its shim compute
    (``tests/tf1_programs.py``): ``{key: array}``."""
    return dict(np.load(legacy_files["layers"]))


def trainable_names():
    """The sorted names (``scope/W:0``) of the default graph's trainable variables."""
    return sorted(v.name for v in tf.compat.v1.trainable_variables())


def variable_names():
    """The sorted op names (``scope/W``) of the default graph's global variables."""
    return sorted(v.op.name for v in tf.compat.v1.global_variables())


def make_idx_dir(directory, n_train, n_test, seed=0, gz=True):
    """Writes the four IDX files of a small synthetic MNIST-like set.

    Each class is a distinct bright stripe pattern plus noise, so a classifier
    can learn it. Returns the directory.
    """
    rng = np.random.default_rng(seed)
    suffix = ".gz" if gz else ""
    for split, n in (("train", n_train), ("test", n_test)):
        if n == 0:
            continue
        labels = rng.integers(0, 10, size=n).astype(np.uint8)
        images = rng.integers(0, 60, size=(n, 28, 28)).astype(np.uint8)
        for i, label in enumerate(labels):
            images[i, 2 * label : 2 * label + 3, :] = 255
        images_name, labels_name = FILES[split]
        write_idx(os.path.join(directory, images_name + suffix), images)
        write_idx(os.path.join(directory, labels_name + suffix), labels)
    return str(directory)


@pytest.fixture
def tiny_data_dir(tmp_path):
    """A directory of small synthetic IDX files: 1,200 train, 300 test."""
    directory = tmp_path / "data"
    directory.mkdir()
    return make_idx_dir(directory, 1200, 300)


@pytest.fixture
def mnist_test_dir():
    """The real MNIST test split in ../shared/data/mnist, or a skip."""
    if not (SHARED_MNIST / "t10k-images-idx3-ubyte.gz").exists():
        pytest.skip(f"real MNIST test split not found at {SHARED_MNIST}")
    return str(SHARED_MNIST)


@pytest.fixture
def fashion_dir():
    """The full real Fashion-MNIST (`apt-get install dataset-fashion-mnist`), or a skip."""
    if not any(
        (FASHION_MNIST / f"t10k-images-idx3-ubyte{s}").exists() for s in ("", ".gz")
    ):
        pytest.skip(f"real Fashion-MNIST not found at {FASHION_MNIST}")
    return str(FASHION_MNIST)


def edit_run_record(run_dir, **flags):
    """Changes flags in a run's run.json (as if it had been started with them)."""
    path = os.path.join(run_dir, "run.json")
    with open(path) as f:
        record = json.load(f)
    record["flags"].update(flags)
    with open(path, "w") as f:
        json.dump(record, f)


def on_batch(monkeypatch, call, action):
    """Trains on ``action(images)`` at batch number ``call`` (from 0, both loops)."""
    real, calls = DataSet.next_batch, []

    def next_batch(self, batch_size):
        images, labels = real(self, batch_size)
        calls.append(batch_size)
        return (action(images) if len(calls) - 1 == call else images), labels

    monkeypatch.setattr(DataSet, "next_batch", next_batch)


def raising(signum):
    """Returns a batch action that sends ``signum`` to this process."""

    def action(images):
        signal.raise_signal(signum)
        return images

    return action


def on_graph_batch(monkeypatch, call, action):
    """Runs ``action(None)`` before GraphBatches run ``call`` (from 0, all loops)."""
    real, calls = GraphBatches.next_feed, []

    def next_feed(self, session, count=1):
        calls.append(None)
        if len(calls) - 1 == call:
            action(None)
        return real(self, session, count)

    monkeypatch.setattr(GraphBatches, "next_feed", next_feed)


def refused_in_one_line(main, argv, capsys):
    """Runs an experiment's ``main`` as its command does; returns its one error line.

    Asserts the exit code 2 (bad input) and that stderr holds one ``error: ``
    line (argparse's own errors put the program's name before it).
    """
    with pytest.raises(SystemExit) as exit_info:
        entry.entry_point(main, argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "error: " in err, err
    return err


def refused_before_any_work(main, flags, tmp_path, capsys, data_dir=None):
    """Runs ``main`` with bad ``flags``; returns its one error line, as
    :func:`refused_in_one_line`.

    The run directory would be ``tmp_path/run`` and is asserted not to exist
    (nothing started); the data comes from ``data_dir``, else a missing directory.
    """
    out = tmp_path / "run"
    argv = ["--data-dir", data_dir or str(tmp_path / "nowhere"), "--out", str(out), *flags]
    err = refused_in_one_line(main, argv, capsys)
    assert not out.exists()
    return err
