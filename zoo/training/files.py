"""Files written whole or not at all: a crash never leaves a truncated result.

Files are created with the permissions the user's umask gives (as ``open`` would),
and the directory is synced after the rename so the new name survives a power cut.
"""

import contextlib
import json
import os

import numpy as np

TEMPORARY_PREFIX = ".tmp-"  # of the files atomic_write renames into place


def atomic_write(path, data):
    """Writes ``data`` (bytes or str) to ``path`` through a temporary file and a rename.

    The temporary file ``.tmp-<pid>-<name>`` is created like ``open(path, "w")``
    would (mode 0666 minus the umask), synced, renamed over ``path``, and the
    directory is synced. On any error the temporary file is removed and the old
    ``path`` is unchanged.

    Raises:
        OSError: the file could not be written (full disk, no permission...).
    """
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(
        directory, f"{TEMPORARY_PREFIX}{os.getpid()}-{os.path.basename(path)}"
    )
    payload = data if isinstance(data, bytes) else data.encode()
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise
    sync_directory(directory)


def sync_directory(directory):
    """Flushes ``directory``'s entries (new names, renames) to disk; a no-op where
    directories cannot be opened (Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_json(path, obj):
    """Writes ``obj`` as indented JSON to ``path``, atomically (numpy values as numbers)."""
    atomic_write(path, json.dumps(obj, indent=2, default=_json_default) + "\n")


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")
