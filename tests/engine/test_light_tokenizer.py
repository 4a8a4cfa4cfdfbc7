"""The window's tokenizer: chat templates from chat_template.jinja, rendered in
transformers' own Jinja environment, give the engine's ids."""

from __future__ import annotations

import json
import shutil

from engine.models.light_tokenizer import LightTokenizer
from engine.prompt import encode_prompt
from engine.settings import SamplingSettings

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
    messages = [{"role": "system", "content": "be brief"},
                {"role": "user", "content": "Où est Paris ? 東京は？"}]  # fmt: skip
    want = ref.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    got = light.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert got == want and '"français"' in got  # tojson keeps non-ASCII text
    ref.has_chat_template = True
    settings = SamplingSettings(system_prompt="be brief")
    prompt = "Où est Paris ? 東京は？"
    assert encode_prompt(light, prompt, settings).ids == encode_prompt(ref, prompt, settings).ids
