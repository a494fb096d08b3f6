"""Evidence recall per retrieval variant, learned retrievals fitted on the training split only."""

from __future__ import annotations

import pytest

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


def test_accuracy_by_cycles_finds_questions_with_a_method_suffix():
    from toporag_lib.data.metrics import explagraphs_correct
    from toporag_lib.study.experiments import COT_BAG

    data = load_dataset("explagraphs")
    test = data.take(data.split["test"][:40])
    records = [{"question": s.question + COT_BAG, "label": s.label, "pred": s.label} for s in test]
    table = testbed.accuracy_by_cycles(records, test, explagraphs_correct)
    assert table.n.sum() == 40 and (table.accuracy.dropna() == 1.0).all()
    with pytest.raises(KeyError, match="not one of the dataset's"):
        testbed.accuracy_by_cycles([{"question": "elsewhere", "label": "x", "pred": "x"}], test, explagraphs_correct)
