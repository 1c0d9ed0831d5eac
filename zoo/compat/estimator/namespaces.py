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
from zoo.compat import refused
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


# TF 2.x's head classes: another interface than TF 1.15's heads (Keras metrics,
# ``loss(labels, logits, ...)``, ``create_estimator_spec(..., trainable_variables)``)
_HEAD = ("tf.contrib.estimator's {} (TF 1.15's head) with "
         "tf.compat.v1.estimator.DNNEstimator, LinearEstimator or a model_fn")
_HEADS = {
    "Head": _HEAD.format("heads"),
    "BinaryClassHead": _HEAD.format("binary_classification_head"),
    "LogisticRegressionHead": _HEAD.format("binary_classification_head"),
    "MultiClassHead": _HEAD.format("multi_class_head"),
    "MultiHead": _HEAD.format("multi_head"),
    "MultiLabelHead": _HEAD.format("multi_label_head"),
    "PoissonRegressionHead": "tf.nn.log_poisson_loss in a model_fn of your own",
    "RegressionHead": _HEAD.format("regression_head"),
}
# TF 2.15's names of each namespace that it does not provide -> the replacement
REFUSED = {
    "V1": _HEADS,
    "V2": {**_HEADS,
           **{name: f"tf.compat.v1.estimator.{name} (it takes TF 1.15's heads)"
              for name in ("BaselineEstimator", "DNNEstimator",
                           "DNNLinearCombinedEstimator", "LinearEstimator")}},
}  # fmt: skip


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
            return refuse(name)  # raises
        setattr(module, name, value)
        return value

    refuse, module.__dir__ = refused.hooks(
        f"tf.{'' if version == 'V2' else 'compat.v1.'}estimator", module.__name__,
        REFUSED[version], lambda: [*core, *canned],
    )  # fmt: skip
    module.__getattr__ = __getattr__
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
