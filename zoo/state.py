"""Network state: copy one scope into another, frozen snapshots, restore by scope.

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
    restore = restore_scope("ckpt/model", "mlp", "current")  # saved as mlp/*, loaded
    sess.run(restore.op)                                     # into current/*

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

from layers.errors import EagerError, ScopeError, ShapeError, ZooError
from layers.variables import full_name
from zoo.checkpoints import open_tf_checkpoint

FROZEN_VARIABLES = "zoo_frozen_variables"
"""Graph collection of the variables built by :func:`frozen_copy`: trainable in
spirit (they mirror trainable ones, so copies include them by default) but kept
out of ``TRAINABLE_VARIABLES`` and behind ``tf.stop_gradient``."""

_MIN_ROW_ELEMENTS = 16
"""Shortest row a ref variable is copied by per-row memmove (:func:`_write`); with
shorter rows the per-row cost exceeds ``Assign``'s copy (4-element rows: 2x slower)."""

_Slot = collections.namedtuple("_Slot", "name shape dtype item")
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
    _require_collections(owner, "copy_variables(src_variables, dst_variables)")
    check_tau(owner, tau)
    src_scope, dst_scope = _full_scope(owner, src), _full_scope(owner, dst)
    if (
        src_scope == dst_scope
        or _under(src_scope, dst_scope)
        or _under(dst_scope, src_scope)
    ):
        raise ScopeError(
            f"{owner}: expected two disjoint scopes, found {src_scope!r} and "
            f"{dst_scope!r}; copy between sibling scopes such as 'current' and 'past'"
        )
    return _copy(
        owner,
        _scope_slots(owner, src_scope, include_non_trainable),
        _scope_slots(owner, dst_scope, include_non_trainable),
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
    _require_collections(owner, "frozen_template(name, builder)")
    check_tau(owner, tau)
    scope_name = _full_scope(owner, dst_scope)
    current = tf.compat.v1.get_variable_scope()
    getter = frozen_getter if use_resource else _frozen_ref_getter
    with tf.compat.v1.variable_scope(
        current, custom_getter=getter, auxiliary_name_scope=False
    ):
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

    In graph mode the variable also joins :data:`FROZEN_VARIABLES`.
    """
    kwargs["trainable"] = False
    variable = getter(name, *args, **kwargs)
    graph = tf.compat.v1.get_default_graph()
    if not tf.executing_eagerly() and not _is_frozen(graph, variable):
        graph.add_to_collection(FROZEN_VARIABLES, variable)
    return tf.stop_gradient(variable)


def _frozen_ref_getter(getter, name, *args, **kwargs):
    """:func:`frozen_getter` that makes a ref variable (``use_resource=False``)."""
    kwargs["use_resource"] = False
    return frozen_getter(getter, name, *args, **kwargs)


@dataclasses.dataclass(frozen=True)
class RestoreReport:
    """What a restore loaded and what it left out, on each side, and why.

    ``print(report)`` shows it as text.

    Attributes:
        restored: ``(checkpoint name, variable name)`` per loaded variable.
        left_out_checkpoint: ``(checkpoint name, why)`` per entry not loaded.
        left_out_variables: ``(variable name, why)`` per variable not loaded (it
            keeps its value, the initializer's after initialization).
    """

    restored: tuple
    left_out_checkpoint: tuple
    left_out_variables: tuple

    def __str__(self):
        lines = [f"restored {len(self.restored)} variables"]
        lines += [f"  {name} <- {entry}" for entry, name in self.restored]
        for side, left_out in (
            ("checkpoint entries", self.left_out_checkpoint),
            ("variables", self.left_out_variables),
        ):
            lines.append(f"left out {len(left_out)} {side}")
            lines += [f"  {name}: {why}" for name, why in left_out]
        return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class Restore(Copy):
    """What :func:`restore_scope` built: a :class:`Copy` and its :class:`RestoreReport`."""

    report: RestoreReport


def restore_scope(
    checkpoint,
    src_scope,
    dst_scope,
    include_non_trainable=False,
    *,
    exclude=(),
    rename=None,
    report=False,
):
    """Builds an op that loads tensors saved under one scope into another scope.

    The assignment map is by relative name, as in
    ``tf.compat.v1.train.init_from_checkpoint({"src_scope/": "dst_scope/"})``,
    with every problem listed at once. Works with name-based checkpoints
    (``tf.compat.v1.train.Saver``), the zoo's or any TF1 program's.

    Args:
        checkpoint: a checkpoint prefix, or a directory (its latest checkpoint).
        src_scope: scope of the names inside the checkpoint (a full name).
        dst_scope: scope of the variables to load, relative to the current scope.
        include_non_trainable: load every global variable under ``dst_scope``.
        exclude: regular expressions (``re.search``) of full names to leave alone
            on both sides: a new head, optimizer slots (``"Adagrad"``).
        rename: ``{"old/": "new/"}``: checkpoint names relative to ``src_scope``
            starting with a key (whole path components) are matched as if they
            started with its value, relative to ``dst_scope`` (a scope renamed
            since the checkpoint was written); the longest key wins.
        report: False raises on any variable left without a partner (strict);
            True restores the variables that have a partner of the same shape
            and dtype and lists the rest in ``Restore.report``.

    Returns:
        :class:`Restore` whose ``pairs`` hold ``(checkpoint name, variable)``,
        ``unmatched`` the checkpoint names left out, ``report`` the
        :class:`RestoreReport`; run ``.op``.

    Raises:
        DataError: no readable checkpoint at ``checkpoint``; ZooError: a directory whose
            ``checkpoint`` file leads outside it (both from
            :func:`zoo.checkpoints.open_tf_checkpoint`).
        ScopeError: strict, a variable under ``dst_scope`` has no tensor of the
            same relative name under ``src_scope`` in the checkpoint; a renaming
            map that gives two entries one name, or a key that matches nothing.
        ShapeError: strict, a tensor differs in shape or dtype from its variable.
        ZooError: an exclude pattern that is no regular expression or matches
            nothing.
        EagerError: called in eager execution.
    """
    owner = f"restore_scope({checkpoint!r}: {src_scope!r} -> {dst_scope!r})"
    _require_collections(owner, "tf.train.Checkpoint")
    src_scope = _full_scope(owner, src_scope, relative=False)
    dst_scope = _full_scope(owner, dst_scope)
    prefix, reader = open_tf_checkpoint(checkpoint)
    saved = [slot for slot in checkpoint_slots(reader) if _under(slot.name, src_scope)]
    if not saved:
        raise ScopeError(
            f"{owner}: expected tensors under {src_scope!r} in the checkpoint, found "
            "none; pass the scope the checkpoint was written under"
        )
    pairs, restore_report = plan_restore(
        owner,
        _relative_slots(owner, "checkpoint", saved, src_scope),
        _scope_slots(owner, dst_scope, include_non_trainable),
        f"checkpoint scope {src_scope!r}",
        repr(dst_scope),
        exclude=exclude,
        rename=rename,
        report=report,
    )
    op = tf.no_op()
    if pairs:
        names = [slot.name for slot, _ in pairs]
        loaded = tf.raw_ops.RestoreV2(
            prefix=prefix,
            tensor_names=names,
            shape_and_slices=[""] * len(names),
            dtypes=[slot.dtype for slot, _ in pairs],
        )
        variables = [variable for _, variable in pairs]
        op = _assign(zip(loaded, variables, strict=True), tau=1.0)
    return Restore(
        op=op,
        pairs=tuple((slot.name, variable) for slot, variable in pairs),
        unmatched=tuple(sorted(name for name, _ in restore_report.left_out_checkpoint)),
        report=restore_report,
    )


def checkpoint_slots(reader):
    """Returns a ``_Slot`` per tensor of a checkpoint reader, its item the name."""
    dtypes = reader.get_variable_to_dtype_map()
    return [
        _Slot(name, list(shape), dtypes[name].base_dtype, name)
        for name, shape in reader.get_variable_to_shape_map().items()
    ]


def plan_restore(
    owner, saved, targets, src_label, dst_label, *, exclude=(), rename=None, report=False
):
    """Pairs checkpoint entries with variables by name after exclusions and renames.

    The one rule of every restore (:func:`restore_scope`,
    :func:`zoo.share.restore_by_name`).

    Args:
        owner: the caller, for messages.
        saved: dict name -> ``_Slot`` of the checkpoint entries (item: its name).
        targets: dict name -> ``_Slot`` of the variables (item: the variable).
        src_label: how the checkpoint is named in messages.
        dst_label: how the variables are named in messages.
        exclude, rename, report: as :func:`restore_scope`.

    Returns:
        ``(pairs, report)``: ``(checkpoint slot, variable)`` per variable to load,
        and the :class:`RestoreReport`.

    Raises:
        As :func:`restore_scope`.
    """
    left_saved, left_targets = [], []
    saved, targets = _exclude(owner, exclude, saved, targets, left_saved, left_targets)
    renamed = _rename(owner, rename, saved)
    if not report:
        match_by_name(owner, renamed, targets, src_label, dst_label)  # raises on a gap
    pairs = []
    for key, target in targets.items():
        source = renamed.get(key)
        if source is None:
            left_targets.append((target.name, f"no {key!r} in {src_label}"))
        elif (source.shape, source.dtype) != (target.shape, target.dtype):
            why = f"{_describe(target)} vs {source.name} {_describe(source)}"
            left_targets.append((target.name, why))
        else:
            pairs.append((source, target))
    paired = {source.name for source, _ in pairs}
    for key, source in sorted(renamed.items()):
        if source.name in paired:
            continue
        target = targets.get(key)
        why = (
            f"no {key!r} in {dst_label}"
            if target is None
            else f"{_describe(source)} vs {target.name} {_describe(target)}"
        )
        left_saved.append((source.name, why))
    return [(source, target.item) for source, target in pairs], RestoreReport(
        restored=tuple((source.name, target.name) for source, target in pairs),
        left_out_checkpoint=tuple(sorted(left_saved)),
        left_out_variables=tuple(sorted(left_targets)),
    )


def _exclude(owner, patterns, saved, targets, left_saved, left_targets):
    """Drops the entries and variables an exclude pattern finds; returns both kept.

    Appends ``(name, why)`` to ``left_saved`` and ``left_targets``.

    Raises:
        ZooError: a pattern that does not compile or finds nothing on either side.
    """
    patterns = [patterns] if isinstance(patterns, str) else list(patterns)
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except (re.error, TypeError):
            raise ZooError(
                f"{owner}: expected exclude patterns to be regular expressions, found "
                f"{pattern!r}; escape it with re.escape, e.g. exclude=['Adagrad']"
            ) from None
    used = set()
    for slots, left_out in ((saved.values(), left_saved), (targets.values(), left_targets)):
        for slot in slots:
            hit = next((p for p in compiled if p.search(slot.name)), None)
            if hit is not None:
                used.add(hit.pattern)
                left_out.append((slot.name, f"excluded by {hit.pattern!r}"))
    unused = [p.pattern for p in compiled if p.pattern not in used]
    if unused:
        raise ZooError(
            f"{owner}: expected every exclude pattern to match a checkpoint entry or a "
            f"variable, found {unused} matching nothing; fix the pattern or drop it"
        )
    excluded = {name for name, _ in left_saved + left_targets}
    return tuple(
        {key: slot for key, slot in side.items() if slot.name not in excluded}
        for side in (saved, targets)
    )


def _rename(owner, rename, saved):
    """Returns ``saved`` keyed by renamed names (see ``restore_scope``'s ``rename``).

    Raises:
        ScopeError: a key matches nothing, or two entries get one name.
    """
    if not rename:
        return saved
    prefixes = {str(old).strip("/"): str(new).strip("/") for old, new in rename.items()}
    if "" in prefixes:
        raise ScopeError(
            f"{owner}: expected renaming keys to be non-empty name prefixes, found "
            f"{sorted(rename)}; rename a scope such as {{'old/': 'new/'}}"
        )
    renamed, origin, used = {}, {}, set()
    for key, slot in saved.items():
        matches = [old for old in prefixes if key == old or key.startswith(old + "/")]
        new_key = key
        if matches:
            old = max(matches, key=len)
            used.add(old)
            new_key = "/".join(p for p in (prefixes[old], key[len(old) :].strip("/")) if p)
        if new_key in renamed:
            raise ScopeError(
                f"{owner}: expected the renaming map to give every checkpoint entry its "
                f"own name, found {origin[new_key]!r} and {key!r} both becoming "
                f"{new_key!r}; map them to distinct names, or exclude one of them"
            )
        renamed[new_key], origin[new_key] = slot, key
    unused = sorted(prefixes.keys() - used)
    if unused:
        raise ScopeError(
            f"{owner}: expected every renaming key to start some checkpoint name, found "
            f"{unused} starting none; keys are names relative to the checkpoint scope, "
            "e.g. {'old_tower/': 'tower/'}"
        )
    return renamed


def match_by_name(owner, src, dst, src_label, dst_label):
    """Pairs every ``dst`` slot with the ``src`` slot of the same relative name.

    The one matching rule of this module: graph scopes, eager variables and
    checkpoints all come here.

    Args:
        owner: the caller, for messages.
        src: dict relative name -> ``_Slot``.
        dst: dict relative name -> ``_Slot``.
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
                f"{target.name} {_describe(target)} vs {source.name} {_describe(source)}"
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
    """Raises ZooError unless ``tau`` is a number in (0, 1]."""
    if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not 0 < tau <= 1:
        raise ZooError(
            f"{owner}: expected tau in (0, 1], found {tau!r}; pass tau=1.0 for a hard "
            "copy or a small positive fraction such as 0.01 for a soft update"
        )


def _copy(owner, src, dst, tau, src_label, dst_label):
    pairs, unmatched = match_by_name(owner, src, dst, src_label, dst_label)
    return Copy(op=_assign(pairs, tau), pairs=tuple(pairs), unmatched=unmatched)


def _assign(pairs, tau):
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


def _require_collections(owner, alternative):
    if tf.executing_eagerly() or tf.inside_function():
        raise EagerError(
            f"{owner}: expected a graph (`with tf.Graph().as_default():`), found eager "
            f"execution or tf.function, which have no variable collections; use "
            f"{alternative} there"
        )


def _full_scope(owner, scope, relative=True):
    if not isinstance(scope, str) or not scope.strip("/"):
        raise ScopeError(
            f"{owner}: expected a non-empty scope name, found {scope!r}; pass the "
            "scope the network was built under, e.g. 'current'"
        )
    scope = scope.strip("/")
    return full_name(scope) if relative else scope


def _under(name, scope):
    return name.startswith(scope + "/")


def _is_frozen(graph, variable):
    return any(v is variable for v in graph.get_collection(FROZEN_VARIABLES))


def _scope_slots(owner, scope, include_non_trainable):
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
        if _under(v.name, scope)
    }
    if not inside:
        kind = "variables" if include_non_trainable else "trainable or frozen variables"
        raise ScopeError(
            f"{owner}: expected {kind} under {scope!r}, found none; build the network "
            "under that scope first, or check the scope name"
        )
    return _relative_slots(owner, repr(scope), inside.values(), scope)


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
    return _relative_slots(owner, side, slots, scope.strip("/"))


def _relative_slots(owner, side, slots, scope):
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
    """Returns the ``_Slot`` of a variable: ``name`` or its name without ``:0``."""
    name = name or re.sub(r":\d+$", "", variable.name)
    return _Slot(name, variable.shape.as_list(), variable.dtype.base_dtype, variable)


def _common_scope(names):
    """The longest scope (whole path components) that holds every name."""
    return "/".join(os.path.commonprefix([name.split("/")[:-1] for name in names]))


def _describe(slot):
    return f"{slot.shape} {slot.dtype.name}"
