"""The training loop as a library, and what it runs on.

- ``loop``: :func:`train_loop` and :func:`run_steps` (logging, NaN guard,
  checkpoints, SIGINT/SIGTERM).
- ``steps``: :func:`repeat_step` / :func:`repeat_updates`, K steps in one
  ``session.run``; :func:`with_updates` for a loop of your own.
- ``checkpoints``: exact resume (variables, step, batch position, RNG states).
- ``gan``: :func:`gan_training` / :func:`gan_update`, a GAN's discriminator
  update then generator update (K per run with ``repeat_updates``), and
  :func:`resumable_noise`.
- ``files``: atomic writes. ``hparams``: hyperparameters without rebuilding.
  ``gradients``: gradients as data.

``from zoo import training`` then ``training.repeat_step(...)``: the names of
``loop``, ``steps``, ``gan`` and the checkpoint classes are exported here,
imported on first use.
"""

from layers import lazy

__getattr__, __dir__, __all__ = lazy.exports(
    __name__,
    {
        "zoo.training.checkpoints": ("Checkpointer", "LoopCheckpoint", "RunInterrupted"),
        "zoo.training.gan": (
            "GanTraining", "gan_training", "gan_update", "resumable_noise",
        ),
        "zoo.training.loop": (
            "NonFiniteLossError", "add_scalar", "run_steps", "signals_caught", "train_loop",
        ),
        "zoo.training.steps": (
            "RepeatedStep", "loss_and_metrics", "repeat_step", "repeat_updates",
            "with_updates",
        ),
    },
)  # fmt: skip
