"""The LLM dtype `auto` picks by the hardware, and the hardware line every run record carries."""

from __future__ import annotations

import pytest

from toporag_lib import hardware
from toporag_lib.training.train_config import TrainConfig


@pytest.mark.parametrize(("native", "amx", "expected"),
                         [(True, True, "bfloat16"), (True, False, "float32"), (False, False, "float32")])
def test_auto_takes_bf16_only_where_the_cpu_has_amx(monkeypatch, native, amx, expected):
    import torch

    monkeypatch.setattr(hardware, "cpu_has_native_bf16", lambda: native)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    assert hardware.cpu_has_amx_bf16() == amx
    assert hardware.resolve_llm_dtype("auto", "cpu") == expected
    assert TrainConfig(llm_dtype="auto").llm_dtype == expected  # saved resolved: the record says what ran
    assert TrainConfig().llm_dtype == expected  # the default
    for name in ("bfloat16", "float32"):  # named dtypes stay what they are, whatever the CPU
        assert TrainConfig(llm_dtype=name).llm_dtype == name


def test_an_old_bf16_config_keeps_its_run_id():
    from toporag_lib.training.ledger import run_id

    old = TrainConfig(llm_dtype="bfloat16").to_dict()
    assert TrainConfig.from_dict(old).to_dict() == old and run_id(TrainConfig.from_dict(old).to_dict()) == run_id(old)


def test_cuda_without_bf16_takes_float16(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert hardware.resolve_llm_dtype("auto", "cuda") == "float16"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert hardware.resolve_llm_dtype("auto", "cuda:0") == "bfloat16"


def test_kernels_held_below_bf16_count_as_no_native_bf16(monkeypatch):
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert not hardware.cpu_has_native_bf16() and not hardware.cpu_has_amx_bf16()
    assert hardware.resolve_llm_dtype("auto") == "float32"


def test_kernels_held_below_amx_take_float32(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True)
    monkeypatch.setattr(hardware, "cpu_has_native_bf16", lambda: True)
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_BF16")
    assert not hardware.cpu_has_amx_bf16() and hardware.resolve_llm_dtype("auto") == "float32"
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_AMX")
    assert hardware.cpu_has_amx_bf16() and hardware.resolve_llm_dtype("auto") == "bfloat16"


def test_unknown_dtype_is_refused_by_name():
    with pytest.raises(ValueError, match=r"llm_dtype='bf16': expected one of \['auto', 'bfloat16'"):
        hardware.resolve_llm_dtype("bf16")


def test_hardware_line_names_the_cpu_model_isa_and_bf16():
    line = hardware.describe("cpu")
    assert line.startswith("CPU ") and hardware.cpu_model() in line and hardware.cpu_capability() in line
    assert ("bf16 native" in line) != ("bf16 emulated" in line)
    assert "cores" in line


def test_generation_budget_is_the_datasets():
    assert TrainConfig(dataset="explagraphs").max_new_tokens == 32  # the paper's
    assert TrainConfig(dataset="synthetic_scenes").max_new_tokens == 8  # the testbed's closed vocabulary
    assert TrainConfig(dataset="synthetic_scenes", max_new_tokens=32).max_new_tokens == 32
