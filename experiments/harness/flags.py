"""The flags every experiment shares, every flag checked before any work: the settings.

An experiment is a thin script whose module imports no TensorFlow: ``--help``
and every flag error answer before TensorFlow starts. :func:`parse_args` builds
the run's :class:`Settings` once from the command line; the script then starts
TensorFlow (quietly, :mod:`experiments.harness.startup`) and hands the settings
down::

    def build_parser():
        p = flags.parser("Tied vs untied autoencoder.", steps=10001, batch_size=128)
        flags.add_loop_flags(p, xla=True)
        return p

    def main(argv=None):
        args = flags.parse_args(build_parser(), argv)  # every flag checked first
        tf = startup.import_tensorflow()
        run = rundir.run_dir(args, "autoencoder")      # run.json, lock, --resume
        ...

(:func:`experiments.harness.rundir.start_with_tensorflow` does the first steps in
one call: flags, TensorFlow, data, run directory.)

    if __name__ == "__main__":
        entry.entry_point(main)

The run directory is :mod:`experiments.harness.rundir`, its run.json
:mod:`experiments.harness.record`, the data :mod:`experiments.harness.datasets`,
training a variant :mod:`experiments.harness.train`.
"""

import argparse
import dataclasses
import os
import sys

from experiments.harness import record
from layers.checks import choice_problem, int_problem, number_problem
from layers.errors import ZooError
from zoo.constants import BATCH_WINDOW, PRECISION_POLICIES
from zoo.data import DATASETS, DataIdentity, identify

MAX_INT = 2**31 - 1
MAX_REAL = 1e9


@dataclasses.dataclass(frozen=True)
class Settings:
    """A run's settings, built once from its command line by :func:`parse_args`.

    A flag reads as an attribute too: ``settings.steps`` is ``settings.flags["steps"]``.

    Attributes:
        flags: every flag's value by dest: after ``--resume`` (the run's run.json
            gives each flag not passed) and ``--quick`` (each flag's ``quick=`` cap).
        experiment: the experiment's module, e.g. ``experiments.autoencoder``.
        argv: the arguments parsed (the command run.json records).
        recorded: dest -> flag, for every flag run.json records.
        given: the dests of the flags the command line passed.
        may_differ: the dests of the flags marked ``may_differ_on_resume``.
        data: the data's :class:`zoo.data.DataIdentity` (flags ``--dataset``,
            ``--data-dir``), or None.
        record: the resumed run's run.json, or None.
    """

    flags: dict
    experiment: str
    argv: tuple = ()
    recorded: dict = dataclasses.field(default_factory=dict)
    given: frozenset = frozenset()
    may_differ: frozenset = frozenset()
    data: DataIdentity | None = None
    record: dict | None = None

    def __getattr__(self, name):
        flags = self.__dict__.get("flags", {})  # not self.flags: unpickling has none yet
        if name in flags:
            return flags[name]
        raise AttributeError(f"{type(self).__name__}: no flag or field {name!r}")

    def with_flags(self, **values):
        """Returns a copy whose flags take ``values`` (a variant's own ``steps``)."""
        return dataclasses.replace(self, flags={**self.flags, **values})


class _DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """States a flag's default once: not when it is None, the False of a switch
    (``--quick``: off unless given) or the help already says it."""

    def _get_help_string(self, action):
        switch = isinstance(action, argparse._StoreTrueAction)
        if action.default is None or switch or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line on stderr, exit status 2.

    ``add_argument`` takes three more keywords: ``check=`` (a function value ->
    problem or None, see :func:`integer`, :func:`real`, :func:`directory`,
    :func:`new_file`...), ``may_differ_on_resume=True`` for flags that do not
    change what a run computes (timeouts, checkpoint period, data path) and
    ``quick=N``, the most a number flag may be under ``--quick``.
    """

    experiment = None
    checks = ()

    def add_argument(
        self, *args, check=None, may_differ_on_resume=False, quick=None, **kwargs
    ):
        action = super().add_argument(*args, **kwargs)
        action.check, action.may_differ_on_resume = check, may_differ_on_resume
        action.quick = quick
        return action

    def add_check(self, check):
        """Adds ``check(args)``, which raises ZooError on flags that conflict.

        For what one flag's ``check=`` cannot see (``--evals`` above ``--steps``):
        :func:`parse_args` runs it after every flag's own check and ``--quick``,
        before TensorFlow starts.
        """
        self.checks = (*self.checks, check)

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}; see --help\n")


def integer(minimum=1, maximum=MAX_INT):
    """Returns a check: an int in ``[minimum, maximum]``."""

    def check(value):
        problem = int_problem(value, minimum, maximum)
        return problem and f"{problem}; pass one in that range"

    return check


def real(minimum=0.0, inclusive=False, maximum=MAX_REAL):
    """Returns a check: a finite float above ``minimum`` (or equal, if ``inclusive``)."""

    def check(value):
        problem = number_problem(value, minimum, maximum, low_open=not inclusive)
        return problem and f"{problem}; pass one in that range"

    return check


def int_list(minimum=1):
    """Returns a check: comma-separated integers >= ``minimum``, like ``625,625``."""

    def check(value):
        try:  # an int: one item of a list that a run.json of an older version holds
            numbers = [int(item) for item in str(value).split(",")]
        except ValueError:
            numbers = []
        if numbers and minimum <= min(numbers) and max(numbers) <= MAX_INT:
            return None
        return (
            f"expected comma-separated integers >= {minimum}, found {value!r}; pass e.g. "
            f"{minimum + 1},{minimum + 1}"
        )

    return check


def real_list(check):
    """Returns a check: comma-separated numbers, each accepted by ``check``."""

    def check_list(value):
        try:
            numbers = reals(value)
        except ValueError:
            return f"expected comma-separated numbers, found {value!r}; pass e.g. 0.5,1"
        return next(filter(None, map(check, numbers)), None)

    return check_list


def reals(value):
    """Returns the numbers of a comma-separated flag checked by :func:`real_list`."""
    return tuple(float(item) for item in value.split(","))


def integers(value):
    """Returns the integers of a comma-separated flag checked by :func:`int_list`.

    A list (the flag as a run.json of an older version recorded it) is taken as is.
    """
    items = value if isinstance(value, list | tuple) else value.split(",")
    return tuple(int(item) for item in items)


def text(value):
    """Check: a non-empty string."""
    if value.strip():
        return None
    return f"expected a non-empty value, found {value!r}; pass one or drop the flag"


def directory(value):
    """Check: an existing directory."""
    if os.path.isdir(value):
        return None
    found = "a file" if os.path.exists(value) else "nothing"
    return f"expected an existing directory, found {found} at {value!r}; pass a directory"


def new_directory(value):
    """Check: a directory, or a path where one can be made (no file on the way)."""
    path = os.path.abspath(value)
    while not os.path.exists(path):
        path = os.path.dirname(path)
    if os.path.isdir(path) and (path != os.path.abspath(value) or os.path.isdir(value)):
        return None
    return f"expected a directory or a new path, found the file {path!r}; pick another"


def new_file(value):
    """Check: a file path whose directory exists (the file itself may not)."""
    parent = os.path.dirname(os.path.abspath(value))
    if os.path.isdir(value):
        return f"expected a file name, found the directory {value!r}; name a file in it"
    if not os.path.isdir(parent):
        return (
            f"expected an existing directory for {value!r}, found none at {parent!r}; "
            "create it first"
        )
    return None


def one_of(names):
    """Returns a check: one of ``names``."""

    def check(value):
        problem = choice_problem(value, names)
        return problem and f"{problem}; pick one of those"

    return check


def argv_of(settings, dests):
    """Returns the flags ``dests`` of ``settings`` as command-line arguments.

    A flag whose value is None or False is left out; True gives the switch alone.
    Used to start another process with some of this run's flags.
    """
    argv = []
    for dest in dests:
        value = settings.flags[dest]
        if value is not None and value is not False:
            flag = settings.recorded[dest]
            argv += [flag] if value is True else [flag, str(value)]
    return argv


def parser(description, steps, batch_size, quick_steps=300, resumable=True, data=True):
    """Returns an ``ArgumentParser`` with the flags every experiment shares.

    The parser knows its experiment (the calling module, e.g.
    ``experiments.autoencoder``), which ``--resume`` checks against the run's
    ``run.json``.

    Args:
        description: what the experiment reproduces (shown by ``--help``).
        steps: default number of training steps.
        batch_size: default batch size.
        quick_steps: the most steps under ``--quick``.
        resumable: add ``--checkpoint-every`` and ``--resume`` (False for
            benchmarks, which do not checkpoint).
        data: add ``--dataset`` and ``--data-dir`` (False for experiments that
            read no dataset, such as reinforcement learning).
    """
    p = bare_parser(description, _caller_module())
    extends = " (a larger value extends a resumed run)" if resumable else ""
    p.add_argument(
        "--steps",
        type=int,
        default=steps,
        help=f"training steps per network{extends}",
        may_differ_on_resume=True,
        quick=quick_steps,
    )
    p.add_argument("--batch-size", type=int, default=batch_size, help="examples per step")
    if data:
        p.add_argument(
            "--dataset",
            default=None,
            check=one_of(DATASETS),
            help=f"one of {', '.join(DATASETS)}; default: what the --data-dir files are "
            "(by content), mnist from tensorflow-datasets",
        )
        p.add_argument(
            "--data-dir",
            default=None,
            check=directory,
            may_differ_on_resume=True,
            help="directory of the four IDX files (.gz or raw); default $ZOO_DATA_DIR, "
            "then tensorflow-datasets",
        )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of weights and batch order",
        check=integer(0),
    )
    p.add_argument(
        "--out",
        default=None,
        check=new_directory,
        help="run directory (default runs/<experiment>/<timestamp>-<random>)",
    )
    p.add_argument(
        "--overwrite", action="store_true", help="replace an existing run directory"
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"a short run ({quick_steps} steps) that checks the pipeline, for CI",
    )
    if resumable:
        p.add_argument(
            "--checkpoint-every",
            type=int,
            default=1000,
            metavar="N",
            may_differ_on_resume=True,
            help="save a checkpoint every N training steps (and at the end of each loop)",
        )
        p.add_argument(
            "--resume",
            default=None,
            metavar="RUN_DIR",
            check=directory,
            help="continue the run in RUN_DIR from its last checkpoint, with the flags "
            "it was started with (from RUN_DIR/run.json); --steps may be larger",
        )
    return p


def bare_parser(description, experiment=None):
    """Returns a parser with no shared flag whose flags :func:`parse_args` checks too.

    Args:
        description: shown by ``--help``.
        experiment: the experiment's module name; None takes the caller's.
    """
    p = _Parser(description=description, formatter_class=_DefaultsHelpFormatter)
    p.experiment = experiment or _caller_module()
    return p


def _caller_module():
    """Returns the module name of the experiment that builds the parser.

    The first frame outside this module; ``__main__`` becomes the name it was
    run by (``python -m experiments.x``) or its file name (``python x.py``).
    """
    frame = sys._getframe(1)
    while frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    module = frame.f_globals.get("__name__")
    if module == "__main__":
        spec = frame.f_globals.get("__spec__")
        file = frame.f_globals.get("__file__") or "__main__"
        module = spec.name if spec else os.path.splitext(os.path.basename(file))[0]
    return module


def may_differ_on_resume(p, *dests):
    """Marks flags (by dest) that a resumed or joining run may pass with other values."""
    for action in p._actions:
        if action.dest in dests:
            action.may_differ_on_resume = True


def parse_args(p, argv=None):
    """Parses ``argv`` and checks every flag before any work; returns the settings.

    Every flag's value is checked: by its ``check=``, else by its type and
    default (an int in [min(1, default), 2^31 - 1]; a finite float > 0, or >= 0
    when its default is 0, at most 1e9; a non-empty string). With ``--resume``,
    the run's ``run.json`` gives every flag not passed; a flag passed with
    another value than the run's is refused (unless it may differ on resume,
    like a larger ``--steps``), as is another experiment's directory or other
    data. With ``--quick``, a flag added with ``quick=N`` is at most N. The data's
    identity (:func:`zoo.data.identify`) is computed here, so ``--dataset`` with
    the other dataset's files fails before any work. TensorFlow is not started.

    Returns:
        The run's :class:`Settings`; with ``--resume``, flag ``out`` is the run
        directory; flag ``dataset`` is what the files are when not given.

    Raises:
        ZooError: a flag out of range, empty, of the wrong kind, in conflict
            with another (the parser's ``add_check``) or with the resumed run;
            DataError for missing, corrupt or other data.
    """
    argv = tuple(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(argv)
    recorded = {
        a.dest: a.option_strings[-1] for a in p._actions if a.dest not in record.UNRECORDED
    }
    may_differ = frozenset(a.dest for a in p._actions if a.may_differ_on_resume)
    given = frozenset(_given(p, argv))
    saved = None
    if vars(args).get("resume") is not None:
        _check_resume(args)
        saved = record.read(args.resume, p.experiment)
        record.merge(
            vars(args), saved, f"--resume {args.resume}", recorded, given, may_differ
        )
    _check_flags(p, args)
    if vars(args).get("quick"):
        for action in p._actions:
            if action.quick is not None:
                setattr(args, action.dest, min(getattr(args, action.dest), action.quick))
    for check in p.checks:
        check(args)
    data = None
    if "data_dir" in vars(args):
        data = identify(args.dataset, args.data_dir)
        if args.dataset is None and data.name in DATASETS:
            args.dataset = data.name
        if saved:
            record.check_same_data(saved, data, args.resume)
    return Settings(
        dict(vars(args)), p.experiment, argv, recorded, given, may_differ, data, saved
    )


def _check_flags(p, args):
    """Raises ZooError naming the first flag whose value fails its check.

    Values are checked before paths, so a bad number is named even when a
    directory is missing too.
    """
    paths = (directory, new_directory, new_file)
    for action in sorted(p._actions, key=lambda action: action.check in paths):
        value = getattr(args, action.dest, None)
        check = action.check or _inferred_check(action)
        if value is None or check is None:
            continue
        for item in value if isinstance(value, list) else [value]:
            problem = text(item) if isinstance(item, str) else None
            problem = problem or check(item)
            if problem:
                raise ZooError(f"{action.option_strings[-1]}: {problem}")


def _inferred_check(action):
    """The check of a flag without ``check=``, from its type and default."""
    if action.nargs == 0 or action.choices is not None:
        return None
    default = action.default
    if action.type is int:
        return integer(min(1, default) if isinstance(default, int) else 1)
    if action.type is float:
        if isinstance(default, int | float) and default <= 0:
            return real(default, inclusive=True)
        return real()
    if action.type is None:
        return text
    return None


def _given(p, argv):
    """Returns the dests of the flags ``argv`` passes explicitly.

    Defaults are hidden meanwhile: the actions' and the parser's own
    (``set_defaults``), which argparse would otherwise put in the namespace.
    """
    saved = [(action, action.default) for action in p._actions]
    parser_defaults, p._defaults = p._defaults, {}
    try:
        for action in p._actions:
            action.default = argparse.SUPPRESS
        return set(vars(p.parse_args(argv))) & {action.dest for action in p._actions}
    finally:
        p._defaults = parser_defaults
        for action, default in saved:
            action.default = default


def _check_resume(args):
    if args.overwrite:
        raise ZooError(
            f"--resume {args.resume}: expected either --resume or --overwrite, found "
            "both; drop --overwrite to continue the run, or --resume to replace it"
        )
    if args.out and os.path.abspath(args.out) != os.path.abspath(args.resume):
        raise ZooError(
            f"--resume {args.resume}: expected --out to be absent or the same directory, "
            f"found --out {args.out}; drop --out"
        )
    if not os.path.isdir(args.resume):
        raise ZooError(
            f"--resume {args.resume}: expected an existing run directory, found none; "
            "pass the directory the interrupted run wrote to"
        )
    args.out = args.resume


def add_count_flag(p, flag, default, help, **kwargs):
    """Adds an int flag that may be 0 (a count whose 0 means something: none, skip).

    A flag whose default is 0 needs none: its inferred check already takes 0.
    """
    p.add_argument(flag, type=int, default=default, check=integer(0), help=help, **kwargs)


def add_hidden_flag(p, default, of="the hidden layers"):
    """Adds ``--hidden``: comma-separated widths (``625,625``), read by :func:`integers`."""
    p.add_argument(
        "--hidden",
        default=default,
        check=int_list(),
        help=f"comma-separated widths of {of}",
    )


def ablation_parser(
    description,
    variants,
    variant_help,
    steps,
    batch_size=128,
    xla=False,
    validation=None,
    learning_rate=None,
):
    """Returns the parser of an ablation whose variants train by ``train_variant``.

    The shared flags of :func:`parser`, then ``--variant`` (one of ``variants``
    or both), ``--validation``, ``--steps-per-run`` and ``--xla``
    (:mod:`experiments.harness.train`); the script adds its model's flags.

    Args:
        description: what the experiment reproduces (shown by ``--help``).
        variants: the variants, in the order they run.
        variant_help: what each variant is.
        steps: default training steps per variant.
        batch_size: default batch size.
        xla: compile the K-step loop by default.
        validation: the help of ``--validation``, when it serves more than holding
            examples out.
        learning_rate: the default of ``--learning-rate`` (the optimizer's rate);
            None adds no such flag.
    """
    p = parser(description, steps=steps, batch_size=batch_size)
    add_variant_flag(p, variants, help=variant_help)
    if learning_rate is not None:
        p.add_argument(
            "--learning-rate",
            type=float,
            default=learning_rate,
            help="the optimizer's rate",
        )
    add_validation_flag(p, *([validation] if validation else []))
    add_loop_flags(p, xla=xla)
    return p


def add_json_flag(p):
    """Adds a benchmark's ``--json FILE`` (see ``rundir.write_bench_results``)."""
    p.add_argument(
        "--json",
        default=None,
        check=new_file,
        help="write the results to this JSON file instead of <run directory>/results.json",
    )


def add_validation_flag(
    p,
    help_text="training examples held out from the start of the "
    "training split (the seeds train on the other 55,000); 0 trains on all",
):
    """Adds ``--validation N`` (default 5000, 0 allowed) to an experiment's parser."""
    p.add_argument("--validation", type=int, default=5000, help=help_text, check=integer(0))


def add_variant_flag(p, variants, help, every="both", name="--variant"):
    """Adds ``--variant`` to a parser: one of ``variants``, or ``every`` (the default).

    Args:
        p: the parser.
        variants: the experiment's variants, in the order they run.
        help: what each variant is.
        every: the choice that runs them all, one after the other.
        name: the flag, when the variants are named by what they vary.
    """
    p.add_argument(name, choices=(*variants, every), default=every, help=help)


def chosen_variants(args, variants):
    """Returns the variants ``--variant`` asks for (all of them for ``every``)."""
    return (args.variant,) if args.variant in variants else tuple(variants)


def add_loop_flags(p, steps_per_run=32, xla=False, precision=True):
    """Adds ``--steps-per-run K``, ``--xla``/``--no-xla`` and ``--precision`` (see
    :mod:`.train`).

    Args:
        p: the parser of :func:`parser`.
        steps_per_run: default K.
        xla: compile by default (where it was measured to pay off: the
            autoencoder, the siamese towers and the RNN).
        precision: add ``--precision`` (:func:`add_precision_flag`), which
            :mod:`.train` builds the variant under; False for a benchmark.
    """
    p.add_argument(
        "--steps-per-run",
        type=int,
        default=steps_per_run,
        metavar="K",
        check=integer(1, BATCH_WINDOW),
        may_differ_on_resume=True,
        help="training steps inside one session.run (a tf.while_loop); the results "
        "do not depend on it, the speed does",
    )
    p.add_argument(
        "--xla",
        action=argparse.BooleanOptionalAction,
        default=xla,
        help="compile the K-step loop with XLA (faster on a 2-core CPU where it is the "
        "default, by a margin that depends on the CPU; docs/training.md); "
        "the numbers equal the uncompiled ones up to float round-off",
    )
    if precision:
        add_precision_flag(p)


def add_precision_flag(p):
    """Adds ``--precision``: one of ``zoo.constants.PRECISION_POLICIES``, default float32.

    The script builds its model and evaluation under
    ``zoo.training.precision.policy(settings.precision)`` and its optimizer through
    ``experiments.harness.train.loss_scaled``. A resume refuses another value
    (the flag is not ``may_differ_on_resume``); run.json and results.json record
    it, and whether this machine emulates it (:func:`experiments.harness.record.precision`).
    """
    p.add_argument(
        "--precision",
        choices=tuple(PRECISION_POLICIES),
        default="float32",
        help="the precision policy the model is built and evaluated in "
        "(zoo.training.precision; variables stay float32); mixed_float16 scales "
        "the loss; without a GPU, float16 (and bfloat16 on a CPU without "
        "avx512_bf16 or amx_bf16) is emulated (docs/precision.md)",
    )
