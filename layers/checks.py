"""The argument checks every floor shares: ints, numbers, probabilities, choices.

No TensorFlow: the flag checks of ``experiments`` use these before TensorFlow
starts. A ``*_problem`` function returns what is wrong with a value as
``"expected <name> to be <what>, found <value>"`` (None when nothing is), and
:func:`require` raises it with its owner and the fix, in the one message shape
of :mod:`layers.errors`::

    require("towers", int_problem(towers, name="the number of towers"),
            "pass towers=1 or more")
    # ZooError: towers: expected the number of towers to be an int >= 1, found 0;
    #           pass towers=1 or more

Booleans are never taken for numbers (``True`` is not a count of 1). A TF1
``Dimension`` of known value is an int, as TF 1.x's ``int()`` conversions took it
(:func:`int_value`); ``Dimension(None)`` is not.
"""

import math
import numbers
import operator

from layers.errors import ZooError


def require(owner, problem, fix, error=ZooError):
    """Raises ``error("<owner>: <problem>; <fix>")`` when there is a problem.

    Args:
        owner: the layer, scope or function the value was given to.
        problem: what a ``*_problem`` function returned (None: nothing to raise).
        fix: what to change, e.g. ``"pass e.g. gamma=0.99"``.
        error: the :class:`ZooError` subclass to raise.

    Raises:
        error: ``problem`` is not None.
    """
    if problem is not None:
        raise error(f"{owner}: {problem}; {fix}")


def int_value(value):
    """``value`` as TF 1.x's ``int()`` took it where an int was due: a TF1
    ``Dimension`` of known value (``tf.compat.v1.Dimension(4)``, ``x.shape[-1]``
    under TF1's shapes) as its int; anything else as it is (``Dimension(None)``,
    a float, a bool), for :func:`int_problem` to name.

    Args:
        value: an int, a ``Dimension``, or anything.

    Returns:
        An int for a value with ``__index__`` that is not a bool, else ``value``.
    """
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        return value
    try:
        return operator.index(value)
    except TypeError:  # Dimension(None): __index__ returns None
        return value


def int_problem(value, minimum=1, maximum=None, name=None):
    """What is wrong with ``value`` as an int in ``[minimum, maximum]``, or None
    (a ``Dimension`` of known value is an int: :func:`int_value`).

    Args:
        value: the value to check.
        minimum: the smallest int allowed (None: no bound).
        maximum: the largest int allowed (None: no bound).
        name: what the value is, in the message (``"the batch size"``); None
            leaves it out (``"expected an int >= 1, found 0"``).
    """
    value = int_value(value)
    is_int = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if is_int and _within(value, minimum, maximum, False, False):
        return None
    return _expected(name, f"an int{_range(minimum, maximum, False, False)}", value)


def number_problem(value, low=None, high=None, *, low_open=False, high_open=False,
                   name=None):  # fmt: skip
    """What is wrong with ``value`` as a finite real number between the bounds, or None.

    Args:
        value: the value to check.
        low, high: the bounds (None: none on that side).
        low_open, high_open: True excludes the bound itself (``> 0`` rather than
            ``>= 0``).
        name: what the value is, in the message; None leaves it out.
    """
    is_real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if is_real and math.isfinite(value) and _within(value, low, high, low_open, high_open):
        return None
    bounds = _range(low, high, low_open, high_open)
    return _expected(name, f"a finite number{bounds}", value)


def probability_problem(value, zero=False, one=True, name=None):
    """What is wrong with ``value`` as a probability, or None.

    Args:
        value: the value to check.
        zero, one: whether 0 and 1 themselves are allowed (a keep probability
            of 0 is not; a discount of 0 is).
        name: what the value is, in the message; None leaves it out.
    """
    return number_problem(value, 0, 1, low_open=not zero, high_open=not one, name=name)


def choice_problem(value, choices, name=None):
    """What is wrong with ``value`` as one of ``choices``, or None."""
    if value in choices:
        return None
    return _expected(name, f"one of {', '.join(map(str, choices))}", value)


def _within(value, low, high, low_open, high_open):
    above = low is None or (value > low if low_open else value >= low)
    below = high is None or (value < high if high_open else value <= high)
    return above and below


def _range(low, high, low_open, high_open):
    """`` >= 1``, `` in (0, 1]``, or nothing without bounds."""
    if low is not None and high is not None:
        left, right = "(" if low_open else "[", ")" if high_open else "]"
        return f" in {left}{_show(low)}, {_show(high)}{right}"
    if low is not None:
        return f" {'>' if low_open else '>='} {_show(low)}"
    if high is not None:
        return f" {'<' if high_open else '<='} {_show(high)}"
    return ""


def _show(bound):
    return f"{bound:g}" if isinstance(bound, float) else str(bound)


def _expected(name, what, value):
    subject = f"{name} to be {what}" if name else what
    return f"expected {subject}, found {value!r}"
