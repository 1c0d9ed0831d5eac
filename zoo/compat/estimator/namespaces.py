"""``tf.estimator``, ``tf.compat.v1.estimator`` and the module paths programs import:
what :func:`zoo.compat.install` changes for Estimator.

* ``tf.estimator`` (TF 2.x's: canned estimators of ``canned.V2``) and
  ``estimator`` of every ``compat.v1`` namespace (TF 1.15's: ``canned.V1``, and
  ``inputs``) become namespace modules of this package's names;
* ``sys.modules`` gains ``tensorflow.estimator``, ``tensorflow_estimator``
  (``tensorflow_estimator.estimator``, ``.compat.v1.estimator``) and
  ``tensorflow_estimator.python.estimator.<module>`` (and TF 1.15's
  ``tensorflow.python.estimator.<module>``) for each module of this package
  (``...estimator.model_fn``, ``...canned.dnn``, ``...tpu.tpu_estimator``).
"""

import functools
import importlib
import pkgutil
import sys
import types

import zoo.compat.estimator as package
from zoo.compat.change import Change
from zoo.compat.namespaces import v1_namespaces

# where TF 2.15 kept these modules, and TF 1.15 before it (what census samples import)
_PATHS = ("tensorflow_estimator.python.estimator", "tensorflow.python.estimator")


def _canned(version):
    """Canned name -> (module, attribute) of ``version`` ("V1" or "V2"), or {}."""
    try:
        canned = importlib.import_module(f"{package.__name__}.canned")
    except ImportError:
        return {}
    return getattr(canned, version, {})


@functools.cache
def namespace(version):
    """The module ``tf.estimator`` ("V2") or ``tf.compat.v1.estimator`` ("V1") is,
    made once; its names are imported on first use."""
    canned = _canned(version)
    core = [name for name in package.__all__ if version == "V1" or name != "inputs"]
    module = types.ModuleType(
        "tensorflow.estimator" if version == "V2" else "tensorflow.compat.v1.estimator",
        f"tf.estimator of TF {'2.x' if version == 'V2' else '1.15'}, by zoo.compat",
    )

    def __getattr__(name):
        if name in canned:
            module_name, attribute = canned[name]
            value = getattr(importlib.import_module(module_name), attribute)
        elif name in core:
            value = getattr(package, name)
        else:
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
        setattr(module, name, value)
        return value

    module.__getattr__ = __getattr__
    module.__dir__ = lambda: sorted([*core, *canned])
    module.__all__ = sorted([*core, *canned])
    return module


@functools.cache
def _tensorflow_estimator():
    """The ``tensorflow_estimator`` package module and its ``python``,
    ``compat``, ``compat.v1`` (made once)."""
    made = {
        name: types.ModuleType(name, "tensorflow_estimator, by zoo.compat")
        for name in ("tensorflow_estimator", "tensorflow_estimator.python",
                     "tensorflow_estimator.compat", "tensorflow_estimator.compat.v1")
    }  # fmt: skip
    made["tensorflow_estimator"].estimator = namespace("V2")
    made["tensorflow_estimator"].python = made["tensorflow_estimator.python"]
    made["tensorflow_estimator"].compat = made["tensorflow_estimator.compat"]
    made["tensorflow_estimator.compat"].v1 = made["tensorflow_estimator.compat.v1"]
    made["tensorflow_estimator.compat.v1"].estimator = namespace("V1")
    made["tensorflow_estimator.python"].estimator = package
    made["tensorflow_estimator.estimator"] = namespace("V2")
    made["tensorflow_estimator.compat.v1.estimator"] = namespace("V1")
    return made


def _modules():
    """Every module of this package (imported now), by its name under it."""
    modules = {"": package}
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        module = importlib.import_module(info.name)
        modules[info.name[len(package.__name__):]] = module
    return modules


def changes():
    """The attributes and ``sys.modules`` entries that give Estimator.

    Returns:
        A list of :class:`~zoo.compat.change.Change`.
    """
    import tensorflow as tf

    v1 = namespace("V1")
    entries = {
        "tensorflow.estimator": namespace("V2"),
        "tensorflow.compat.v1.estimator": v1,
        **_tensorflow_estimator(),
        **{
            f"{path}{suffix}": module
            for path in _PATHS
            for suffix, module in _modules().items()
        },
    }
    return [
        Change("tensorflow.estimator", tf, "estimator", namespace("V2")),
        *(Change(f"{n.__name__}.estimator", n, "estimator", v1) for n in v1_namespaces()),
        *(Change(f"sys.modules[{name!r}]", sys.modules, name, module)
          for name, module in entries.items()),  # fmt: skip
    ]
