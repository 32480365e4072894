"""The four HTTP wire APIs as table-driven tests use them: a model on the local server, a text
reply, and the function building its request body (tool choice and native output run their
cases on each)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from replies import anthropic_reply, completions_reply, google_reply, responses_reply

import agentcore as ac
from agentcore.providers import anthropic, google, openai_completions, openai_responses

__all__ = ["KEY", "TIME", "WEATHER", "WIRES", "WITH_TOOLS", "Wire", "options"]

KEY = "sk-test"
WEATHER = ac.Tool("get_weather", "Current weather for a city.", {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
TIME = ac.Tool("get_time", "The time in a city.", {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
WITH_TOOLS = ac.Context("Be brief.", [ac.UserMessage("Weather in Paris?")], [WEATHER, TIME])


@dataclass(frozen=True)
class Wire:
    """One wire API: a model of it on the local server, a text reply, and its body builder."""

    api: str
    model: Callable[[str], ac.Model]
    reply: Callable[[str], bytes]
    build_body: Callable[[ac.Model, ac.Context, ac.StreamOptions], dict[str, Any]]


WIRES = {
    "openai-completions": Wire(
        "openai-completions",
        lambda url: ac.Model("gpt-4o-mini", "GPT-4o mini", "openai-completions", "openai", url),
        lambda text: completions_reply(text=text), openai_completions.build_body),
    "openai-responses": Wire(
        "openai-responses",
        lambda url: ac.Model("gpt-4.1", "GPT-4.1", "openai-responses", "openai", url),
        responses_reply, openai_responses.build_body),
    "anthropic-messages": Wire(
        "anthropic-messages",
        lambda url: ac.Model("claude-sonnet-4-5", "Claude", "anthropic-messages", "anthropic",
                             url, compat={"supports_native_output": True}),
        lambda text: anthropic_reply(text=text), anthropic.build_body),
    "google-generative-ai": Wire(
        "google-generative-ai",
        lambda url: ac.Model("gemini-2.5-flash", "Gemini", "google-generative-ai", "google",
                             url),
        lambda text: google_reply(text=text), google.build_body),
}
"""The four HTTP wire APIs; `test_tool_choice` and `test_native_output` run their cases on each."""


def options(**fields: Any) -> ac.StreamOptions:
    """Stream options with the test key and `fields`."""
    return ac.StreamOptions(api_key=KEY, **fields)
