"""The data a run's flags name: ``--dataset`` from ``--data-dir``, with ``--validation``."""

from zoo.data import load_mnist


def load(settings, validation=None):
    """Loads the data of ``settings`` (see :func:`zoo.data.load_mnist`).

    Args:
        settings: the run's :class:`experiments.harness.flags.Settings`.
        validation: training examples held out; None takes ``--validation``.

    Returns:
        The :class:`zoo.data.DataSets`.

    Raises:
        DataError: from the loader.
    """
    flags = settings.flags
    if validation is None:
        validation = flags["validation"]
    return load_mnist(
        flags["dataset"],
        data_dir=flags["data_dir"],
        validation=validation,
        seed=flags["seed"],
    )
