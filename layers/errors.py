"""The one exception hierarchy every floor of the zoo raises.

Every class subclasses ``ValueError``, so code written against TensorFlow's own
errors keeps working. Messages follow one shape::

    "<scope or file>: expected X, found Y; <what to change>"

Usage::

    from layers.errors import ZooError
    try:
        autoencoder(x, scope="ae", reuse=True)
    except ZooError as err:
        print(err)
"""


class ZooError(ValueError):
    """Base class of every error raised by ``layers``, ``zoo`` and ``experiments``."""

    # Autograph re-raises an error from inside tf.function with its own class only
    # when the class uses Exception's constructor; otherwise it becomes StagingError.
    __init__ = Exception.__init__


class ShapeError(ZooError):
    """An input or variable has a shape other than the layer expects."""


class ScopeError(ZooError):
    """A scope is reused before it was built, or built twice without ``reuse``."""


class TieError(ZooError):
    """``tie_to`` names a scope without a usable weight ``W``."""


class DataError(ZooError):
    """A data file or source is missing, truncated or corrupt."""


class EagerError(ZooError):
    """Graph-style code ran eagerly, where it would silently duplicate variables."""


class EnvError(ZooError):
    """A reinforcement-learning environment is unknown, cannot be made, has spaces the
    agent cannot use, or does not replay an episode the same way from its reset seed."""


class RunInterrupted(ZooError):
    """SIGINT or SIGTERM stopped training after a checkpoint was written.

    Attributes:
        signum: the signal received.
        command: the shell command that resumes the run.
    """

    def __init__(self, message, signum, command):
        super().__init__(message)
        self.signum, self.command = signum, command
