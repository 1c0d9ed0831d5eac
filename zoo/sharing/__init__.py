"""The tools around sharing: one set of variables seen from everywhere.

- ``share``: a builder's variables shared eagerly and under ``tf.function``.
- ``keras``: :class:`ZooLayer`, any ``get_variable`` function as a Keras 3 layer.
- ``inspect``: which scope holds which variable, who reads and updates it.
- ``state``: scope-to-scope copies (hard, Polyak) and frozen snapshots.
- ``restore``: a checkpoint loaded into another scope, by name.
"""
