"""Chat templates rendered as transformers renders them, with jinja2 alone.

The engine (through `engine.run.prompt`) and the window's token counter (through
`LightTokenizer`) both render here, so they cannot disagree, and neither needs
transformers (whose import alone takes over a second) nor its private helpers.
The environment is the one transformers documents for chat templates: a
sandbox (`ImmutableSandboxedEnvironment`) with `trim_blocks`, `lstrip_blocks`,
loop controls (`{% break %}`, `{% continue %}`), a `tojson` that keeps non-ASCII
text and does not escape HTML (with `indent`, `separators`, `sort_keys`), and
the globals `raise_exception`, `strftime_now`, `dict` and a `namespace` that
refuses underscore names. It knows nothing of tokens: callers encode the text.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from datetime import datetime

# The named special tokens transformers passes to every template (its special_tokens_map).
SPECIAL_TOKEN_KEYS = (
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
)
# A message's reasoning may arrive under any of these; templates read the first.
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


def raise_exception(message):
    """The templates' `raise_exception(message)`: a TemplateError saying `message`."""
    from jinja2.exceptions import TemplateError

    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    """The templates' `tojson`: JSON text, non-ASCII kept and no HTML escaping."""
    return json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def strftime_now(format):  # noqa: A002 - the name templates call it with
    """The templates' `strftime_now(format)`: the local time now, formatted."""
    return datetime.now().strftime(format)


class _TemplateDict:
    """`dict(...)` for templates, without the type itself (no attribute tricks)."""

    def __call__(self, *args, **kwargs):
        return dict(*args, **kwargs)

    def fromkeys(self, *args, **kwargs):
        """dict.fromkeys, for templates."""
        return dict.fromkeys(*args, **kwargs)


def _namespace_class():
    from jinja2.exceptions import SecurityError
    from jinja2.utils import Namespace

    def check(name):
        if isinstance(name, str) and name.startswith("_"):
            raise SecurityError(f"a chat template cannot store {name!r} on a namespace")

    class TemplateNamespace(Namespace):
        """jinja2's namespace, refusing underscore-prefixed (dunder) attributes."""

        def __init__(*args, **kwargs):  # Namespace's own signature trick
            self, args = args[0], args[1:]
            attrs = dict(*args, **kwargs)
            for name in attrs:
                check(name)
            Namespace.__init__(self, attrs)

        def __setitem__(self, name, value):
            check(name)
            Namespace.__setitem__(self, name, value)

    return TemplateNamespace


@functools.lru_cache(maxsize=16)
def compile_template(source: str):
    """The compiled `jinja2.Template` of a chat template's source (cached).

    Raises:
        jinja2.TemplateSyntaxError: the template does not parse.
    """
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = _TemplateDict()
    env.globals["namespace"] = _namespace_class()
    return env.from_string(source)


def _message(message: Mapping) -> dict:
    """A message as transformers hands it to a template: None values dropped,
    reasoning under its standard name (and `thinking`, which gpt-oss reads)."""
    out = {k: v for k, v in message.items() if v is not None}
    reasoning = next((out[k] for k in _REASONING_FIELDS if k in out), None)
    if reasoning is not None:
        out = {"thinking": reasoning, **out, "reasoning_content": reasoning}
    return out


def render(
    source: str,
    messages: list[Mapping],
    add_generation_prompt: bool = False,
    special_tokens: Mapping[str, str] | None = None,
    **kwargs,
) -> str:
    """Render a chat template the way `tokenizer.apply_chat_template(tokenize=False)` does.

    Args:
        source: the template's Jinja source.
        messages: the conversation, a list of {role, content, ...} dicts.
        add_generation_prompt: append the assistant turn's opening.
        special_tokens: the tokenizer's named special tokens (`bos_token`, ...).
        **kwargs: further template variables (they override special tokens).

    Returns:
        The rendered text.

    Raises:
        jinja2.TemplateError: the template fails or calls raise_exception.
    """
    variables = {**(special_tokens or {}), **kwargs}
    return compile_template(source).render(
        messages=[_message(m) for m in messages],
        tools=None,
        documents=None,
        add_generation_prompt=add_generation_prompt,
        **variables,
    )


def template_source(tokenizer) -> str | None:
    """A tokenizer's chat template source (the default one of named templates), or None."""
    return pick_template(getattr(tokenizer, "chat_template", None))


def pick_template(template) -> str | None:
    """The default template of a `chat_template` value (text, {name: text} or
    tokenizer_config.json's [{name, template}]), or None."""
    if isinstance(template, Mapping):
        template = template.get("default")
    elif isinstance(template, list):  # tokenizer_config.json's list of {name, template}
        template = next((t["template"] for t in template if t.get("name") == "default"), None)
    return template if isinstance(template, str) and template else None


def special_tokens_of(tokenizer) -> dict[str, str]:
    """The named special tokens a tokenizer passes to its template."""
    found = getattr(tokenizer, "special_tokens_map", None) or {}
    return {k: str(v) for k, v in found.items() if k in SPECIAL_TOKEN_KEYS and v is not None}


def apply(tokenizer, messages: list[Mapping], add_generation_prompt: bool = False) -> str:
    """Render `messages` with `tokenizer`'s chat template (a LightTokenizer, or
    mlx-lm's / transformers' tokenizer): the text, not yet encoded.

    Raises:
        ValueError: the tokenizer has no chat template.
        jinja2.TemplateError: the template fails.
    """
    if getattr(tokenizer, "_chat_template", None) is not None:  # mlx-lm's Python templates
        return tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=add_generation_prompt
        )
    source = template_source(tokenizer)
    if source is None:
        raise ValueError("this tokenizer has no chat template")
    # mlx-lm's wrapper tells thinking templates whether to think; a plain tokenizer does not.
    thinks = hasattr(tokenizer, "has_thinking")
    extra = {"enable_thinking": tokenizer.has_thinking} if thinks else {}
    return render(source, messages, add_generation_prompt, special_tokens_of(tokenizer), **extra)
