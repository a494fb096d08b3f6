"""The LLM-free probe on a tiny testbed with a tiny encoder: inputs with and without 2-cells, answers confined to
the family's vocabulary, tables over seeds (with twin accuracy on version 3) and the paired effect, for both
readouts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from toporag_lib.data import load_dataset
from toporag_lib.data.testbed.vocabulary import ANSWERS
from toporag_lib.embed import TextEncoder
from toporag_lib.study import probe
from toporag_lib.training.train_config import TrainConfig


@pytest.fixture(scope="module")
def data(tiny_encoder_path, tmp_path_factory):
    dataset = load_dataset("synthetic_scenes", num_images=20, seed=2)
    encoder = TextEncoder(tiny_encoder_path, cache=tmp_path_factory.mktemp("emb"), progress=False)
    return probe.probe_data(dataset, encoder, TrainConfig(dataset="synthetic_scenes"), "retrieved")


@pytest.fixture(scope="module")
def twins(tiny_encoder_path, tmp_path_factory):
    dataset = load_dataset("synthetic_scenes", num_images=40, seed=2, version=3)
    encoder = TextEncoder(tiny_encoder_path, cache=tmp_path_factory.mktemp("emb"), progress=False)
    return probe.probe_data(dataset, encoder, TrainConfig(dataset="synthetic_scenes"), "retrieved")


def test_inputs_with_and_without_2cells_differ_only_in_the_2cells(data):
    assert sum(d.num_cells_2 for d in data.with_cells) > 0 and all(d.num_cells_2 == 0 for d in data.without_cells)
    assert all(a.num_nodes == b.num_nodes and a.num_cells_1 == b.num_cells_1
               for a, b in zip(data.with_cells, data.without_cells))
    assert all(a in ANSWERS[f] for a, f in zip(data.answers, data.families))


def test_probes_train_and_their_tables_count_seeds_and_questions(data):
    runs = probe.run_probes({"retrieved": data}, [0, 1], ["cellular", "cellular w/o 2-cells", "gcn"], progress=False,
                            epochs=1, hidden=8)
    assert set(runs.variant) == {"cellular", "cellular w/o 2-cells", "gcn"} and len(runs) == 3 * 2 * len(
        data.split["test"])
    assert (runs.family == [data.families[q] for q in runs.question]).all()
    table = probe.probe_table(runs)
    row = table[(table.encoder == "cellular") & table.two_cells & (table.family == "all")].iloc[0]
    assert row.seeds == 2 and row.n == len(data.split["test"]) and 0 <= row.accuracy <= 1
    effect = probe.paired_effect(runs).set_index("family")
    assert effect.loc["all", "n"] == len(data.split["test"]) and effect.loc["all", "ci_lo"] <= effect.loc["all", "diff"]
    assert set(effect.measure) == {"accuracy"} and "twin" not in table  # version 2 has no twins


def test_twin_accuracy_counts_pairs_both_right_for_both_readouts(twins):
    test_loops = twins.questions("test", "loop")
    pairs = [twins.pairs[q] for q in test_loops]
    assert all(pairs) and len(set(pairs)) * 2 == len(pairs) > 0  # every test loop question has its twin in test
    assert not any(twins.pairs[q] for q in twins.split["test"] if twins.families[q] != "loop")
    runs = probe.run_probes({"retrieved": twins}, [0, 1], ["cellular"], readouts=probe.READOUTS, progress=False,
                            epochs=1, hidden=8)
    assert set(runs.readout) == set(probe.READOUTS)
    in_parallel = probe.run_probes({"retrieved": twins}, [0, 1], ["cellular"], readouts=probe.READOUTS, progress=False,
                                   epochs=1, hidden=8, workers=2)
    pd.testing.assert_frame_equal(in_parallel, runs)  # seeded probes: the same rows from two worker processes
    table = probe.probe_table(runs).set_index(["readout", "family"])
    for readout in probe.READOUTS:
        loops = runs[(runs.readout == readout) & (runs.family == "loop")]
        both = loops.groupby(["seed", "pair"]).correct.all().groupby("seed").mean()
        assert table.loc[(readout, "loop"), "twin"] == pytest.approx(both.mean())
        assert table.loc[(readout, "loop"), "pairs"] == len(set(pairs))
        assert np.isnan(table.loc[(readout, "attribute"), "twin"])
    # against a probe that always says "yes" (twin accuracy 0), the twin effect is the probe's own twin accuracy
    always_yes = runs.assign(variant="cellular w/o 2-cells", correct=[twins.answers[q] == "yes" for q in runs.question])
    effect = probe.paired_effect(pd.concat([runs, always_yes])).set_index(["readout", "family", "measure"])
    for readout in probe.READOUTS:
        assert effect.loc[(readout, "loop", "twin"), "diff"] == pytest.approx(table.loc[(readout, "loop"), "twin"])
        assert effect.loc[(readout, "loop", "twin"), "n"] == len(set(pairs))


def test_probes_on_one_family_report_it_alone(data):
    runs = probe.run_probes({"retrieved": data}, [0], ["cellular", "cellular w/o 2-cells"], families=["loop"],
                            progress=False, epochs=1, hidden=8)
    loops = data.questions("test", "loop")
    assert set(runs.family) == {"loop"} and len(runs) == 2 * len(loops) > 0
    table = probe.probe_table(runs)
    assert set(table.family) == {"loop"} and (table.n == len(loops)).all()  # no "all" row that is loop alone
    assert set(probe.paired_effect(runs).family) == {"loop"}
    with pytest.raises(ValueError, match="loops"):
        probe.run_probes({"retrieved": data}, [0], ["cellular"], families=["loops"], progress=False, epochs=1)


def test_probe_rejects_an_unknown_readout():
    with pytest.raises(ValueError, match="readout"):
        probe.Probe("cellular", 8, 8, 2, readout="max")


def test_each_family_probe_scores_its_own_answers_and_reads_the_question(data):
    from torch_geometric.data import Batch

    ids = data.questions("train", "loop") + data.questions("test", "loop")
    model = probe.Probe("cellular", data.queries.shape[1], 8, len(ANSWERS["loop"]))
    batch = Batch.from_data_list([data.with_cells[i] for i in ids])
    logits = model(batch, data.queries[ids])
    assert logits.shape == (len(ids), 2)
    assert not torch.allclose(logits, model(batch, data.queries[ids].roll(1, 0)))  # the readout depends on z_q


def test_a_probe_learns_to_read_the_node_the_question_names():
    """A probe learns to read the hidden bit of the one node the question names, among nodes with other bits (the
    question alone says nothing about the answer)."""
    from torch_geometric.data import Batch

    from toporag_lib.data.graph import TextualGraph
    from toporag_lib.topology.batching import ComplexData
    from toporag_lib.topology.lifting import lift

    torch.manual_seed(0)
    dim, n = 16, 6
    keys = torch.nn.functional.normalize(torch.randn(n, dim), dim=-1)
    flag = torch.nn.functional.normalize(torch.randn(dim), dim=-1)
    path = TextualGraph([str(i) for i in range(n)], [(i, i + 1, "next to") for i in range(n - 1)])
    graphs, queries, labels = [], [], []
    for k in range(160):
        values = torch.randint(0, 2, (n,))  # each node's hidden bit, drawn anew per graph
        cc = lift(path, keys + 0.5 * (2 * values[:, None] - 1) * flag, torch.zeros(n - 1, dim))
        graphs.append(ComplexData.from_complex(cc))
        queries.append(keys[k % n])  # the question names a node by its key; its answer is that node's bit
        labels.append(int(values[k % n]))
    model = probe.Probe("cellular", dim, 16, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    batch, q, y = Batch.from_data_list(graphs), torch.stack(queries), torch.tensor(labels)
    for _ in range(100):
        loss = torch.nn.functional.cross_entropy(model(batch, q), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert (model(batch, q).argmax(-1) == y).float().mean() > 0.95
