"""``python -m zoo.compat check DIR [--json FILE]``: the TF 1.x names a repository
uses, by ``file:line``, and whether ``zoo-tf1`` gives them.

Reads the code (``ast``; nothing of the repository runs) and finds every name
reached from TensorFlow: ``tf.a.b`` after ``import tensorflow as tf`` (or the
upgrade line), ``from tensorflow.x import y``, ``import tensorflow.contrib.slim
as slim`` then ``slim.z``. Each is looked up as TF1 code by path gets it
(:mod:`zoo.compat.tf1_paths`, after :func:`zoo.compat.install`), as far as the
first object that is no module (``tf.train.AdamOptimizer``, not its
``minimize``), and reported:

* provided;
* provided with a documented difference (:data:`DIFFERENCES`: the doc's anchor);
* not provided: the lookup's error, which for ``tf.contrib`` names TF 1.15's
  module and the nearest replacement (the contrib map's ``ContribError``).

It also lists files it cannot read (Python 2 syntax) and what marks a TF2
program (``import keras``, ``tf.function``, ...). A name reached dynamically
(``getattr(tf, name)``, ``importlib.import_module``, ``exec``, a module object
passed around) is not seen; the report says so. Exit status 0 when every name
found is provided, 1 when one is not (or a file cannot be read), 2 on bad input.
"""

import ast
import dataclasses
import json
import os
import sys
import types

from layers.errors import ZooError

__all__ = ["DIFFERENCES", "Use", "main", "report", "scan", "uses_of"]

# TF 1.x names (and all below them) given with a difference the docs describe.
DIFFERENCES = {
    "tensorflow.layers.dropout": "docs/tf1-layers.md#the-command",
    "tensorflow.layers.Dropout": "docs/tf1-layers.md#the-command",
    "tensorflow.get_collection_ref": "docs/tf1-layers.md#limits",
    "tensorflow.contrib.training.HParams": "docs/contrib.md#tfcontribtraininghparams",
    "tensorflow.contrib.rnn.LSTMBlockCell": "docs/contrib.md#what-maps-where",
    **{f"tensorflow.{name}": "docs/estimator.md#what-is-not-provided" for name in (
        "estimator.train_and_evaluate", "estimator.RunConfig", "estimator.tpu",
        "contrib.tpu")},
    **{f"tensorflow.nn.{name}": "docs/contrib.md#conv2d_transposes-static-shape-"
       "tensorflow-2-not-contrib" for name in ("conv2d_transpose", "conv3d_transpose")},
}  # fmt: skip

_SKIP = {"__pycache__", "node_modules", "site-packages"}  # and hidden folders


@dataclasses.dataclass(frozen=True)
class Use:
    """One TF 1.x name at one place.

    Attributes:
        module: the module path the file imports (``"tensorflow"``,
            ``"tensorflow.contrib.slim"``, ``"tensorflow.python.ops"``).
        names: the ``from`` name then the attributes read, in order; for an
            ``import``, the attributes read from ``tensorflow`` (``("contrib",
            "slim", "conv2d")``).
        fromlist: a ``from ... import``.
        file: the file, relative to the checked folder.
        line: its line.
    """

    module: str
    names: tuple
    fromlist: bool
    file: str
    line: int

    @property
    def name(self):
        """The dotted name as written out from ``tensorflow``."""
        return ".".join([self.module if self.fromlist else "tensorflow", *self.names])


def _is_tensorflow(name):
    return name == "tensorflow" or name.startswith("tensorflow.")


def _chain(node):
    """``(Name id, [attr, ...])`` of ``a.b.c``, or None."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    return (node.id, attrs[::-1]) if isinstance(node, ast.Name) else None


def uses_of(tree, file):
    """The TF 1.x names a module uses.

    Args:
        tree: the module's ``ast.Module``.
        file: its name in the report.

    Returns:
        A list of :class:`Use`.
    """
    bound = {}  # local name -> (module, names, fromlist)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_tensorflow(alias.name):
                    parts = tuple(alias.name.split(".")[1:])
                    if alias.asname:
                        bound[alias.asname] = (alias.name, parts, False)
                        if parts:
                            found.append(Use(alias.name, parts, False, file, node.lineno))
                    else:
                        bound["tensorflow"] = (alias.name, (), False)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module and (
                _is_tensorflow(node.module)):  # fmt: skip
            for alias in node.names:
                if alias.name != "*":
                    use = (node.module, (alias.name,), True)
                    bound[alias.asname or alias.name] = use
                    found.append(Use(*use, file, node.lineno))
    parents = {child: parent for parent in ast.walk(tree)
               for child in ast.iter_child_nodes(parent)}  # fmt: skip
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute | ast.Name) or isinstance(
                parents.get(node), ast.Attribute):  # fmt: skip
            continue  # only the whole chain a.b.c
        chain = _chain(node)
        if chain and chain[0] in bound and (chain[1] or not bound[chain[0]][2]):
            module, names, fromlist = bound[chain[0]]
            if names or chain[1]:
                found.append(Use(module, (*names, *chain[1]), fromlist, file, node.lineno))
    return found


def _is_python(path):
    """A ``.py`` file, or a script without extension whose first line runs Python
    (``#!/usr/bin/env python``), which ``zoo-tf1`` runs as well."""
    name = os.path.basename(path)
    if name.endswith(".py"):
        return True
    if "." in name:
        return False
    with open(path, "rb") as source:
        first = source.readline(200)
    return first.startswith(b"#!") and b"python" in first


def scan(folder):
    """Reads every Python file under ``folder`` (``.py`` files and Python scripts
    without extension).

    Returns:
        ``(uses, tf2, unreadable, files)``: :class:`Use` list; ``[(file, line,
        what)]`` of TF2 markers; ``[(file, line, message)]`` of files Python cannot
        parse; the number of files read.
    """
    from zoo.compat.tf1_paths import tf2_uses

    uses, tf2, unreadable, files = [], [], [], 0
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP)
        for name in sorted(names):
            path = os.path.join(root, name)
            if not _is_python(path):
                continue
            file = os.path.relpath(path, folder)
            files += 1
            with open(path, "rb") as source:
                text = source.read()
            try:
                tree = ast.parse(text, path)
            except SyntaxError as err:
                unreadable.append((file, err.lineno, f"SyntaxError: {err.msg}"))
                continue
            uses += uses_of(tree, file)
            tf2 += [(file, line, what) for line, what in tf2_uses(tree)]
    return uses, tf2, unreadable, files


def _lookup(use):
    """``(name, status, detail)`` of a use, looked up as TF1 code gets it."""
    from zoo.compat.tf1_paths import tf1_import

    done = [use.module if use.fromlist else "tensorflow"]
    try:
        obj = tf1_import(use.module, fromlist=use.names[:1] if use.fromlist else ())
        for name in use.names:
            if not isinstance(obj, types.ModuleType):
                break
            done.append(name)
            obj = getattr(obj, name)
    except (AttributeError, ImportError) as err:
        return ".".join(done), "not provided", str(err).splitlines()[0]
    name = ".".join(done)
    plain = name.replace("tensorflow.compat.v1", "tensorflow", 1)  # the upgrade line's
    anchor = next((DIFFERENCES[key] for key in DIFFERENCES
                   if plain == key or plain.startswith(f"{key}.")), None)  # fmt: skip
    return name, ("documented difference" if anchor else "provided"), anchor


def report(folder):
    """The report of ``folder`` as a dict (what ``--json`` writes).

    Raises:
        ZooError: ``folder`` is no folder.
    """
    if not os.path.isdir(folder):
        found = "a file" if os.path.exists(folder) else "nothing"
        raise ZooError(f"{folder}: expected a folder of Python code, found {found}; "
                       "give the repository's folder")  # fmt: skip
    uses, tf2, unreadable, files = scan(folder)
    import tensorflow as tf

    import zoo.compat

    installed = zoo.compat.install()
    try:
        names = {}
        for use in uses:
            name, status, detail = _lookup(use)
            entry = names.setdefault(name, {"name": name, "status": status,
                                            "detail": detail, "uses": []})  # fmt: skip
            entry["uses"].append((use.file, use.line))
    finally:
        if installed:
            zoo.compat.uninstall()
    for entry in names.values():
        entry["uses"] = [f"{file}:{line}" for file, line in sorted(set(entry["uses"]))]
    names = sorted(names.values(), key=lambda e: (e["status"], e["name"]))
    failing = [entry for entry in names if entry["status"] == "not provided"]
    if failing or unreadable:
        first = (failing[0]["uses"][0] if failing else
                 f"{unreadable[0][0]}:{unreadable[0][1]}")  # fmt: skip
        cannot = f" and {len(unreadable)} file(s) Python cannot read" if unreadable else ""
        verdict = (
            f"NOT all provided: {len(failing)} name(s) not provided{cannot}; the "
            f"program fails where it reaches one (first listed at {first})"
        )
    else:
        verdict = (f"every one of the {len(names)} TF 1.x names found resolves under "
                   "zoo-tf1 (names reached dynamically are not checked)")  # fmt: skip
    return {
        "folder": os.path.abspath(folder),
        "files": files,
        "tensorflow": tf.__version__,
        "names": names,
        "tf2": [f"{file}:{line}: {what}" for file, line, what in tf2],
        "unreadable": [f"{file}:{line}: {msg}" for file, line, msg in unreadable],
        "not_seen": "names reached dynamically (getattr(tf, name), importlib."
        "import_module, exec of strings, a module passed as an argument) are not seen",
        "verdict": verdict,
    }


def _text(found):
    """The report as lines of text."""
    lines = [
        f"zoo.compat check {found['folder']}: {found['files']} Python files, TensorFlow "
        f"{found['tensorflow']}, names looked up as zoo-tf1 gives them"
    ]
    for status in ("provided", "documented difference", "not provided"):
        entries = [e for e in found["names"] if e["status"] == status]
        lines.append(f"{status} ({len(entries)}):")
        for e in entries:
            more = f" (+{len(e['uses']) - 3})" if len(e["uses"]) > 3 else ""
            detail = f"  {e['detail']}" if e["detail"] else ""
            lines.append(f"  {e['name']}  {', '.join(e['uses'][:3])}{more}{detail}")
    if found["unreadable"]:
        lines.append("cannot read (Python 2?): " + "; ".join(found["unreadable"]))
    if found["tf2"]:
        lines.append("a TF2 program's: " + "; ".join(found["tf2"]) + " (zoo-tf1 runs "
                     "TF1 programs: v2 behaviour off, TF 1.15's API)")  # fmt: skip
    lines.append(f"not seen: {found['not_seen']}")
    lines.append(f"verdict: {found['verdict']}")
    return lines


def main(argv):
    """``check DIR [--json FILE]``; returns the exit status."""
    usage = "usage: python -m zoo.compat check DIR [--json FILE]"
    if argv[:1] in (["-h"], ["--help"]):
        print(f"{usage}\n\n{__doc__}")
        return 0
    args = list(argv)
    json_file = None
    if "--json" in args:
        at = args.index("--json")
        if at + 1 >= len(args):
            print(f"zoo.compat check: --json: expected a file, found nothing; {usage}",
                  file=sys.stderr)  # fmt: skip
            return 2
        json_file = args.pop(at + 1)
        args.pop(at)
    if len(args) != 1:
        print(f"zoo.compat check: expected one folder, found {args}; {usage}",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        if json_file and not os.path.isdir(os.path.dirname(os.path.abspath(json_file))):
            raise ZooError(f"--json {json_file}: expected a file in an existing folder, "
                           "found no such folder; make the folder first")  # fmt: skip
        found = report(args[0])
    except ZooError as err:
        print(f"zoo.compat check: {err}", file=sys.stderr)
        return 2
    print("\n".join(_text(found)))
    if json_file:
        with open(json_file, "w") as out:
            json.dump(found, out, indent=1)
    failing = any(e["status"] == "not provided" for e in found["names"])
    return 1 if failing or found["unreadable"] else 0
