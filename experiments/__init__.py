"""Scripts that reproduce the published results, each a thin script on ``harness``.

The benchmarks live in ``bench``, apart from the scripts.
"""
