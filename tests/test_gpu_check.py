"""benchmarks/gpu_check.py: its CPU smoke mode on tiny models, and (marked cuda) the same steps on a GPU."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from tiny_models import CHATML, make_tiny_model

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_check.py"
spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
gpu_check = sys.modules["gpu_check"] = importlib.util.module_from_spec(spec)  # dataclasses look their module up
spec.loader.exec_module(gpu_check)
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture(scope="module")
def tokenizer_path(tmp_path_factory) -> str:
    """A tiny model's folder for its tokenizer (the bundled SmolLM2 would be converted from GGUF first)."""
    return str(make_tiny_model(tmp_path_factory.mktemp("tokenizer"), CHATML))


def tiny_check(device: str, dtype: torch.dtype, encoder: Path, tokenizer: str) -> gpu_check.Check:
    return gpu_check.Check("tiny Llama", gpu_check.TINY, device, dtype, batch_size=2, warmup=0, steps=1,
                           encoder_path=str(encoder), tokenizer_path=tokenizer)


def test_the_llm_has_the_asked_shape_dtype_and_room_for_every_token_id(tokenizer_path):
    llm = gpu_check.make_llm(gpu_check.TINY, "cpu", torch.bfloat16, tokenizer_path)
    config = llm.model.config
    assert (config.hidden_size, config.num_hidden_layers, config.intermediate_size) == (64, 2, 128)
    assert config.vocab_size == max(32000, len(llm.tokenizer)) and llm.dtype == torch.bfloat16
    assert torch.get_default_dtype() == torch.float32  # restored
    assert not any(p.requires_grad for p in llm.parameters())


def test_cpu_smoke_times_both_methods_beside_the_paper(tiny_encoder_path, tokenizer_path):
    check = tiny_check("cpu", torch.float32, tiny_encoder_path, tokenizer_path)
    table = gpu_check.run_check(check)
    assert sorted(table.method) == ["G-Retriever", "TopoRAG"]
    assert (table.seconds_per_step > 0).all() and table.peak_gpu_mb.isna().all()
    assert (table.steps_per_epoch == 830).all()  # ExplaGraphs' 1,660 training questions at batch size 2
    assert table.set_index("method").paper_minutes_per_epoch.to_dict() == {"G-Retriever": 2.6, "TopoRAG": 3.0}
    text = gpu_check.report(table, check)
    assert "1.154 in the paper's Table 7" in text and "tiny Llama" in text


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given without CUDA")
def test_without_cuda_the_full_check_says_so():
    with pytest.raises(SystemExit, match="no CUDA device"):
        gpu_check.main([])


@pytest.mark.cuda
@needs_cuda
def test_tiny_llama_steps_on_cuda_in_bfloat16(tiny_encoder_path, tokenizer_path):
    table = gpu_check.run_check(tiny_check("cuda", torch.bfloat16, tiny_encoder_path, tokenizer_path))
    assert (table.seconds_per_step > 0).all() and (table.peak_gpu_mb > 0).all()
