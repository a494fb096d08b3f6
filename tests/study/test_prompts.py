"""The real prompt of every method on every dataset holds only that method's input: the 2-cells, and so the cycle
table, are TopoRAG's alone; the text rows read G-Retriever's textual graph, the fact rows their triples as facts,
GraphToken no graph text."""

from __future__ import annotations

import pytest

from toporag_lib.paths import BUNDLED_DATA
from toporag_lib.retrieval.textualize import KAPING_HEADER
from toporag_lib.study.experiments import ABLATIONS, CELL_METHODS, TABLE1_METHODS, method_config, variant_config
from toporag_lib.training.trainer import make_examples

CYCLE_TABLE = "cell_id,cycle"
GRAPH_CSV = "node_id,node_attr"
DATASETS = {"explagraphs": {}, "synthetic_scenes": {"num_images": 9, "questions_per_image": 3, "seed": 1},
            "gqa_fixtures": {}, "webqsp": {"root": str(BUNDLED_DATA / "webqsp_fixture")}}
ABLATED = {f"TopoRAG {name}": change for name, change in ABLATIONS.items() if change}
FACT_ROWS = {"KAPING", "SubgraphRAG"}
CELL_ROWS = {*CELL_METHODS, "TopoRAG w/o TSR (shortest path)", "TopoRAG w/o MTR (GCN)"}  # w/o CRL drops them


def config_of(row: str, dataset: str, encoder: str):
    # ExplaGraphs: enough test questions that some graphs have a cycle (34 of its 554 do)
    overrides = {"dataset_options": DATASETS[dataset], "encoder_path": encoder, "seed": 0,
                 "limits": {"train": 4, "val": 2, "test": 60 if dataset == "explagraphs" else 8}}
    if row in ABLATED:
        return variant_config("TopoRAG", dataset, ABLATED[row], overrides)
    return method_config(row, dataset, overrides)


@pytest.fixture(scope="module")
def prompts(tmp_path_factory, tiny_encoder_path):
    """(row, dataset) -> every example of the small splits, built as the trainer builds them; rows whose inputs
    are configured alike share one build."""
    built: dict[str, list] = {}
    out: dict[tuple[str, str], list] = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOPORAG_CACHE", str(tmp_path_factory.mktemp("prompts")))
        for dataset in DATASETS:
            for row in [*TABLE1_METHODS, *ABLATED]:
                config = config_of(row, dataset, str(tiny_encoder_path))
                key = repr((config.dataset, config.dataset_options, config.limits, config.retrieval, config.lift,
                            config.edge_text, config.graph_text, config.question_suffix))
                if key not in built:
                    examples, _ = make_examples(config, progress=False)
                    built[key] = [e for split in examples.values() for e in split]
                out[(row, dataset)] = built[key]
    return out


@pytest.mark.parametrize("dataset", sorted(DATASETS))
def test_only_topoRAG_rows_read_2_cells_and_the_cycle_table(prompts, dataset):
    for row in [*TABLE1_METHODS, *ABLATED]:
        examples = prompts[(row, dataset)]
        with_table = [CYCLE_TABLE in e.text for e in examples]
        if row in CELL_ROWS:
            # every retrieved 2-cell is in the text, and no table without one
            assert with_table == [e.complex.num_cells_2 > 0 for e in examples], row
        else:
            assert not any(with_table), f"{row} on {dataset} reads TopoRAG's cycle table"
            if row != "GraphToken":  # its GAT reads the 1-skeleton only, and it has no graph text
                assert all(e.complex.num_cells_2 == 0 for e in examples), f"{row} on {dataset} gets 2-cells"
    assert any(CYCLE_TABLE in e.text for e in prompts[("TopoRAG", dataset)]), "no 2-cell reached TopoRAG"


@pytest.mark.parametrize("dataset", sorted(DATASETS))
def test_each_row_reads_its_papers_kind_of_graph_text(prompts, dataset):
    for row in [*TABLE1_METHODS, *ABLATED]:
        texts = [e.text for e in prompts[(row, dataset)]]
        if row == "GraphToken":
            assert set(texts) == {""}
        elif row in FACT_ROWS:
            assert all(t.startswith(KAPING_HEADER) for t in texts), row
        else:
            assert all(t.startswith(GRAPH_CSV) for t in texts), row
