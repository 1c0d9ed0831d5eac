"""What a model or checkpoint holds: variables by scope, and which ops read each one.

TF2 has no collections to list variables in eager mode and nothing that shows
that a tied weight is read twice. :func:`inspect_model` builds a registered
builder (or your own function, ``"package.module:function"``) in a fresh graph
and lists its variables (name, shape, dtype, parameters, trainable) with the ops
that read each: the tied autoencoder's
``encoder/W`` shows two readers, the encoder's matmul and the decoder's
transpose. :func:`inspect_checkpoint` lists a checkpoint's entries the same way.

Usage::

    rows, graph = inspect_model("autoencoder", tied=True)
    print(format_table(rows))
    write_graph(graph, "runs/inspect/autoencoder")    # tensorboard --logdir ...
    print(format_table(inspect_checkpoint("runs/autoencoder/model.ckpt", rows)))

From the shell: ``python -m zoo inspect autoencoder --tied [--checkpoint PATH]``, or
``python -m zoo inspect mypackage.model:siamese --input left=784 --input right=784``.
"""

import dataclasses
import importlib
import inspect
import re

import numpy as np
import tensorflow as tf

from layers.errors import ZooError
from zoo.models import get_model
from zoo.training.checkpoints import open_tf_checkpoint

# Width of each tensor argument a registered builder takes (MNIST: 784 pixels, 10
# classes; a GAN's noise: 64; the two images of a siamese pair).
INPUT_WIDTHS = {"x": 784, "y": 10, "z": 64, "x1": 784, "x2": 784}


@dataclasses.dataclass(frozen=True)
class VariableRow:
    """One variable or checkpoint entry.

    Attributes:
        name: full name without ``:0`` (``ae/encoder/W``).
        shape: list of ints.
        dtype: dtype name.
        parameters: number of elements.
        trainable: True or False; None for a checkpoint entry the model lacks.
        readers: names of the ops that read the variable's value.
        updaters: names of the ops that assign it outside its initializer
            (:class:`layers.BatchNorm`'s moving-statistics updates, optimizers).
    """

    name: str
    shape: list
    dtype: str
    parameters: int
    trainable: bool | None
    readers: tuple = ()
    updaters: tuple = ()

    @property
    def scope(self):
        """The variable's scope (``ae/encoder``), empty at the top level."""
        return self.name.rpartition("/")[0]


def build_model(name, tied=None, inputs=None, **builder_kwargs):
    """Builds a registered builder, or any function of tensors, on placeholders.

    Args:
        name: a key of :data:`zoo.models.MODELS`, or ``"package.module:function"``
            naming your own TF1 code (a function of tensors that makes variables with
            ``tf.compat.v1.get_variable``).
        tied: for builders with a ``tied`` argument, its value; None keeps the
            builder's default; False is ignored by builders without one.
        inputs: dict argument name -> ``(width, dtype)`` for tensor arguments
            (placeholders [None, width]); :data:`INPUT_WIDTHS` gives float32 ``x``
            and ``y``.
        **builder_kwargs: further builder arguments. A builder with a
            ``training`` parameter (batch norm) that is not given one gets
            ``tf.compat.v1.placeholder_with_default(True, [])``, so the graph
            holds both modes.

    Returns:
        ``(graph, result)``: the graph and what the builder returned.

    Raises:
        ZooError: unknown name or function, ``tied`` given to a builder without
            it, or a tensor argument whose width is unknown.
    """
    builder = find_builder(name)
    parameters = inspect.signature(builder).parameters
    if tied and "tied" not in parameters:
        raise ZooError(
            f"{name}: expected no tied argument (the builder has none), found "
            f"tied={tied}; drop --tied for this model"
        )
    if tied is not None and "tied" in parameters:
        builder_kwargs["tied"] = tied
    specs = {key: (width, tf.float32) for key, width in INPUT_WIDTHS.items()}
    specs.update(inputs or {})
    positional = (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    )
    tensors = [
        p.name
        for p in parameters.values()
        if p.kind in positional
        and p.default is inspect.Parameter.empty
        and p.name != "training"
    ]
    unknown = [key for key in tensors if key not in specs]
    if unknown:
        raise ZooError(
            f"{name}: expected a width for every tensor argument, found none for "
            f"{unknown}; pass --input {unknown[0]}=WIDTH (or WIDTH:int32), or add it to "
            "zoo.sharing.inspect.INPUT_WIDTHS"
        )
    graph = tf.Graph()
    with graph.as_default():
        placeholders = [
            tf.compat.v1.placeholder(specs[key][1], [None, specs[key][0]], name=key)
            for key in tensors
        ]
        if "training" in parameters and "training" not in builder_kwargs:
            builder_kwargs["training"] = tf.compat.v1.placeholder_with_default(
                True, [], name="training"
            )
        result = builder(*placeholders, **builder_kwargs)
    return graph, result


def find_builder(name):
    """Returns the registered builder ``name``, or the function ``module:function``.

    Raises:
        ZooError: no such registered name, module or function.
    """
    if ":" not in name:
        return get_model(name)
    module_name, _, function_name = name.partition(":")
    try:
        function = getattr(importlib.import_module(module_name), function_name)
    except (ImportError, AttributeError) as err:
        raise ZooError(
            f"{name}: expected an importable module:function, found {err}; put the "
            "module on PYTHONPATH and name the function after the colon"
        ) from None
    if not callable(function):
        raise ZooError(
            f"{name}: expected a function, found a {type(function).__name__}; name the "
            "function that builds your model"
        )
    return function


def parse_input(text):
    """Parses ``NAME=WIDTH[:DTYPE]`` (``ids=20:int32``) into ``(name, (width, dtype))``.

    Raises:
        ZooError: another form, a width that is not a positive int or an unknown dtype.
    """
    name, _, spec = text.partition("=")
    width, _, dtype = spec.partition(":")
    try:
        parsed = (int(width), tf.as_dtype(dtype or "float32"))
    except (TypeError, ValueError):
        parsed = None
    if not name or parsed is None or parsed[0] <= 0:
        raise ZooError(
            f"--input {text}: expected NAME=WIDTH or NAME=WIDTH:DTYPE, found another "
            "form; pass e.g. --input left=784 or --input ids=20:int32"
        )
    return name, parsed


def inspect_model(name, tied=None, inputs=None, **builder_kwargs):
    """Lists the variables of a registered builder (or any function) and their readers.

    Args:
        name, tied, inputs, builder_kwargs: as :func:`build_model`.

    Returns:
        ``(rows, graph)``: :class:`VariableRow` sorted by name, and the graph.

    Raises:
        ZooError: as :func:`build_model`.
    """
    graph, _ = build_model(name, tied, inputs, **builder_kwargs)
    with graph.as_default():
        variables = tf.compat.v1.global_variables()
        trainable = {id(v) for v in tf.compat.v1.trainable_variables()}
    rows = [
        VariableRow(
            name=v.name.split(":")[0],
            shape=v.shape.as_list(),
            dtype=v.dtype.base_dtype.name,
            parameters=int(np.prod(v.shape.as_list())),
            trainable=id(v) in trainable,
            readers=readers(v),
            updaters=updaters(v),
        )
        for v in variables
    ]
    return sorted(rows, key=lambda row: row.name), graph


def readers(variable):
    """Returns the names of the ops that use the value of a graph-mode resource variable.

    The consumers of its ``ReadVariableOp``s, and ops that read the handle directly
    (``ResourceGather``: an embedding lookup; ``If``: a ``tf.cond`` that reads it
    in a branch, such as batch norm's choice of statistics). Initialisation and
    ``Read`` ops that nothing consumes are not readers.
    """
    found = []
    for op in variable.handle.consumers():
        if op.type == "ReadVariableOp":
            found += [consumer.name for consumer in op.outputs[0].consumers()]
        elif op.type in _HANDLE_READERS:
            found.append(op.name)
    return tuple(found)


_HANDLE_READERS = ("ResourceGather", "ResourceGatherNd", "If", "StatelessIf")


def updaters(variable):
    """Returns the names of the ops that assign a graph-mode resource variable.

    Assignments (``AssignSubVariableOp``: batch norm's moving statistics) and
    optimizer updates (``ResourceApply*``); not the variable's initializer.
    """
    return tuple(
        op.name
        for op in variable.handle.consumers()
        if op is not variable.initializer
        and (op.type.startswith(("Assign", "ResourceApply", "ResourceSparseApply")))
    )


def inspect_checkpoint(path, model_rows=()):
    """Lists the entries of a checkpoint.

    Args:
        path: checkpoint prefix, or a directory with a ``checkpoint`` file.
        model_rows: rows of the model the checkpoint belongs to (from
            :func:`inspect_model`); entries of the same name take their
            ``trainable`` and ``readers`` from them.

    Returns:
        :class:`VariableRow` sorted by name.

    Raises:
        DataError: no readable checkpoint at ``path``; ZooError: a directory whose
            ``checkpoint`` file leads outside it (both from
            :func:`zoo.training.checkpoints.open_tf_checkpoint`).
    """
    _, reader = open_tf_checkpoint(path)
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    known = {row.name: row for row in model_rows}
    rows = []
    for name in sorted(shapes):
        model_row = known.get(name)
        rows.append(
            VariableRow(
                name=name,
                shape=list(shapes[name]),
                dtype=dtypes[name].name,
                parameters=int(np.prod(shapes[name])),
                trainable=model_row.trainable if model_row else None,
                readers=model_row.readers if model_row else (),
                updaters=model_row.updaters if model_row else (),
            )
        )
    return rows


def format_table(rows):
    """Returns the rows as a text table grouped by scope, with parameter counts.

    An ``updaters`` column follows ``readers`` when some variable has updaters
    (batch norm's moving statistics).
    """
    header = ("name", "shape", "dtype", "parameters", "trainable", "readers", "updaters")
    if not any(row.updaters for row in rows):
        header = header[:-1]
    lines = []
    for scope in sorted({row.scope for row in rows}):
        group = [row for row in rows if row.scope == scope]
        total = sum(row.parameters for row in group)
        lines.append((f"[{scope or '/'}]", "", "", f"{total:,}"))
        lines.extend(
            (
                "  " + row.name.rpartition("/")[2],
                str(row.shape),
                row.dtype,
                f"{row.parameters:,}",
                {True: "yes", False: "no", None: "?"}[row.trainable],
                describe_readers(row.readers),
                describe_readers(row.updaters),
            )[: len(header)]
            for row in group
        )
    total = sum(row.parameters for row in rows)
    lines.append((f"total: {len(rows)} variables", "", "", f"{total:,}"))
    lines = [line + ("",) * (len(header) - len(line)) for line in lines]
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(len(header))]
    return "\n".join(
        "  ".join(
            cell.ljust(width) for cell, width in zip(line, widths, strict=True)
        ).rstrip()
        for line in [header, *lines]
    )


def describe_readers(names):
    """Returns reader (or updater) names as one table cell, folding the names of many steps.

    Up to three names are listed as they are. More (a cell unrolled over 28
    steps) are sorted, and names that differ in one number only are folded:
    ``28 readers: rnn/step_{01..28}/cell/gates/MatMul``.
    """
    if len(names) <= 3:
        return ", ".join(names) or "-"
    groups = {}
    for name in sorted(names):
        parts = re.split(r"(\d+)", name)
        skeleton = tuple("#" if i % 2 else part for i, part in enumerate(parts))
        groups.setdefault(skeleton, []).append(parts)
    folded = ", ".join(_fold(members) for members in groups.values())
    return f"{len(names)} readers: {folded}"


def _fold(members):
    """Joins names split at their numbers; one varying number becomes ``{a..b}``."""
    varying = [i for i in range(1, len(members[0]), 2) if len({m[i] for m in members}) > 1]
    if len(varying) != 1:
        return ", ".join("".join(m) for m in members)
    i = varying[0]
    numbers = sorted((m[i] for m in members), key=int)
    values = [int(n) for n in numbers]
    contiguous = values == list(range(values[0], values[0] + len(values)))
    middle = f"{numbers[0]}..{numbers[-1]}" if contiguous else ",".join(numbers)
    return f"{''.join(members[0][:i])}{{{middle}}}{''.join(members[0][i + 1 :])}"


def write_graph(graph, logdir):
    """Writes ``graph`` as a TensorBoard event file under ``logdir``; returns ``logdir``."""
    with graph.as_default():
        tf.compat.v1.summary.FileWriter(logdir, graph=graph).close()
    return logdir
