"""Model builders and the tools around variable sharing, one room per job.

- ``zoo.models``: builders with ``scope`` and ``reuse`` (networks and their losses).
- ``zoo.training``: the loop as a library (K steps per run, checkpoints, files,
  hyperparameters, gradients as data).
- ``zoo.data``: loaders (IDX files, tensorflow-datasets) and in-graph batches.
- ``zoo.sharing``: share (eager, ``tf.function``), the Keras 3 layer, the
  inspector, scope-to-scope copies and snapshots, restores by scope.
- ``zoo.parallel``: data-parallel towers, the parameter-server runtime, cluster
  specs, the private loopback network, a local cluster's launcher.
- ``zoo.rl``: replay buffer and rollout, environments, the DQN update, the burst
  runner, return statistics.
- ``zoo.constants``: names the scripts' flags check before TensorFlow starts.

Every public name is exported here too (``from zoo import ZooLayer, share,
restore_scope``), whatever room it lives in. Importing this package changes
nothing in TensorFlow's global state and imports neither TensorFlow nor
tensorflow-datasets: each name is imported from its module when first used, so a
command's flag checks answer before TensorFlow starts.
"""

from layers import lazy

__getattr__, __dir__, __all__ = lazy.exports(
    __name__,
    {
        "zoo.models": (
            "MODELS", "Autoencoder", "Average", "Classifier", "autoencoder",
            "conv_classifier", "gan", "get_model", "mlp_classifier", "model_average",
        ),
        "zoo.data.loaders": ("DataSet", "load_mnist"),
        "zoo.data.batches": ("GraphBatches",),
        "zoo.training.checkpoints": ("Checkpointer",),
        "zoo.training.gradients": ("GradientStep",),
        "zoo.training.hparams": ("HParams", "SameStart", "SweepGraph", "hparam_grid"),
        "zoo.training.loop": ("NonFiniteLossError", "train_loop", "run_steps"),
        "zoo.training.steps": ("repeat_step", "repeat_updates", "with_updates"),
        "zoo.training.precision": ("precision",),
        "zoo.training.loss_scale": ("LossScaleOptimizer",),
        "zoo.training.gan": ("gan_training", "gan_update", "resumable_noise"),
        "zoo.sharing.share": (
            "VariableStore", "share", "save_by_name", "restore_by_name",
        ),
        "zoo.sharing.keras": ("ZooLayer",),
        "zoo.sharing.inspect": ("inspect_model", "inspect_checkpoint"),
        "zoo.sharing.state": (
            "copy_scope", "copy_variables", "frozen_copy", "frozen_template",
        ),
        "zoo.sharing.restore": ("restore_scope",),
        "zoo.parallel.towers": ("data_parallel",),
        "zoo.parallel.launcher": ("LocalCluster",),
        "zoo.rl.replay": ("ReplayBuffer", "Rollout"),
        "zoo.rl.dqn": ("DQNUpdate", "Transitions", "dqn_update"),
        "zoo.rl.bursts": ("BurstRunner", "linear_decay"),
        "zoo.constants": ("GAN_ARCHITECTURES",),
    },
)  # fmt: skip
