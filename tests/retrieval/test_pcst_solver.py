"""Known answers for the PCST solver: a broken build (pcst_fast 1.0.10's wheel under numpy 2 returns
arrays of zeros without an error) must fail here loudly."""

import numpy as np
import pcst_fast


def test_upstream_issue_16_example():
    # 0---1---2---3
    #     |   |   |
    #     4   5   6
    edges = np.array([[0, 1], [1, 2], [1, 4], [2, 3], [2, 5], [3, 6]], dtype=np.int64)
    prizes = np.array([100.0, 0.0, 0.0, 0.0, 100.0, 100.0, 100.0])
    costs = np.array([10.0, 100.0, 10.0, 10.0, 10.0, 10.0])
    nodes, chosen = pcst_fast.pcst_fast(edges, prizes, costs, -1, 2, "strong", 0)
    assert sorted(nodes.tolist()) == [0, 1, 2, 3, 4, 5, 6]
    assert sorted(chosen.tolist()) == [0, 2, 3, 4, 5]


def test_path_keeps_only_the_profitable_prefix():
    edges = np.array([[0, 1], [1, 2], [2, 3]], dtype=np.int64)
    nodes, chosen = pcst_fast.pcst_fast(edges, np.ones(4), np.array([0.8, 1.8, 2.8]), -1, 1, "strong", 0)
    assert sorted(nodes.tolist()) == [0, 1] and chosen.tolist() == [0]
