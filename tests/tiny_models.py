"""Tiny models made in code for fast offline tests: a random 2-layer Llama with a small byte-level BPE tokenizer
(ChatML, Llama-2-style, or no chat template), and one shipped as Llama-2-7b-hf is (`make_llama2_base_like`)."""

from __future__ import annotations

from pathlib import Path

import torch

HIDDEN = 64
CHATML = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
          "{{ '<|im_start|>system\nYou are a tiny test model.<|im_end|>\n' }}{% endif %}"
          "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
LLAMA2_STYLE = ("{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
                "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
                "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
                "{% if loop.index0 == 0 and system_message != false %}"
                "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
                "{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}"
                "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
                "{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}")
GRAPHS = ["node_id,node_attr\n0,cat\n1,dog\n2,red ball\n\nsrc,edge_attr,dst\n0,chases,1\n1,has,2\n",
          "node_id,node_attr\n0,cat\n\nsrc,edge_attr,dst\n",
          "node_id,node_attr\n0,argument\n1,support\n\nsrc,edge_attr,dst\n0,capable of,1\n"]
QUESTIONS = ["Question: what does the dog have?\n\nAnswer:", "Question: is there a cat?\n\nAnswer:",
             "Question: support or counter?\n\nAnswer:"]
ANSWERS = ["red ball", "yes", "support"]


def make_tokenizer(chat_template: str | None):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = GRAPHS + QUESTIONS + ANSWERS + ["You are a tiny test model. counter the a an answer argument"]
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    backend.train_from_iterator(corpus * 3, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<|im_start|>", eos_token="<|im_end|>",
                                        pad_token="<|im_end|>", unk_token="<|endoftext|>")
    tokenizer.chat_template = chat_template
    return tokenizer


def make_tiny_model(folder: Path, chat_template: str | None) -> Path:
    """A 2-layer random Llama (hidden 64) with a wide init, so greedy outputs are varied rather than one token."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = make_tokenizer(chat_template)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=HIDDEN, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, initializer_range=0.5, tie_word_embeddings=False)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def make_llama2_base_like(folder: Path) -> Path:
    """A 2-layer random Llama saved as meta-llama/Llama-2-7b-hf ships (the `gpu-paper` profile's LLM): no chat
    template, `<unk>`, `<s>`, `</s>` as ids 0, 1, 2, no pad token, a tokenizer that prepends `<s>` by itself, and a
    generation config that samples (temperature 0.6, top-p 0.9)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    corpus = GRAPHS + QUESTIONS + ANSWERS + ["counter the a an answer argument"]
    backend = Tokenizer(models.BPE(unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<unk>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    backend.train_from_iterator(corpus * 3, trainer)
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                           special_tokens=[("<s>", 1)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>",
                                        unk_token="<unk>", padding_side="right")
    assert (tokenizer.unk_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id) == (0, 1, 2)
    assert tokenizer.pad_token is None and not tokenizer.chat_template
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=HIDDEN, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=4096,
                         bos_token_id=1, eos_token_id=2, pad_token_id=None, initializer_range=0.5,
                         tie_word_embeddings=False)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(bos_token_id=1, eos_token_id=2, pad_token_id=0, do_sample=True,
                                               temperature=0.6, top_p=0.9, max_length=4096)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
