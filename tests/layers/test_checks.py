"""layers.checks: the shared argument checks and their messages."""

import math
import subprocess
import sys

import pytest

from layers.checks import (
    choice_problem,
    int_problem,
    number_problem,
    probability_problem,
    require,
)
from layers.errors import ShapeError, ZooError


@pytest.mark.parametrize(
    "value, minimum, maximum, problem",
    [
        (3, 1, None, None),
        (0, 1, None, "expected an int >= 1, found 0"),
        (True, 1, None, "expected an int >= 1, found True"),
        (2.0, 1, None, "expected an int >= 1, found 2.0"),
        (9, 1, 8, "expected an int in [1, 8], found 9"),
        (8, 1, 8, None),
        (-1, 0, None, "expected an int >= 0, found -1"),
    ],
)
def test_int_problem(value, minimum, maximum, problem):
    assert int_problem(value, minimum, maximum) == problem


def test_a_name_reads_in_the_message():
    assert int_problem(0, name="the batch size") == (
        "expected the batch size to be an int >= 1, found 0"
    )


@pytest.mark.parametrize(
    "value, kwargs, problem",
    [
        (0.5, dict(low=0, low_open=True), None),
        (0, dict(low=0, low_open=True), "expected a finite number > 0, found 0"),
        (math.nan, dict(low=0), "expected a finite number >= 0, found nan"),
        (math.inf, dict(), "expected a finite number, found inf"),
        (False, dict(), "expected a finite number, found False"),
        ("1", dict(), "expected a finite number, found '1'"),
        (1.5, dict(low=0, high=1), "expected a finite number in [0, 1], found 1.5"),
        (1, dict(low=0, high=1, high_open=True), "expected a finite number in [0, 1), "
         "found 1"),
    ],
)
def test_number_problem(value, kwargs, problem):
    assert number_problem(value, **kwargs) == problem


def test_probability_problem_and_its_ends():
    assert probability_problem(1.0) is None
    assert probability_problem(0.0) == "expected a finite number in (0, 1], found 0.0"
    assert probability_problem(0.0, zero=True) is None
    assert probability_problem(1, one=False) == (
        "expected a finite number in (0, 1), found 1"
    )


def test_choice_problem():
    assert choice_problem("sync", ("per-tower", "sync")) is None
    assert choice_problem("x", ("a", "b"), name="the mode") == (
        "expected the mode to be one of a, b, found 'x'"
    )


def test_require_raises_owner_problem_and_fix():
    require("towers", None, "never shown")
    with pytest.raises(ShapeError) as raised:
        require("dense", int_problem(0, name="n_out"), "pass n_out=<int>", ShapeError)
    assert str(raised.value) == (
        "dense: expected n_out to be an int >= 1, found 0; pass n_out=<int>"
    )
    assert isinstance(raised.value, ZooError)


def test_checks_import_no_tensorflow():
    probe = "import layers.checks, sys; print('tensorflow' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.strip() == "False"
