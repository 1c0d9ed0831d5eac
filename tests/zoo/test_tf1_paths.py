"""TF1 code by path: ``python -m zoo.compat run`` and ``install(tf1_paths=...)`` run
a TF1 program we write here (several files, a package with relative imports,
``tf.app.run()``, ``tf.contrib``, ``tf.layers``, ``tensorflow.python.ops.rnn_cell``)
with no edit; ``check`` reports its names; the wheel holds the library only.

Each runner subprocess costs a TensorFlow start, so one program checks much."""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import traceback
import zipfile

import numpy as np
import pytest
import tensorflow as tf

import zoo.compat
from layers import tf1
from layers.errors import ZooError
from tests import forkserver
from zoo.compat import check, tf1_paths

REPO = pathlib.Path(__file__).resolve().parents[2]

PROGRAM = {
    "main.py": '''
        """A TF1 program's entry: flags, tf.app.run(), a sibling module, a package."""
        import json
        import sys

        import numpy as np
        import tensorflow as tf
        import tensorflow.contrib.slim as slim
        from tensorflow.contrib import layers as contrib_layers

        import model
        from trainer import task

        flags = tf.app.flags
        flags.DEFINE_integer("units", 3, "hidden units")
        flags.DEFINE_integer("exit_code", 0, "the status to exit with")
        FLAGS = flags.FLAGS


        def main(_):
            x = tf.placeholder(tf.float32, [None, 4], name="x")
            hidden, last = model.build(x, FLAGS.units)
            logits = slim.fully_connected(
                hidden, 2, activation_fn=None, scope="logits",
                weights_initializer=contrib_layers.xavier_initializer(seed=1))
            loss = task.loss(logits)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                values = sess.run({"hidden": hidden, "last": last, "loss": loss},
                                  {x: np.ones((2, 4))})
            print("RESULT " + json.dumps({
                "variables": [v.name for v in tf.global_variables()],
                "hidden": values["hidden"].tolist(), "last": values["last"].tolist(),
                "argv": sys.argv, "file": __file__, "path0": sys.path[0],
                "eager": tf.executing_eagerly(), "tf": tf.__name__,
                "installed_sees_tf2": sys.modules["layers.tf1.core"].tf.__name__,
            }), flush=True)
            sys.exit(FLAGS.exit_code)


        if __name__ == "__main__":
            tf.app.run()
    ''',
    "model.py": """
        import tensorflow as tf
        from tensorflow.python.ops import rnn_cell


        def build(x, units):
            hidden = tf.layers.dense(x, units, activation=tf.nn.relu, name="dense",
                                     kernel_initializer=tf.constant_initializer(0.1),
                                     bias_initializer=tf.constant_initializer(0.2))
            cell = rnn_cell.LSTMCell(units, initializer=tf.constant_initializer(0.05))
            outputs, _ = tf.nn.dynamic_rnn(cell, tf.expand_dims(x, 1), dtype=tf.float32,
                                           scope="rnn")
            return hidden, outputs[:, -1]
    """,
    "trainer/__init__.py": "",
    "trainer/task.py": """
        import tensorflow as tf
        from . import losses
        from .losses import check


        def loss(logits):
            check(logits)
            return losses.mean_square(logits)
    """,
    "trainer/losses.py": """
        import os

        import tensorflow as tf


        def check(logits):
            if os.environ.get("TF1_TEST_FAIL"):
                raise ValueError("losses.check: asked to fail")


        def mean_square(logits):
            return tf.reduce_mean(tf.square(logits))
    """,
}


def write(folder, files):
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return folder


def line_of(path, text):
    """The 1-based line of ``path`` holding ``text``."""
    lines = path.read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line)


def expected(units):
    """``(hidden, last)`` of the program on ones((2, 4)), by numpy."""
    hidden = np.maximum(np.ones((2, 4)) @ np.full((4, units), 0.1) + 0.2, 0)
    sigmoid = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    gate = 4 * 0.05  # x = ones(4), h = 0: every gate's input; bias 0
    c = sigmoid(gate) * np.tanh(gate)  # the forget gate reads c = 0
    return hidden, np.full((2, units), sigmoid(gate) * np.tanh(c))


def zoo_tf1(*args, cwd, env=None, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "zoo.compat", *args], cwd=cwd, capture_output=True,
        text=True, env={**os.environ, **(env or {})}, timeout=300, **kwargs)  # fmt: skip


def traceback_frames(stderr):
    """``[(file, line)]`` of the last traceback in ``stderr`` (none: [])."""
    start = stderr.rfind("Traceback (most recent call last):")
    if start < 0:
        return []
    block = stderr[start:]
    return [(line.split('"')[1], int(line.split(", line ")[1].split(",")[0]))
            for line in block.splitlines() if line.startswith('  File "')]  # fmt: skip


@pytest.fixture
def program(tmp_path):
    return write(tmp_path / "tf1_program", PROGRAM)


@pytest.mark.slow
def test_run_gives_the_script_tf1_and_python_s_argv_file_path_and_exit_status(program):
    done = zoo_tf1("run", "main.py", "--units", "5", "--exit_code", "3", cwd=program)
    assert done.returncode == 3, done.stderr[-3000:]
    found = json.loads(done.stdout.split("RESULT ", 1)[1])
    assert found["variables"] == [
        "dense/kernel:0", "dense/bias:0", "rnn/lstm_cell/kernel:0", "rnn/lstm_cell/bias:0",
        "logits/weights:0", "logits/biases:0"]  # fmt: skip
    hidden, last = expected(5)
    np.testing.assert_allclose(found["hidden"], hidden, rtol=1e-6)
    np.testing.assert_allclose(found["last"], last, rtol=1e-6)
    assert found["argv"] == ["main.py", "--units", "5", "--exit_code", "3"]
    assert found["file"] == str(program / "main.py")
    assert found["path0"] == str(program)
    assert found["eager"] is False and found["tf"] == "tensorflow.compat.v1"
    assert found["installed_sees_tf2"] == "tensorflow"  # layers.tf1.core's own tf


@pytest.mark.slow
def test_run_m_prints_python_s_traceback_of_the_files_own_lines(program):
    done = zoo_tf1("run", "-m", "main", cwd=program, env={"TF1_TEST_FAIL": "1"})
    assert done.returncode == 1
    assert done.stderr.rstrip().endswith("ValueError: losses.check: asked to fail")
    frames = traceback_frames(done.stderr)
    losses = program / "trainer" / "losses.py"
    main = program / "main.py"
    assert frames[0] == (str(main), line_of(main, "    tf.app.run()"))
    assert frames[-2:] == [
        (str(program / "trainer" / "task.py"), line_of(program / "trainer" / "task.py",
                                                       "check(logits)")),
        (str(losses), line_of(losses, "raise ValueError")),
    ]  # fmt: skip
    assert not [file for file, _ in frames if "zoo/compat" in file or "runpy" in file]


@pytest.mark.slow
def test_run_dies_of_sigint_as_python_does(tmp_path):
    write(tmp_path, {"sleepy.py": """
        import time
        print("ready", flush=True)
        time.sleep(60)
    """})  # fmt: skip
    ends = []
    for command in (["-m", "zoo.compat", "run", "sleepy.py"], ["sleepy.py"]):
        process = subprocess.Popen([sys.executable, *command], cwd=tmp_path,
                                   stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)  # fmt: skip
        assert process.stdout.readline() == "ready\n"
        time.sleep(1)  # into time.sleep(60), past the print's last bytecode
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        ends.append((process.returncode, traceback_frames(stderr),
                     (stderr.rstrip().splitlines() or [""])[-1]))  # fmt: skip
    assert ends[0] == ends[1] == (-signal.SIGINT, [(str(tmp_path / "sleepy.py"), 3)],
                                  "KeyboardInterrupt")  # fmt: skip


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "missing.py"], "missing.py: expected a Python script, found nothing"),
        (["run", "trainer"], "trainer: expected a Python script, found a folder"),
        (["run", "--tf1-path", "nowhere", "main.py"],
         "zoo-tf1: nowhere: expected a folder of TF1 code (tf1_paths, --tf1-path), found "
         "nothing"),
        (["run", "-m", "nowhere.main"], "-m nowhere.main: expected a module importable"),
        (["run"], "zoo-tf1: expected a script, found nothing"),
        (["check", "missing"], "missing: expected a folder of Python code, found nothing"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_writes_nothing(program, args, message):
    before = sorted(program.rglob("*"))
    done = zoo_tf1(*args, cwd=program)
    assert done.returncode == 2 and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert sorted(program.rglob("*")) == before


def test_python_2_syntax_is_python_s_own_syntax_error(tmp_path):
    write(tmp_path, {"old.py": 'import tensorflow as tf\nprint "hello"\n'})
    ours = zoo_tf1("run", "old.py", cwd=tmp_path)
    python = subprocess.run([sys.executable, "old.py"], cwd=tmp_path, capture_output=True,
                            text=True)  # fmt: skip
    assert (ours.returncode, ours.stderr) == (python.returncode, python.stderr)
    assert "SyntaxError: Missing parentheses" in ours.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.py"]


@pytest.fixture
def importable(tmp_path, monkeypatch):
    """A folder on sys.path; the modules imported from it are forgotten after."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if getattr(sys.modules[name], "__file__", "") and str(tmp_path) in str(
                sys.modules[name].__file__):  # fmt: skip
            del sys.modules[name]


@pytest.fixture(autouse=True)
def uninstalled():
    zoo.compat.uninstall()
    yield
    zoo.compat.uninstall()


def test_install_tf1_paths_gives_modules_under_them_tf1_and_uninstall_puts_back(importable):
    write(importable, {"old/__init__.py": "", **{f"old/{name}": text for name, text in
                                                  PROGRAM.items() if name != "main.py"}})
    write(importable, {"new_code.py": "import tensorflow as tf\n"})
    meta_path = list(sys.meta_path)
    changed = zoo.compat.install(tf1_paths=[importable / "old"])
    assert changed[-1] == f"sys.meta_path: TF1 code under {importable / 'old'}"
    assert zoo.compat.install(tf1_paths=[importable / "old"]) == []
    with tf.Graph().as_default():
        from old import model
        from old.trainer import task

        x = tf.compat.v1.placeholder(tf.float32, [None, 4])
        hidden, last = model.build(x, 3)
        loss = task.loss(hidden)
        names = [v.name for v in tf.compat.v1.global_variables()]
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            found = sess.run([hidden, last, loss], {x: np.ones((2, 4))})
    assert model.tf is tf.compat.v1 and task.losses.tf is tf.compat.v1
    assert model.rnn_cell is tf1.rnn_cell
    assert names == ["dense/kernel:0", "dense/bias:0", "rnn/lstm_cell/kernel:0",
                     "rnn/lstm_cell/bias:0"]  # fmt: skip
    np.testing.assert_allclose(found[0], expected(3)[0], rtol=1e-6)
    np.testing.assert_allclose(found[1], expected(3)[1], rtol=1e-6)
    np.testing.assert_allclose(found[2], np.mean(expected(3)[0] ** 2), rtol=1e-6)
    import new_code  # outside the TF1 folder: TensorFlow 2's API

    assert new_code.tf is tf and hasattr(tf, "function")
    assert not tf.__internal__.tf2.enabled()  # the first TF1 import turned v2 off
    assert zoo.compat.uninstall()[0] == changed[-1]
    assert sys.meta_path == meta_path
    # eager too where this process never used the global graph: the next test
    assert tf.__internal__.tf2.enabled() and tf.compat.v1.resource_variables_enabled()


def test_uninstall_turns_eager_on_again_unless_the_global_graph_was_used(tmp_path):
    write(tmp_path, {"old/__init__.py": "", "old/a.py": "import tensorflow as tf\n",
                     "old/b.py": "import tensorflow as tf\n"})  # fmt: skip
    code = textwrap.dedent("""
        import sys, warnings, tensorflow as tf, zoo.compat
        sys.path.insert(0, sys.argv[1])
        zoo.compat.install(tf1_paths=[sys.argv[1] + "/old"])
        import old.a
        off = tf.executing_eagerly()
        zoo.compat.uninstall()
        print("CLEAN", off, tf.executing_eagerly(), tf.__internal__.tf2.enabled())
        zoo.compat.install(tf1_paths=[sys.argv[1] + "/old"])
        import old.b
        tf.constant(1.0)  # in graph mode's global default graph
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            zoo.compat.uninstall()
        print("USED", tf.executing_eagerly(), tf.__internal__.tf2.enabled(),
              tf.compat.v1.resource_variables_enabled(), caught[-1].message)
    """)
    child = forkserver.popen([sys.executable, "-c", code, str(tmp_path)], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = child.communicate(timeout=120)
    lines = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    assert lines["CLEAN"] == "False True True", err[-2000:]
    assert lines["USED"].startswith("False True True zoo.compat.uninstall: expected to "
                                    "turn eager execution on again, found TensorFlow "
                                    "refusing (tf.enable_eager_execution must be called "
                                    "at program startup.")


def test_tf1_imports_resolve_as_tf_1_15_gave_them(importable):
    write(importable, {"names.py": """
        import tensorflow
        import tensorflow.contrib.slim as slim
        import tensorflow.python.ops.rnn_cell_impl as rnn_cell_impl
        import tensorflow.compat.v1 as upgraded
        from tensorflow import contrib
        from tensorflow.contrib.rnn import LSTMCell
        from tensorflow.python.layers import core, utils
        import tensorflow.python.layers.utils as layers_utils
        from tensorflow.python.framework import ops
        from tensorflow.python.estimator.model_fn import EstimatorSpec
        from tensorflow.keras import layers as keras_layers
        import tensorflow.python.keras as python_keras
    """})  # fmt: skip
    zoo.compat.install(tf1_paths=[importable])
    import names

    assert names.tensorflow is tf.compat.v1 and names.upgraded is tf.compat.v1
    assert names.slim.fully_connected is tf.compat.v1.contrib.slim.fully_connected
    assert names.rnn_cell_impl is tf1.rnn_cell and names.LSTMCell is tf1.rnn_cell.LSTMCell
    assert names.contrib is tf.compat.v1.contrib and names.core is tf1.core
    assert names.utils is names.layers_utils  # TF 2.21 kept TF 1.15's module
    assert names.utils.normalize_tuple(3, 2, "strides") == (3, 3)
    assert names.utils.conv_output_length(28, 5, "valid", 2) == 12
    assert names.ops is sys.modules["tensorflow.python.framework.ops"]
    assert names.EstimatorSpec is zoo.compat.estimator.EstimatorSpec
    assert names.keras_layers is tf.compat.v1.keras.layers  # whatever compat.v1 holds
    assert names.python_keras is tf.compat.v1.keras


def test_a_tf1_module_s_traceback_shows_its_own_lines_only(importable):
    write(importable, {"failing.py": """
        import tensorflow as tf


        def fail():
            return tf.contrib.rnn.GRUBlockCell(3)
    """})  # fmt: skip
    zoo.compat.install(tf1_paths=[importable])
    import failing

    with pytest.raises(zoo.compat.contrib.ContribError, match="use tf.contrib.rnn.GRUCell"):
        failing.fail()
    try:
        failing.fail()
    except AttributeError as err:
        frames = traceback.extract_tb(err.__traceback__)
    assert (frames[1].filename, frames[1].lineno) == (str(importable / "failing.py"), 5)
    assert tf1_paths.__file__ not in [frame.filename for frame in frames]


def test_a_tf2_program_is_warned_once_naming_file_and_line(importable):
    write(importable, {"eager1.py": "import tensorflow as tf\nimport keras\n",
                       "eager2.py": "import tensorflow as tf\nf = tf.function\n"})
    tf1_paths.Finder.warned = False
    zoo.compat.install(tf1_paths=[importable])
    with pytest.warns(UserWarning, match="a TF1 program, found import keras") as warned:
        import eager1  # noqa: F401
        import eager2  # noqa: F401
    (warning,) = [w for w in warned if "TF1 program" in str(w.message)]
    assert (warning.filename, warning.lineno) == (str(importable / "eager1.py"), 2)


def test_installed_packages_under_a_tf1_path_stay_tensorflow_2_s():
    import sysconfig

    site_packages = sysconfig.get_paths()["purelib"]
    finder = tf1_paths.Finder([os.path.dirname(site_packages)])  # as a repo's own .venv
    assert type(finder.find_spec("tf_slim").loader) is not tf1_paths._Loader
    assert type(tf1_paths.Finder([site_packages + "/tf_slim"]).find_spec("tf_slim").loader
                ) is not tf1_paths._Loader  # fmt: skip


def test_install_refuses_a_tf1_path_that_is_no_folder_and_changes_nothing(tmp_path):
    with pytest.raises(ZooError, match=r"nowhere: expected a folder of TF1 code \(tf1_"
                       r"paths, --tf1-path\), found nothing"):  # fmt: skip
        zoo.compat.install(tf1_paths=[tmp_path / "nowhere"])
    assert zoo.compat.uninstall() == []


def test_check_reports_names_by_file_and_line_and_never_passes_a_failing_one(program):
    write(program, {"extra.py": """
        import tensorflow as tf
        import keras
        gan_loss = tf.contrib.gan.gan_loss
        dropout = tf.layers.dropout
    """, "py2.py": 'print "old"\n'})  # fmt: skip
    found = check.report(str(program))
    names = {entry["name"]: entry for entry in found["names"]}
    assert names["tensorflow.contrib.slim.fully_connected"]["uses"] == [
        f"main.py:{line_of(program / 'main.py', 'slim.fully_connected(')}"]
    assert names["tensorflow.python.ops.rnn_cell.LSTMCell"]["status"] == "provided"
    assert names["tensorflow.layers.dropout"]["status"] == "documented difference"
    assert names["tensorflow.layers.dropout"]["detail"] == "docs/tf1-layers.md#the-command"
    gan = names["tensorflow.contrib.gan"]
    assert gan["status"] == "not provided" and gan["uses"] == ["extra.py:3"]
    assert "tensorflow_gan" in gan["detail"]
    assert found["tf2"] == ["extra.py:2: import keras (Keras 3)"]
    assert found["unreadable"][0].startswith("py2.py:1: SyntaxError")
    assert found["verdict"].startswith("NOT all provided: 1 name(s) not provided and 1 ")
    for name in ("extra.py", "py2.py"):
        (program / name).unlink()
    clean = check.report(str(program))
    assert {e["status"] for e in clean["names"]} == {"provided"}
    assert clean["verdict"].startswith(f"every one of the {len(clean['names'])} TF 1.x")


def test_check_gives_the_upgrade_line_s_names_their_documented_differences(tmp_path):
    write(tmp_path, {"upgraded.py": """
        import tensorflow.compat.v1 as tf
        from tensorflow.compat.v1 import estimator as tf_estimator
        spec = tf_estimator.tpu.TPUEstimatorSpec
        run = tf.estimator.train_and_evaluate
        keep = tf.layers.dropout
    """})  # fmt: skip
    found = check.report(str(tmp_path))
    estimator = "docs/estimator.md#what-is-not-provided"
    assert {e["name"]: e["detail"] for e in found["names"]
            if e["status"] == "documented difference"} == {
        "tensorflow.compat.v1.estimator.tpu.TPUEstimatorSpec": estimator,
        "tensorflow.compat.v1.estimator.train_and_evaluate": estimator,
        "tensorflow.compat.v1.layers.dropout": "docs/tf1-layers.md#the-command",
    }  # fmt: skip


def test_check_reads_python_scripts_without_extension_as_zoo_tf1_runs_them(tmp_path):
    write(tmp_path, {
        "train": "#!/usr/bin/env python3\nimport tensorflow as tf\n"
                 "loss = tf.contrib.gan.gan_loss\n",
        "run": "#!/bin/sh\ntf.contrib.gan.gan_loss\n",
        "data": "import tensorflow as tf\ntf.contrib.gan.gan_loss\n",
    })  # fmt: skip
    found = check.report(str(tmp_path))
    assert found["files"] == 1
    assert [(e["name"], e["uses"]) for e in found["names"]] == [
        ("tensorflow.contrib.gan", ["train:3"])]  # fmt: skip


def test_the_wheel_installs_zoo_layers_and_the_console_script_only(tmp_path):
    source = tmp_path / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("zoo", "layers"):
        shutil.copytree(REPO / name, source / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "-q", "-w", str(tmp_path / "dist"), str(source)],
        check=True, capture_output=True, timeout=300)  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
        entry_points, metadata = (
            next(archive.read(name).decode() for name in archive.namelist()
                 if name.endswith(ending))
            for ending in ("entry_points.txt", "METADATA")
        )  # fmt: skip
    assert tops == {"zoo", "layers", f"{wheel.name.split('-py3')[0]}.dist-info"}
    assert "zoo-tf1 = zoo.compat.run:main" in entry_points
    # matplotlib only with the experiments: Keras 3 imports its pyplot wherever it is
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist")]
    assert all("extra ==" in line for line in requires if "matplotlib" in line)
    assert any("matplotlib" in line for line in requires)
