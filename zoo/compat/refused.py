"""Names TensorFlow 2.15's ``tf.compat.v1`` had outside ``tf.contrib`` (most from
tensorflow-estimator) that :mod:`zoo.compat` does not provide: as contrib's, each
raises a :class:`~zoo.compat.contrib.ContribError` naming TF's name and the nearest
replacement, and ``dir()`` lists it (docs/estimator.md, "What is not provided").

Usage, in a module of ours::

    __getattr__, __dir__ = refused.hooks("tf.estimator.experimental", __name__,
                                         REPLACEMENTS, lambda: globals())
"""

import types

from zoo.compat.contrib import ContribError


def error(label, replacement):
    """The error of TF 2.15's name ``label`` (``"tf.estimator.Head"``).

    Args:
        label: the name as a program writes it.
        replacement: what to use instead.

    Returns:
        A :class:`~zoo.compat.contrib.ContribError`.
    """
    return ContribError(
        f"{label}: expected a name zoo.compat provides, found TF 2.15's {label}, which "
        f"it does not provide; use {replacement}"
    )


def hooks(prefix, module_name, replacements, names):
    """A module's PEP 562 ``__getattr__`` and ``__dir__``: ``replacements``' names
    raise :func:`error`, others the usual ``AttributeError``.

    Args:
        prefix: the module as a program writes it (``"tf.estimator.experimental"``).
        module_name: its ``__name__``, for the usual error.
        replacements: refused name -> its replacement.
        names: a callable giving the module's own names.

    Returns:
        ``(__getattr__, __dir__)``.
    """

    def __getattr__(name):
        if name in replacements:
            raise error(f"{prefix}.{name}", replacements[name])
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    def __dir__():
        return sorted({*names(), *replacements})

    return __getattr__, __dir__


def module(prefix, module_name, replacements):
    """A module that has only refused names (``tf.layers.experimental``).

    Args:
        prefix, module_name, replacements: as :func:`hooks`'.

    Returns:
        A ``types.ModuleType``.
    """
    made = types.ModuleType(module_name, f"{prefix}: TF 2.15's names, refused")
    made.__getattr__, made.__dir__ = hooks(prefix, module_name, replacements, tuple)
    return made
