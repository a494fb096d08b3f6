import pytest
import torch

from toporag_lib.data.graph import TextualGraph
from toporag_lib.embed import (
    EmbeddingCache,
    TextEncoder,
    embed_graphs,
    length_batches,
    model_identity,
    rows_per_batch,
)


def test_encodes_and_reads_back_from_cache(tiny_encoder_path, tmp_path):
    texts = ["a cat", "a dog", "a cat", "a car"]
    first = TextEncoder(tiny_encoder_path, cache=tmp_path, progress=False)
    vectors = first.encode(texts)
    assert vectors.shape == (4, 32) and vectors.dtype == torch.float32
    assert torch.equal(vectors[0], vectors[2])
    assert len(first.cache) == 3  # duplicates are encoded once

    second = TextEncoder(tiny_encoder_path, cache=tmp_path, progress=False)
    assert torch.equal(second.encode(texts), vectors)
    assert second._model is None  # everything came from the cache: the model was never loaded


def test_cache_matches_direct_model_output(tiny_encoder_path, tmp_path):
    encoder = TextEncoder(tiny_encoder_path, cache=tmp_path, progress=False)
    direct = encoder.model.encode(["a red cup"], convert_to_tensor=True)
    assert torch.allclose(encoder.encode(["a red cup"]), direct, atol=1e-6)


def test_a_vector_depends_only_on_its_text(tiny_encoder_path, tmp_path):
    texts = ["a red cup", "a very long description of a wooden table standing next to a window", "x"]
    together = TextEncoder(tiny_encoder_path, cache=tmp_path / "together", progress=False).encode(texts)
    alone = TextEncoder(tiny_encoder_path, cache=tmp_path / "alone", progress=False)
    for i, text in enumerate(texts):
        assert torch.equal(alone.encode([text])[0], together[i])  # bit for bit, whatever the cache held before



def test_texts_are_encoded_on_one_thread_whatever_the_callers_count(tiny_encoder_path, tmp_path):
    encoder = TextEncoder(tiny_encoder_path, cache=tmp_path, progress=False)
    seen = []
    encoder.model.register_forward_pre_hook(lambda module, args: seen.append(torch.get_num_threads()))
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        encoder.encode(["a red cup", "x"])
        assert torch.get_num_threads() == 2  # the caller's count comes back
    finally:
        torch.set_num_threads(before)
    assert seen == [1, 1]  # a vector cached by a one-core training run equals one cached by a two-core notebook

def test_each_batching_keeps_its_own_cache(tiny_encoder_path, tmp_path):
    single = TextEncoder(tiny_encoder_path, cache=tmp_path, batching="single", progress=False)
    single.encode(["a cat"])
    for batching in ("length", 64):
        batched = TextEncoder(tiny_encoder_path, cache=tmp_path, batching=batching, progress=False)
        assert len(batched.cache) == 0  # vectors made one at a time are not mixed with batched ones
        assert torch.allclose(batched.encode(["a cat"]), single.encode(["a cat"]), atol=1e-6)


@pytest.mark.parametrize("batching", ["lengths", 0, True, 2.5])
def test_unknown_batching_is_refused(tiny_encoder_path, tmp_path, batching):
    with pytest.raises(ValueError, match="batching="):
        TextEncoder(tiny_encoder_path, cache=tmp_path, batching=batching, progress=False)


def test_length_batches_have_one_token_count_and_a_fixed_size():
    lengths = [5, 3, 5, 9, 5, 3, 200]
    batches = length_batches(lengths)
    assert sorted(p for batch in batches for p in batch) == list(range(len(lengths)))
    for batch in batches:
        assert len({lengths[p] for p in batch}) == 1
        assert len(batch) <= rows_per_batch(lengths[batch[0]])
    assert rows_per_batch(3) == 32 and rows_per_batch(200) == 1024 // 200 and rows_per_batch(10_000) == 1


SENTENCES = [f"{colour} {thing} {where}" for colour in ("a red", "the small green", "one")
             for thing in ("cup", "wooden table near the window", "cat")
             for where in ("", "on the shelf", "to the left of the big sofa in the room")]


def test_length_batching_gives_each_text_the_same_vector_whatever_its_companions(tiny_encoder_path, tmp_path):
    encoder = TextEncoder(tiny_encoder_path, cache=tmp_path / "all", progress=False)
    together = encoder.encode(SENTENCES)
    lengths = encoder.token_counts(SENTENCES)
    assert len(set(lengths)) > 3 and max(lengths.count(n) for n in set(lengths)) > 1  # real batches
    reversed_ = TextEncoder(tiny_encoder_path, cache=tmp_path / "rev", progress=False).encode(SENTENCES[::-1])
    assert torch.equal(reversed_.flip(0), together)  # other positions in the batch
    alone = TextEncoder(tiny_encoder_path, cache=tmp_path / "alone", progress=False)
    for i in (0, 7, 13, 26):
        assert torch.equal(alone.encode([SENTENCES[i]])[0], together[i])  # other companions (copies of itself)


def test_length_batching_stays_within_rounding_of_one_at_a_time(tiny_encoder_path, tmp_path):
    single = TextEncoder(tiny_encoder_path, cache=tmp_path / "single", batching="single", progress=False)
    length = TextEncoder(tiny_encoder_path, cache=tmp_path / "length", progress=False)
    texts = SENTENCES + ["cat", "cup", "shelf"]
    assert torch.allclose(length.encode(texts), single.encode(texts), rtol=0, atol=1e-6)


def test_empty_input(tiny_encoder_path, tmp_path):
    assert TextEncoder(tiny_encoder_path, cache=tmp_path, progress=False).encode([]).shape == (0, 32)


def test_embed_graphs_splits_per_graph(tiny_encoder_path, tmp_path):
    encoder = TextEncoder(tiny_encoder_path, cache=tmp_path, progress=False)
    graphs = [TextualGraph(["a", "b"], [(0, 1, "r")]), TextualGraph(["c"], []), TextualGraph(["a", "d"], [])]
    out = embed_graphs(graphs, encoder)
    assert [(n.shape[0], e.shape[0]) for n, e in out] == [(2, 1), (1, 0), (2, 0)]
    assert torch.equal(out[0][0][0], out[2][0][0])  # same text, same vector
    assert torch.allclose(out[1][0], encoder.encode(["c"]))


def test_different_models_do_not_share_vectors(tiny_encoder_path, tmp_path):
    other = tmp_path / "other"
    import shutil

    shutil.copytree(tiny_encoder_path, other)
    config = other / "config.json"
    config.write_text(config.read_text().replace('"hidden_act": "gelu"', '"hidden_act": "relu"'))
    assert model_identity(other) != model_identity(tiny_encoder_path)


@pytest.mark.parametrize("damage", ["inconsistent", "nan", "truncated", "flipped byte"])
def test_a_damaged_shard_is_deleted_with_a_warning_and_its_texts_encoded_again(tmp_path, damage):
    from toporag_lib import atomic

    good = EmbeddingCache(tmp_path)
    good.add(["k0"], torch.ones(1, 4))
    path = tmp_path / "shard-x.pt"
    if damage == "inconsistent":
        atomic.torch_save({"keys": ["a", "b"], "emb": torch.zeros(3, 4)}, path)
    elif damage == "nan":
        atomic.torch_save({"keys": ["a"], "emb": torch.full((1, 4), float("nan"))}, path)
    else:
        atomic.torch_save({"keys": ["a"], "emb": torch.zeros(1, 4)}, path)
        data = bytearray(path.read_bytes())
        if damage == "truncated":
            del data[len(data) // 2:]
        else:
            data[len(data) // 3] ^= 0xFF
        path.write_bytes(bytes(data))
    with pytest.warns(UserWarning, match="deleting damaged embedding cache shard .*shard-x.pt"):
        cache = EmbeddingCache(tmp_path)
    assert "a" not in cache and "k0" in cache and not path.exists()


def test_stale_temporary_files_of_killed_writes_are_cleared(tmp_path):
    import os

    old, new = tmp_path / ".shard-a.pt.x1.tmp", tmp_path / ".shard-b.pt.x2.tmp"
    old.write_bytes(b"half"), new.write_bytes(b"half")
    os.utime(old, (1, 1))  # written long ago: its writer is gone
    EmbeddingCache(tmp_path)
    assert not old.exists() and new.exists()  # a fresh one may belong to a live writer


def test_an_encoder_that_gives_non_finite_vectors_is_refused(tiny_encoder_path, tmp_path, monkeypatch):
    encoder = TextEncoder(tiny_encoder_path, cache=tmp_path, progress=False)
    monkeypatch.setattr(encoder, "encode_uncached", lambda texts: torch.full((len(texts), 4), float("nan")))
    with pytest.raises(ValueError, match="non-finite vectors for 1 texts, e.g. 'broken'"):
        encoder.encode(["broken"])
    assert len(encoder.cache) == 0


def test_not_a_model_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a sentence-transformers model folder"):
        TextEncoder(tmp_path)


@pytest.mark.realmodel
def test_bundled_minilm_embeds_meaningfully(tmp_path):
    encoder = TextEncoder(cache=tmp_path, progress=False)
    cat, kitten, car = encoder.encode(["a cat", "a kitten", "a truck"])
    assert encoder.dim == 384
    assert torch.dot(cat, kitten) > torch.dot(cat, car)


@pytest.mark.realmodel
def test_bundled_minilm_length_batching_keeps_vectors_a_function_of_their_text(tmp_path):
    """The bundled encoder: "length" vectors do not depend on companions, and stay within 1e-6 of one-at-a-time."""
    from toporag_lib.data import load_dataset

    graphs = load_dataset("synthetic_scenes").graphs[:3]
    texts = sorted({t for g in graphs for t in [*g.nodes, *g.edge_texts, *g.triples()]}) + SENTENCES
    together = TextEncoder(cache=tmp_path / "length", progress=False).encode(texts)
    alone = TextEncoder(cache=tmp_path / "alone", progress=False)
    assert all(torch.equal(alone.encode([texts[i]])[0], together[i]) for i in range(0, len(texts), 7))
    single = TextEncoder(cache=tmp_path / "single", batching="single", progress=False).encode(texts)
    assert torch.allclose(together, single, rtol=0, atol=1e-6)
