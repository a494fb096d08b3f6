"""The measurement helpers behind notebook 06: fits, extrapolation, graphs, scaling and memory probes."""

import math

import numpy as np
import pandas as pd
import pytest

from toporag_lib.study import efficiency


def test_loglog_slope_recovers_the_exponent_of_a_power_law():
    x = np.array([10, 100, 1000, 10000])
    assert efficiency.loglog_slope(x, 3e-6 * x**1.5) == pytest.approx(1.5)
    assert efficiency.loglog_slope(x, np.full(4, 0.2)) == pytest.approx(0.0, abs=1e-12)
    assert math.isnan(efficiency.loglog_slope([10], [1.0]))


def test_slopes_are_fitted_per_operation_above_the_size_threshold():
    rows = [{"what": "linear", "nodes": n, "seconds": 1e-5 * n} for n in (100, 1000, 10000)]
    rows += [{"what": "quadratic", "nodes": n, "seconds": 1e-7 * n**2} for n in (100, 1000, 10000)]
    rows += [{"what": "linear", "nodes": 10, "seconds": 1.0}]  # overhead-dominated: below the threshold
    fitted = efficiency.slopes(pd.DataFrame(rows), min_nodes=100)
    assert fitted["linear"] == pytest.approx(1.0) and fitted["quadratic"] == pytest.approx(2.0)


def test_prediction_assumes_at_least_linear_growth():
    assert efficiency.predicted_seconds([100], [0.1], 1000) == pytest.approx(1.0)
    assert efficiency.predicted_seconds([100, 1000], [0.1, 0.2], 10000) == pytest.approx(2.0)  # flat fit -> linear
    assert efficiency.predicted_seconds([100, 1000], [0.01, 1.0], 10000) == pytest.approx(100.0)  # quadratic


def test_median_seconds_is_positive_and_runs_the_call_each_repeat():
    calls = []
    assert efficiency.median_seconds(lambda: calls.append(1), 5) >= 0 and len(calls) == 5


def test_random_multigraph_is_seeded_connected_and_of_the_asked_size():
    one = efficiency.random_multigraph(50, 150, np.random.default_rng(3))
    again = efficiency.random_multigraph(50, 150, np.random.default_rng(3))
    assert one.edges == again.edges and (one.num_nodes, one.num_edges) == (50, 150)
    assert efficiency.simple_nx(one).number_of_nodes() == 50
    import networkx as nx

    assert nx.is_connected(efficiency.simple_nx(one))


def test_peak_extra_bytes_sees_a_numpy_allocation():
    size = 8 * 2**20
    assert efficiency.peak_extra_bytes(lambda: np.ones(size // 8)) >= size
    assert efficiency.peak_extra_bytes(lambda: None) < 2**16


def test_scaling_tables_time_and_measure_every_operation():
    times, memory = efficiency.scaling_tables([20, 200], repeats=1, queries=1, dim=8, pyg_limit_s=1e-9)
    assert set(times.what) == {efficiency.LIFT, efficiency.LIFT_INDEX, efficiency.CYCLE_BASIS, efficiency.TOPORAG,
                               efficiency.GRETRIEVER, efficiency.PYG}
    assert (times.seconds > 0).all() and sorted(times.nodes.unique()) == [20, 200]
    assert list(times[times.what == efficiency.PYG].nodes) == [20]  # the next size is predicted over the limit
    assert (times.edges == 3 * times.nodes).all()
    assert set(memory.what) == {efficiency.LIFT, efficiency.LIFT_INDEX, efficiency.TOPORAG, efficiency.GRETRIEVER}
    assert (memory.extra_mb > 0).all()
