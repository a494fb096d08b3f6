"""Generation (paper section 4.4): an LLM reads [soft prompt; subcomplex text; question] and writes the answer."""

from toporag_lib.generation.factory import build_model
from toporag_lib.generation.inputs import Example, ExampleBatch, collate
from toporag_lib.generation.llm import LLM, apply_lora, load_llm
from toporag_lib.generation.soft_prompt import ModelConfig, TopoRAGModel

__all__ = ["LLM", "Example", "ExampleBatch", "ModelConfig", "TopoRAGModel", "apply_lora", "build_model", "collate",
           "load_llm"]
