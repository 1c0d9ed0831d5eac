"""Every flag of every experiment, hostile values, one table: refused before any work.

Experiments are discovered: every module of the ``experiments`` package with a
``main`` must expose ``build_parser()``, and each of its flags is tried with the
values of :data:`HOSTILE` for its kind (int, float, comma-separated numbers,
text, directory, new directory, new file). Each must end in a one-line refusal
(ZooError, or argparse's exit 2) before any work starts: before data is loaded,
a run directory is made or a graph is built.
"""

import argparse
import importlib
import pkgutil
import re

import pytest
import tensorflow as tf

import experiments
from experiments.harness import flags, rundir
from layers.errors import ZooError

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
# something (a seed, "none", "TF's default", "skip", "always greedy").
ZERO = "0"
ZERO_MEANS_SOMETHING = {
    "seed", "validation", "warmup", "inter_op", "intra_op", "task_index",
    "max_restarts", "ps_steps", "tolerance", "gamma", "profile_calls", "learning_starts",
    "epsilon_start", "epsilon_end",
}  # fmt: skip


class WorkStarted(Exception):
    """Raised by the patched entry points of work: the flags were accepted."""


def experiment_modules():
    """Every experiments module with a ``main``; each must expose ``build_parser``."""
    found = []
    for info in pkgutil.walk_packages(experiments.__path__, "experiments."):
        module = importlib.import_module(info.name)
        if hasattr(module, "main"):
            found.append(module)
    return found


MODULES = experiment_modules()


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


def cases():
    for module in MODULES:
        for action in module.build_parser()._actions:
            if action.nargs == 0 or not action.option_strings:
                continue  # --help, --quick, --overwrite...
            values = list(HOSTILE[kind(action)])
            if action.type in (int, float) and action.dest not in ZERO_MEANS_SOMETHING:
                values.append(ZERO)
            for value in values:
                name = module.__name__.split(".")[-1]
                flag = action.option_strings[-1]
                yield pytest.param(module, flag, value, id=f"{name} {flag}={value!r}")


@pytest.fixture
def no_work(monkeypatch):
    """Makes loading data, making a run directory or building a graph raise WorkStarted."""

    def started(*args, **kwargs):
        raise WorkStarted

    monkeypatch.delenv("ZOO_DATA_DIR", raising=False)
    monkeypatch.setattr(flags, "load_data", started)
    monkeypatch.setattr(rundir.RunDir, "__init__", started)
    monkeypatch.setattr(tf.Graph, "__init__", started)


def test_every_experiment_exposes_its_parser():
    names = {module.__name__ for module in MODULES}
    assert {"experiments.autoencoder", "experiments.ps", "experiments.bench.speed"} <= names
    for module in MODULES:
        assert isinstance(module.build_parser(), argparse.ArgumentParser), module


@pytest.mark.parametrize("module, flag, value", list(cases()))
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


@pytest.mark.parametrize("module", MODULES, ids=lambda module: module.__name__)
def test_defaults_are_accepted(module, no_work):
    """The table's refusals are not of everything: the defaults reach the work."""
    with pytest.raises(WorkStarted):
        module.main([])


def test_resume_refuses_an_empty_or_foreign_directory(tmp_path, no_work):
    from experiments import autoencoder

    with pytest.raises(ZooError, match=r"--resume : expected either|expected an existing"):
        autoencoder.main(["--resume", ""])
    with pytest.raises(ZooError, match=r"run.json: expected the run.json a run writes"):
        autoencoder.main(["--resume", str(tmp_path)])
