"""Package attributes imported on first use (PEP 562), so importing a package is cheap.

Usage, in a package's ``__init__.py``::

    __getattr__, __dir__, __all__ = lazy.exports(__name__, {
        "layers.dense": ("Encoder", "Decoder"),
    })

``from layers import Encoder`` imports ``layers.dense`` then; ``import
layers.errors`` alone imports neither ``layers.dense`` nor TensorFlow. A module
may be exported by its own name (``"zoo.training.precision": ("precision",)``).
"""

import importlib
import sys


def exports(package, modules):
    """Returns ``(__getattr__, __dir__, __all__)`` for ``package``.

    Args:
        package: the package's ``__name__``.
        modules: module name -> names it exports through the package.
    """
    module_of = {name: module for module, names in modules.items() for name in names}
    names = sorted(module_of)

    def __getattr__(name):
        if name not in module_of:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(module_of[name])
        if module.__name__.endswith(f".{name}") and not hasattr(module, name):
            value = module  # a module exported by its own name: zoo.precision
        else:
            value = getattr(module, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        return names

    return __getattr__, __dir__, names
