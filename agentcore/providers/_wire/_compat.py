"""`Model.compat`: what a model can do and how its server differs, as data.

The wire modules never look at a model's id to decide what to send: they read a `Compat`,
resolved from three layers, the later winning:

1. the defaults below (what a model that nobody described gets);
2. for `openai-completions`, what `_openai` detects from the provider and the base URL, said
   once per server in code (e.g. every OpenRouter model, every server that is not OpenAI);
3. the model's own `compat` dict: the catalogue rows of `models.json` set it, and a `Model(...)`
   of your own may too.

Keys are written in snake_case or in camelCase (`supports_store` or `supportsStore`). Each is
checked: an unknown key, or a value of the wrong type, raises `ValueError` naming the key, when
the catalogue is read or when the model is first used. The "Model.compat" table of the
providers guide (`docs/guides/providers.md`) documents every key
(`tests/providers/test_compat.py` keeps the two in step).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Literal, get_args

import attrs

from ..._core import Model

__all__ = ["Compat", "ThinkingFields", "ThinkingFormat", "cached", "check_compat", "frozen",
           "resolve"]

ThinkingFormat = Literal["openai", "zai", "qwen", "qwen-chat-template", "openrouter", "deepseek"]
Family = Literal["pro", "flash"]
ThinkingFields = Literal["anthropic", "reasoning_effort"]

_Check = tuple[Callable[[Any], bool], str]
"""What a key's value must satisfy, and how to say it in an error."""


@attrs.frozen(kw_only=True)
class Compat:
    """One model's capabilities and its server's quirks (the providers guide's table).

    `supports_required_tool_choice` false (an OpenAI-compatible server not known to take
    `tool_choice: "required"`, such as llama-cpp-python, whose chatml handler answers it with
    an empty reply) names the request's only tool instead, the same demand, and with more tools
    sends `"auto"`: a run answering through `final_result` then relies on its output retries.
    `native_output_with_tools` false (Gemini before 3, the default on Gemini's APIs) refuses
    native output in a request with tools, with a `ValueError` saying to use
    `output_mode="tool"` (`_choice.check_native_output`).
    """

    # Model capabilities, each read by the wire API named in its comment.
    adaptive_thinking: bool = False  # anthropic-messages
    xhigh_effort: str = "high"  # openai-completions, openai-responses, anthropic-messages
    lowest_effort: str | None = None  # openai-responses
    thinking_budgets_family: Family | None = None  # google-generative-ai, google-vertex
    thinking_levels_family: Family | None = None  # google-generative-ai, google-vertex
    requires_thought_signatures: bool = False  # google-generative-ai, google-vertex
    images_in_function_responses: bool = False  # google-generative-ai, google-vertex
    function_call_ids: bool = False  # google-generative-ai, google-vertex
    supports_native_output: bool | None = None  # every API; None: the API's default (_choice)
    native_output_with_tools: bool | None = None  # every API; as supports_native_output
    cache_points: bool = False  # bedrock-converse-stream
    thinking_fields: ThinkingFields | None = None  # bedrock-converse-stream
    # OpenAI-compatible servers (openai-completions); `_openai` detects them from the server.
    supports_store: bool = True
    supports_developer_role: bool = True
    supports_reasoning_effort: bool = True
    reasoning_effort_map: dict[str, str] | None = None
    supports_usage_in_streaming: bool = True
    max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens"
    supports_null_content: bool = True
    requires_tool_result_name: bool = False
    requires_assistant_after_tool_result: bool = False
    requires_thinking_as_text: bool = False
    thinking_format: ThinkingFormat = "openai"
    supports_strict_mode: bool = True
    tool_call_id_format: Literal["mistral"] | None = None
    # False: "required" names the only tool, else goes as "auto" (`_choice.tool_choice`).
    supports_required_tool_choice: bool = True


def _word(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _choice(*values: str | None) -> _Check:
    return (lambda value: isinstance(value, (str, type(None))) and value in values,
            " or ".join(repr(v) for v in values))


def _effort_map(value: Any) -> bool:
    return value is None or (isinstance(value, dict)
                             and all(_word(k) and _word(v) for k, v in value.items()))


_BOOL: _Check = (lambda value: type(value) is bool, "a bool")
_NOT_BOOL: dict[str, _Check] = {
    "xhigh_effort": (_word, "a non-empty str"),
    "lowest_effort": (lambda value: value is None or _word(value), "None or a non-empty str"),
    "thinking_budgets_family": _choice("pro", "flash", None),
    "thinking_levels_family": _choice("pro", "flash", None),
    "reasoning_effort_map": (_effort_map, "None or a dict of str to str"),
    "max_tokens_field": _choice("max_completion_tokens", "max_tokens"),
    "supports_native_output": (lambda value: value is None or type(value) is bool,
                               "None or a bool"),
    "native_output_with_tools": (lambda value: value is None or type(value) is bool,
                                 "None or a bool"),
    "thinking_format": _choice(*get_args(ThinkingFormat)),
    "tool_call_id_format": _choice("mistral", None),
    "thinking_fields": _choice(*get_args(ThinkingFields), None),
}
_CHECKS: dict[str, _Check] = {field.name: _NOT_BOOL.get(field.name, _BOOL)
                              for field in attrs.fields(Compat)}
"""Every key and its check: the `Compat` fields; those not listed in `_NOT_BOOL` are bools."""


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


_NAMES = {**{re.sub(r"_(\w)", lambda m: m[1].upper(), name): name for name in _CHECKS},
          **{name: name for name in _CHECKS}}
"""Each key as written most often (snake_case, camelCase) and its field: no regex per request."""


def check_compat(compat: Mapping[str, Any] | None, owner: str) -> dict[str, Any]:
    """`compat` under snake_case names, every key and value checked.

    Args:
        compat: A `Model.compat` dict, or None.
        owner: What the dict belongs to, for the error, e.g. `"model 'gpt-5'"`.

    Returns:
        A new dict; the values are those given (not copied).

    Raises:
        ValueError: An unknown key, or a value of the wrong type; the message names the key as
            written and the owner.
    """
    out: dict[str, Any] = {}
    for key, value in (compat or {}).items():
        name = _NAMES.get(key) or (_snake(key) if isinstance(key, str) else "")
        check = _CHECKS.get(name)
        if check is None:
            raise ValueError(f"unknown compat key {key!r} on {owner}; known: {sorted(_CHECKS)}")
        accepts, expects = check
        if not accepts(value):
            raise ValueError(f"compat key {key!r} on {owner} must be {expects}, got {value!r}")
        out[name] = value
    return out


def resolve(model: Model, detected: Mapping[str, Any] | None = None) -> Compat:
    """The defaults, then `detected` (what the server is known to need), then `model.compat`.

    Every request resolves its model's `Compat` (a class of 27 fields, the keys checked): the
    result is kept for the same `detected` and `compat` (see `cached`).
    """
    return cached(("resolve", frozen(detected), frozen(model.compat)),
                  lambda: _resolve(model, detected))


def _resolve(model: Model, detected: Mapping[str, Any] | None) -> Compat:
    values = dict(detected or {})
    values.update(check_compat(model.compat, f"model {model.id!r}"))
    return Compat(**values)


def frozen(values: Mapping[str, Any] | None) -> tuple[Any, ...] | None:
    """`values` as a key of `cached`: each key, its value's type (True is not 1) and the value."""
    if values is None:
        return None
    return tuple((key, value.__class__, value) for key, value in values.items())


_CACHE_SIZE = 256
_cache: dict[Hashable, Compat] = {}
"""The `Compat`s resolved lately, by what they were resolved from: a cache, dropped whole when
full (a process has a handful of models). A race only resolves one twice."""


def cached(key: Hashable, make: Callable[[], Compat]) -> Compat:
    """The `Compat` kept under `key`, else `make()`, kept when `key` can be hashed.

    `key` must hold everything the result depends on (a `frozen` compat dict, say); what
    `make` raises is raised, and nothing is kept.
    """
    try:
        return _cache[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable value (a dict in `reasoning_effort_map`): not kept
        return make()
    compat = make()
    if len(_cache) >= _CACHE_SIZE:
        _cache.clear()
    _cache[key] = compat
    return compat
