"""A testbed version's own retrieval defaults reach every config built for it, and no other version's."""

from __future__ import annotations

from toporag_lib.data.registry import TESTBED_V3_RETRIEVAL, dataset_spec
from toporag_lib.retrieval import dataset_retrieval
from toporag_lib.training.train_config import TrainConfig


def test_version_3_gets_its_retrieval_and_version_2_keeps_the_testbed_default():
    base = dataset_retrieval("synthetic_scenes")
    v3 = dataset_retrieval("synthetic_scenes", 3)
    assert dataset_retrieval("synthetic_scenes", 2) == base and v3 != base
    assert {k: getattr(v3, k) for k in TESTBED_V3_RETRIEVAL} == TESTBED_V3_RETRIEVAL
    assert v3.cells == base.cells == dataset_spec("synthetic_scenes").retrieval["cells"]  # shared defaults kept
    config = TrainConfig(dataset="synthetic_scenes", dataset_options={"version": 3}, retrieval={"k2": 0})
    assert config.retrieval.k1 == TESTBED_V3_RETRIEVAL["k1"] and config.retrieval.k2 == 0  # changes apply on top
    assert TrainConfig(dataset="synthetic_scenes").retrieval == base
    assert dataset_retrieval("synthetic_scenes", 3, k1=4).k1 == 4
