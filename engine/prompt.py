"""Turning a prompt and settings into token ids (chat template or raw text)."""

from __future__ import annotations

from dataclasses import dataclass

from engine.errors import SettingsError
from engine.settings import SamplingSettings


@dataclass(frozen=True)
class EncodedPrompt:
    ids: list[int]
    system_tokens: int  # tokens of the system message (0 if none given)


def encode_prompt(tokenizer, prompt: str, settings: SamplingSettings) -> EncodedPrompt:
    """Tokenize `prompt`, through the chat template when `settings.chat_template`.

    Raises:
        SettingsError: the prompt is empty, or chat mode is asked of a model
            without a chat template.
    """
    if not isinstance(prompt, str) or not prompt.strip():
        raise SettingsError("the prompt is empty: type something for the model")
    if not settings.chat_template:
        return EncodedPrompt(tokenizer.encode(prompt), 0)
    if not getattr(tokenizer, "has_chat_template", False):
        raise SettingsError("this model has no chat template: switch to raw completion mode")
    messages = []
    system_tokens = 0
    if settings.system_prompt:
        messages.append({"role": "system", "content": settings.system_prompt})
        system_text = tokenizer.apply_chat_template(messages, tokenize=False)
        system_tokens = len(tokenizer.encode(system_text, add_special_tokens=False))
    messages.append({"role": "user", "content": prompt})
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return EncodedPrompt(tokenizer.encode(text, add_special_tokens=False), system_tokens)
