"""The window's tokenizer: chat templates from chat_template.jinja, rendered in
transformers' Jinja environment (engine.run.chat_template), give the engine's ids."""

from __future__ import annotations

import json
import shutil

from engine.models.light_tokenizer import LightTokenizer
from engine.run.prompt import encode_prompt
from engine.run.settings import SamplingSettings

# Loop controls, a non-ASCII-preserving tojson and strftime_now: what transformers
# provides and Llama 3-style templates use.
TEMPLATE = (
    "{% for m in messages %}{% if m.role == 'system' %}{% continue %}{% endif %}"
    "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{{ '<|im_start|>system meta ' + ({'lang': 'français'} | tojson) + '<|im_end|>\n' }}"
    "{% if strftime_now('%Y') | length == 4 %}{% endif %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_chat_template_jinja_file_and_transformers_environment(tmp_path, default_model_path):
    from transformers import PreTrainedTokenizerFast

    folder = tmp_path / "mlx-folder"
    folder.mkdir()
    shutil.copy(default_model_path / "tokenizer.json", folder / "tokenizer.json")
    cfg = json.loads((default_model_path / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)  # as mlx_lm.convert writes it: the template apart
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
    (folder / "chat_template.jinja").write_text(TEMPLATE)
    light = LightTokenizer(folder)
    assert light.has_chat_template
    ref = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    ref.chat_template = TEMPLATE
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "Où est Paris ? 東京は？"},
    ]
    want = ref.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    got = light.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert got == want and '"français"' in got  # tojson keeps non-ASCII text
    ref.has_chat_template = True
    settings = SamplingSettings(system_prompt="be brief")
    prompt = "Où est Paris ? 東京は？"
    assert encode_prompt(light, prompt, settings).ids == encode_prompt(ref, prompt, settings).ids


STRINGS = (
    "What is the capital of France?",
    "Hello",
    "",
    " leading space",
    "trailing space ",
    "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich.",
    "El pingüino Wenceslao hizo kilómetros bajo exhaustiva lluvia y frío.",
    "我能吞下玻璃而不伤身体。",
    "私はガラスを食べられます。",
    "मैं काँच खा सकता हूँ",
    "أنا قادر على أكل الزجاج",
    "Съешь же ещё этих мягких булок",
    "🦙🚀👩‍💻 emoji",
    "def f(x):\n    return x ** 2\n",
    "tabs\tand\nnew lines\r\n",
    "1234567890 3.14159",
    "<|im_start|>user literal markers<|im_end|>",
    "<start_of_turn>model",
    "a  b   c",
    "Ünïcödé ÅÆØ ﬁ ligature",
)


def test_window_token_counts_equal_mlx_lm_for_every_installed_model(
    gemma_path, default_model_path, bare_tokenizer
):
    """The window's counter (LightTokenizer, no MLX) gives mlx-lm's ids for every
    installed model, raw and through the chat template, with and without a
    system prompt."""
    from engine.models.catalogue import list_models

    models = [m for m in list_models(other_tools=False) if m.architecture != "unknown"]
    assert {default_model_path.name, gemma_path.name} <= {m.name for m in models}
    for info in models:
        light = LightTokenizer(info.path)
        ref = bare_tokenizer(info.path)
        for text in STRINGS:
            assert light.encode(text) == ref.encode(text), (info.name, text)
            if not light.has_chat_template or not text.strip():
                continue
            for system in ("", "You are terse."):
                settings = SamplingSettings(system_prompt=system)
                want = encode_prompt(ref, text, settings).ids
                assert encode_prompt(light, text, settings).ids == want, (info.name, text, system)
