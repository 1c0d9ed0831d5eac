"""The seeds' published figures an experiment compares its own with (``seeds.json``).

Usage::

    SEED_REFERENCE = seeds.reference("autoencoder")   # {"dataset": "mnist", ...}
"""

import functools
import importlib.resources
import json


@functools.cache
def _figures():
    return json.loads(
        importlib.resources.files(__package__).joinpath("seeds.json").read_text()
    )


def reference(experiment):
    """Returns the seed's figures for ``experiment`` (a fresh copy: callers may edit it)."""
    return json.loads(json.dumps(_figures()[experiment]))
