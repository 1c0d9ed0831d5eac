"""One conformance test over every experiment: a script gets all of it by having a row.

To add an experiment, add a row to :data:`EXPERIMENTS` (docs/adding-a-model.md shows
one). Every row is checked, with nothing written per experiment:

- ``--help`` (``python -m <module> --help``, through a small ``-c`` wrapper that
  reports what was imported) exits 0 with usage on stdout, nothing on stderr (no
  TensorFlow start-up line), and imports neither TensorFlow nor Keras;
- every flag is tried with hostile values for its kind (:data:`HOSTILE`): each is
  refused in one line (ZooError, or argparse's exit 2) before any work starts, that
  is before data is loaded, a run directory is made or a graph is built; the
  defaults do reach the work;
- a small run (the row's ``argv``, on tiny synthetic IDX files) exits 0 and writes
  ``results.json``, ``run.json`` and exactly the row's figures, as valid PNGs;
- the same run killed with SIGKILL (its whole process group) at a random point
  after its first checkpoint, then continued with ``--resume RUN_DIR``, ends with
  the uninterrupted run's ``results.json`` bit for bit, but for :data:`VOLATILE`
  keys. The uninterrupted run is the small run above. The point is drawn from a
  seeded RNG (:func:`kill_delay`; ``CONFORMANCE_KILL_SEED=N`` tries others) and
  printed (``-s`` or a failure shows it); a run that ends before its kill is run
  again with a shorter delay.

The runs are subprocesses with bounded waits (:data:`RUN_TIMEOUT`); no test
asserts a wall time. docs/adding-a-model.md is run too: its ``python`` blocks whose
first line is a ``# <path>`` comment are the files of a worked example (a builder, its
registration, a script, its row here), which goes through every check above as the
experiment ``experiments.halves``, so the page cannot rot.
"""

import argparse
import contextlib
import dataclasses
import importlib
import importlib.machinery
import json
import os
import pathlib
import pkgutil
import random
import re
import signal
import struct
import subprocess
import sys
import time
import types
import zlib

import pytest
import tensorflow as tf

import experiments
from experiments.harness import datasets, figures, flags, rundir
from layers.errors import ZooError
from tests import forkserver
from tests.conftest import make_idx_dir

REPO = pathlib.Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "adding-a-model.md"


@dataclasses.dataclass(frozen=True)
class Experiment:
    """A row of the registry.

    Attributes:
        module: the script's module, run as ``python -m <module>``.
        argv: flags of a run that takes seconds on tiny data (``{data}`` is the
            directory of the test's synthetic IDX files; ``--out`` is added); it
            checkpoints, so it is killed and resumed too. None: ``--help`` and the
            flags only, for the reason ``why``.
        figures: every PNG the run writes into its run directory.
        why: why a row with ``argv=None`` is not run here.
    """

    module: str
    argv: tuple | None = None
    figures: tuple = ()
    why: str = ""


TINY = ("--data-dir", "{data}", "--validation", "0", "--steps", "12")
CHECKPOINT_OFTEN = ("--checkpoint-every", "5")

# The registry: to add an experiment, add a row.
EXPERIMENTS = (
    Experiment(
        "experiments.autoencoder",
        argv=(*TINY, "--batch-size", "32", *CHECKPOINT_OFTEN),
        figures=("loss_curves.png", "reconstructions.png"),
    ),
    Experiment(
        "experiments.ensemble",
        argv=(*TINY, "--batch-size", "20", *CHECKPOINT_OFTEN),
        figures=("accuracy.png",),
    ),
    Experiment(
        "experiments.sweep",
        argv=("--data-dir", "{data}", "--validation", "200", "--steps", "12",
              "--batch-size", "32", "--hidden", "16", *CHECKPOINT_OFTEN),
        figures=("sweep.png",),
    ),
    Experiment(
        "experiments.snapshot",
        argv=("--data-dir", "{data}", "--steps", "12", "--batch-size", "32",
              "--hidden", "16", *CHECKPOINT_OFTEN),
        figures=("divergence.png",),
    ),
    Experiment(
        "experiments.eager_autoencoder",
        argv=("--data-dir", "{data}", "--validation", "100", "--steps", "12",
              "--batch-size", "32", *CHECKPOINT_OFTEN),
        figures=("loss_curves.png",),
    ),
    Experiment(
        "experiments.gan",
        argv=("--data-dir", "{data}", "--steps", "12", "--evals", "2", "--hidden", "16",
              "--samples", "50", "--classifier-steps", "10", "--batch-size", "16",
              "--architecture", "mlp", *CHECKPOINT_OFTEN),
        figures=("fcd.png", "coverage.png", "samples_shared.png", "samples_unshared.png"),
    ),
    Experiment(
        "experiments.siamese",
        argv=(*TINY, "--batch-size", "32", "--hidden", "16", "--embedding-size", "4",
              "--gallery", "100", *CHECKPOINT_OFTEN),
        figures=("loss_curves.png", "embedding.png"),
    ),
    Experiment(
        "experiments.rnn",
        argv=(*TINY, "--batch-size", "32", "--hidden", "8", "--time-steps", "2",
              *CHECKPOINT_OFTEN),
        figures=("loss_curves.png", "accuracy.png"),
    ),
    Experiment(
        "experiments.towers",
        argv=(*TINY, "--batch-size", "8", "--filters", "2,2",
              "--towers", "2", "--batch-norm", "sync",  # 2 towers of 4 examples
              *CHECKPOINT_OFTEN),
        figures=("loss_curves.png", "accuracy_and_speed.png"),
    ),
    Experiment(
        "experiments.dqn",
        argv=("--variant", "polyak", "--seeds", "2", "--jobs", "2", "--steps", "30",
              "--learning-starts", "40", "--buffer-size", "500", "--hidden", "16,16",
              "--train-every", "16", "--updates-per-run", "8",  # checkpoints (every
              "--profile-calls", "0", "--checkpoint-every", "10"),  # 10) inside bursts
        figures=("returns.png",),
    ),
    Experiment(
        "experiments.ps",
        why="a parameter-server cluster of processes talking gRPC: "
        "tests/experiments/test_ps.py runs it",
    ),
    Experiment("experiments.bench.speed", why="a benchmark: measures, never resumes"),
    Experiment("experiments.bench.state", why="a benchmark: measures, never resumes"),
    Experiment("experiments.bench.gradients", why="a benchmark: measures, never resumes"),
    Experiment("experiments.bench.towers", why="a benchmark: measures, never resumes"),
    Experiment("experiments.bench.dqn", why="a benchmark: measures, never resumes"),
    Experiment("experiments.bench.canned", why="a benchmark: measures, never resumes"),
    Experiment("experiments.bench.ps", why="a benchmark: measures, never resumes"),
    Experiment("experiments.bench.tf1_keras", why="a benchmark: measures, never resumes"),
)  # fmt: skip

# Keys of results.json (at any depth, matched whole) that a rerun may change and the
# comparison after a resume drops, each with why.
VOLATILE = {
    r"machine": "the computer and its load average when the (last) process ended",
    r"command|argv": "how the last process was started: a resume is `--resume DIR` alone",
    r".*seconds.*|.*_s|.*_ms": "wall-clock times (of the last process after a resume)",
    r".*per_second|.*speedup.*": "speeds, and ratios of wall-clock times",
}
RUN_TIMEOUT = 300  # seconds any one run may take before it is stopped and the test fails
# With the module's name, seeds the delay before the SIGKILL; set it to try others.
KILL_SEED = int(os.environ.get("CONFORMANCE_KILL_SEED", "20260522"))
KILL_ATTEMPTS = 4  # each after a shorter delay, the last right at the first checkpoint
POLL = 0.02  # seconds between looks at a running process
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MARK = "conformance imported: "

# Runs ``python -m <module> ARGS`` as runpy does, then prints whether TensorFlow and
# Keras were imported. Modules of the worked example (docs/adding-a-model.md) are
# found in their files, where the repository would hold them.
WRAPPER = f"""
import importlib.abc, importlib.util, json, runpy, sys
files, module, *argv = sys.argv[1:]
files = json.loads(files)

class Example(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in files:
            return importlib.util.spec_from_file_location(name, files[name])
        return None

sys.meta_path.insert(0, Example())
sys.argv = [module, *argv]
try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
finally:
    imported = {{name: name in sys.modules for name in ("tensorflow", "keras")}}
    print({MARK!r} + json.dumps(imported), flush=True)
"""


# docs/adding-a-model.md: the worked example -------------------------------------------


def doc_files():
    """The page's ``python`` blocks that start with ``# <path>``: {path: code}."""
    found = {}
    for block in re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S):
        first, _, code = block.partition("\n")
        match = re.fullmatch(r"# (\S+)( \(.*\))?", first)
        if match:
            found[match.group(1)] = code
    return found


def doc_make_target():
    """The page's ``make`` block (the Makefile target)."""
    (block,) = re.findall(r"```make\n(.*?)```", DOC.read_text(), flags=re.S)
    return block


DOC_FILES = doc_files()
EXAMPLE_MODULES = {
    path.removesuffix(".py").replace("/", "."): code
    for path, code in DOC_FILES.items()
    if path.startswith(("experiments/", "zoo/")) and not path.endswith("__init__.py")
}


def example_row():
    """The registry row the page shows, evaluated."""
    row = eval(  # noqa: S307 (our own documentation)
        DOC_FILES["tests/experiments/test_conformance.py"], {"Experiment": Experiment}
    )
    return row[0] if isinstance(row, tuple) else row


EXAMPLE = example_row()
ROWS = (*EXPERIMENTS, EXAMPLE)
RUN_ROWS = tuple(row for row in ROWS if row.argv is not None)


def load_example_module(name):
    """Returns a module of the worked example, executed from the page's code."""
    module = types.ModuleType(name)
    module.__file__ = f"<docs/adding-a-model.md: {name}>"
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    code = compile(EXAMPLE_MODULES[name], module.__file__, "exec")
    exec(code, module.__dict__)  # noqa: S102 (our own documentation)
    return module


def write_example(directory):
    """Writes the example's modules under ``directory``; returns {module: file}."""
    files = {}
    for name, code in EXAMPLE_MODULES.items():
        path = pathlib.Path(directory, *name.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code)
        files[name] = str(path)
    return files


def load(row):
    """The row's module, imported (the worked example from the page)."""
    if row.module in EXAMPLE_MODULES:
        return load_example_module(row.module)
    return importlib.import_module(row.module)


# Running a script in a subprocess ----------------------------------------------------


@pytest.fixture(scope="module")
def example_files(tmp_path_factory):
    """The worked example's modules as files: {module: path}."""
    return write_example(tmp_path_factory.mktemp("adding-a-model"))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """Tiny synthetic IDX files (1,200 training, 300 test images), for every run."""
    return make_idx_dir(tmp_path_factory.mktemp("data"), 1200, 300)


def environment():
    """This process's environment without ZOO_DATA_DIR and TF_CPP_MIN_LOG_LEVEL.

    The scripts must quiet TensorFlow themselves (tests/conftest.py sets the level).
    """
    unset = ("ZOO_DATA_DIR", "TF_CPP_MIN_LOG_LEVEL")
    return {key: value for key, value in os.environ.items() if key not in unset}


class Run:
    """A script run in a subprocess and a process group of its own, logs in files.

    Args:
        row: the registry row.
        argv: the script's arguments.
        where: a new directory for the logs (and ``out``, the run directory).
        files: the worked example's {module: file}.
    """

    def __init__(self, row, argv, where, files):
        where.mkdir(parents=True)
        self.out, self.where = where / "out", where
        self.stdout, self.stderr = where / "stdout.txt", where / "stderr.txt"
        command = [sys.executable, "-c", WRAPPER, json.dumps(files), row.module, *argv]
        with open(self.stdout, "wb") as out, open(self.stderr, "wb") as err:
            self.process = forkserver.popen(
                command,
                cwd=REPO,
                env=environment(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        self.started = time.monotonic()
        # Seconds from the start to the first and to the last checkpoint written.
        self.first_checkpoint = self.last_checkpoint = None
        self._checkpoints = set()

    def poll(self):
        """Returns the exit code or None; notes when checkpoints were written."""
        code = self.process.poll()
        checkpoints = self.checkpoints()
        if checkpoints - self._checkpoints:
            self.last_checkpoint = time.monotonic() - self.started
            self.first_checkpoint = self.first_checkpoint or self.last_checkpoint
            self._checkpoints = checkpoints
        return code

    def checkpoints(self):
        """The run's checkpoint files (not temporary ones) as (name, mtime, size)."""
        directory = self.out / "checkpoints"
        found = set()
        for entry in os.scandir(directory) if directory.is_dir() else ():
            if entry.name.endswith(".npz") and not entry.name.startswith(".tmp"):
                with contextlib.suppress(FileNotFoundError):
                    stat = entry.stat()
                    found.add((entry.name, stat.st_mtime_ns, stat.st_size))
        return found

    def checkpointed(self):
        """True once a checkpoint has been written."""
        return self.first_checkpoint is not None

    def wait(self, until=lambda run: False):
        """Polls until the process exits or ``until(self)``; bounded by RUN_TIMEOUT.

        Returns:
            The exit code, or None when ``until`` came true first.
        """
        while (code := self.poll()) is None:
            if until(self):
                return None
            if time.monotonic() - self.started > RUN_TIMEOUT:
                self.kill()
                pytest.fail(f"{self.where.name}: still running after {RUN_TIMEOUT} s\n"
                            f"{self.logs()}")  # fmt: skip
            time.sleep(POLL)
        return code

    def kill(self):
        """SIGKILLs the run's process group (worker processes too); returns the code."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return self.process.wait(timeout=60)

    def logs(self, lines=30):
        """The last lines of the run's stdout and stderr, for a failure message."""
        tails = []
        for path in (self.stdout, self.stderr):
            text = path.read_text(errors="replace").splitlines()[-lines:]
            tails.append(f"--- {path.name}\n" + "\n".join(text))
        return "\n".join(tails)


def script_argv(row, data_dir):
    return [arg.format(data=data_dir) for arg in row.argv]


def finish(run, what):
    """Waits for ``run`` to end; fails with its logs unless it exited 0."""
    code = run.wait()
    assert code == 0, f"{what}: exit status {code}\n{run.logs()}"
    return run


@dataclasses.dataclass
class Reference:
    """The uninterrupted small run of a row."""

    row: Experiment
    run: Run
    seconds: float  # from the start to the exit
    results: dict


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(row, id=row.module, marks=pytest.mark.xdist_group(row.module))
        for row in RUN_ROWS
    ],
)
def reference(request, tmp_path_factory, data_dir, example_files):
    """Each runnable row's small uninterrupted run, shared by its quick and resume tests
    (one xdist group per row: under ``make test`` both run on the worker that made it)."""
    row = request.param
    where = tmp_path_factory.mktemp(row.module.replace(".", "_")) / "uninterrupted"
    argv = script_argv(row, data_dir)
    run = finish(Run(row, [*argv, "--out", str(where / "out")], where, example_files),
                 f"{row.module} {' '.join(argv)}")  # fmt: skip
    seconds = time.monotonic() - run.started
    results = json.loads((run.out / "results.json").read_text())
    return Reference(row, run, seconds, results)


# Comparing results -------------------------------------------------------------------


def volatile(key):
    return any(re.fullmatch(pattern, key) for pattern in VOLATILE)


def stable(value):
    """``value`` without the VOLATILE keys of its dicts, at any depth."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if not volatile(k)}
    if isinstance(value, list):
        return [stable(item) for item in value]
    return value


def differences(expected, found, path=""):
    """Where the resumed run's results differ from the uninterrupted run's (as JSON)."""
    if isinstance(expected, dict) and isinstance(found, dict):
        found_in = {key: "uninterrupted" for key in expected} | {
            key: "resumed" for key in found
        }
        return [
            difference
            for key in sorted(found_in)
            for difference in (
                differences(expected[key], found[key], f"{path}/{key}")
                if key in expected and key in found
                else [f"{path}/{key}: only in the {found_in[key]} run"]
            )
        ]
    if (
        isinstance(expected, list)
        and isinstance(found, list)
        and len(expected) == len(found)
    ):
        return [d for i, pair in enumerate(zip(expected, found, strict=True))
                for d in differences(*pair, f"{path}[{i}]")]  # fmt: skip
    if json.dumps(expected) != json.dumps(found):
        return [f"{path}: {json.dumps(expected)[:80]} != {json.dumps(found)[:80]}"]
    return []


def assert_png(path):
    """Asserts ``path`` is a whole PNG: signature, IHDR first, every CRC, IEND last."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path.name}: not a PNG"
    position, chunks = 8, []
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        (crc,) = struct.unpack(">I", data[position + 8 + length : position + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"{path.name}: bad CRC in {kind!r}"
        chunks.append(kind)
        position += 12 + length
    assert chunks[0] == b"IHDR" and chunks[-1] == b"IEND" and b"IDAT" in chunks, path
    width, height = struct.unpack(">II", data[16:24])
    assert width > 0 and height > 0, path


# --help: fast and quiet ---------------------------------------------------------------


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.module)
def test_help_is_quiet_and_imports_no_tensorflow(row, example_files):
    result = subprocess.run(
        [sys.executable, "-c", WRAPPER, json.dumps(example_files), row.module, "--help"],
        cwd=REPO,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    usage, _, imported = result.stdout.rpartition(MARK)
    assert result.returncode == 0, result.stderr
    assert usage.startswith("usage: ") and "--help" in usage, result.stdout
    assert result.stderr == ""
    assert json.loads(imported) == {"tensorflow": False, "keras": False}


# Every flag checked before any work --------------------------------------------------

HOSTILE = {
    "int": ["-1", "ten", "", " ", "1.5", "nan", "4294967296", "99999999999999999999"],
    "float": ["nan", "inf", "-inf", "-1", "1e300", "ten", "", " "],
    "numbers": ["", " ", "nan", "inf", "-1", "a,b", "1,,2"],
    "text": ["", " "],
    "choice": ["nonsense", ""],
    "directory": ["", "{file}", "{tmp}/absent"],
    "new directory": ["", "{file}", "{file}/below"],
    "new file": ["", "{tmp}", "{tmp}/absent/x.json"],
}
# Flags that must also refuse 0: every numeric flag but those that say 0 means
# something (a seed, "none", "TF's default", "skip", "always greedy", "no average").
ZERO = "0"
ZERO_MEANS_SOMETHING = {
    "seed", "validation", "warmup", "inter_op", "intra_op", "task_index",
    "max_restarts", "ps_steps", "tolerance", "gamma", "profile_calls", "learning_starts",
    "epsilon_start", "epsilon_end", "learning_rate_end", "average_decay",
}  # fmt: skip
MODULES = {row.module: load(row) for row in ROWS}


class WorkStarted(Exception):
    """Raised by the patched entry points of work: the flags were accepted."""


def kind(action):
    """The flag's kind: which row of HOSTILE applies."""
    paths = {
        flags.directory: "directory",
        flags.new_directory: "new directory",
        flags.new_file: "new file",
    }
    if action.check in paths:
        return paths[action.check]
    if action.choices is not None:
        return "choice"
    if action.type in (int, float):
        return action.type.__name__
    if isinstance(action.default, str) and re.fullmatch(r"[0-9.e,-]+", action.default):
        return "numbers"
    return "text"


def flag_cases():
    for name, module in MODULES.items():
        for action in module.build_parser()._actions:
            if action.nargs == 0 or not action.option_strings:
                continue  # --help, --quick, --overwrite...
            values = list(HOSTILE[kind(action)])
            if action.type in (int, float) and action.dest not in ZERO_MEANS_SOMETHING:
                values.append(ZERO)
            flag = action.option_strings[-1]
            for value in values:
                yield pytest.param(module, flag, value, id=f"{name} {flag}={value!r}")


@pytest.fixture
def no_work(monkeypatch):
    """Makes loading data, making a run directory or building a graph raise WorkStarted."""

    def started(*args, **kwargs):
        raise WorkStarted

    monkeypatch.delenv("ZOO_DATA_DIR", raising=False)
    monkeypatch.setattr(datasets, "load", started)
    monkeypatch.setattr(rundir.RunDir, "__init__", started)
    monkeypatch.setattr(tf.Graph, "__init__", started)


def discovered_experiments():
    """Every module of the experiments package with a ``main``."""
    found = set()
    for info in pkgutil.walk_packages(experiments.__path__, "experiments."):
        if hasattr(importlib.import_module(info.name), "main"):
            found.add(info.name)
    return found


def test_every_experiment_has_a_row():
    assert discovered_experiments() == {row.module for row in EXPERIMENTS}
    for row in ROWS:
        assert (row.argv is None) == bool(row.why), row.module
        assert isinstance(MODULES[row.module].build_parser(), argparse.ArgumentParser)


@pytest.mark.parametrize("module, flag, value", list(flag_cases()))
def test_hostile_flag_is_refused_before_any_work(
    module, flag, value, tmp_path, capsys, no_work
):
    file = tmp_path / "a_file"
    file.write_text("")
    value = value.format(tmp=tmp_path, file=file)
    with pytest.raises((ZooError, SystemExit)) as refusal:
        module.main([flag, value])
    if isinstance(refusal.value, SystemExit):
        assert refusal.value.code == 2
        assert capsys.readouterr().err.count("\n") == 1
    else:
        assert "\n" not in str(refusal.value) and "expected" in str(refusal.value)


@pytest.mark.parametrize("module", MODULES.values(), ids=list(MODULES))
def test_defaults_are_accepted(module, no_work):
    """The refusals are not of everything: the defaults reach the work."""
    with pytest.raises(WorkStarted):
        module.main([])


@pytest.mark.parametrize("row", RUN_ROWS, ids=lambda row: row.module)
def test_resume_refuses_another_experiments_run(row, tmp_path, data_dir):
    from experiments import autoencoder, gan

    other = gan if row.module == "experiments.autoencoder" else autoencoder
    run = str(tmp_path / "other")
    rundir.run_dir(flags.parse_args(other.build_parser(), ["--out", run]), "other")
    argv = ["--data-dir", data_dir] if "{data}" in row.argv else []
    with pytest.raises(
        ZooError, match=rf"expected a run of {row.module}, found a run of {other.__name__}"
    ):
        MODULES[row.module].main([*argv, "--resume", run])
    assert sorted(os.listdir(run)) == [".lock", "run.json"]  # nothing started there


def test_resume_refuses_an_empty_or_foreign_directory(tmp_path, no_work):
    from experiments import autoencoder

    with pytest.raises(ZooError, match=r"--resume : expected either|expected an existing"):
        autoencoder.main(["--resume", ""])
    with pytest.raises(ZooError, match=r"run.json: expected the run.json a run writes"):
        autoencoder.main(["--resume", str(tmp_path)])


# A small run writes its results, its record and its figures --------------------------


@pytest.mark.slow
def test_small_run_writes_results_record_and_figures(reference):
    row, out = reference.row, reference.run.out
    assert isinstance(reference.results, dict) and reference.results
    record = json.loads((out / "run.json").read_text())
    assert record["experiment"] == row.module and record["flags"]
    assert sorted(path.name for path in out.glob("*.png")) == sorted(row.figures)
    for name in row.figures:
        assert_png(out / name)


def test_figures_without_matplotlib_say_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    with pytest.raises(ZooError, match=r"expected matplotlib, found none installed; .*"
                                       r"pip install -e '\.\[experiments\]'"):  # fmt: skip
        figures.pyplot()


# Killed at a random point, resumed: the same results ---------------------------------


def kill_delay(reference):
    """Seconds after the first checkpoint to kill a run at, drawn with KILL_SEED.

    The point is in training (between the uninterrupted run's first and last
    checkpoints) or after it (evaluation, results, figures), each half the time.

    Returns:
        ``(delay, phase)``, phase one of "training", "after training".
    """
    rng = random.Random(f"{KILL_SEED} {reference.row.module}")
    first, last = reference.run.first_checkpoint, reference.run.last_checkpoint
    if rng.random() < 0.5:
        return rng.uniform(0, last - first), "training"
    return rng.uniform(last - first, reference.seconds - first), "after training"


def killed_after_first_checkpoint(row, argv, where, files, delay):
    """Starts a run and SIGKILLs it ``delay`` seconds after its first checkpoint.

    Returns:
        The killed :class:`Run`, or None when it ended before the kill.
    """
    run = Run(row, argv, where, files)
    if run.wait(until=Run.checkpointed) is not None:
        pytest.fail(f"{row.module}: ended before its first checkpoint\n{run.logs()}")
    deadline = time.monotonic() + delay
    if run.wait(until=lambda _: time.monotonic() >= deadline) is not None:
        return None  # ended before the kill
    code = run.kill()
    if code != -signal.SIGKILL:
        return None  # ended between the last look and the kill
    print(f"  killed with {len(run.checkpoints())} checkpoint files and "
          f"{', '.join(sorted(os.listdir(run.out)))} in the run directory")  # fmt: skip
    return run


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_results(reference, tmp_path, data_dir,
                                                 example_files):  # fmt: skip
    row, run = reference.row, reference.run
    delay, phase = kill_delay(reference)
    print(f"{row.module}: KILL_SEED {KILL_SEED}; the uninterrupted run wrote its "
          f"checkpoints from {run.first_checkpoint:.3f} s to {run.last_checkpoint:.3f} s "
          f"and ended at {reference.seconds:.3f} s; kill {phase}")  # fmt: skip
    argv = script_argv(row, data_dir)
    for attempt in range(1, KILL_ATTEMPTS + 1):
        where = tmp_path / f"attempt-{attempt}"
        print(f"  attempt {attempt}: SIGKILL {delay:.3f} s after the first checkpoint")
        killed = killed_after_first_checkpoint(
            row, [*argv, "--out", str(where / "out")], where, example_files, delay
        )
        if killed:
            break
        delay = delay / 4 if attempt < KILL_ATTEMPTS - 1 else 0.0
    else:
        pytest.fail(f"{row.module}: every run ended before its SIGKILL")
    resumed = Run(row, ["--resume", str(killed.out)], tmp_path / "resumed", example_files)
    finish(resumed, f"{row.module} --resume")
    found = json.loads((killed.out / "results.json").read_text())
    expected, found = stable(reference.results), stable(found)
    assert json.dumps(found, sort_keys=True) == json.dumps(expected, sort_keys=True), (
        "\n".join(differences(expected, found))
    )
    for name in row.figures:
        assert_png(killed.out / name)


# The worked example's other pieces ---------------------------------------------------


def test_the_page_registers_its_builder_and_shares_the_reader(monkeypatch):
    import zoo.models
    from zoo.sharing.inspect import inspect_model

    builder = load_example_module("zoo.models.halves")
    monkeypatch.setitem(sys.modules, "zoo.models.halves", builder)
    namespace = {**vars(zoo.models), "MODELS": dict(zoo.models.MODELS)}
    exec(DOC_FILES["zoo/models/__init__.py"], namespace)  # noqa: S102
    assert namespace["MODELS"]["halves_classifier"] is builder.halves_classifier
    monkeypatch.setattr(zoo.models, "MODELS", namespace["MODELS"])
    rows = {}
    for shared in (True, False):
        found, _ = inspect_model("halves_classifier", hidden=8, shared=shared)
        rows[shared] = {row.name: len(row.readers) for row in found}
    assert rows[True] == {"halves/reader/W": 2, "halves/reader/b": 2,
                          "halves/W_RO": 1, "halves/b_RO": 1}  # fmt: skip
    assert rows[False] == {"halves/reader_top/W": 1, "halves/reader_top/b": 1,
                           "halves/reader_bottom/W": 1, "halves/reader_bottom/b": 1,
                           "halves/W_RO": 1, "halves/b_RO": 1}  # fmt: skip
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 784])
        y = tf.compat.v1.placeholder(tf.float32, [None, 10])
        net = builder.halves_classifier(x, y, hidden=8)
        again = builder.halves_classifier(x, y, hidden=8, reuse=True)
        assert len(tf.compat.v1.global_variables()) == 4  # the second build made none
        top, bottom = net.layers[:2]
        assert top.w is bottom.w is again.layers[0].w


def test_the_page_s_make_target_runs_the_example(tmp_path):
    makefile = tmp_path / "Makefile"
    makefile.write_text((REPO / "Makefile").read_text() + "\n" + doc_make_target())
    outer = ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")  # under `make test`: a make of its own
    dry = subprocess.run(
        ["make", "-n", "--no-print-directory", "-f", str(makefile), "experiment-halves",
         "DATA_DIR=/d"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
        env={k: v for k, v in os.environ.items() if k not in outer},
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.split() == [".venv/bin/python", "-m", EXAMPLE.module, "--data-dir",
                                  "/d"]  # fmt: skip


def test_the_worked_example_is_one_builder_and_one_short_script():
    """docs/adding-a-model.md's promise: a new model is a builder plus a script of at
    most 150 lines (what it does not write, it gets from the harness)."""
    blocks = dict(
        (block.split("\n", 1)[0], block)
        for block in re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    )
    script = blocks["# experiments/halves.py"].rstrip().split("\n")
    assert "# zoo/models/halves.py" in blocks and len(script) <= 150
