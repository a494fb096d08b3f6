"""Training and evaluation examples (`generation.inputs.Example`): each question with its retrieved subcomplex.

Everything here is computed once before training (retrieval, subcomplex extraction, textualization), so a
training step only runs the encoder and the LLM.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from tqdm.auto import tqdm

from toporag_lib.generation.inputs import Example
from toporag_lib.retrieval.retriever import Retriever
from toporag_lib.retrieval.textualize import textualize_subcomplex
from toporag_lib.topology.batching import ComplexData
from toporag_lib.training.preprocess import PreparedDataset


def build_examples(prepared: PreparedDataset, indices: Sequence[int], retriever: Retriever,
                   graph_text: bool = True, question_suffix: str = "", progress: bool = True) -> list[Example]:
    """Retrieve (with `retriever`, `retrieval.retriever.make_retriever`) and package the questions at `indices`.

    `graph_text=False` leaves the text out (GraphToken: the soft prompt alone carries the graph);
    `question_suffix` is appended to the question (zero-shot CoT and CoT-BAG prompts).
    """
    examples = []
    for i in tqdm(indices, desc=f"examples ({retriever.config.method})", unit="question", disable=not progress):
        sample, cc, query = prepared.question(i)
        sub = retriever.retrieve(sample, cc, query)
        complex_data = ComplexData.from_complex(cc, sub.nodes, sub.edges, sub.cells2)
        complex_data.query = query.reshape(1, -1)  # z_q, for a readout conditioned on the question
        examples.append(Example(
            index=i,
            complex=complex_data,
            text=textualize_subcomplex(sample.graph, cc, sub) if graph_text else "",
            question=sample.question + question_suffix,
            label=sample.label,
            family=sample.meta.get("family", ""),
            pair=sample.meta.get("pair", ""),
        ))
    return examples


def texts_cut(examples: dict[str, list[Example]], count_tokens: Callable[[list[str]], list[int]],
              max_txt_len: int) -> dict[str, float]:
    """Per split, the share of graph texts longer than `max_txt_len` tokens, whose end the LLM never reads (on the
    testbed the cycle table stands there)."""
    return {split: float(np.mean([n > max_txt_len for n in count_tokens([e.text for e in part])]))
            for split, part in examples.items() if part}
