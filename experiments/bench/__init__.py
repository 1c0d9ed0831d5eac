"""The benchmarks, apart from the experiment scripts (no script imports them).

- :mod:`.speed`: our K-step loop vs Keras 3 at its best vs ``tf.function`` vs the
  compute limit (``make bench``); the contenders it times in :mod:`.contenders`.
- :mod:`.state`: scope-to-scope copies and restores (``make bench-state``).
- :mod:`.gradients`: gradients as data, one run vs two (``make bench-gradients``).
"""
