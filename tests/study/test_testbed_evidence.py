"""Evidence recall per retrieval variant, learned retrievals fitted on the training split only."""

from __future__ import annotations

from toporag_lib.data import load_dataset
from toporag_lib.embed import TextEncoder
from toporag_lib.study import testbed

VARIANTS = {"TopoRAG": {}, "SubgraphRAG": {"retrieval": {"method": "subgraphrag", "fit_epochs": 2}}}


def test_learned_variants_are_fitted_on_the_given_split_or_left_out(tiny_encoder_path, tmp_path, monkeypatch):
    scenes = load_dataset("synthetic_scenes", num_images=20, seed=3)
    test, train = scenes.take(scenes.split["test"]), scenes.take(scenes.split["train"])
    encoder = TextEncoder(tiny_encoder_path, cache=tmp_path, progress=False)
    fitted_on = []
    real_fit = testbed.fit_retriever
    monkeypatch.setattr(testbed, "fit_retriever", lambda prepared, **kw: fitted_on.append(prepared.dataset) or
                        real_fit(prepared, **kw))
    table = testbed.evidence_table(test, VARIANTS, encoder, fit_on=train)
    assert set(table.method) == {"TopoRAG", "SubgraphRAG"}
    assert [len(d) for d in fitted_on] == [len(train)]  # fitted once, on the training questions
    assert table[table.method == "SubgraphRAG"].n.sum() == table[table.method == "TopoRAG"].n.sum()
    without = testbed.evidence_table(test, VARIANTS, encoder)
    assert set(without.method) == {"TopoRAG"}
