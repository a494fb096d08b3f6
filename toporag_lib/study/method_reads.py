"""What a run's method reads, in words, from its config (the question explorer's captions, `study.explorer`): the
retrieval and its parameters, the soft prompt before the text, and the user turn's layout; texts on one line."""

from __future__ import annotations

from toporag_lib.training.train_config import TrainConfig


def soft_prompt_of(config: TrainConfig) -> str:
    """What the run's model puts before the text as embeddings, in words."""
    model = config.model
    if model.encoder:
        tokens = model.num_soft_tokens
        return f"{tokens} soft token{'s' * (tokens != 1)} from the {model.encoder} encoder of the retrieved subcomplex"
    if model.virtual_tokens:
        return f"{model.virtual_tokens} trained virtual tokens (prompt tuning)"
    return ""


def user_turn(config: TrainConfig, text: str, question: str) -> str:
    """The user turn the run's LLM read (`generation.llm.LLM.build_batch`; PyG's own layout for engine "pyg")."""
    if config.engine == "pyg":
        return f"{text} -  - {question}"
    return f"{question}\n{text}" if config.model.question_first else f"{text}\n{question}"


def retrieval_words(config: TrainConfig) -> str:
    """The run's retrieval in words: its method and the parameters it reads."""
    reads = config.retrieval.reads()
    params = ", ".join(f"{k}={v}" for k, v in reads.items() if k != "method")
    return f"{reads['method']} ({params})" if params else reads["method"]


def one_line(text: str, width: int = 80) -> str:
    """The text on one line, cut to `width` characters."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def question_line(question: str, width: int = 80) -> str:
    """A question on one line without its "Question:" and "Answer:" (ExplaGraphs' arguments, a testbed question)."""
    return one_line(question.replace("Question:", "").replace("Answer:", ""), width)
