"""``tensorflow.examples.tutorials.mnist.input_data`` again: what
:func:`zoo.compat.install` adds so that TF 1.x's tutorials import it as written::

    from tensorflow.examples.tutorials.mnist import input_data

TF 2 removed ``tensorflow.examples``; install() adds ``sys.modules`` entries for
``tensorflow.examples``, ``.tutorials``, ``.tutorials.mnist`` and
``.tutorials.mnist.input_data`` (the last is :mod:`zoo.compat.examples.input_data`),
each package holding the next as an attribute; uninstall() removes them.
"""

import functools
import sys
import types

from zoo.compat.change import Change

__all__ = ["changes", "modules"]

ROOT = "tensorflow.examples"
PACKAGES = ("", ".tutorials", ".tutorials.mnist")


@functools.cache
def modules():
    """``{sys.modules name: module}`` of ``tensorflow.examples`` down to
    ``input_data``, made once."""
    from zoo.compat.examples import input_data

    found = {}
    for suffix in PACKAGES:
        package = types.ModuleType(ROOT + suffix, "TF 1.x's module, from zoo.compat.")
        package.__path__ = []
        if found:
            parent = found[ROOT + suffix.rpartition(".")[0]]
            setattr(parent, suffix.rpartition(".")[2], package)
        found[package.__name__] = package
    found[f"{ROOT}.tutorials.mnist"].input_data = input_data
    found[f"{ROOT}.tutorials.mnist.input_data"] = input_data
    return found


def changes():
    """The ``sys.modules`` entries of ``tensorflow.examples...input_data``.

    Returns:
        A list of :class:`~zoo.compat.change.Change`.
    """
    return [Change(f"sys.modules[{name!r}]", sys.modules, name, module)
            for name, module in modules().items()]  # fmt: skip
