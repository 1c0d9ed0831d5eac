"""``python -m zoo.compat run ...`` (a TF1 program, unedited: :mod:`zoo.compat.run`)
and ``python -m zoo.compat check DIR [--json FILE]`` (the TF 1.x names a
repository uses: :mod:`zoo.compat.check`)."""

import sys

USAGE = ("usage: python -m zoo.compat run [--tf1-path DIR]... (SCRIPT | -m MODULE) "
         "[ARGS...]\n       python -m zoo.compat check DIR [--json FILE]")  # fmt: skip


def main(argv):
    """Dispatches ``run`` and ``check``; returns the exit status."""
    command, rest = (argv[0], argv[1:]) if argv else (None, [])
    if command == "run":
        from zoo.compat.run import main as run

        return run(rest)
    if command == "check":
        from zoo.compat.check import main as check

        return check(rest)
    print(USAGE, file=sys.stderr if command not in ("-h", "--help") else sys.stdout)
    return 0 if command in ("-h", "--help") else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
