"""Turning a prompt and settings into token ids (chat template or raw text).

The same function runs in the engine and in the window's token counter; both
render chat templates with `engine.run.chat_template`. In
chat mode the ids are split into the system part (everything the template puts
before the user's turn: a system prompt, or a default system block the template
inserts by itself, with its wrapper tokens; where the template puts the system
text inside the user's turn, as Gemma's does, that preamble plus the tokens the
system text adds) and the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.errors import SettingsError
from engine.run.chat_template import apply
from engine.run.settings import SamplingSettings

_USER, _ASSISTANT, _NEXT = "\ue000LSU\ue000", "\ue000LSA\ue000", "\ue000LSN\ue000"


@dataclass(frozen=True)
class EncodedPrompt:
    """A prompt's token ids and how many of them come before the user's turn."""

    ids: list[int]
    system_tokens: int  # tokens before the user's turn (system block and its wrappers)


def check_text(prompt) -> str:
    """Raise SettingsError unless `prompt` is non-empty, encodable text."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise SettingsError("the prompt is empty: type something for the model")
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError as e:
        raise SettingsError(
            f"the prompt holds a character that is not valid text (position {e.start}): "
            "remove it or paste the text again"
        ) from None
    return prompt


def _render(tokenizer, messages, generation_prompt: bool) -> str:
    try:
        return apply(tokenizer, messages, generation_prompt)
    except Exception as e:  # noqa: BLE001 - jinja errors, raise_exception(), bad templates
        first = (str(e).splitlines() or [type(e).__name__])[0][:200]
        raise SettingsError(
            f"the model's chat template failed ({type(e).__name__}: {first}): "
            "switch to raw completion mode, or fix the template"
        ) from None


def system_prefix(tokenizer, system: str | None) -> str | None:
    """The text the template puts before the user's turn, or None if it cannot tell.

    What separates an assistant reply from the next user message is the end of a
    turn (as after the user's own message) followed by the user turn's opening
    wrapper; everything before that wrapper is the system part.
    """
    head = [{"role": "system", "content": system}] if system else []
    try:
        one = apply(tokenizer, [*head, {"role": "user", "content": _USER}])
        two = apply(
            tokenizer,
            [
                *head,
                {"role": "user", "content": _USER},
                {"role": "assistant", "content": _ASSISTANT},
                {"role": "user", "content": _NEXT},
            ],
        )
    except Exception:  # noqa: BLE001 - a template that refuses this shape: no split
        return None
    if _USER not in one or _ASSISTANT not in two or _NEXT not in two:
        return None
    before = one[: one.index(_USER)]
    turn_end = one[one.index(_USER) + len(_USER) :]
    a_end = two.index(_ASSISTANT) + len(_ASSISTANT)
    between = two[a_end : two.index(_NEXT)]
    k = 0
    while k < min(len(turn_end), len(between)) and turn_end[k] == between[k]:
        k += 1
    user_start = between[k:]
    if not before.endswith(user_start):
        return None
    return before[: len(before) - len(user_start)]


def as_messages(prompt, settings: SamplingSettings) -> list[dict]:
    """The chat messages of a prompt (text, or a conversation of {role, content}),
    with the settings' system prompt first.

    Raises:
        SettingsError: an empty or malformed conversation, or text that is not valid.
    """
    if isinstance(prompt, str):
        turns = [{"role": "user", "content": check_text(prompt)}]
    elif isinstance(prompt, list) and prompt:
        turns = []
        for m in prompt:
            if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant"):
                raise SettingsError("a conversation is a list of {role, content} messages")
            turns.append({"role": m["role"], "content": check_text(m.get("content"))})
    else:
        raise SettingsError("the prompt is empty: type something for the model")
    if settings.system_prompt and turns[0]["role"] != "system":
        turns.insert(0, {"role": "system", "content": check_text(settings.system_prompt)})
    return turns


def encode_prompt(tokenizer, prompt, settings: SamplingSettings) -> EncodedPrompt:
    """Tokenize `prompt` (text, or a list of chat messages), through the chat
    template when `settings.chat_template`.

    Raises:
        SettingsError: the prompt is empty or not valid text, chat mode is asked
            of a model without a chat template, or the template fails.
    """
    if not settings.chat_template:
        if not isinstance(prompt, str):
            raise SettingsError("a conversation needs chat mode: turn the chat template on")
        return EncodedPrompt(tokenizer.encode(check_text(prompt)), 0)
    messages = as_messages(prompt, settings)
    if not getattr(tokenizer, "has_chat_template", False):
        raise SettingsError("this model has no chat template: switch to raw completion mode")
    text = _render(tokenizer, messages, True)
    ids = tokenizer.encode(text, add_special_tokens=False)
    return EncodedPrompt(ids, min(_system_count(tokenizer, messages, text, ids), len(ids)))


def _system_count(tokenizer, messages: list[dict], text: str, ids: list[int]) -> int:
    """Tokens of the system part, wherever the template puts it.

    Most templates give the system its own block before the user's turn (counted
    with its wrappers). Some put the system text elsewhere (Gemma: at the start of
    the first user turn); then it is what the system message adds, found by
    rendering the same messages without it and comparing the two token lists.
    """
    system = messages[0]["content"] if messages[0]["role"] == "system" else None
    prefix = system_prefix(tokenizer, system)
    if prefix and text.startswith(prefix) and (system is None or system in prefix):
        return len(tokenizer.encode(prefix, add_special_tokens=False))
    if system is None:
        return 0
    rest = messages[1:]
    if not rest:
        return len(ids)  # nothing but the system message
    without = tokenizer.encode(_render(tokenizer, rest, True), add_special_tokens=False)
    plain = system_prefix(tokenizer, None)  # the template's own preamble (Gemma: <bos>)
    own = len(tokenizer.encode(plain, add_special_tokens=False)) if plain else 0
    return own + inserted_tokens(ids, without)


def inserted_tokens(longer: list[int], shorter: list[int]) -> int:
    """How many tokens `longer` holds beyond a common start and a common end with
    `shorter` (what inserting a message into a template added)."""
    start = 0
    while start < min(len(longer), len(shorter)) and longer[start] == shorter[start]:
        start += 1
    end = 0
    room = min(len(longer), len(shorter)) - start
    while end < room and longer[-1 - end] == shorter[-1 - end]:
        end += 1
    return len(longer) - start - end
