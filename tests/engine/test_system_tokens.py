"""System tokens wherever the template puts the system text: SmolLM2 gives it a block
before the user's turn, Gemma 3 puts it inside the first user turn. Counts are checked
against the tokenizers library encoding the rendered templates (no model is loaded)."""

from __future__ import annotations

import pytest
from tokenizers import Tokenizer

from engine.run.prompt import encode_prompt
from engine.run.settings import SamplingSettings

USER = "Name a colour."
SYSTEM = "You answer in one word."
USER_TURN = {"smollm": "<|im_start|>user", "gemma": "<start_of_turn>user"}


@pytest.fixture(scope="module", params=["smollm", "gemma"])
def model(request, default_model_path, gemma_path, bare_tokenizer):
    folder = default_model_path if request.param == "smollm" else gemma_path
    return (
        request.param,
        bare_tokenizer(folder),
        Tokenizer.from_file(str(folder / "tokenizer.json")),
    )


def _render(tok, system: str | None) -> str:
    head = [{"role": "system", "content": system}] if system else []
    return tok.apply_chat_template(
        [*head, {"role": "user", "content": USER}], add_generation_prompt=True, tokenize=False
    )


def _count(tk: Tokenizer, text: str) -> int:
    return len(tk.encode(text, add_special_tokens=False).ids)


def test_system_tokens_match_the_tokenizers_library(model):
    name, tok, tk = model
    plain, with_system = _render(tok, None), _render(tok, SYSTEM)
    before_user = _count(tk, plain[: plain.index(USER_TURN[name])])  # template's own preamble
    got = encode_prompt(tok, USER, SamplingSettings()).system_tokens
    assert got == before_user
    enc = encode_prompt(tok, USER, SamplingSettings(system_prompt=SYSTEM))
    assert enc.ids == tk.encode(with_system, add_special_tokens=False).ids
    if SYSTEM in with_system[: with_system.index(USER_TURN[name])]:  # SmolLM2: own block
        want = _count(tk, with_system[: with_system.index(USER_TURN[name])])
    else:  # Gemma: the preamble, plus what the system text adds inside the user turn
        added = _count(tk, with_system) - _count(tk, plain)
        want = before_user + added
        start = _count(tk, with_system[: with_system.index(SYSTEM)])
        assert tk.decode(enc.ids[start : start + added]) == SYSTEM + "\n\n"
    assert enc.system_tokens == want >= _count(tk, SYSTEM)  # the system text, at least
