"""Return statistics: the 100-episode mean, the threshold, the spread over seeds."""

import numpy as np
import pytest

from zoo.rl.returns import (
    curve,
    mean_of_last,
    rolling_means,
    summarize_returns,
    summarize_runs,
)


def test_returns_summary_counts_from_the_hundredth_episode():
    returns = [10.0] * 99 + [500.0] * 101
    ends = list(range(1, 201))
    summary = summarize_returns(returns, ends, 475)
    means = rolling_means(returns)
    assert means[98] is None and means[99] == pytest.approx((99 * 10 + 500) / 100)
    first = next(i for i, m in enumerate(means) if m is not None and m >= 475)
    assert first == 193  # episodes 94..193: 95 at 500, 5 at 10, mean 475.5
    assert summary["steps_to_threshold"] == ends[first]
    assert summary["last_100_mean"] == 500.0 and summary["solved"]
    assert summary["lowest_100_mean_after_threshold"] == pytest.approx(475.5)
    assert summarize_returns([20.0] * 50, list(range(50)), 475)["solved"] is False
    assert mean_of_last([1.0, 2.0]) == 1.5 and mean_of_last([]) is None


def test_curve_is_the_running_mean_at_each_step():
    values = curve([10.0, 20.0, 5.0], [10, 30, 35], np.array([5, 10, 29, 30, 40]))
    assert np.isnan(values[0])
    assert values[1:].tolist() == [10.0, 10.0, 15.0, 35.0 / 3]


def test_runs_summary_spreads_over_seeds():
    runs = [
        {**summarize_returns([500.0] * 100, list(range(1, 101)), 475), "eval_mean": 500.0},
        {**summarize_returns([20.0] * 3, [20, 40, 60], 475), "eval_mean": 100.0},
        {**summarize_returns([], [], 475), "eval_mean": 9.0},
    ]
    summary = summarize_runs(runs, 475)
    assert summary["seeds"] == 3 and summary["eval_means"] == [500.0, 100.0, 9.0]
    assert summary["eval_mean"] == pytest.approx(203.0) and summary["eval_solved"] == 1
    assert summary["solved"] == 1 and summary["reached_threshold"] == 1
    assert summary["median_steps_to_threshold"] == 100.0
    assert summary["last_100_mean"] == {"mean": 260.0, "std": 240.0, "min": 20.0,
                                        "max": 500.0}  # fmt: skip
