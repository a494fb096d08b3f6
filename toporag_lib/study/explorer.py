"""The question explorer: for any test question of a dataset in the ledger, its complex, what each run's method
retrieved and read, and what every run answered. Notebook 08 shows it in widgets and writes it as a static page
(`study.explorer_page` renders both).

    explorer = Explorer(results_dir() / "runs")
    explorer.datasets()                                   # the question sets the ledger's runs answered
    a, b = explorer.pair("explagraphs", "TopoRAG + LoRA", "G-Retriever + LoRA")  # same seed and limits
    where = explorer.disagreements("explagraphs", a, b)   # test questions one got right and the other wrong
    view = explorer.view("explagraphs", where[0], shown=[a, b])
    view.answers          # every run that answered it: its answer and whether it is right
    view.inputs           # per distinct input of the shown runs: the subcomplex and the text its LLM read

A question is named by its index in the dataset as loaded with the runs' `dataset_options` (a full-split run's
predictions carry that index; a run on limited splits numbers its questions by position among the ones it kept,
`training.trainer.run_questions`, which is mapped back here, and each prediction's question text is checked against
the dataset's). The text each method read is recomputed for the chosen question alone through the trainer's own path
(`training.preprocess.prepare`, `retrieval.make_retriever`, `training.examples.build_examples`): a question's
retrieval reads only its graph and its question, so it is the text of the run. The fitted retrievals (SubgraphRAG,
GNN-RAG) are fitted on the run's whole training split first, which costs minutes: only with `fit_retrievers=True`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from toporag_lib.data.dataset import QADataset
from toporag_lib.data.graph import QASample
from toporag_lib.data.registry import correct_for, load_dataset
from toporag_lib.retrieval.retrieval_config import FITTED_METHODS
from toporag_lib.retrieval.subcomplex import Subcomplex
from toporag_lib.study.floors_and_evidence import CYCLE_FAMILIES
from toporag_lib.study.method_reads import question_line, retrieval_words, soft_prompt_of, user_turn
from toporag_lib.study.superseded import superseded
from toporag_lib.topology.complex import CellComplex
from toporag_lib.training.ledger import read_ledger, with_later_keys
from toporag_lib.training.train_config import TrainConfig

class ExplorerError(ValueError):
    """A question or run the explorer cannot show; the message says why."""


def dataset_key(dataset: str, options: dict[str, Any]) -> str:
    """A question set's name: the dataset, with its options when it has any."""
    if not options:
        return dataset
    return f"{dataset} ({', '.join(f'{k}={v}' for k, v in sorted(options.items()))})"


def setting_of(config: dict[str, Any]) -> str:
    """A run's questions per split, in words ("full splits" or the limits)."""
    limits = config.get("limits") or {}
    if all(v is None for v in limits.values()):
        return "full splits"
    return ", ".join(f"{k} {'all' if v is None else v}" for k, v in limits.items())


# Options that records made before the option existed ran with, tried when a run's predictions do not match the
# dataset as its recorded options load it today: the testbed's cpu-quick runs before version 2 was the default.
OPTIONS_BEFORE = {"synthetic_scenes": [{"version": 1}]}


@dataclass(frozen=True)
class Run:
    """One ledger record: its name, seed and config, the question set its predictions match, and its test
    predictions by dataset index (empty, with `problem` saying why, when none can be shown)."""

    run_id: str
    name: str
    seed: int
    config: dict[str, Any]  # with the keys added after it was recorded at their old values (`ledger.with_later_keys`)
    finished: str
    superseded: str  # why a later fix made it obsolete ("" when it stands: `study.superseded`)
    folder: Path
    options: dict[str, Any]  # the dataset options its predictions match (`OPTIONS_BEFORE`)
    predictions: dict[int, dict[str, Any]]  # dataset index -> its prediction
    problem: str = ""

    @property
    def dataset(self) -> str:
        """The question set (`dataset_key`)."""
        return dataset_key(self.config["dataset"], self.options)

    @property
    def setting(self) -> str:
        return setting_of(self.config)

    @property
    def label(self) -> str:
        """Name, seed and the config hash of the run id: unique in a ledger."""
        return f"{self.name} · seed {self.seed} · {self.run_id.rsplit('-', 1)[-1]}"

    @cached_property
    def train_config(self) -> TrainConfig:
        return TrainConfig.from_dict({**self.config, "dataset_options": self.options})

    def __hash__(self) -> int:
        return hash(self.run_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Run) and other.run_id == self.run_id


@dataclass(frozen=True)
class Answer:
    """One run's answer to one question."""

    run: str  # its label
    name: str
    seed: int
    pred: str
    correct: bool
    superseded: str


@dataclass(frozen=True)
class MethodInput:
    """What one or more runs' LLM read for a question (runs whose configs build the same input share one)."""

    runs: tuple[str, ...]  # labels of the runs that read it
    retrieval: str  # the retrieval method and the parameters it reads
    soft_prompt: str  # what comes before the text as embeddings ("" when nothing does)
    sub: Subcomplex | None  # the retrieved subcomplex (None where it was not recomputed: see `note`)
    complex: CellComplex | None  # the graph lifted as these runs lift it (`sub`'s 2-cells index its 2-cells)
    text: str  # the graph text (`textualize_subcomplex`; "" for GraphToken)
    question: str  # the question as the run asked it (with its suffix)
    prompt: str  # the user turn of the chat template: the text as the LLM read it (cut to `max_txt_len` tokens
    # when counted) and the question, in the run's layout
    note: str = ""  # a caveat (text cut to max_txt_len tokens) or why nothing was recomputed
    tokens: int | None = None  # the text's length in the run's LLM tokens (`Explorer(count_tokens=True)`)

    def counts(self) -> dict[str, int]:
        return self.sub.counts() if self.sub is not None else {}


@dataclass
class QuestionView:
    """Everything the explorer shows for one question."""

    dataset: str  # the question set (`dataset_key`)
    index: int  # the question's index in the dataset
    sample: QASample
    complex: CellComplex  # the graph lifted as the shown runs lift it (the dataset's lifting when none is shown)
    family: str
    answers: list[Answer]
    inputs: list[MethodInput] = field(default_factory=list)

    @property
    def question(self) -> str:
        return self.sample.question

    @property
    def label(self) -> str:
        return self.sample.label


def family_of(sample: QASample) -> str:
    """A question's family: the dataset's own (the testbed's attribute, path, loop), else whether its graph has a
    cycle (ExplaGraphs: only those give TopoRAG a 2-cell)."""
    return sample.meta.get("family") or CYCLE_FAMILIES[sample.graph.num_independent_cycles() > 0]


def _retrieval_key(config: TrainConfig) -> str:
    """What decides a question's subcomplex and text: runs alike here read the same text."""
    key = {"dataset": config.dataset, "options": config.dataset_options, "retrieval": config.retrieval.reads(),
           "lift": config.lift.to_dict(), "edge_text": config.edge_text, "graph_text": config.graph_text,
           "suffix": config.question_suffix, "encoder": config.encoder_path, "batching": config.embedding_batching}
    if config.retrieval.method in FITTED_METHODS:  # fitted on the run's own training questions
        key |= {"limits": vars(config.limits), "seed": config.seed}
    return json.dumps(key, sort_keys=True, default=str)


class Explorer:
    """The ledger's runs joined to their datasets, question by question (module docstring). Every dataset a run
    answered is loaded once, here."""

    def __init__(self, ledger: str | Path, fit_retrievers: bool = False, count_tokens: bool = False,
                 progress: bool = False):
        """`fit_retrievers`: recompute the fitted retrievals' texts too (module docstring); `count_tokens`: count
        each text in its run's LLM tokenizer and cut it where the LLM cut it (`max_txt_len`; the bundled LLM's
        tokenizer is converted once into the cache, about 20 s)."""
        self.ledger = Path(ledger)
        if not self.ledger.is_dir():
            raise ExplorerError(f"no ledger at {self.ledger}")
        self.fit_retrievers, self.count_tokens, self.progress = fit_retrievers, count_tokens, progress
        self._tokenizers: dict[str | None, Any] = {}
        self._datasets: dict[str, QADataset] = {}
        self._inputs: dict[tuple[str, int], tuple] = {}  # (retrieval key, index) -> (sub, complex, text, question)
        self._answered: dict[str, list[int]] = {}
        self._encoders: dict[tuple, Any] = {}
        self.runs = [self._joined(record) for record in read_ledger(self.ledger)]

    def _load(self, dataset: str, options: dict[str, Any]) -> QADataset:
        key = dataset_key(dataset, options)
        if key not in self._datasets:
            self._datasets[key] = load_dataset(dataset, **options)
        return self._datasets[key]

    def _joined(self, record: dict[str, Any]) -> Run:
        """The record as a `Run`, its predictions matched to the questions of its dataset (with the options it was
        recorded with, else with `OPTIONS_BEFORE`'s): each prediction's index mapped through the trainer's own
        choice of questions (`trainer.run_questions`) and its question and label checked."""
        from toporag_lib.training.trainer import run_questions

        config = with_later_keys(record["config"])
        recorded = config.get("dataset_options") or {}
        fields = dict(run_id=record["run_id"], name=record["name"], seed=config["seed"], config=config,
                      finished=record.get("finished", ""), superseded=superseded(record),
                      folder=self.ledger / record["run_id"])
        # a record without its predictions never gets here: `read_ledger` refuses it, naming the file
        tried = [recorded, *({**recorded, **extra} for extra in OPTIONS_BEFORE.get(config["dataset"], [])
                             if not extra.keys() <= recorded.keys())]
        for options in tried:
            dataset = self._load(config["dataset"], options)
            train_config = TrainConfig.from_dict({**config, "dataset_options": options})
            kept = run_questions(train_config, dataset)[1]
            suffix = train_config.question_suffix
            by_index = {}
            for p in record["predictions"]:
                i = kept[p["index"]] if 0 <= p["index"] < len(kept) else None
                if i is None or dataset[i].question + suffix != p["question"] or dataset[i].label != p["label"]:
                    break
                by_index[i] = p
            else:
                return Run(**fields, options=options, predictions=by_index)
        return Run(**fields, options=recorded, predictions={}, problem=(
            f"its predictions match no question set its config loads today "
            f"({', '.join(dataset_key(config['dataset'], o) for o in tried)})"))

    # -- the ledger's question sets and runs ---------------------------------------------------------------------

    def datasets(self) -> list[str]:
        """The question sets that runs with predictions answered, those with full-split runs first."""
        keys = {r.dataset for r in self.runs if r.predictions}
        full = {r.dataset for r in self.runs if r.predictions and r.setting == "full splits"}
        return sorted(keys, key=lambda k: (k not in full, k))

    def runs_of(self, dataset: str) -> list[Run]:
        """The runs whose predictions are on `dataset` (a `dataset_key`), by name, seed and finishing time."""
        return sorted((r for r in self.runs if r.dataset == dataset and r.predictions),
                      key=lambda r: (r.name, r.seed, r.finished))

    def left_out(self) -> list[Run]:
        """The runs the explorer cannot show (`Run.problem` says why)."""
        return [r for r in self.runs if r.problem]

    def find(self, label_or_id: str) -> Run:
        """A run by its label or run id."""
        for r in self.runs:
            if label_or_id in (r.label, r.run_id):
                return r
        raise ExplorerError(f"no run {label_or_id!r} in the ledger {self.ledger}")

    def pair(self, dataset: str, a: str, b: str, setting: str | None = None) -> tuple[Run, Run] | None:
        """Standing runs of `a` and `b` on `dataset` with the same seed and limits (`setting`, when given): seed 42
        before others, then the pair with the most questions in common, then the newest; None when there is none."""
        runs = [r for r in self.runs_of(dataset) if not r.superseded and (setting is None or r.setting == setting)]
        candidates = [(x, y) for x in runs if x.name == a for y in runs
                      if y.name == b and y.seed == x.seed and y.setting == x.setting]
        if not candidates:
            return None
        return max(candidates, key=lambda xy: (xy[0].seed == 42, len(xy[0].predictions.keys() & xy[1].predictions),
                                               xy[0].finished, xy[1].finished, xy[0].run_id, xy[1].run_id))

    def dataset(self, key: str) -> QADataset:
        """The dataset of a question set (`dataset_key`), as its runs' predictions match it."""
        if key not in self._datasets:
            raise ExplorerError(f"no run in the ledger answered {key!r}; known: {self.datasets()}")
        return self._datasets[key]

    def predictions(self, run: Run) -> dict[int, dict[str, Any]]:
        """The run's test predictions by dataset index; refused, with the reason, for a run that has none (or none
        that match its dataset)."""
        if not run.predictions:
            raise ExplorerError(f"run {run.label} ({run.run_id}) cannot be shown: {run.problem}")
        return run.predictions

    # -- questions -------------------------------------------------------------------------------------------------

    def test_questions(self, dataset: str, family: str | None = None) -> list[int]:
        """The dataset's test questions that some run answered (of `family` when given), in dataset order."""
        if dataset not in self._answered:
            self._answered[dataset] = sorted(set().union(*(r.predictions for r in self.runs_of(dataset))))
        data = self.dataset(dataset)
        return [i for i in self._answered[dataset] if family in (None, "", "all") or family_of(data[i]) == family]

    def families(self, dataset: str) -> list[str]:
        data = self.dataset(dataset)
        return sorted({family_of(data[i]) for i in self.test_questions(dataset)})

    def question_options(self, dataset: str, family: str | None = None, a: Run | None = None,
                         b: Run | None = None) -> list[tuple[str, int]]:
        """(caption, index) of the test questions to choose from: all of them (of `family`), or with runs `a` and
        `b` only those where they disagree, each caption saying who was right."""
        data = self.dataset(dataset)
        if a is None or b is None:
            return [(f"{i} · {data[i].label} · {question_line(data[i].question)}", i)
                    for i in self.test_questions(dataset, family)]
        out = []
        for i in self.disagreements(dataset, a, b, family):
            right = a.name if self.correct(dataset, a.predictions[i]) else b.name
            out.append((f"{i} · {data[i].label} · right: {right} · {question_line(data[i].question)}", i))
        return out

    def correct(self, dataset: str, prediction: dict[str, Any]) -> bool:
        return bool(correct_for(self.dataset(dataset).name)(prediction["pred"], prediction["label"]))

    def disagreements(self, dataset: str, a: Run, b: Run, family: str | None = None) -> list[int]:
        """The test questions both runs answered where one is right and the other wrong (the dataset's verdict),
        of `family` when given."""
        pa, pb = self.predictions(a), self.predictions(b)
        data = self.dataset(dataset)
        return [i for i in sorted(pa.keys() & pb.keys())
                if self.correct(dataset, pa[i]) != self.correct(dataset, pb[i])
                and (family in (None, "", "all") or family_of(data[i]) == family)]

    def check_question(self, dataset: str, index: int) -> None:
        """Refuse an index outside the dataset, or of a question no run answered, with what is in range."""
        data = self.dataset(dataset)
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < len(data):
            raise ExplorerError(f"question {index!r} is out of range: {dataset} has questions 0 to {len(data) - 1}, "
                                f"of which the runs answered {len(self.test_questions(dataset))} test questions")
        if index not in self.test_questions(dataset):
            split = next((name for name, ids in data.split.items() if index in set(ids)), "no")
            raise ExplorerError(f"question {index} of {dataset} is in the {split} split: no run in the ledger "
                                f"answered it (the runs answer test questions)")

    # -- one question ----------------------------------------------------------------------------------------------

    def view(self, dataset: str, index: int, runs: Sequence[Run] | None = None,
             shown: Sequence[Run] | None = None) -> QuestionView:
        """Question `index` of `dataset`: its sample and complex, the answers of `runs` (default: every run on the
        dataset with predictions that answered it) and the inputs of `shown` (default: `runs`) recomputed."""
        self.check_question(dataset, index)
        for r in [*(runs or []), *(shown or [])]:
            if r.dataset != dataset:
                raise ExplorerError(f"run {r.label} answered {r.dataset}, not {dataset}")
            self.predictions(r)  # refuses a run without predictions
        runs = list(runs) if runs is not None else self.runs_of(dataset)
        answered = [r for r in runs if index in self.predictions(r)]
        shown = [r for r in (shown if shown is not None else answered) if index in self.predictions(r)]
        sample = self.dataset(dataset)[index]
        answers = []
        for r in answered:
            p = self.predictions(r)[index]
            answers.append(Answer(r.label, r.name, r.seed, p["pred"], self.correct(dataset, p), r.superseded))
        inputs = self.inputs(dataset, index, shown)
        lift = shown[0].train_config.lift if shown else None
        return QuestionView(dataset, index, sample, self.complex_of(dataset, index, lift), family_of(sample),
                            answers, inputs)

    def complex_of(self, dataset: str, index: int, lift=None) -> CellComplex:
        """The question's graph lifted (the dataset's lifting unless `lift`, a `LiftConfig`, says otherwise)."""
        from toporag_lib.data.registry import dataset_spec
        from toporag_lib.topology.lifting import LiftConfig, lift as lift_graph

        lift = lift or LiftConfig(**dataset_spec(self.dataset(dataset).name).lift)
        return lift_graph(self.dataset(dataset)[index].graph, **lift.to_dict())

    def inputs(self, dataset: str, index: int, runs: Sequence[Run]) -> list[MethodInput]:
        """Per distinct input among `runs`: the subcomplex, the text and the prompt their LLM read for question
        `index`, recomputed through the trainer's path."""
        groups: dict[tuple[str, ...], list[Run]] = {}
        for r in runs:
            config = r.train_config
            prompt_key = (config.engine, config.model.question_first, soft_prompt_of(config), config.llm_path,
                          config.max_txt_len)
            groups.setdefault((_retrieval_key(config), *map(str, prompt_key)), []).append(r)
        out = []
        for (key, *_), members in groups.items():
            config = members[0].train_config
            labels = tuple(r.label for r in members)
            if config.retrieval.method in FITTED_METHODS and not self.fit_retrievers:
                out.append(MethodInput(labels, retrieval_words(config), soft_prompt_of(config), None, None, "",
                                       self.dataset(dataset)[index].question + config.question_suffix, "",
                                       f"{config.retrieval.method} is fitted on the run's whole training split "
                                       f"first (minutes): not recomputed here (Explorer(fit_retrievers=True) does)"))
                continue
            sub, cc, text, question = self._input(key, config, dataset, index)
            read, tokens, note = self._as_read(config, text)
            out.append(MethodInput(labels, retrieval_words(config), soft_prompt_of(config), sub, cc, text, question,
                                   user_turn(config, read, question), note, tokens))
        return out

    def _as_read(self, config: TrainConfig, text: str) -> tuple[str, int | None, str]:
        """The text as the run's LLM read it (its first `max_txt_len` tokens: `LLM.build_batch`, PyG's `cut`), its
        length in tokens, and a note where it was cut; without `count_tokens`, the text and a caveat where it may
        have been cut."""
        limit = config.max_txt_len
        if not self.count_tokens:
            return text, None, ("" if len(text) <= limit else (
                f"over {limit} characters: the LLM read at most its first {limit} tokens (not counted here: "
                f"Explorer(count_tokens=True) cuts it where the LLM did)"))
        if config.llm_path not in self._tokenizers:
            from transformers import AutoTokenizer

            from toporag_lib.generation.bundled import bundled_model_dir

            self._tokenizers[config.llm_path] = AutoTokenizer.from_pretrained(config.llm_path or bundled_model_dir())
        tokenizer = self._tokenizers[config.llm_path]
        ids = tokenizer(text, add_special_tokens=False).input_ids
        if len(ids) <= limit:
            return text, len(ids), ""
        return (tokenizer.decode(ids[:limit]), len(ids),
                f"the LLM read the first {limit} of this text's {len(ids)} tokens: the prompt below is cut there")

    def _encoder(self, config: TrainConfig):
        from toporag_lib.embed import TextEncoder

        key = (config.encoder_path, config.embedding_batching)
        if key not in self._encoders:
            self._encoders[key] = TextEncoder(config.encoder_path, batching=config.embedding_batching,
                                              progress=self.progress)
        return self._encoders[key]

    def _input(self, key: str, config: TrainConfig, dataset: str,
               index: int) -> tuple[Subcomplex, CellComplex, str, str]:
        """(subcomplex, complex, text, question) of question `index` under `config`: `prepare` on that question
        alone (and, for a fitted retrieval, on the run's training questions it is fitted on), then
        `build_examples`."""
        if (key, index) not in self._inputs:
            from toporag_lib.retrieval.retriever import make_retriever
            from toporag_lib.training.examples import build_examples
            from toporag_lib.training.preprocess import prepare
            from toporag_lib.training.trainer import run_questions

            data = self.dataset(dataset)
            train = run_questions(config, data)[0]["train"] if config.retrieval.method in FITTED_METHODS else []
            taken = [*train, index] if index not in train else list(train)
            prepared = prepare(data.take(taken), self._encoder(config), edge_text=config.edge_text,
                               lift=config.lift, progress=self.progress)
            retriever = make_retriever(config.retrieval, prepared.questions(range(len(train))))
            position = taken.index(index)
            example, = build_examples(prepared, [position], retriever, config.graph_text, config.question_suffix,
                                      progress=False)
            sub = retriever.retrieve(*prepared.question(position))
            self._inputs[(key, index)] = (sub, prepared.complex_of(position), example.text, example.question)
        return self._inputs[(key, index)]
