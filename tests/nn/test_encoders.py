"""Reasoning encoders: shapes on awkward complexes, batching, invariances, what reaches the output, gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch

from toporag_lib.data.graph import TextualGraph
from toporag_lib.nn import ENCODERS, CellularEncoder, build_encoder
from toporag_lib.nn.cellular import UpperMessages, pool_cells
from toporag_lib.topology import lift
from toporag_lib.topology.batching import INDEX_DIMS, ComplexData

IN, HIDDEN, OUT = 16, 32, 8
NAMES = sorted(ENCODERS)


def graph(num_nodes: int, pairs: list[tuple[int, int]]) -> TextualGraph:
    return TextualGraph([f"n{i}" for i in range(num_nodes)], [(a, b, f"e{j}") for j, (a, b) in enumerate(pairs)])


def random_graph(rng: np.random.Generator, num_nodes: int, num_edges: int) -> TextualGraph:
    """A connected random multigraph (self-loops and parallel edges possible)."""
    tree = [(int(rng.integers(i)), i) for i in range(1, num_nodes)]
    extra = [tuple(map(int, p)) for p in rng.integers(0, num_nodes, size=(num_edges - len(tree), 2))]
    return graph(num_nodes, tree + extra)


def data_of(g: TextualGraph, seed: int = 0, **selection) -> ComplexData:
    gen = torch.Generator().manual_seed(seed)
    cc = lift(g, torch.randn(g.num_nodes, IN, generator=gen), torch.randn(g.num_edges, IN, generator=gen))
    return ComplexData.from_complex(cc, **selection)


AWKWARD = {
    "single node": graph(1, []),
    "tree": graph(4, [(0, 1), (1, 2), (1, 3)]),
    "loops and digons": graph(3, [(0, 1), (1, 2), (2, 0), (2, 2), (1, 0), (0, 1)]),
    "two components": graph(5, [(0, 1), (1, 2), (2, 0), (3, 4)]),
    "isolated nodes": graph(3, [(1, 1)]),
}


def random_datas(count: int = 5, seed: int = 0) -> list[ComplexData]:
    rng = np.random.default_rng(seed)
    return [data_of(random_graph(rng, n, n + int(rng.integers(0, 6))), seed=i)
            for i, n in enumerate(rng.integers(2, 9, size=count))]


def encoder(name: str, seed: int = 0, **options) -> torch.nn.Module:
    torch.manual_seed(seed)
    return build_encoder(name, IN, HIDDEN, OUT, **options).eval()


def relabel(data: ComplexData, rng: np.random.Generator) -> ComplexData:
    """The same complex with its 0-, 1- and 2-cells renumbered and every index tensor's columns shuffled."""
    counts = (data.num_nodes, data.num_cells_1, data.num_cells_2)
    new_to_old = [torch.from_numpy(rng.permutation(k)) for k in counts]
    old_to_new = [torch.argsort(p) for p in new_to_old]
    indices = {}
    for key, dims in INDEX_DIMS.items():
        index = torch.stack([old_to_new[d][row] for d, row in zip(dims, data[key])])
        indices[key] = index[:, torch.from_numpy(rng.permutation(index.size(1)))]
    out = ComplexData(**indices, batch_1=data.batch_1, batch_2=data.batch_2, num_cells_1=counts[1],
                      num_cells_2=counts[2], x0=data.x0[new_to_old[0]], x1=data.x1[new_to_old[1]],
                      x2=data.x2[new_to_old[2]])
    out.num_nodes = counts[0]
    return out


@pytest.mark.parametrize("name", NAMES)
def test_shapes_on_awkward_complexes_alone_and_batched(name):
    model = encoder(name)
    datas = [data_of(g) for g in AWKWARD.values()]
    for data in datas:
        out = model(data)
        assert out.shape == (1, OUT) and torch.isfinite(out).all()
    out = model(Batch.from_data_list(datas))
    assert out.shape == (len(datas), OUT) and torch.isfinite(out).all()


def test_awkward_complexes_have_the_cells_the_tests_need():
    counts = {key: (d.num_nodes, d.num_cells_1, d.num_cells_2) for key, d in
              ((k, data_of(g)) for k, g in AWKWARD.items())}
    assert counts["single node"] == (1, 0, 0) and counts["tree"][2] == 0
    assert counts["loops and digons"] == (3, 6, 3)  # one triangle, two digons, one self-loop


@pytest.mark.parametrize("name", NAMES)
def test_batch_rows_equal_each_complex_encoded_alone(name):
    model = encoder(name)
    datas = random_datas() + [data_of(g) for g in AWKWARD.values()]
    batched = model(Batch.from_data_list(datas))
    alone = torch.cat([model(Batch.from_data_list([d])) for d in datas])
    torch.testing.assert_close(batched, alone, atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", NAMES)
def test_order_of_complexes_in_a_batch_only_reorders_rows(name):
    model = encoder(name)
    datas = random_datas(6, seed=1)
    order = [3, 0, 5, 1, 4, 2]
    out = model(Batch.from_data_list(datas))
    shuffled = model(Batch.from_data_list([datas[i] for i in order]))
    torch.testing.assert_close(shuffled, out[order], atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", NAMES)
def test_renumbering_cells_and_shuffling_index_columns_changes_nothing(name):
    model, rng = encoder(name), np.random.default_rng(7)
    datas = random_datas(4, seed=2) + [data_of(AWKWARD["loops and digons"])]
    out = model(Batch.from_data_list(datas))
    renumbered = model(Batch.from_data_list([relabel(d, rng) for d in datas]))
    torch.testing.assert_close(renumbered, out, atol=1e-5, rtol=0)


def test_two_cells_reach_the_cellular_output_and_not_the_baselines():
    data = data_of(AWKWARD["loops and digons"])
    other_x2 = data.clone()
    other_x2.x2 = torch.randn_like(data.x2)
    skeleton = data_of(AWKWARD["loops and digons"], nodes=range(3), edges=range(6), cells=[])
    assert skeleton.num_cells_2 == 0 and torch.equal(skeleton.x1, data.x1)
    for name in NAMES:
        model = encoder(name)
        out = model(data)
        changed = not torch.allclose(model(other_x2), out) and not torch.allclose(model(skeleton), out)
        unchanged = torch.equal(model(other_x2), out) and torch.equal(model(skeleton), out)
        assert changed if name == "cellular" else unchanged, name


def test_upper_message_carries_the_shared_coface_to_its_two_ends_only():
    """Path 0-1-2-3: only edge 1 joins nodes 1 and 2, so its state changes m_up at nodes 1 and 2 only."""
    data = data_of(graph(4, [(0, 1), (1, 2), (2, 3)]))
    torch.manual_seed(0)
    up, h, h_edges = UpperMessages(HIDDEN), torch.randn(4, HIDDEN), torch.randn(3, HIDDEN)
    before = up(h, h_edges, data.node_adj_index)
    h_edges[1] += 1.0
    moved = (up(h, h_edges, data.node_adj_index) - before).abs().sum(1) > 0
    assert moved.tolist() == [False, True, True, False]


def test_stage_two_messages_see_the_cofaces_new_states():
    """Eq. 19: m_up reads h^{L+1} of the shared coface; hooks compare the coface inputs to the updated cells."""
    model, batch = encoder("cellular"), Batch.from_data_list(random_datas(3) + [data_of(AWKWARD["loops and digons"])])
    seen = {}
    stage2 = model.stage2
    hooks = [stage2.cell.register_forward_hook(lambda m, i, o: seen.__setitem__("new2", o)),
             stage2.edge.register_forward_hook(lambda m, i, o: seen.__setitem__("new1", o)),
             stage2.edge_up.coface.register_forward_pre_hook(lambda m, i: seen.__setitem__("edge_up", i[0])),
             stage2.node_up.coface.register_forward_pre_hook(lambda m, i: seen.__setitem__("node_up", i[0]))]
    model(batch)
    for hook in hooks:
        hook.remove()
    assert batch.edge_adj_index.size(1) and batch.node_adj_index.size(1)
    assert seen["edge_up"] is seen["new2"] and seen["node_up"] is seen["new1"]


def test_upper_message_is_an_mlp_of_the_concatenated_neighbour_and_coface():
    up, adjacency = UpperMessages(4), torch.tensor([[0, 1, 1], [1, 0, 2], [0, 0, 1]])
    h, h_coface = torch.randn(3, 4), torch.randn(2, 4)
    weight = torch.cat([up.neighbour.weight, up.coface.weight], dim=1)
    pairs = torch.relu(torch.cat([h[adjacency[1]], h_coface[adjacency[2]]], 1) @ weight.T + up.neighbour.bias)
    expected = torch.stack([pairs[0], (pairs[1] + pairs[2]) / 2, torch.zeros(4)])
    torch.testing.assert_close(up(h, h_coface, adjacency), expected)


def test_pool_is_the_mean_over_all_cells_of_each_complex():
    states = [torch.tensor([[1.0], [2.0]]), torch.tensor([[6.0]]), torch.zeros(0, 1)]
    batches = (torch.tensor([0, 1]), torch.tensor([1]), torch.zeros(0, dtype=torch.long))
    assert pool_cells(states, batches, 3).flatten().tolist() == [1.0, 4.0, 0.0]


@pytest.mark.parametrize("name", NAMES)
def test_gradients_reach_every_parameter(name):
    model = encoder(name).train()
    model(Batch.from_data_list(random_datas(3) + [data_of(AWKWARD["loops and digons"])])).sum().backward()
    missing = [key for key, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert not missing


@pytest.mark.parametrize("name", NAMES)
def test_a_fixed_seed_gives_the_same_model_and_outputs(name):
    batch = Batch.from_data_list(random_datas(3))
    outputs = []
    for _ in range(2):
        model = encoder(name, seed=3, dropout=0.5).train()
        torch.manual_seed(11)
        outputs.append(model(batch))
    torch.testing.assert_close(outputs[0], outputs[1], atol=0, rtol=0)
    assert not torch.equal(encoder(name, seed=4)(batch), encoder(name, seed=3)(batch))


def test_build_encoder_names_and_errors():
    assert isinstance(build_encoder("cellular", IN, HIDDEN, OUT), CellularEncoder)
    assert sum(isinstance(layer, torch.nn.Module) for layer in build_encoder("cellular", IN, 8, 4, 3).stage1) == 3
    assert build_encoder("gat", IN, HIDDEN, OUT, heads=2).convs[0].heads == 2
    with pytest.raises(ValueError, match="'cellular', 'gat', 'gcn', 'gt'"):
        build_encoder("gin", IN, HIDDEN, OUT)
    with pytest.raises(ValueError, match="num_layers"):
        build_encoder("cellular", IN, HIDDEN, OUT, num_layers=0)
    with pytest.raises(ValueError, match="multiple of heads"):
        build_encoder("gt", IN, 30, OUT)
