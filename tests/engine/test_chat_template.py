"""Chat templates render as transformers renders them, from jinja2 alone, for
every installed model and for a template using each feature of the environment;
the window renders them without importing transformers."""

from __future__ import annotations

import datetime
import subprocess
import sys
from pathlib import Path

import pytest
from jinja2.exceptions import SecurityError, TemplateError

from engine.models.light_tokenizer import LightTokenizer
from engine.run.chat_template import compile_template, render

ROOT = Path(__file__).resolve().parents[2]

CONVERSATIONS = (
    [{"role": "user", "content": "What is the capital of France?"}],
    [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Où est Paris ? 東京は？ <b>&amp;</b>"},
        {"role": "assistant", "content": "In France."},
        {"role": "user", "content": "And 🦙?\n\n  indented"},
    ],
    [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
)

# Each feature transformers' environment provides: loop controls, tojson (non-ASCII
# kept, no HTML escaping, indent, sort_keys), raise_exception, strftime_now, dict,
# namespace, special tokens, trim_blocks and lstrip_blocks, and dropped None values.
FEATURES = """{{ bos_token }}
{% set ns = namespace(n=0) %}
    {% for m in messages %}
    {% if m.role == 'system' %}{% continue %}{% endif %}
    {% if loop.index > 3 %}{% break %}{% endif %}
    {% set ns.n = ns.n + 1 %}
<{{ m.role }}>{{ m.content }}{{ m | tojson }}</{{ m.role }}>
    {% endfor %}
{{ dict(a=1, é='<&>') | tojson(indent=2, sort_keys=True) }}
{{ dict.fromkeys(['x', 'y'], 0) | tojson(separators=(',', ':')) }}
count={{ ns.n }} year={{ strftime_now('%Y') }} tools={{ tools is none }}
{% if messages[-1].content == 'boom' %}{{ raise_exception('no boom here') }}{% endif %}
{% if add_generation_prompt %}<assistant>{% endif %}"""

FEATURE_MESSAGES = [
    {"role": "system", "content": "hidden"},
    {"role": "user", "content": "ä <b>x</b>", "name": None},
    {"role": "assistant", "content": "一"},
    {"role": "user", "content": "two"},
    {"role": "assistant", "content": "dropped by break"},
]


def _reference(folder: Path, template: str | None = None):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    if template is not None:
        tok.chat_template = template
    return tok


def test_every_installed_models_template_renders_as_transformers_does(
    default_model_path, gemma_path
):
    from engine.models.catalogue import list_models

    models = [m for m in list_models(other_tools=False) if LightTokenizer(m.path).has_chat_template]
    assert {default_model_path.name, gemma_path.name} <= {m.name for m in models}
    for info in models:
        light, ref = LightTokenizer(info.path), _reference(info.path)
        for messages in CONVERSATIONS:
            for generation in (False, True):
                want = ref.apply_chat_template(
                    messages, tokenize=False, add_generation_prompt=generation
                )
                got = light.apply_chat_template(messages, add_generation_prompt=generation)
                assert got == want, (info.name, messages, generation)


def test_a_template_using_each_feature_renders_as_transformers_does(default_model_path):
    ref = _reference(default_model_path, FEATURES)
    light = LightTokenizer(default_model_path)
    light.chat_template = FEATURES
    for generation in (False, True):
        want = ref.apply_chat_template(
            FEATURE_MESSAGES, tokenize=False, add_generation_prompt=generation
        )
        got = light.apply_chat_template(FEATURE_MESSAGES, add_generation_prompt=generation)
        assert got == want
    year = datetime.datetime.now().year
    assert got == (
        "<|im_start|>\n<user>ä <b>x</b>"
        '{"role": "user", "content": "ä <b>x</b>"}</user>\n'
        '<assistant>一{"role": "assistant", "content": "一"}</assistant>\n'
        '{\n  "a": 1,\n  "é": "<&>"\n}\n{"x":0,"y":0}\n'
        f"count=2 year={year} tools=True\n<assistant>"
    )


def test_raise_exception_fails_as_transformers_does(default_model_path):
    ref = _reference(default_model_path, FEATURES)
    boom = [{"role": "user", "content": "boom"}]
    with pytest.raises(TemplateError, match="no boom here") as theirs:
        ref.apply_chat_template(boom, tokenize=False)
    with pytest.raises(TemplateError, match="no boom here") as ours:
        render(FEATURES, boom, special_tokens={"bos_token": "<s>"})
    assert type(ours.value) is type(theirs.value)


def test_the_sandbox_refuses_escapes():
    with pytest.raises(SecurityError):
        render("{{ ''.__class__.__mro__[1].__subclasses__() }}", [])
    with pytest.raises(SecurityError):
        render("{% set ns = namespace(__dict__=1) %}", [])
    with pytest.raises(SecurityError):  # immutable: templates cannot change their inputs
        render("{{ messages.append(1) }}", [{"role": "user", "content": "x"}])
    assert compile_template("{{ 1 }}") is compile_template("{{ 1 }}")  # compiled once


def test_the_window_renders_templates_without_importing_transformers(default_model_path):
    code = (
        "import sys, time\n"
        "import app.shell.window\n"
        "from engine.models.light_tokenizer import LightTokenizer\n"
        "from engine.run.prompt import encode_prompt\n"
        "from engine.run.settings import SamplingSettings\n"
        f"tok = LightTokenizer({str(default_model_path)!r})\n"
        "t = time.perf_counter()\n"
        "ids = encode_prompt(tok, 'Hello', SamplingSettings(system_prompt='Be brief.')).ids\n"
        "print(len(ids), 'transformers' in sys.modules, 'mlx' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    assert out.returncode == 0, out.stderr
    count, transformers, mlx = out.stdout.split()
    assert int(count) > 5 and transformers == "False" and mlx == "False"
