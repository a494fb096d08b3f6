"""What this process computes on: the CPU's model and the instruction set torch uses, or the GPU's name; whether
bfloat16 is native there; and the LLM dtype that `llm_dtype="auto"` resolves to.

bfloat16 is native on CUDA devices that report it and on CPUs with AVX-512 BF16 or AMX, when torch's kernels may
use them (`ATEN_CPU_CAPABILITY` and `ONEDNN_MAX_CPU_ISA` can forbid it). Elsewhere torch emulates it: on an AVX2
CPU a bf16 matmul runs 10-15x slower than float32 (`DESIGN.md`). Native is not enough to be faster: on a Xeon with
AVX-512 BF16 and no AMX (family 6, model 207) float32 took 0.60 of bfloat16's time for a frozen TopoRAG step on
ExplaGraphs (notebook 06), 0.64 of its CPU time for a TopoRAG + LoRA step on the testbed and 0.89 per generated
batch; the dot-product instructions help the matmuls and the conversions around them cost more. So on CPUs `auto`
takes bfloat16 only with AMX tiles (its matrix unit), float32 otherwise; on CUDA, bfloat16 where supported.
"""

from __future__ import annotations

import os
import platform
from functools import cache
from pathlib import Path

LLM_DTYPES = ("bfloat16", "float32", "float16")
AUTO = "auto"
DTYPE_CHOICES = (AUTO, *LLM_DTYPES)  # what `TrainConfig.llm_dtype` takes
# oneDNN ISA limits that still include bf16 dot products (oneDNN's `ONEDNN_MAX_CPU_ISA` names).
BF16_ONEDNN_ISAS = ("ALL", "AVX512_CORE_BF16", "AVX512_CORE_FP16", "AVX512_CORE_AMX", "AVX512_CORE_AMX_FP16",
                    "AVX10_1_512", "AVX10_1_512_AMX", "AVX10_1_512_AMX_FP16", "AVX10_2_512", "AVX10_2_512_AMX_2")


@cache
def cpu_model() -> str:
    """The CPU's model name, with its family and model numbers (x86 Linux names several CPU generations alike,
    e.g. "AMD EPYC"); `platform.processor()` elsewhere."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if not key.strip():
                break  # the first processor's block is enough
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    name = fields.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']}, model {fields['model']})"
    return name


def cpu_capability() -> str:
    """The vector ISA torch's CPU kernels dispatch to ("AVX2", "AVX512", ...)."""
    import torch

    return torch.backends.cpu.get_cpu_capability()


def cpu_has_native_bf16() -> bool:
    """Whether this CPU computes bf16 in hardware (AVX-512 BF16 or AMX) and torch is allowed to use it."""
    import torch

    has_unit = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    onednn_limit = os.environ.get("ONEDNN_MAX_CPU_ISA", os.environ.get("DNNL_MAX_CPU_ISA", "ALL")).upper()
    return has_unit and cpu_capability().startswith("AVX512") and onednn_limit in BF16_ONEDNN_ISAS


def cpu_has_amx_bf16() -> bool:
    """Whether this CPU has AMX tiles for bf16 and oneDNN may use them (where bf16 beats float32 on a CPU)."""
    import torch

    onednn_limit = os.environ.get("ONEDNN_MAX_CPU_ISA", os.environ.get("DNNL_MAX_CPU_ISA", "ALL")).upper()
    return cpu_has_native_bf16() and torch.cpu._is_amx_tile_supported() and (onednn_limit == "ALL"
                                                                               or "AMX" in onednn_limit)


def resolve_llm_dtype(name: str, device: str = "cpu") -> str:
    """`name` itself, or for "auto": on CUDA bfloat16 where supported, else float16; on CPUs bfloat16 with AMX,
    else float32 (see the module docstring: without AMX, native bf16 was slower than float32)."""
    if name != AUTO:
        if name not in LLM_DTYPES:
            raise ValueError(f"llm_dtype={name!r}: expected one of {list(DTYPE_CHOICES)}")
        return name
    if device.startswith("cuda"):
        import torch

        return "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"
    return "bfloat16" if cpu_has_amx_bf16() else "float32"


def describe(device: str = "cpu") -> str:
    """One line naming the hardware a run used: the GPU (name and count) on CUDA, else the CPU's model, the cores
    this process may use, the ISA torch dispatches to and whether bf16 is native."""
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(0)} x{torch.cuda.device_count()}"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    bf16 = "native" if cpu_has_native_bf16() else "emulated"
    return f"CPU {cpu_model()}, {cores} cores ({platform.machine()}, {cpu_capability()}, bf16 {bf16})"
