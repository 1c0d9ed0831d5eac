"""TensorFlow's own tests of ``tf.layers`` run against :mod:`layers.tf1`.

keras-team/tf-keras keeps TensorFlow's tests of the legacy layers in
``tf_keras/legacy_tf_layers/{core,convolutional,normalization,pooling}_test.py``
(not in the wheel). Fetch them into a folder outside the repository (tag v2.21.0)
and give that folder::

    python -m tests.external.tf_layers_tests /path/to/tests [--reference]

Each file is copied into a temporary folder with its import of the module under
test pointed at ours (``from tf_keras.legacy_tf_layers import core as
core_layers`` becomes ``from layers.tf1 import core as core_layers``; with
``--reference``, at tf_keras' own ``tf_keras.src.legacy_tf_layers`` under
``TF_USE_LEGACY_KERAS=1``) and ``tf_keras.testing_infra`` at the wheel's
``tf_keras.src.testing_infra``; no test body changes. Each copy runs with pytest
twice: with TensorFlow 2 behaviour (as the files run by default) and with it
turned off (:mod:`tests.external.tf1_behaviour`, as TensorFlow's TF1 builds ran
them: ``run_v1_only`` tests run there). A test whose decorator needs unittest's
own result object runs with ``python -m unittest`` instead. A test in
:data:`EXCLUDED` counts as excluded only when it fails as its reason says.

Prints a markdown table (file, behaviour, passed/total, skipped by the file
itself, excluded with the reason) and exits 1 when a test that is not excluded
fails.
"""

import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

REPO = pathlib.Path(__file__).resolve().parents[2]
FILES = tuple(f"{module}_test.py" for module in ("core", "convolutional", "normalization",
                                                 "pooling"))  # fmt: skip
MODULE_UNDER_TEST = re.compile(
    r"^from tf_keras\.legacy_tf_layers import (\w+) as (\w+)$", re.MULTILINE
)
WHEEL_LAYOUT = re.compile(r"^from tf_keras\.testing_infra import", re.MULTILINE)
BEHAVIOURS = {"TF2": [], "TF1": ["-p", "tests.external.tf1_behaviour"]}
TF1_PRELUDE = "import tensorflow as tf; tf.compat.v1.disable_v2_behavior(); "

EAGER_FUNCTION_FORM = (
    "a function form (`dense(x, ...)`, `conv2d(x, ...)`) called in plain eager "
    "execution: TF 1.15 makes new variables at every call, ours raises EagerError (by "
    "design); passes in TF1"
)
EXCLUDED = {
    ("TF2", f"core_test.py::DenseTest::{name}"): EAGER_FUNCTION_FORM
    for name in ("testFunctionalDenseTwiceReuse", "testFunctionalDenseTwiceReuseFromScope",
                 "testFunctionalDenseWithCustomGetter")
} | {
    ("TF2", f"convolutional_test.py::{name}"): EAGER_FUNCTION_FORM
    for name in ("ConvTest::testConv1DFloat16", "ConvTest::testConv2DFloat16",
                 "Conv2DTransposeTest::testConv2DTransposeFloat16")
}  # fmt: skip
# What each excluded test must fail with to count as excluded.
EXCLUDED_BECAUSE = {EAGER_FUNCTION_FORM: "EagerError"}
UNDER_UNITTEST = ("core_test.py::DenseTest::testNoEagerLeak",)  # reads unittest's result


def copy_tests(source, target, reference):
    """Copies TF's test files from ``source`` to ``target``, imports rewritten.

    Returns:
        The names of the files copied, in :data:`FILES` order.
    """
    package = "tf_keras.src.legacy_tf_layers" if reference else "layers.tf1"
    copied = []
    for name in FILES:
        path = pathlib.Path(source) / name
        if not path.exists():
            continue
        text = MODULE_UNDER_TEST.sub(rf"from {package} import \1 as \2", path.read_text())
        text = WHEEL_LAYOUT.sub("from tf_keras.src.testing_infra import", text)
        (pathlib.Path(target) / name).write_text(text)
        copied.append(name)
    return copied


def pytest_outcomes(path, behaviour, env):
    """Runs one test file with pytest.

    Returns:
        ``{"<file>::<class>::<test>": (outcome, message)}``, outcome one of
        ``passed``, ``failed``, ``skipped``.
    """
    report = path.with_suffix(".xml")
    deselected = [f"--deselect={path}::{key.split('::', 1)[1]}"
                  for key in UNDER_UNITTEST if key.startswith(path.name)]  # fmt: skip
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p",
               "no:cacheprovider", f"--junitxml={report}", *BEHAVIOURS[behaviour],
               *deselected, str(path)]  # fmt: skip
    subprocess.run(command, cwd=REPO, env=env, capture_output=True, check=False)
    outcomes = {}
    for case in ElementTree.parse(report).iter("testcase"):
        key = f"{path.name}::{case.get('classname').split('.')[-1]}::{case.get('name')}"
        problem = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        if problem is None:
            outcomes[key] = ("passed", "")
        else:
            outcome = "skipped" if problem.tag == "skipped" else "failed"
            outcomes[key] = (outcome, f"{problem.get('message')}\n{problem.text or ''}")
    return outcomes


def unittest_outcomes(path, behaviour, env):
    """Runs the tests of :data:`UNDER_UNITTEST` in ``path`` with unittest."""
    outcomes = {}
    for key in UNDER_UNITTEST:
        name, test = key.split("::", 1)
        if name != path.name:
            continue
        prelude = TF1_PRELUDE if behaviour == "TF1" else ""
        dotted = f"{path.stem}.{test.replace('::', '.')}"
        code = f"{prelude}import unittest; unittest.main(None, argv=['', '{dotted}'])"
        done = subprocess.run([sys.executable, "-c", code], cwd=path.parent, env=env,
                              capture_output=True, text=True)  # fmt: skip
        outcome = "passed" if done.returncode == 0 else "failed"
        outcomes[key] = (outcome, done.stderr[-2000:])
    return outcomes


def summarize(name, behaviour, outcomes):
    """One table row and the keys of the tests that failed without an excuse."""
    excluded, failed, passed, skipped = {}, [], 0, 0
    for key, (outcome, message) in sorted(outcomes.items()):
        reason = EXCLUDED.get((behaviour, key))
        if outcome == "skipped":
            skipped += 1
        elif reason and outcome == "failed" and EXCLUDED_BECAUSE[reason] in message:
            excluded[key.split("::", 1)[1]] = reason
        elif outcome == "passed":
            passed += 1
        else:
            failed.append(key)
    total = passed + len(failed)
    reasons = "; ".join(f"`{test}`" for test in excluded)
    reasons += f" ({next(iter(excluded.values()))})" if excluded else ""
    row = f"| {name} | {behaviour} | {passed}/{total} | {skipped} | {reasons or '-'} |"
    return row, failed


def main(argv=None):
    """Runs every file in both behaviours and prints the table; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="the folder of TensorFlow's *_test.py files")
    parser.add_argument(
        "--reference", action="store_true", help="run them against tf_keras' layers"
    )
    args = parser.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}  # fmt: skip
    if args.reference:
        env["TF_USE_LEGACY_KERAS"] = "1"
    rows, failures = [], []
    with tempfile.TemporaryDirectory() as scratch:
        files = copy_tests(args.folder, scratch, args.reference)
        if not files:
            parser.error(f"{args.folder}: expected TF's {', '.join(FILES)}, found none")
        for name in files:
            path = pathlib.Path(scratch) / name
            for behaviour in BEHAVIOURS:
                outcomes = pytest_outcomes(path, behaviour, env)
                outcomes.update(unittest_outcomes(path, behaviour, env))
                row, failed = summarize(name, behaviour, outcomes)
                rows.append(row)
                failures += [f"{behaviour} {key}" for key in failed]
    print("| file | behaviour | passed/total | skipped by the file | excluded (reason) |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))
    if failures:
        print("\nfailed:\n" + "\n".join(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
