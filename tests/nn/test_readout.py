"""The question-conditioned readout: a pool that depends on what is asked, per complex, with empty dimensions."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_encoders import AWKWARD, IN, data_of, random_datas
from torch_geometric.data import Batch

from toporag_lib.nn import build_encoder
from toporag_lib.nn.readout import QuestionReadout
from toporag_lib.nn.structure import Structure

HIDDEN = 8


def pooled(datas, queries: torch.Tensor, name: str = "cellular") -> torch.Tensor:
    torch.manual_seed(0)
    encoder, readout = build_encoder(name, IN, HIDDEN, HIDDEN).eval(), QuestionReadout(HIDDEN, IN, HIDDEN, 5).eval()
    batch = Batch.from_data_list(datas)
    states, s = encoder.cell_states(batch)
    return readout(states, s, (batch.x0, batch.x1, batch.x2), queries)


def test_the_pool_changes_with_the_question_and_a_batch_row_is_its_complex_alone():
    datas, gen = random_datas(4), torch.Generator().manual_seed(1)
    queries = torch.randn(4, IN, generator=gen)
    together = pooled(datas, queries)
    alone = torch.cat([pooled([d], queries[i:i + 1]) for i, d in enumerate(datas)])
    torch.testing.assert_close(together, alone)
    other = pooled(datas, torch.randn(4, IN, generator=gen))
    assert not torch.allclose(together, other)  # a mean pool would give the same vector whatever is asked


@pytest.mark.parametrize("name", ["cellular", "gcn"])
def test_complexes_without_edges_or_2cells_and_encoders_without_their_states_pool_to_finite_rows(name):
    datas = list(map(data_of, AWKWARD.values()))
    out = pooled(datas, torch.randn(len(datas), IN), name)
    assert out.shape == (len(datas), 5) and torch.isfinite(out).all()


def test_the_match_term_is_the_scaled_dot_product_of_a_cells_input_feature_with_the_question():
    data = data_of(AWKWARD["tree"])
    batch = Batch.from_data_list([data])
    readout = QuestionReadout(IN, IN, HIDDEN, 3)
    seen = []
    readout.readouts[0].register_forward_pre_hook(lambda module, args: seen.append(args[0]))
    query = torch.randn(1, IN)
    readout([batch.x0, batch.x1], Structure.of(batch), (batch.x0, batch.x1, batch.x2), query)
    cells = seen[0]
    torch.testing.assert_close(cells[:, -1], batch.x0 @ query[0] * np.sqrt(IN))
    torch.testing.assert_close(cells[:, IN:2 * IN], query.expand(data.num_nodes, -1))


def test_one_query_per_complex_is_required():
    with pytest.raises(ValueError, match="2 question embeddings for 1 complexes"):
        pooled([data_of(AWKWARD["tree"])], torch.randn(2, IN))
