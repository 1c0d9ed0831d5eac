"""What only the experiment scripts need, each written once; imported by every script.

- :mod:`.flags`: the shared flags, every flag checked before any work, the run's
  settings (:class:`.flags.Settings`).
- :mod:`.datasets`: the data the flags name.
- :mod:`.entry`: a script's entry point (exit codes) and the period of its logs.
- :mod:`.startup`: TensorFlow started after the flags, without its start-up lines.
- :mod:`.record`: run.json read and written, and the one ``machine()``.
- :mod:`.rundir`: the run directory (lock, atomic results, figures, checkpointer).
- :mod:`.train`: training a variant from its build functions (K steps per run, XLA).
- :mod:`.figures`: the figures the ablations share.
- :mod:`.seeds`: the seeds' published figures (``seeds.json``) runs are compared with.
- :mod:`.classifiers`: the classifiers a script trains by name (``--model``).
- :mod:`.processes`: seeds run in worker processes, signals forwarded.

Only :mod:`.train` imports TensorFlow when imported; a script imports it after
its flags are parsed, so ``--help`` and flag errors answer at once.
"""
