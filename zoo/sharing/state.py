"""Network state: copy one scope into another, frozen snapshots.

Variables are matched by their name relative to the scope (``online/W_hid_1`` and
``past/W_hid_1`` are partners), never by substring or position. Every destination
variable needs a partner of the same shape and dtype; source variables without a
partner (an optimizer slot, an extra head) are allowed and reported in
``Copy.unmatched``. Graph code copies whole scopes; eager code passes variables,
templates or ``tf.Module``s; both go through the same matching.

Usage (graph)::

    builder = lambda scope: mlp_classifier(x, y, scope=scope)
    current = builder("current")
    past = frozen_copy(builder, "current", "past")  # no gradients, not trainable
    sess.run(past.sync_op)                           # past := current
    target = copy_scope("current", "target", tau=0.01)  # target.op: a Polyak update

Usage (eager)::

    online = tf.compat.v1.make_template("online", net)
    past = frozen_template("past", net)
    online(x), past(x)                               # creates the variables
    copy_variables(online, past.variables)           # past := online, now
"""

import collections
import dataclasses
import os
import re

import tensorflow as tf

from layers.checks import probability_problem, require
from layers.errors import EagerError, ScopeError, ShapeError, ZooError
from layers.variables import full_name, reading_through
from zoo.training import precision

FROZEN_VARIABLES = "zoo_frozen_variables"
"""Graph collection of the variables built by :func:`frozen_copy`: trainable in
spirit (they mirror trainable ones, so copies include them by default) but kept
out of ``TRAINABLE_VARIABLES`` and behind ``tf.stop_gradient``."""

_MIN_ROW_ELEMENTS = 16
"""Shortest row a ref variable is copied by per-row memmove (:func:`_write`); with
shorter rows the per-row cost exceeds ``Assign``'s copy (4-element rows: 2x slower)."""

Slot = collections.namedtuple("Slot", "name shape dtype item")
"""A named, shaped thing to match: a variable, or a tensor saved in a checkpoint."""


@dataclasses.dataclass(frozen=True)
class Copy:
    """What a copy or restore built.

    Attributes:
        op: the grouped op that performs every assignment (None in eager
            execution, where the assignments have already run).
        pairs: ``(source, destination variable)`` per destination variable; the
            source is a variable, or the checkpoint tensor name for a restore.
        unmatched: full names of the source entries that have no partner.
    """

    op: object
    pairs: tuple
    unmatched: tuple


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """What :func:`frozen_copy` built.

    Attributes:
        output: what the builder returned under the snapshot's scope.
        variables: the snapshot's variables (not trainable, no gradients).
        sync_op: the grouped op ``snapshot := source`` (or the soft update).
        unmatched: source variables that have no partner in the snapshot.
        scope_name: the snapshot's full scope.
    """

    output: object
    variables: tuple
    sync_op: object
    unmatched: tuple
    scope_name: str


def copy_scope(src, dst, tau=1.0, include_non_trainable=False):
    """Builds one grouped op that copies scope ``src`` into scope ``dst``.

    Args:
        src: source scope, relative to the current variable scope.
        dst: destination scope, relative to the current variable scope.
        tau: 1.0 for a hard copy; in (0, 1) for the soft (Polyak) update
            ``dst = tau * src + (1 - tau) * dst``.
        include_non_trainable: copy every global variable under the scopes
            (optimizer slots, counters) instead of the trainable and frozen ones.

    Returns:
        :class:`Copy`; run ``.op`` to copy.

    Raises:
        EagerError: called in eager execution or ``tf.function`` (no collections;
            use :func:`copy_variables`).
        ZooError: ``tau`` is not in (0, 1].
        ScopeError: a bad or empty scope, nested scopes, or a ``dst`` variable
            without a same-named ``src`` variable (all are listed).
        ShapeError: partners that differ in shape or dtype (all are listed).
    """
    owner = f"copy_scope({src!r} -> {dst!r})"
    require_collections(owner, "copy_variables(src_variables, dst_variables)")
    check_tau(owner, tau)
    src_scope, dst_scope = full_scope(owner, src), full_scope(owner, dst)
    if (
        src_scope == dst_scope
        or under_scope(src_scope, dst_scope)
        or under_scope(dst_scope, src_scope)
    ):
        raise ScopeError(
            f"{owner}: expected two disjoint scopes, found {src_scope!r} and "
            f"{dst_scope!r}; copy between sibling scopes such as 'current' and 'past'"
        )
    return _copy(
        owner,
        scope_slots(owner, src_scope, include_non_trainable),
        scope_slots(owner, dst_scope, include_non_trainable),
        tau,
        repr(src_scope),
        repr(dst_scope),
    )


def copy_variables(
    src, dst, tau=1.0, src_scope=None, dst_scope=None, include_non_trainable=False
):
    """Copies variables into their same-named partners, in eager or graph code.

    In eager execution the assignments run now; in a graph or ``tf.function``
    they form ``Copy.op``.

    Args:
        src: a list of ``tf.Variable``, or an object with ``trainable_variables``
            and ``variables`` (a template, a ``tf.Module``).
        dst: the same kinds as ``src``.
        tau: as :func:`copy_scope`.
        src_scope: scope the source names are relative to; default the object's
            ``variable_scope_name`` (templates), else the longest common scope
            of the names.
        dst_scope: the same for ``dst``.
        include_non_trainable: for objects, take ``variables`` instead of
            ``trainable_variables`` (lists are taken as given). A frozen template
            has no trainable variables: pass its ``.variables``.

    Returns:
        :class:`Copy`.

    Raises:
        ZooError: ``tau`` not in (0, 1], or an item that is not a variable.
        ScopeError: no variables, two variables with one relative name, a name
            outside the given scope, or a ``dst`` variable without partner.
        ShapeError: partners that differ in shape or dtype.
    """
    owner = "copy_variables"
    check_tau(owner, tau)
    return _copy(
        owner,
        _object_slots(owner, "src", src, src_scope, include_non_trainable),
        _object_slots(owner, "dst", dst, dst_scope, include_non_trainable),
        tau,
        "src",
        "dst",
    )


def frozen_copy(
    builder,
    src_scope,
    dst_scope,
    tau=1.0,
    include_non_trainable=False,
    use_resource=True,
):
    """Builds a snapshot of ``src_scope`` that receives no gradients, plus its sync op.

    ``builder(dst_scope)`` is called once under a custom getter that creates every
    variable with ``trainable=False``, adds it to :data:`FROZEN_VARIABLES` and hands
    the builder ``tf.stop_gradient`` of it; optimizers built with the default
    ``var_list`` never touch the snapshot. The source must be built already.

    Args:
        builder: callable ``builder(scope)`` that builds the network under
            ``scope``, e.g. ``lambda scope: mlp_classifier(x, y, scope=scope)``.
        src_scope: scope of the live network (relative to the current scope).
        dst_scope: scope for the snapshot.
        tau: as :func:`copy_scope`, for the sync op.
        include_non_trainable: as :func:`copy_scope`.
        use_resource: False makes the snapshot's variables ref variables, which
            the sync op overwrites in their own buffers: a plain memory copy, where
            resource variables alias the source and leave the copy to the source's
            next write (a fresh allocation). Run reads of the snapshot before the
            sync (control dependencies) when both are in one ``session.run``.

    Returns:
        :class:`Snapshot`. Its variables start from the builder's initializers:
        run ``sync_op`` once after initialization to start in sync.

    Raises:
        EagerError: called in eager execution (use :func:`frozen_template`).
        ScopeError, ShapeError, ZooError: as :func:`copy_scope` and the builder.
    """
    owner = f"frozen_copy({src_scope!r} -> {dst_scope!r})"
    require_collections(owner, "frozen_template(name, builder)")
    check_tau(owner, tau)
    scope_name = full_scope(owner, dst_scope)
    with reading_through(frozen_getter if use_resource else _frozen_ref_getter):
        output = builder(dst_scope)
    sync = copy_scope(src_scope, dst_scope, tau, include_non_trainable)
    return Snapshot(
        output=output,
        variables=tuple(dst for _, dst in sync.pairs),
        sync_op=sync.op,
        unmatched=sync.unmatched,
        scope_name=scope_name,
    )


def frozen_template(name, builder, **kwargs):
    """``tf.compat.v1.make_template`` whose variables receive no gradients.

    The eager counterpart of :func:`frozen_copy`: ``GradientTape`` does not watch
    the template's variables and its outputs stop gradients. Sync it with
    ``copy_variables(live_template, frozen.variables)`` after its first call.

    Args:
        name: the template's variable scope.
        builder: the function to wrap, as for ``make_template``.
        **kwargs: passed to ``make_template``.

    Returns:
        The template.
    """
    return tf.compat.v1.make_template(name, builder, custom_getter_=frozen_getter, **kwargs)


def frozen_getter(getter, name, *args, **kwargs):
    """Custom getter: a non-trainable variable, returned behind ``tf.stop_gradient``.

    In graph mode the variable also joins :data:`FROZEN_VARIABLES`. Under a
    precision policy, the copy of a trainable variable is read in the compute
    dtype, as its source is (:func:`zoo.training.precision.read_in_compute_dtype`):
    the snapshot computes like the network it copies.
    """
    mirrors_trainable = kwargs.get("trainable") is not False
    kwargs["trainable"] = False
    variable = getter(name, *args, **kwargs)
    graph = tf.compat.v1.get_default_graph()
    if not tf.executing_eagerly() and not _is_frozen(graph, variable):
        graph.add_to_collection(FROZEN_VARIABLES, variable)
    if mirrors_trainable:
        variable = precision.read_in_compute_dtype(variable)
    return tf.stop_gradient(variable)


def _frozen_ref_getter(getter, name, *args, **kwargs):
    """:func:`frozen_getter` that makes a ref variable (``use_resource=False``)."""
    kwargs["use_resource"] = False
    return frozen_getter(getter, name, *args, **kwargs)


def match_by_name(owner, src, dst, src_label, dst_label):
    """Pairs every ``dst`` slot with the ``src`` slot of the same relative name.

    The one matching rule of this module: graph scopes, eager variables and
    checkpoints all come here.

    Args:
        owner: the caller, for messages.
        src: dict relative name -> ``Slot``.
        dst: dict relative name -> ``Slot``.
        src_label: how the source is named in messages.
        dst_label: how the destination is named in messages.

    Returns:
        ``(pairs, unmatched)``: ``(src item, dst item)`` in ``dst`` order, and the
        sorted full names of ``src`` slots without partner.

    Raises:
        ScopeError: some ``dst`` slot has no partner (mismatches listed too).
        ShapeError: every ``dst`` slot has a partner, but some differ in shape
            or dtype.
    """
    missing, mismatched = [], []
    for relative, target in sorted(dst.items()):
        source = src.get(relative)
        if source is None:
            missing.append(f"{target.name} (no {relative!r} in {src_label})")
        elif (source.shape, source.dtype) != (target.shape, target.dtype):
            mismatched.append(
                f"{target.name} {describe_slot(target)} vs "
                f"{source.name} {describe_slot(source)}"
            )
    if missing or mismatched:
        error = ScopeError if missing else ShapeError
        raise error(
            f"{owner}: expected a partner of the same relative name, shape and dtype "
            f"in {src_label} for every variable of {dst_label}, found "
            f"{len(missing)} missing and {len(mismatched)} mismatched: "
            f"{'; '.join(missing + mismatched)}; build both with the same builder and "
            "sizes, or copy a narrower scope"
        )
    pairs = [(src[relative].item, target.item) for relative, target in dst.items()]
    unmatched = tuple(sorted(src[r].name for r in src.keys() - dst.keys()))
    return pairs, unmatched


def check_tau(owner, tau):
    """Raises ZooError unless ``tau`` is a finite number in (0, 1]."""
    require(
        owner,
        probability_problem(tau, name="tau"),
        "pass tau=1.0 for a hard copy or a small positive fraction such as 0.01 for a "
        "soft update",
    )


def _copy(owner, src, dst, tau, src_label, dst_label):
    pairs, unmatched = match_by_name(owner, src, dst, src_label, dst_label)
    return Copy(op=assign_pairs(pairs, tau), pairs=tuple(pairs), unmatched=unmatched)


def assign_pairs(pairs, tau):
    """Returns one grouped op: ``dst := src`` or ``dst := tau*src + (1-tau)*dst``."""
    updates = [
        _write(dst, src if tau == 1 else tau * src + (1 - tau) * dst) for src, dst in pairs
    ]
    return tf.group(*updates)


def _write(variable, value):
    """Returns an op that sets ``variable`` to ``value``.

    A resource variable takes ``value``'s buffer: no copy now, the source's next
    write copies (into a fresh allocation). A ref variable is overwritten in its
    own buffer: by ``ScatterUpdate`` over every row (one memmove per row, about 2x
    faster than ``Assign``'s elementwise copy on MLP-sized weights) when its rows
    hold at least ``_MIN_ROW_ELEMENTS``, else by ``Assign``.
    """
    shape = variable.shape
    by_rows = (
        variable.dtype != variable.dtype.base_dtype  # a ref dtype: a ref variable
        and shape.is_fully_defined()
        and shape.rank >= 2
        and shape[1:].num_elements() >= _MIN_ROW_ELEMENTS
    )
    if not by_rows:
        return variable.assign(value, read_value=False)
    return tf.compat.v1.scatter_update(variable, tf.range(shape[0]), value).op


def require_collections(owner, alternative):
    if tf.executing_eagerly() or tf.inside_function():
        raise EagerError(
            f"{owner}: expected a graph (`with tf.Graph().as_default():`), found eager "
            f"execution or tf.function, which have no variable collections; use "
            f"{alternative} there"
        )


def full_scope(owner, scope, relative=True):
    if not isinstance(scope, str) or not scope.strip("/"):
        raise ScopeError(
            f"{owner}: expected a non-empty scope name, found {scope!r}; pass the "
            "scope the network was built under, e.g. 'current'"
        )
    scope = scope.strip("/")
    return full_name(scope) if relative else scope


def under_scope(name, scope):
    return name.startswith(scope + "/")


def _is_frozen(graph, variable):
    return any(v is variable for v in graph.get_collection(FROZEN_VARIABLES))


def scope_slots(owner, scope, include_non_trainable):
    """Returns relative name -> slot for the graph variables under ``scope``."""
    graph = tf.compat.v1.get_default_graph()
    keys = (
        [tf.compat.v1.GraphKeys.GLOBAL_VARIABLES]
        if include_non_trainable
        else [tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES, FROZEN_VARIABLES]
    )
    inside = {
        v.name: variable_slot(v)
        for key in keys
        for v in graph.get_collection(key)
        if under_scope(v.name, scope)
    }
    if not inside:
        kind = "variables" if include_non_trainable else "trainable or frozen variables"
        raise ScopeError(
            f"{owner}: expected {kind} under {scope!r}, found none; build the network "
            "under that scope first, or check the scope name"
        )
    return relative_slots(owner, repr(scope), inside.values(), scope)


def _object_slots(owner, side, obj, scope, include_non_trainable):
    """Returns relative name -> slot for a variable list, template or module."""
    if hasattr(obj, "trainable_variables"):
        scope = scope or getattr(obj, "variable_scope_name", None)
        variables = obj.variables if include_non_trainable else obj.trainable_variables
    else:
        variables = obj
    variables = list(variables)
    for item in variables:
        if not isinstance(item, tf.Variable):
            raise ZooError(
                f"{owner}: expected {side} to hold tf.Variable objects, found "
                f"{type(item).__name__}; pass a list of variables, a template or a module"
            )
    if not variables:
        raise ScopeError(
            f"{owner}: expected variables in {side}, found none; call the template "
            "once to create them, or pass .variables for a frozen template"
        )
    slots = [variable_slot(v) for v in variables]
    if scope is None:
        scope = _common_scope([slot.name for slot in slots])
    return relative_slots(owner, side, slots, scope.strip("/"))


def relative_slots(owner, side, slots, scope):
    """Keys ``slots`` by their name relative to ``scope``."""
    prefix = scope + "/" if scope else ""
    named = {}
    for slot in slots:
        if not slot.name.startswith(prefix):
            raise ScopeError(
                f"{owner}: expected every {side} variable under {scope!r}, found "
                f"{slot.name}; pass the scope the variables were built under"
            )
        relative = slot.name[len(prefix) :]
        if relative in named:
            raise ScopeError(
                f"{owner}: expected unique names in {side}, found {slot.name} twice; "
                "give the variables distinct names"
            )
        named[relative] = slot
    return named


def variable_slot(variable, name=None):
    """Returns the ``Slot`` of a variable: ``name`` or its name without ``:0``."""
    name = name or re.sub(r":\d+$", "", variable.name)
    return Slot(name, variable.shape.as_list(), variable.dtype.base_dtype, variable)


def _common_scope(names):
    """The longest scope (whole path components) that holds every name."""
    return "/".join(os.path.commonprefix([name.split("/")[:-1] for name in names]))


def describe_slot(slot):
    return f"{slot.shape} {slot.dtype.name}"
