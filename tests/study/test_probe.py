"""The LLM-free probe on a tiny testbed with a tiny encoder: inputs with and without 2-cells, answers confined to
the family's vocabulary, tables over seeds and the paired effect."""

from __future__ import annotations

import pytest

from toporag_lib.data import load_dataset
from toporag_lib.data.scene_testbed import ANSWERS
from toporag_lib.embed import TextEncoder
from toporag_lib.study import probe
from toporag_lib.training.config import TrainConfig


@pytest.fixture(scope="module")
def data(tiny_encoder_path, tmp_path_factory):
    dataset = load_dataset("synthetic_scenes", num_images=20, seed=2)
    encoder = TextEncoder(tiny_encoder_path, cache=tmp_path_factory.mktemp("emb"), progress=False)
    return probe.probe_data(dataset, encoder, TrainConfig(dataset="synthetic_scenes"), "retrieved")


def test_inputs_with_and_without_2cells_differ_only_in_the_2cells(data):
    assert sum(d.num_cells_2 for d in data.with_cells) > 0 and all(d.num_cells_2 == 0 for d in data.without_cells)
    assert all(a.num_nodes == b.num_nodes and a.num_cells_1 == b.num_cells_1
               for a, b in zip(data.with_cells, data.without_cells))
    assert all(probe.VOCABULARY[y] in ANSWERS[f] for y, f in zip(data.labels.tolist(), data.families))


def test_probes_train_and_their_tables_count_seeds_and_questions(data):
    runs = probe.run_probes({"retrieved": data}, [0, 1], ["cellular", "cellular w/o 2-cells", "gcn"], progress=False,
                            epochs=1, hidden=8)
    assert set(runs.variant) == {"cellular", "cellular w/o 2-cells", "gcn"} and len(runs) == 3 * 2 * len(
        data.split["test"])
    table = probe.probe_table(runs)
    row = table[(table.encoder == "cellular") & table.two_cells & (table.family == "all")].iloc[0]
    assert row.seeds == 2 and row.n == len(data.split["test"]) and 0 <= row.accuracy <= 1
    effect = probe.paired_effect(runs).set_index("family")
    assert effect.loc["all", "n"] == len(data.split["test"]) and effect.loc["all", "ci_lo"] <= effect.loc["all", "diff"]


def test_a_prediction_is_always_an_answer_of_the_questions_family(data):
    model = probe.Probe("cellular", data.queries.shape[1], 8)
    from torch_geometric.data import Batch

    ids = list(range(len(data.families)))
    logits = model(Batch.from_data_list([data.with_cells[i] for i in ids]), data.queries[ids],
                   [data.families[i] for i in ids])
    for row, family in zip(logits.argmax(-1).tolist(), data.families):
        assert probe.VOCABULARY[row] in ANSWERS[family]
