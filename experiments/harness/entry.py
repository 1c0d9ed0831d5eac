"""A script's entry point and exit codes, and the period of its logged losses.

Every script ends with::

    if __name__ == "__main__":
        entry.entry_point(main)
"""

import sys

from layers.errors import RunInterrupted, ZooError


def log_period(steps, period=1000):
    """Returns ``period``, or ``steps // 5`` for shorter runs so a curve has 5+ points."""
    return max(1, min(period, steps // 5))


def entry_point(main, argv=None):
    """Runs ``main(argv)`` and exits.

    Exit status 0 on success; 2 with one clear line on a zoo error; 1 with one
    line naming the file on any other OSError (a full disk...); 128 + the signal
    number, with the resume command, when training was interrupted.
    """
    try:
        code = main(argv)
    except RunInterrupted as err:
        print(err, file=sys.stderr)
        sys.exit(128 + err.signum)
    except ZooError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except OSError as err:
        where = err.filename or "a file"
        print(
            f"error: {where}: {err.strerror or err}; fix that (free disk space, "
            "permissions) and run again, with --resume RUN_DIR if the run checkpointed",
            file=sys.stderr,
        )
        sys.exit(1)
    sys.exit(code or 0)
