"""TopoRAG: retrieved cell complex-augmented generation for textual graph question answering."""

__version__ = "0.1.0"
