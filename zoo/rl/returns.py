"""Statistics of episode returns: the 100-episode mean, when a threshold was reached.

Gymnasium calls an environment solved at a mean return of its ``reward_threshold``
over 100 consecutive episodes (CartPole-v1: 475); these functions read a run's
episode returns that way. No TensorFlow.

Usage::

    summary = summarize_returns(rollout.returns, rollout.ends, threshold=475)
    summary["steps_to_threshold"]     # environment steps when the mean first reached it
    means = curve(rollout.returns, rollout.ends, np.linspace(0, rollout.env_steps, 400))
"""

import numpy as np

WINDOW = 100
"""Episodes averaged: "solved" is a 100-episode mean of the ``reward_threshold``."""


def mean_of_last(returns):
    """The mean of the last :data:`WINDOW` returns (fewer if there are fewer), or None."""
    return float(np.mean(returns[-WINDOW:])) if returns else None


def rolling_means(returns):
    """The mean of the last 100 returns after each episode (None before the 100th)."""
    sums = np.cumsum([0.0, *returns])
    return [
        None if i + 1 < WINDOW else float(sums[i + 1] - sums[i + 1 - WINDOW]) / WINDOW
        for i in range(len(returns))
    ]


def summarize_returns(returns, ends, threshold):
    """Returns the last-100 mean, when the 100-episode mean first reached ``threshold``
    (environment steps, or None) and its lowest value after that.

    Args:
        returns: episode returns in order.
        ends: environment steps at which each episode ended.
        threshold: the environment's ``reward_threshold``.

    Returns:
        dict: ``episodes``, ``last_100_mean`` (None without episodes), ``solved``
        (at least 100 episodes, the last 100 at ``threshold`` on average),
        ``steps_to_threshold``, ``lowest_100_mean_after_threshold``.
    """
    means = rolling_means(returns)
    reached = next(
        (i for i, m in enumerate(means) if m is not None and m >= threshold), None
    )
    return {
        "episodes": len(returns),
        "last_100_mean": mean_of_last(returns),
        "solved": bool(len(returns) >= WINDOW and means[-1] >= threshold),
        "steps_to_threshold": None if reached is None else ends[reached],
        "lowest_100_mean_after_threshold": (
            None if reached is None else float(min(means[reached:]))
        ),
    }


def curve(returns, ends, grid):
    """The 100-episode mean return at each environment step of ``grid``.

    NaN before the first episode ends; before the 100th, the mean of the episodes
    so far.

    Args:
        returns: episode returns in order.
        ends: environment steps at which each episode ended.
        grid: environment steps, an array.
    """
    sums = np.cumsum([0.0, *np.asarray(returns, float)])
    done = np.searchsorted(np.asarray(ends), grid, side="right")
    first = np.maximum(done - WINDOW, 0)
    with np.errstate(invalid="ignore"):
        return np.where(
            done > 0, (sums[done] - sums[first]) / np.maximum(done - first, 1), np.nan
        )


def summarize_runs(runs, threshold):
    """Returns the spread over seeds of runs of one agent.

    ``eval_mean`` is the mean over seeds of each run's greedy evaluation mean,
    ``eval_solved`` the runs whose evaluation mean is at least ``threshold``;
    the other figures are of the training episodes (:func:`summarize_returns`).

    Args:
        runs: dicts with :func:`summarize_returns`'s figures and an ``eval_mean``.
        threshold: the environment's ``reward_threshold``.

    Returns:
        dict: ``seeds``, ``eval_mean``, ``eval_solved``, ``eval_means``,
        ``solved``, ``reached_threshold`` (runs), ``last_100_mean`` (``mean``,
        ``std``, ``min``, ``max`` over the runs that have one) and
        ``median_steps_to_threshold`` (None if no run reached it).
    """
    last = [r["last_100_mean"] for r in runs if r["last_100_mean"] is not None]
    steps = [r["steps_to_threshold"] for r in runs if r["steps_to_threshold"] is not None]
    evaluations = [r["eval_mean"] for r in runs]
    spread = {"mean": np.mean, "std": np.std, "min": np.min, "max": np.max}
    return {
        "seeds": len(runs),
        "eval_mean": float(np.mean(evaluations)),
        "eval_solved": sum(value >= threshold for value in evaluations),
        "eval_means": evaluations,
        "solved": sum(r["solved"] for r in runs),
        "reached_threshold": len(steps),
        "last_100_mean": {name: float(reduce(last)) for name, reduce in spread.items()},
        "median_steps_to_threshold": float(np.median(steps)) if steps else None,
    }
