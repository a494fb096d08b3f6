"""Training and evaluation examples: each question with its retrieved subcomplex, as tensors and as text.

Everything here is computed once before training (retrieval, subcomplex extraction, textualization), so a
training step only runs the encoder and the LLM.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from torch_geometric.data import Batch
from tqdm.auto import tqdm

from toporag_lib.complex_batch import ComplexData
from toporag_lib.preprocess import PreparedDataset
from toporag_lib.retrieval import retrieve
from toporag_lib.textualize import textualize_subcomplex


@dataclass(frozen=True)
class Example:
    """One question: the retrieved subcomplex (for the encoder), its text (for the LLM), question and label."""

    index: int
    complex: ComplexData
    text: str
    question: str
    label: str
    family: str = ""


@dataclass(frozen=True)
class ExampleBatch:
    graphs: Batch
    texts: list[str]
    questions: list[str]
    labels: list[str]
    indices: list[int]

    def __len__(self) -> int:
        return len(self.labels)


def build_examples(prepared: PreparedDataset, indices: Sequence[int], retrieval: dict[str, Any],
                   graph_text: bool = True, question_suffix: str = "", progress: bool = True) -> list[Example]:
    """Retrieve (`retrieval`: method and its parameters) and package the questions at `indices`.

    `graph_text=False` leaves the text out (GraphToken: the soft prompt alone carries the graph);
    `question_suffix` is appended to the question (zero-shot CoT and CoT-BAG prompts).
    """
    params = dict(retrieval)
    method = params.pop("method", "toporag")
    examples = []
    for i in tqdm(indices, desc=f"examples ({method})", unit="question", disable=not progress):
        sample, cc = prepared.sample(i), prepared.complex_of(i)
        sub = retrieve(cc, prepared.queries[i], method, **params)
        examples.append(Example(
            index=i,
            complex=ComplexData.from_complex(cc, sub.nodes, sub.edges, sub.cells2),
            text=textualize_subcomplex(sample.graph, cc, sub) if graph_text else "",
            question=sample.question + question_suffix,
            label=sample.label,
            family=sample.meta.get("family", ""),
        ))
    return examples


def collate(examples: Sequence[Example]) -> ExampleBatch:
    return ExampleBatch(graphs=Batch.from_data_list([e.complex for e in examples]), texts=[e.text for e in examples],
                        questions=[e.question for e in examples], labels=[e.label for e in examples],
                        indices=[e.index for e in examples])
