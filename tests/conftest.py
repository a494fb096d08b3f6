"""Shared fixtures: everything offline, tiny models made in code, caches in temporary folders."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("project", deadline=None, max_examples=60, derandomize=True)
settings.load_profile("project")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory, monkeypatch):
    """Every test writes caches and results under a temporary folder, never into the checkout."""
    root = tmp_path_factory.mktemp("toporag")
    monkeypatch.setenv("TOPORAG_CACHE", str(root / "cache"))
    monkeypatch.setenv("TOPORAG_RESULTS", str(root / "results"))
    return root


@pytest.fixture(scope="session")
def tiny_encoder_path(tmp_path_factory) -> Path:
    """A 2-layer random-init BERT sentence encoder (32-d), with the bundled MiniLM's tokenizer files."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import BertConfig, BertModel

    from toporag_lib.embed import default_encoder_path

    folder = tmp_path_factory.mktemp("tiny_encoder")
    tokenizer_dir = folder / "tokenizer"
    tokenizer_dir.mkdir()
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(default_encoder_path() / name, tokenizer_dir / name)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    import torch

    torch.manual_seed(0)
    BertModel(config).save_pretrained(tokenizer_dir)
    transformer = Transformer(str(tokenizer_dir), max_seq_length=64)
    model = SentenceTransformer(modules=[transformer, Pooling(32, pooling_mode="mean")], device="cpu")
    model.save(str(folder / "model"))
    return folder / "model"
