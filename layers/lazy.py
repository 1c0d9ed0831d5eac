"""Package attributes imported on first use (PEP 562), so importing a package is cheap.

Usage, in a package's ``__init__.py``::

    __getattr__, __dir__, __all__ = lazy.exports(__name__, {
        "layers.dense": ("Encoder", "Decoder"),
    })

``from layers import Encoder`` imports ``layers.dense`` then; ``import
layers.errors`` alone imports neither ``layers.dense`` nor TensorFlow. A name
that is also a submodule's (``zoo.share``, the function, in ``zoo/share.py``)
stays the exported name when the submodule is imported, as with eager imports.
"""

import importlib
import sys
import types


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
        value = getattr(importlib.import_module(module_of[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        return names

    sys.modules[package].__class__ = type(
        "LazyPackage", (_KeepExported,), {"exported": frozenset(module_of)}
    )
    return __getattr__, __dir__, names


class _KeepExported(types.ModuleType):
    """A package whose exported names are not replaced by same-named submodules."""

    exported = frozenset()

    def __setattr__(self, name, value):
        is_submodule = isinstance(value, types.ModuleType) and value.__name__ == (
            f"{self.__name__}.{name}"
        )
        if name in self.exported and is_submodule:
            return  # the submodule stays in sys.modules; the package keeps the name
        super().__setattr__(name, value)
