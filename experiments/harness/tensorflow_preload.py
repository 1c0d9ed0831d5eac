"""Preloaded by the task workers' fork server (:mod:`experiments.harness.processes`):
TensorFlow started there once, as the run started it (quietly unless the user chose a
log level), so that each worker forked from the server starts with it."""

from experiments.harness import startup

startup.import_tensorflow()
