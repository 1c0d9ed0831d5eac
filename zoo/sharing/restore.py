"""Restore by scope: load a checkpoint's variables into another scope, by name.

Checkpoint entries are paired with variables by their name relative to a scope
(the rule of :mod:`zoo.sharing.state`'s copies), after exclusions and renames;
a :class:`RestoreReport` says what was loaded and what was left out, and why.

Usage::

    restore = restore_scope("ckpt/model", "mlp", "current")  # saved as mlp/*, loaded
    sess.run(restore.op)                                     # into current/*
"""

import dataclasses
import re

import tensorflow as tf

from layers.errors import ScopeError, ZooError
from zoo.sharing.state import (
    Copy,
    Slot,
    assign_pairs,
    describe_slot,
    full_scope,
    match_by_name,
    relative_slots,
    require_collections,
    scope_slots,
    under_scope,
)
from zoo.training.checkpoints import open_tf_checkpoint


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
        src_scope: scope of the names inside the checkpoint (a full name); ``""``
            (or ``"/"``) for names at its root (``conv1/weights``), which are
            then the relative names.
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
            :func:`zoo.training.checkpoints.open_tf_checkpoint`).
        ScopeError: strict, a variable under ``dst_scope`` has no tensor of the
            same relative name under ``src_scope`` in the checkpoint; a renaming
            map that gives two entries one name, or a key that matches nothing.
        ShapeError: strict, a tensor differs in shape or dtype from its variable.
        ZooError: an exclude pattern that is no regular expression or matches
            nothing.
        EagerError: called in eager execution.
    """
    owner = f"restore_scope({checkpoint!r}: {src_scope!r} -> {dst_scope!r})"
    require_collections(owner, "tf.train.Checkpoint")
    src_scope = _checkpoint_scope(owner, src_scope)
    dst_scope = full_scope(owner, dst_scope)
    prefix, reader = open_tf_checkpoint(checkpoint)
    saved = [
        slot
        for slot in checkpoint_slots(reader)
        if not src_scope or under_scope(slot.name, src_scope)
    ]
    if not saved:
        raise ScopeError(
            f"{owner}: expected tensors under {src_scope!r} in the checkpoint, found "
            "none; pass the scope the checkpoint was written under"
        )
    pairs, restore_report = plan_restore(
        owner,
        relative_slots(owner, "checkpoint", saved, src_scope),
        scope_slots(owner, dst_scope, include_non_trainable),
        f"checkpoint scope {src_scope!r}" if src_scope else "the checkpoint's root",
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
        op = assign_pairs(zip(loaded, variables, strict=True), tau=1.0)
    return Restore(
        op=op,
        pairs=tuple((slot.name, variable) for slot, variable in pairs),
        unmatched=tuple(sorted(name for name, _ in restore_report.left_out_checkpoint)),
        report=restore_report,
    )


def _checkpoint_scope(owner, scope):
    """The full name of the checkpoint's scope; ``""`` for its root (``""``, ``"/"``)."""
    if isinstance(scope, str) and not scope.strip("/"):
        return ""
    return full_scope(owner, scope, relative=False)


def checkpoint_slots(reader):
    """Returns a ``Slot`` per tensor of a checkpoint reader, its item the name."""
    dtypes = reader.get_variable_to_dtype_map()
    return [
        Slot(name, list(shape), dtypes[name].base_dtype, name)
        for name, shape in reader.get_variable_to_shape_map().items()
    ]


def plan_restore(
    owner, saved, targets, src_label, dst_label, *, exclude=(), rename=None, report=False
):
    """Pairs checkpoint entries with variables by name after exclusions and renames.

    The one rule of every restore (:func:`restore_scope`,
    :func:`zoo.sharing.share.restore_by_name`).

    Args:
        owner: the caller, for messages.
        saved: dict name -> ``Slot`` of the checkpoint entries (item: its name).
        targets: dict name -> ``Slot`` of the variables (item: the variable).
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
    kept, targets = _exclude(owner, exclude, saved, targets, left_saved, left_targets)
    renamed = _rename(owner, rename, kept, excluded=sorted(saved.keys() - kept.keys()))
    if not report:
        match_by_name(owner, renamed, targets, src_label, dst_label)  # raises on a gap
    pairs = []
    for key, target in targets.items():
        source = renamed.get(key)
        if source is None:
            left_targets.append((target.name, f"no {key!r} in {src_label}"))
        elif (source.shape, source.dtype) != (target.shape, target.dtype):
            why = f"{describe_slot(target)} vs {source.name} {describe_slot(source)}"
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
            else f"{describe_slot(source)} vs {target.name} {describe_slot(target)}"
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


def _rename(owner, rename, saved, excluded=()):
    """Returns ``saved`` keyed by renamed names (see ``restore_scope``'s ``rename``).

    Args:
        owner: the caller, for messages.
        rename: ``{"old/": "new/"}`` or None.
        saved: dict name -> ``Slot`` of the entries ``exclude=`` kept.
        excluded: the names of the entries ``exclude=`` removed.

    Raises:
        ScopeError: a key starts no kept name (saying so when it starts only
            excluded ones), or two entries get one name.
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
        matches = [old for old in prefixes if _starts(key, old)]
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
    starting_none = [old for old in unused if not any(_starts(n, old) for n in excluded)]
    if starting_none:
        raise ScopeError(
            f"{owner}: expected every renaming key to start some checkpoint name, found "
            f"{starting_none} starting none; keys are names relative to the checkpoint "
            "scope, e.g. {'old_tower/': 'tower/'}"
        )
    if unused:
        hidden = sorted(n for n in excluded if any(_starts(n, old) for old in unused))
        raise ScopeError(
            f"{owner}: expected every renaming key to start some checkpoint name that "
            f"exclude= keeps, found {unused} starting only the excluded {hidden}; drop "
            "the key, or the exclude pattern that removes those names"
        )
    return renamed


def _starts(name, prefix):
    """Tells whether ``prefix`` is ``name`` or starts it in whole path components."""
    return name == prefix or name.startswith(prefix + "/")
