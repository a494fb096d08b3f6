"""What a model reads: one question's retrieved subcomplex (for the encoder), its text (for the LLM), the question
and its label, and a batch of them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from torch_geometric.data import Batch

from toporag_lib.topology.batching import ComplexData


@dataclass(frozen=True)
class Example:
    """One question: the retrieved subcomplex, its text, question and label."""

    index: int
    complex: ComplexData
    text: str
    question: str
    label: str
    family: str = ""
    pair: str = ""  # the id shared with its counterfactual twin (testbed version 3's loop questions)


@dataclass(frozen=True)
class ExampleBatch:
    graphs: Batch
    texts: list[str]
    questions: list[str]
    labels: list[str]
    indices: list[int]

    def __len__(self) -> int:
        return len(self.labels)


def collate(examples: Sequence[Example]) -> ExampleBatch:
    return ExampleBatch(graphs=Batch.from_data_list([e.complex for e in examples]), texts=[e.text for e in examples],
                        questions=[e.question for e in examples], labels=[e.label for e in examples],
                        indices=[e.index for e in examples])
