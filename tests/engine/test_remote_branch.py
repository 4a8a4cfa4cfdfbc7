"""Branching a server's raw-completion answer on a real mlx_lm.server: the server
continues from the prompt, the shared prefix's text and the chosen token's text, and
its continuation equals the local engine's greedy answer to that same text; a chat
answer on a server is refused with the reason."""

from __future__ import annotations

from engine.backends.mlx.generate import generate_records
from engine.backends.openai.branch import CHAT_REFUSAL
from engine.run.continuation import continuation_from, with_prefix
from engine.run.run_result import RunResult
from engine.run.settings import SamplingSettings

PROMPT = "The three primary colours are"
RAW = SamplingSettings(temperature=0, max_tokens=6, seed=0, top_n=5, chat_template=False)


def collect(records) -> RunResult:
    result = RunResult()
    for r in records:
        result.add(r)
    return result


def test_a_servers_raw_answer_branches_from_text(mlx_server, engine_client, served_lm):
    spec = f"{mlx_server}#"
    parent = collect(engine_client.generate(PROMPT, RAW, spec))
    assert parent.error is None and len(parent.tokens) >= 4
    k = 2
    alt = parent.tokens[k].top[1]
    cont = continuation_from(parent.tokens, k, alt.token_id)
    branch = collect(
        with_prefix(parent.tokens, k, engine_client.generate(PROMPT, RAW, spec, continuation=cont))
    )
    assert branch.error is None, branch.error
    assert [t.step for t in branch.tokens] == list(range(len(branch.tokens)))
    forced = branch.tokens[k]
    assert forced.forced and forced.text == cont.forced_text and forced.prob is not None
    assert abs(forced.logprob - alt.logprob) < 1e-9  # the parent's distribution at step k
    head = cont.prefix_text + cont.forced_text
    assert branch.done.text.startswith(head) and branch.done.branch_step == k
    local = collect(generate_records(served_lm, PROMPT + head, RAW))
    # The same model on the same text: the same tokens (mlx_lm.server trims the leading
    # space of a completion's first token from its text, as it does for any raw run).
    assert [t.token_id for t in branch.tokens[k + 1 :]] == [t.token_id for t in local.tokens]
    assert branch.done.text.replace(" ", "") == (head + local.done.text).replace(" ", "")

    chat = collect(
        engine_client.generate(
            PROMPT,
            RAW.with_(chat_template=True),
            spec,
            continuation=continuation_from(parent.tokens, 1),
        )
    )
    assert chat.error is not None and CHAT_REFUSAL[:40] in chat.error.message
