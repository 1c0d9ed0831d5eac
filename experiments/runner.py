"""What every experiment script shares: flags, data, log period, exit codes.

An experiment is a thin script::

    def main(argv=None):
        parser = runner.parser("Tied vs untied autoencoder.", steps=10001, batch_size=128)
        args = runner.parse_args(parser, argv)
        run = rundir.run_dir(args, "autoencoder")   # --out, --overwrite, --resume
        data = runner.load_data(args)
        ...
        logged, speed = training.train_loop(
            session, train_op, loss, batches, args.steps, args.batch_size,
            checkpointer=run.checkpointer,
        )
        run.write_json("results.json", results)

    if __name__ == "__main__":
        runner.entry_point(main)

The run directory (results written atomically, checkpointer) is
:mod:`experiments.rundir`; the loop and its checkpoints are the library's
(:mod:`zoo.training`, :mod:`zoo.checkpoints`).
"""

import argparse
import os
import sys

from layers.errors import ZooError
from zoo.data import DATASETS, load_mnist
from zoo.training import RunInterrupted


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line on stderr, exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}; see --help\n")


def parser(description, steps, batch_size, quick_steps=300, resumable=True):
    """Returns an ``ArgumentParser`` with the flags every experiment shares.

    Args:
        description: what the experiment reproduces (shown by ``--help``).
        steps: default number of training steps.
        batch_size: default batch size.
        quick_steps: steps used by ``--quick``.
        resumable: add ``--checkpoint-every`` and ``--resume`` (False for
            benchmarks, which do not checkpoint).
    """
    p = _Parser(
        description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--steps", type=int, default=steps, help="training steps per network")
    p.add_argument("--batch-size", type=int, default=batch_size, help="examples per step")
    p.add_argument("--dataset", default="mnist", help=f"one of {', '.join(DATASETS)}")
    p.add_argument(
        "--data-dir",
        default=None,
        help="directory of the four IDX files (.gz or raw); default $ZOO_DATA_DIR, "
        "then tensorflow-datasets",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of weights and batch order")
    p.add_argument(
        "--out", default=None, help="run directory (default runs/<experiment>/<timestamp>)"
    )
    p.add_argument(
        "--overwrite", action="store_true", help="write into an existing run directory"
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
            help="save a checkpoint every N training steps (and at the end of each loop)",
        )
        p.add_argument(
            "--resume",
            default=None,
            metavar="RUN_DIR",
            help="continue the run in RUN_DIR from its last checkpoint; pass the flags "
            "the run was started with",
        )
    p.set_defaults(quick_steps=quick_steps)
    return p


def parse_args(p, argv=None):
    """Parses ``argv`` and checks the shared flags.

    Returns:
        The namespace; with ``--quick``, ``steps`` is the quick step count; with
        ``--resume``, ``out`` is the run directory; ``argv`` holds the arguments
        parsed (for the resume command).

    Raises:
        ZooError: non-positive steps, batch size or checkpoint period, an unknown
            dataset, or ``--resume`` with ``--overwrite``, another ``--out`` or a
            missing directory.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(argv)
    args.argv = argv
    if args.quick:
        args.steps = min(args.steps, args.quick_steps)
    require_positive(args, "steps", "batch_size", "checkpoint_every", "steps_per_run")
    if args.dataset not in DATASETS:
        raise ZooError(
            f"--dataset: expected one of {', '.join(DATASETS)}, found {args.dataset!r}; "
            "pick one of those"
        )
    if getattr(args, "resume", None):
        _check_resume(args)
    return args


def require_positive(args, *flags):
    """Raises ZooError naming the first of ``flags`` (attributes of ``args``) not > 0.

    A flag the parser does not have is skipped.
    """
    for flag in flags:
        value = getattr(args, flag, 1)
        if not value > 0:
            kind = "integer" if isinstance(value, int) else "number"
            raise ZooError(
                f"--{flag.replace('_', '-')}: expected a positive {kind}, found "
                f"{value}; pass a value > 0"
            )


def flags_of(args):
    """Returns the parsed flags as a dict for results files (without ``argv``)."""
    return {name: value for name, value in vars(args).items() if name != "argv"}


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


def add_validation_flag(
    p,
    help_text="training examples held out from the start of the "
    "training split (the seeds train on the other 55,000); 0 trains on all",
):
    """Adds ``--validation N`` (default 5000) to an experiment's parser."""
    p.add_argument("--validation", type=int, default=5000, help=help_text)


def load_data(args, validation=None):
    """Loads ``args.dataset`` from ``args.data_dir`` (see :func:`zoo.data.load_mnist`).

    Args:
        args: the parsed flags.
        validation: training examples held out; None takes ``args.validation``.

    Raises:
        ZooError: a negative validation count; DataError from the loader.
    """
    if validation is None:
        validation = args.validation
    if validation < 0:
        raise ZooError(
            f"--validation: expected a count >= 0, found {validation}; pass 0 or more"
        )
    return load_mnist(
        args.dataset, data_dir=args.data_dir, validation=validation, seed=args.seed
    )


def add_steps_per_run_flag(p, default=32):
    """Adds ``--steps-per-run K`` (training steps per ``session.run``) to a parser.

    Experiments that train from :class:`zoo.batches.GraphBatches` pass it to
    :func:`zoo.training.repeat_step`; any K gives the same numbers up to float
    round-off, a larger one less dispatch per step (docs/benchmark.md).
    """
    p.add_argument(
        "--steps-per-run",
        type=int,
        default=default,
        metavar="K",
        help="training steps inside one session.run (a tf.while_loop); the results "
        "do not depend on it, the speed does",
    )


def log_period(steps, period=1000):
    """Returns ``period``, or ``steps // 5`` for shorter runs so a curve has 5+ points."""
    return max(1, min(period, steps // 5))


def entry_point(main, argv=None):
    """Runs ``main(argv)`` and exits.

    Exit status 0 on success; 2 with one clear line on a zoo error; 128 + the
    signal number, with the resume command, when training was interrupted.
    """
    try:
        code = main(argv)
    except RunInterrupted as err:
        print(err, file=sys.stderr)
        sys.exit(128 + err.signum)
    except ZooError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    sys.exit(code or 0)
