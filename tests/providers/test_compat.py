"""`Model.compat`: capabilities as catalogue data, checked, and the same decisions as before.

Until issue 22 the wire modules sniffed capabilities from `model.id` (`anthropic._adaptive`,
`_openai.supports_xhigh`, the OpenRouter and Groq special cases of `_openai.resolve_compat`,
`google._gemini3`/`_sends_ids` and its flash/pro and 2.5 family checks,
`openai_responses._lowest_effort`). `OLD_DECISIONS` is what that code (commit b3b5c6e) decided
for every catalogue model, computed once by running it over the catalogue of that commit; the
catalogue's data must decide the same today.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import paths
import pytest
from _internals import Compat, check_compat, is_openai, resolve, resolve_compat

import agentcore as ac
from agentcore.providers import anthropic, google, openai_completions, openai_responses

_GPT_OSS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}
_QWEN3 = dict.fromkeys(("minimal", "low", "medium", "high", "xhigh"), "default")
_OPENROUTER = ("high", True, True, True, None, True, False, False, False, "openrouter", True)
_OPENROUTER_SYSTEM = ("high", True, False, True, None, True, False, False, False, "openrouter",
                      True)
_GROQ = ("high", True, True, True, None, True, False, False, False, "openai", True)
_XAI = ("high", False, False, False, None, True, False, False, False, "openai", True)
_OLLAMA = ("high", True, False, False, None, True, False, False, False, "openai", True)
_AZURE = ("high", True, True, True, None, True, False, False, False, "openai", True)
_MISTRAL = ("high", False, False, True, None, False, False, True, False, "openai", True)
_MISTRAL_EFFORT = dict.fromkeys(("minimal", "low", "medium", "high", "xhigh"), "high")

OLD_DECISIONS: dict[tuple[str, str], tuple[Any, ...]] = {
    # anthropic-messages: (adaptive, the effort for xhigh when adaptive)
    ("anthropic", "claude-opus-4-5"): (False, None),
    ("anthropic", "claude-opus-4-5-20251101"): (False, None),
    ("anthropic", "claude-opus-4-1"): (False, None),
    ("anthropic", "claude-sonnet-4-5"): (False, None),
    ("anthropic", "claude-sonnet-4-5-20250929"): (False, None),
    ("anthropic", "claude-sonnet-4-0"): (False, None),
    ("anthropic", "claude-haiku-4-5"): (False, None),
    ("anthropic", "claude-haiku-4-5-20251001"): (False, None),
    ("anthropic", "claude-3-5-haiku-latest"): (False, None),
    # google-generative-ai: (thinking levels family, 2.5 budgets family, signature sentinel,
    # images in function responses, call ids)
    ("google", "gemini-2.5-pro"): (None, "pro", False, False, False),
    ("google", "gemini-2.5-flash"): (None, "flash", False, False, False),
    ("google", "gemini-2.5-flash-lite"): (None, "flash", False, False, False),
    ("google", "gemini-3-pro-preview"): ("pro", None, True, True, False),
    ("google", "gemini-3-flash-preview"): ("flash", None, True, True, False),
    ("google", "gemini-2.0-flash"): (None, None, False, False, False),
    # google-vertex: Gemini's rows, the same decisions
    ("google-vertex", "gemini-2.5-pro"): (None, "pro", False, False, False),
    ("google-vertex", "gemini-2.5-flash"): (None, "flash", False, False, False),
    ("google-vertex", "gemini-2.5-flash-lite"): (None, "flash", False, False, False),
    ("google-vertex", "gemini-3-pro-preview"): ("pro", None, True, True, False),
    ("google-vertex", "gemini-3-flash-preview"): ("flash", None, True, True, False),
    ("google-vertex", "gemini-2.0-flash"): (None, None, False, False, False),
    # openai-responses: (the effort for xhigh, the effort with thinking off)
    ("openai", "gpt-5"): ("high", "minimal"),
    ("openai", "gpt-5-mini"): ("high", "minimal"),
    ("openai", "gpt-5-nano"): ("high", "minimal"),
    ("openai", "gpt-5.1"): ("high", "none"),
    ("openai", "gpt-5.2"): ("xhigh", "none"),
    ("openai", "gpt-4.1"): ("high", None),
    ("openai", "gpt-4.1-mini"): ("high", None),
    ("openai", "gpt-4.1-nano"): ("high", None),
    ("openai", "gpt-4o"): ("high", None),
    ("openai", "gpt-4o-mini"): ("high", None),
    ("openai", "o3"): ("high", None),
    ("openai", "o4-mini"): ("high", None),
    # openai-completions: (the effort for xhigh, supports_store, supports_developer_role,
    # supports_reasoning_effort, reasoning_effort_map, supports_usage_in_streaming,
    # requires_tool_result_name, requires_assistant_after_tool_result,
    # requires_thinking_as_text, thinking_format, supports_strict_mode)
    ("deepseek", "deepseek-chat"): ("high", False, False, True, None, True, False, False, False,
                                    "deepseek", True),
    ("deepseek", "deepseek-reasoner"): ("high", False, False, False, None, True, False, False,
                                        False, "deepseek", True),
    ("groq", "llama-3.3-70b-versatile"): _GROQ,
    ("groq", "openai/gpt-oss-120b"): (*_GROQ[:4], _GPT_OSS, *_GROQ[5:]),
    ("groq", "openai/gpt-oss-20b"): (*_GROQ[:4], _GPT_OSS, *_GROQ[5:]),
    ("groq", "qwen/qwen3-32b"): (*_GROQ[:4], _QWEN3, *_GROQ[5:]),
    ("ollama", "gpt-oss:20b"): _OLLAMA,
    ("ollama", "llama3.1:8b"): _OLLAMA,
    ("ollama", "qwen3:8b"): _OLLAMA,
    ("openrouter", "anthropic/claude-sonnet-4.5"): _OPENROUTER,
    ("openrouter", "openai/gpt-5"): _OPENROUTER,
    ("openrouter", "google/gemini-2.5-flash"): _OPENROUTER_SYSTEM,
    ("openrouter", "deepseek/deepseek-chat-v3.1"): _OPENROUTER_SYSTEM,
    ("openrouter", "qwen/qwen3-coder"): _OPENROUTER_SYSTEM,
    ("xai", "grok-4"): _XAI,
    ("xai", "grok-code-fast-1"): _XAI,
    ("xai", "grok-3-mini"): _XAI,
    # Rows added since (issue 23): what they are meant to decide. Azure is OpenAI's service;
    # Mistral's API refuses `store` and `stream_options` and wants an assistant line between
    # tool results and a user message.
    ("azure-openai", "gpt-4.1"): _AZURE,
    ("azure-openai", "gpt-4.1-mini"): _AZURE,
    ("azure-openai", "gpt-5"): ("high", "minimal"),
    ("azure-openai", "gpt-5-mini"): ("high", "minimal"),
    ("azure-openai", "o4-mini"): ("high", None),
    ("mistral", "mistral-large-latest"): _MISTRAL,
    ("mistral", "mistral-medium-latest"): (*_MISTRAL[:4], _MISTRAL_EFFORT, *_MISTRAL[5:]),
    ("mistral", "mistral-small-latest"): (*_MISTRAL[:4], _MISTRAL_EFFORT, *_MISTRAL[5:]),
    ("mistral", "codestral-latest"): _MISTRAL,
    ("mistral", "devstral-medium-latest"): _MISTRAL,
}


def decisions(model: ac.Model) -> tuple[Any, ...]:
    """What today's code decides for `model`, in the shape of `OLD_DECISIONS`."""
    if model.api == "openai-completions":
        c = resolve_compat(model)
        return (c.xhigh_effort, c.supports_store, c.supports_developer_role,
                c.supports_reasoning_effort, c.reasoning_effort_map,
                c.supports_usage_in_streaming, c.requires_tool_result_name,
                c.requires_assistant_after_tool_result, c.requires_thinking_as_text,
                c.thinking_format, c.supports_strict_mode)
    c = resolve(model)
    if model.api == "anthropic-messages":
        return (c.adaptive_thinking, c.xhigh_effort if c.adaptive_thinking else None)
    if model.api == "openai-responses":
        return (c.xhigh_effort, c.lowest_effort)
    assert model.api in ("google-generative-ai", "google-vertex")
    return (c.thinking_levels_family, c.thinking_budgets_family, c.requires_thought_signatures,
            c.images_in_function_responses, c.function_call_ids)


OLD_APIS = {"anthropic-messages", "google-generative-ai", "openai-completions", "openai-responses",
            "google-vertex"}
"""The wire APIs the id sniffing served (and Vertex, whose Gemini rows must decide as Gemini's);
rows of the other APIs added since have no old decisions."""
CATALOGUE = [model for provider in ac.get_providers() for model in ac.get_models(provider)
             if model.api in OLD_APIS]


def test_compat_old_decisions_cover_the_catalogue() -> None:
    assert {(m.provider, m.id) for m in CATALOGUE} == set(OLD_DECISIONS)


@pytest.mark.parametrize("model", CATALOGUE, ids=lambda m: f"{m.provider}/{m.id}")
def test_compat_catalogue_decides_as_the_id_sniffing_did(model: ac.Model) -> None:
    assert decisions(model) == OLD_DECISIONS[model.provider, model.id]


@pytest.mark.parametrize("model", [m for m in CATALOGUE if m.api == "openai-completions"
                                   and m.provider != "azure-openai"],
                         ids=lambda m: f"{m.provider}/{m.id}")
def test_compat_catalogue_servers_that_are_not_openai(model: ac.Model) -> None:
    # What API.md §17 changed on purpose: no catalogued openai-completions server but Azure's
    # is OpenAI's.
    compat = resolve_compat(model)
    assert not is_openai(model.base_url)
    assert (compat.max_tokens_field, compat.supports_null_content) == ("max_tokens", False)


# --- a model of one's own ---------------------------------------------------------------------

OWN = {
    "anthropic-messages": ("claude-opus-4-6", "anthropic", "https://api.anthropic.com"),
    "openai-responses": ("gpt-5.4", "openai", "https://api.openai.com/v1"),
    "google-generative-ai": ("gemini-3-pro-preview", "google",
                             "https://generativelanguage.googleapis.com/v1beta"),
    "openai-completions": ("openai/gpt-5.4", "openai", "https://api.openai.com/v1"),
}
"""Ids the old code recognised, on models that are not the catalogue's."""


@pytest.mark.parametrize("api", sorted(OWN))
def test_compat_own_model_gets_the_defaults_whatever_its_id(api: str) -> None:
    model_id, provider, base_url = OWN[api]
    model = ac.Model(model_id, "mine", api, provider, base_url, reasoning=True)
    assert resolve(model) == Compat()
    if api == "openai-completions":
        assert resolve_compat(model) == Compat()  # OpenAI's own server: nothing detected


def test_compat_own_model_sets_its_keys() -> None:
    model = ac.Model("claude-opus-4-6", "mine", "anthropic-messages", "anthropic",
                     "https://api.anthropic.com", reasoning=True,
                     compat={"adaptive_thinking": True, "xhighEffort": "max"})
    body = anthropic.build_body(model, ac.Context(None, [ac.UserMessage("hi")]),
                                ac.StreamOptions(reasoning="xhigh"))
    assert (body["thinking"], body["output_config"]) == ({"type": "adaptive"}, {"effort": "max"})


def test_compat_detected_server_defaults_yield_to_the_model() -> None:
    model = ac.Model("m", "m", "openai-completions", "xai", "https://api.x.ai/v1",
                     compat={"supports_store": True, "thinkingFormat": "qwen"})
    assert resolve_compat(model) == Compat(
        supports_store=True, supports_developer_role=False, supports_reasoning_effort=False,
        max_tokens_field="max_tokens", supports_null_content=False, thinking_format="qwen")


@pytest.mark.parametrize(("base_url", "openai"), [
    ("https://api.openai.com/v1", True),
    ("HTTPS://API.OPENAI.COM/v1", True),
    ("https://my-resource.openai.azure.com/openai/v1", True),
    ("https://api.openai.com.example.org/v1", False),
    ("https://proxy.example.org/api.openai.com/v1", False),
    ("http://127.0.0.1:8000/v1", False),
    ("http://[::1", False),  # not a URL at all
])
def test_compat_openai_is_recognised_by_host(base_url: str, openai: bool) -> None:
    assert is_openai(base_url) is openai


# --- checks -----------------------------------------------------------------------------------

BUILD_BODY = {
    "anthropic-messages": anthropic.build_body,
    "google-generative-ai": google.build_body,
    "openai-completions": openai_completions.build_body,
    "openai-responses": openai_responses.build_body,
}


@pytest.mark.parametrize(("compat", "message"), [
    ({"supportsTeleport": True},
     "unknown compat key 'supportsTeleport' on model 'm'; known: ['adaptive_thinking', "),
    ({"adaptive_thinking": 1}, "compat key 'adaptive_thinking' on model 'm' must be a bool, "
                               "got 1"),
    ({"xhighEffort": ""}, "compat key 'xhighEffort' on model 'm' must be a non-empty str, "
                          "got ''"),
    ({"thinking_levels_family": "ultra"}, "compat key 'thinking_levels_family' on model 'm' "
                                          "must be 'pro' or 'flash' or None, got 'ultra'"),
    ({"max_tokens_field": "max_output_tokens"}, "compat key 'max_tokens_field' on model 'm' "
     "must be 'max_completion_tokens' or 'max_tokens', got 'max_output_tokens'"),
    ({"reasoning_effort_map": {"high": 3}}, "compat key 'reasoning_effort_map' on model 'm' "
                                            "must be None or a dict of str to str"),
    ({"thinking_format": ["qwen"]}, "compat key 'thinking_format' on model 'm' must be "
                                    "'openai' or 'zai'"),
    ({1: True}, "unknown compat key 1 on model 'm'"),
], ids=["unknown", "bool", "str", "family", "field", "map", "format", "not-a-str"])
@pytest.mark.parametrize("api", sorted(BUILD_BODY))
def test_compat_bad_key_is_named_on_first_use(api: str, compat: dict[Any, Any],
                                              message: str) -> None:
    model = ac.Model("m", "m", api, "p", "http://127.0.0.1:9", reasoning=True, compat=compat)
    with pytest.raises(ValueError, match=re.escape(message)):
        BUILD_BODY[api](model, ac.Context(None, [ac.UserMessage("hi")]), ac.StreamOptions())


def test_compat_is_resolved_once_per_server_and_compat() -> None:
    model = ac.Model("m", "m", "openai-completions", "groq", "https://api.groq.com/openai/v1",
                     compat={"supports_store": True})
    assert resolve_compat(model) is resolve_compat(attrs.evolve(model, id="other"))
    assert resolve(model) is resolve(attrs.evolve(model, api="anthropic-messages"))
    elsewhere = attrs.evolve(model, base_url="https://api.x.ai/v1")
    assert resolve_compat(elsewhere) == Compat(**{**attrs.asdict(resolve_compat(elsewhere)),
                                                  "supports_store": True})
    assert resolve_compat(elsewhere).supports_reasoning_effort is False  # x.ai, not Groq
    # a value equal to the kept one but of another type is checked anew, and refused
    with pytest.raises(ValueError, match="compat key 'supports_store' on model 'm' must be a"):
        resolve_compat(attrs.evolve(model, compat={"supports_store": 1}))
    with pytest.raises(ValueError, match="must be a bool"):
        resolve(attrs.evolve(model, compat={"supports_store": 1}))
    mapped = attrs.evolve(model, compat={"reasoning_effort_map": {"high": "max"}})
    assert resolve_compat(mapped).reasoning_effort_map == {"high": "max"}  # unhashable: not kept
    assert resolve_compat(mapped) is not resolve_compat(mapped)


def test_compat_check_keeps_values_under_snake_case_names() -> None:
    effort_map = {"high": "max"}
    checked = check_compat({"reasoningEffortMap": effort_map, "supports_store": False}, "x")
    assert checked == {"reasoning_effort_map": effort_map, "supports_store": False}
    assert check_compat(None, "x") == {}


def test_compat_keys_are_documented_in_the_providers_guide() -> None:
    guide = (paths.ROOT / "docs" / "guides" / "providers.md").read_text(encoding="utf-8")
    section = guide[guide.index("`Model.compat`: capabilities as data"):]
    section = section[:section.index("\n\n", section.index("| key |"))]
    documented = re.findall(r"^\| `(\w+)` \|", section, flags=re.MULTILINE)
    assert documented == [field.name for field in attrs.fields(Compat)]
