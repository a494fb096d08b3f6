"""Which questions the explorer's static page draws (`study.explorer_page`): per question set and pair of runs
(`CORE_PAIRS`), the questions where one was right and the other wrong, a few of them drawn, and a few questions that
no pair draws.

    sections = pair_sections(explorer, per_pair=6, seed=0)
    rest = sample_rest(explorer, sections, per_dataset=2, seed=0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toporag_lib.study.explorer import Explorer, Run

# The pairs whose disagreements the static page shows first: TopoRAG against G-Retriever, both LoRA-tuned, and
# TopoRAG against its ablation without 2-cells (frozen and LoRA-tuned), then the frozen pair the cpu-quick runs have.
CORE_PAIRS = [("TopoRAG + LoRA", "G-Retriever + LoRA"), ("TopoRAG", "TopoRAG w/o CRL (no 2-cells)"),
              ("TopoRAG + LoRA", "TopoRAG + LoRA w/o CRL (no 2-cells)"), ("TopoRAG", "G-Retriever")]


@dataclass
class PairSection:
    """Two runs on one question set: how often each was right where the other was wrong, and the questions shown."""

    dataset: str
    setting: str
    a: Run
    b: Run
    both: int  # test questions both answered
    a_right: list[int]  # a right, b wrong
    b_right: list[int]  # b right, a wrong
    shown: list[int]  # the ones the page draws


def pair_sections(explorer: Explorer, pairs: Sequence[tuple[str, str]] = tuple(CORE_PAIRS), per_pair: int = 6,
                  seed: int = 0) -> list[PairSection]:
    """For every question set, setting (limits) and pair of names (`CORE_PAIRS`) that the ledger has standing runs
    of with a common seed (`Explorer.pair`): the disagreements, and up to `per_pair` of them to draw, half where each
    run was right (drawn with `seed`)."""
    rng = np.random.default_rng(seed)
    sections = []
    for dataset in explorer.datasets():
        settings = sorted({r.setting for r in explorer.runs_of(dataset)}, key=lambda s: (s != "full splits", s))
        for setting in settings:
            for a_name, b_name in pairs:
                runs = explorer.pair(dataset, a_name, b_name, setting)
                if runs is None:
                    continue
                a, b = runs
                where = explorer.disagreements(dataset, a, b)
                a_right = [i for i in where if explorer.correct(dataset, a.predictions[i])]
                b_right = [i for i in where if i not in set(a_right)]
                take_a = min(len(a_right), max(per_pair - min(len(b_right), per_pair // 2), 0))
                take_b = min(len(b_right), per_pair - take_a)
                shown = sorted([*_sample(rng, a_right, take_a), *_sample(rng, b_right, take_b)])
                sections.append(PairSection(dataset, setting, a, b, len(a.predictions.keys() & b.predictions),
                                            a_right, b_right, shown))
    return sections


def _sample(rng: np.random.Generator, items: list[int], n: int) -> list[int]:
    return [items[k] for k in sorted(rng.choice(len(items), size=n, replace=False))] if n else []


def sample_rest(explorer: Explorer, sections: Sequence[PairSection], per_dataset: int = 2,
                seed: int = 0) -> dict[str, tuple[list[int], tuple[Run, ...]]]:
    """Per question set: `per_dataset` test questions that no section draws (drawn with `seed`), among those that the
    runs of its first section both answered, and those runs (all test questions and no runs without a section)."""
    rng = np.random.default_rng(seed)
    shown = {(s.dataset, i) for s in sections for i in s.shown}
    out = {}
    for dataset in explorer.datasets():
        first = next((s for s in sections if s.dataset == dataset), None)
        runs = (first.a, first.b) if first else ()
        pool = sorted(first.a.predictions.keys() & first.b.predictions) if first else explorer.test_questions(dataset)
        rest = [i for i in pool if (dataset, i) not in shown]
        out[dataset] = (sorted(_sample(rng, rest, min(per_dataset, len(rest)))), runs)
    return out
