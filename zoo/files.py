"""Files written whole or not at all: a crash never leaves a truncated result."""

import contextlib
import json
import os
import tempfile

import numpy as np


def atomic_write(path, data):
    """Writes ``data`` (bytes or str) to ``path`` through a temporary file and a rename."""
    directory = os.path.dirname(os.path.abspath(path))
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, mode) as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


def write_json(path, obj):
    """Writes ``obj`` as indented JSON to ``path``, atomically (numpy values as numbers)."""
    atomic_write(path, json.dumps(obj, indent=2, default=_json_default) + "\n")


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")
