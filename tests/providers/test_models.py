"""The built-in model catalogue (models.json) and the API-key lookup."""

from __future__ import annotations

import importlib.resources
import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from _internals import Compat, resolve_compat

from agentcore import (
    AgentcoreError,
    MissingApiKeyError,
    Model,
    ModelCost,
    ModelNotFoundError,
    SerializationError,
    Usage,
    calculate_cost,
)
from agentcore.providers import models
from agentcore.providers.models import (
    env_var_for,
    get_env_api_key,
    get_model,
    get_models,
    get_providers,
    require_api_key,
)

BUILTIN_APIS = {
    "openai-completions",
    "openai-responses",
    "anthropic-messages",
    "google-generative-ai",
    "bedrock-converse-stream",
    "google-vertex",
}

READ_BY = {
    "adaptive_thinking": {"anthropic-messages"},
    "xhigh_effort": {"openai-completions", "openai-responses", "anthropic-messages"},
    "lowest_effort": {"openai-responses", "openai-completions"},
    "thinking_budgets_family": {"google-generative-ai", "google-vertex"},
    "thinking_levels_family": {"google-generative-ai", "google-vertex"},
    "requires_thought_signatures": {"google-generative-ai", "google-vertex"},
    "images_in_function_responses": {"google-generative-ai", "google-vertex"},
    "function_call_ids": {"google-generative-ai", "google-vertex"},
    "supports_native_output": {"openai-completions", "openai-responses", "anthropic-messages",
                               "google-generative-ai", "bedrock-converse-stream",
                               "google-vertex"},
    "native_output_with_tools": {"openai-completions", "openai-responses", "anthropic-messages",
                                 "google-generative-ai", "bedrock-converse-stream",
                                 "google-vertex"},
    "cache_points": {"bedrock-converse-stream"},
    "thinking_fields": {"bedrock-converse-stream"},
    **{key: {"openai-completions"} for key in [
        "supports_store", "supports_developer_role", "supports_reasoning_effort",
        "reasoning_effort_map", "supports_usage_in_streaming", "max_tokens_field",
        "supports_null_content", "requires_tool_result_name",
        "requires_assistant_after_tool_result", "requires_thinking_as_text", "thinking_format",
        "supports_strict_mode", "tool_call_id_format", "supports_required_tool_choice"]},
}
"""Every `compat` key and the wire APIs that read it."""

BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "google": "https://generativelanguage.googleapis.com/v1beta",
    "google-vertex": "https://aiplatform.googleapis.com/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "groq": "https://api.groq.com/openai/v1",
    "xai": "https://api.x.ai/v1",
    "deepseek": "https://api.deepseek.com",
    "ollama": "http://localhost:11434/v1",
    "azure-openai": "",  # from the environment at request time (AZURE_OPENAI_ENDPOINT)
    "mistral": "https://api.mistral.ai/v1",
    "amazon-bedrock": "https://bedrock-runtime.{region}.amazonaws.com",
}

REQUIRED_MODELS = [
    ("openai", "gpt-5"),
    ("openai", "gpt-5-mini"),
    ("openai", "gpt-5-nano"),
    ("openai", "gpt-4.1"),
    ("openai", "gpt-4.1-mini"),
    ("openai", "gpt-4o"),
    ("openai", "gpt-4o-mini"),
    ("openai", "o3"),
    ("openai", "o4-mini"),
    ("anthropic", "claude-opus-4-1"),
    ("anthropic", "claude-opus-4-5"),
    ("anthropic", "claude-sonnet-4-5"),
    ("anthropic", "claude-sonnet-4-0"),
    ("anthropic", "claude-haiku-4-5"),
    ("anthropic", "claude-3-5-haiku-latest"),
    ("google", "gemini-2.5-pro"),
    ("google", "gemini-2.5-flash"),
    ("google", "gemini-2.5-flash-lite"),
    ("google", "gemini-3-pro-preview"),
    ("openrouter", "anthropic/claude-sonnet-4.5"),
    ("openrouter", "openai/gpt-5"),
    ("openrouter", "google/gemini-2.5-flash"),
    ("openrouter", "deepseek/deepseek-chat-v3.1"),
    ("openrouter", "qwen/qwen3-coder"),
    ("groq", "llama-3.3-70b-versatile"),
    ("groq", "openai/gpt-oss-120b"),
    ("groq", "qwen/qwen3-32b"),
    ("xai", "grok-4"),
    ("xai", "grok-code-fast-1"),
    ("xai", "grok-3-mini"),
    ("deepseek", "deepseek-chat"),
    ("deepseek", "deepseek-reasoner"),
    ("ollama", "gpt-oss:20b"),
    ("ollama", "llama3.1:8b"),
    ("ollama", "qwen3:8b"),
    ("azure-openai", "gpt-4.1"),
    ("azure-openai", "gpt-4.1-mini"),
    ("azure-openai", "gpt-5"),
    ("azure-openai", "gpt-5-mini"),
    ("azure-openai", "o4-mini"),
    ("mistral", "mistral-large-latest"),
    ("mistral", "mistral-medium-latest"),
    ("mistral", "mistral-small-latest"),
    ("mistral", "codestral-latest"),
    ("mistral", "devstral-medium-latest"),
    ("amazon-bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    ("amazon-bedrock", "us.anthropic.claude-opus-4-1-20250805-v1:0"),
    ("amazon-bedrock", "us.anthropic.claude-haiku-4-5-20251001-v1:0"),
    ("amazon-bedrock", "amazon.nova-pro-v1:0"),
    ("amazon-bedrock", "amazon.nova-lite-v1:0"),
    ("amazon-bedrock", "amazon.nova-micro-v1:0"),
    ("amazon-bedrock", "us.meta.llama4-maverick-17b-instruct-v1:0"),
    ("amazon-bedrock", "us.deepseek.r1-v1:0"),
    ("amazon-bedrock", "openai.gpt-oss-120b-1:0"),
]

KEY_VARIABLES = [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_OAUTH_TOKEN",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "XAI_API_KEY",
    "DEEPSEEK_API_KEY",
    "CEREBRAS_API_KEY",
    "MISTRAL_API_KEY",
    "OLLAMA_API_KEY",
    "HF_TOKEN",
    "MY_PROVIDER_V2_API_KEY",
    "ACME_API_KEY",
]

SECRET = "sk-test-SECRET-0123456789"


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No API-key variable the tests look at is set."""
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def raw_catalogue() -> dict[str, Any]:
    text = importlib.resources.files("agentcore.providers").joinpath("models.json").read_text(
        encoding="utf-8"
    )
    document: dict[str, Any] = json.loads(text)
    return document


def raw_entries() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = raw_catalogue()["models"]
    return entries


def entry_id(entry: dict[str, Any]) -> str:
    return f"{entry['provider']}/{entry['id']}"


# --- the data file ---------------------------------------------------------------------------


def test_catalogue_source_says_when_and_to_check_prices() -> None:
    source = raw_catalogue()["_source"]
    assert isinstance(source, str)
    assert "2026-12-02" in source
    assert "pricing page" in source


def test_catalogue_has_no_duplicate_provider_and_id() -> None:
    keys = [(entry["provider"], entry["id"]) for entry in raw_entries()]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("entry", raw_entries(), ids=entry_id)
def test_catalogue_entry_builds_a_valid_model(entry: dict[str, Any]) -> None:
    model = get_model(entry["provider"], entry["id"])
    assert model == Model(
        id=entry["id"],
        name=entry["name"],
        api=entry["api"],
        provider=entry["provider"],
        base_url=entry["base_url"],
        reasoning=entry["reasoning"],
        input=entry["input"],
        cost=ModelCost(**entry["cost"]),
        context_window=entry["context_window"],
        max_tokens=entry["max_tokens"],
        headers=entry.get("headers"),
        compat=entry.get("compat"),
    )
    assert model.api in BUILTIN_APIS
    assert model.base_url == BASE_URLS[model.provider]
    assert model.input in (["text"], ["text", "image"])
    assert model.name.strip()
    prices = [model.cost.input, model.cost.output, model.cost.cache_read, model.cost.cache_write]
    assert all(isinstance(p, float) and p >= 0 for p in prices)
    assert model.cost.cache_read <= model.cost.input  # a cache hit never costs more than a miss
    assert 0 < model.max_tokens <= model.context_window


def test_compat_keys_are_those_of_compat() -> None:
    assert set(READ_BY) == {field.name for field in attrs.fields(Compat)}


@pytest.mark.parametrize("entry", raw_entries(), ids=entry_id)
def test_catalogue_compat_keys_are_snake_case_and_read_by_the_row_api(
        entry: dict[str, Any]) -> None:
    compat = entry.get("compat")
    if compat is None:
        return
    assert compat  # no empty dict: leave the key out
    for key in compat:
        assert entry["api"] in READ_BY[key], key
    effort_map = compat.get("reasoning_effort_map")
    if effort_map is not None:
        assert set(effort_map) == {"minimal", "low", "medium", "high", "xhigh"}


def test_catalogue_groq_qwen3_maps_every_effort_to_default() -> None:
    compat = get_model("groq", "qwen/qwen3-32b").compat
    levels = ("minimal", "low", "medium", "high", "xhigh")
    assert compat == {"reasoning_effort_map": dict.fromkeys(levels, "default")}


@pytest.mark.parametrize("model", get_models("ollama"), ids=lambda m: m.id)
def test_catalogue_ollama_models_are_free_and_local(model: Model) -> None:
    assert model.cost == ModelCost()
    assert model.compat is None  # Ollama's quirks are the provider's, said once in code
    compat = resolve_compat(model)
    assert (compat.supports_developer_role, compat.supports_reasoning_effort) == (False, False)


@pytest.mark.parametrize(("provider", "model_id"), REQUIRED_MODELS)
def test_catalogue_lists_model(provider: str, model_id: str) -> None:
    assert get_model(provider, model_id).provider == provider


def test_catalogue_prices_a_usage() -> None:
    usage = Usage(input=2_000_000, output=1_000_000, cache_read=1_000_000, total_tokens=4_000_000)
    cost = calculate_cost(get_model("openai", "gpt-5"), usage).cost
    assert (cost.input, cost.output, cost.cache_read, cost.total) == (2.5, 10.0, 0.125, 12.625)


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"id": "x"}, "missing keys"),
        ({**raw_entries()[0], "colour": "red"}, "unknown keys ['colour']"),
        ({**raw_entries()[0], "cost": {"input": 1}}, "'cost' must hold exactly"),
        ({**raw_entries()[0], "cost": {**raw_entries()[0]["cost"], "output": -1}}, "output"),
        ({**raw_entries()[0], "input": ["text", "audio"]}, "input"),
        ({**raw_entries()[0], "reasoning": "yes"}, "reasoning"),
        ("not an object", "expected an object"),
        ({**raw_entries()[0], "compat": {"supportsTeleport": True}},
         "unknown compat key 'supportsTeleport' on model 'gpt-5'"),
        ({**raw_entries()[0], "compat": {"lowest_effort": 0}},
         "compat key 'lowest_effort' on model 'gpt-5' must be None or a non-empty str, got 0"),
    ],
)
def test_catalogue_parser_rejects_bad_entries(entry: object, problem: str) -> None:
    with pytest.raises(SerializationError, match=r"models\.json: models\[3\]") as info:
        models._parse_entry(3, entry)
    assert problem in str(info.value)


# --- lookups ---------------------------------------------------------------------------------


def test_get_providers_is_sorted_and_complete() -> None:
    assert get_providers() == sorted(BASE_URLS)


def test_get_providers_returns_a_fresh_list() -> None:
    providers = get_providers()
    providers.clear()
    assert get_providers() == sorted(BASE_URLS)


def test_get_models_lists_catalogue_order() -> None:
    expected = [entry["id"] for entry in raw_entries() if entry["provider"] == "anthropic"]
    assert [model.id for model in get_models("anthropic")] == expected


def test_get_models_returns_fresh_lists_and_values() -> None:
    first = get_models("groq")
    original = get_models("groq")
    first[0].input.append("image")
    compat = first[-1].compat
    assert compat is not None
    compat["reasoning_effort_map"]["high"] = "changed"
    first.clear()
    assert get_models("groq") == original
    assert get_model("groq", "qwen/qwen3-32b") == original[-1]


def test_get_model_returns_equal_but_distinct_values() -> None:
    first, second = get_model("openai", "gpt-5"), get_model("openai", "gpt-5")
    assert first == second
    assert first is not second
    assert first.input is not second.input


def test_get_model_unknown_id_names_both_and_suggests() -> None:
    with pytest.raises(ModelNotFoundError) as info:
        get_model("anthropic", "claude-sonnet-4.5")
    message = str(info.value)
    assert "'claude-sonnet-4.5'" in message
    assert "'anthropic'" in message
    assert "did you mean 'claude-sonnet-4-5'" in message
    assert isinstance(info.value, LookupError)
    assert isinstance(info.value, AgentcoreError)


def test_get_model_unknown_id_without_near_match_points_to_get_models() -> None:
    with pytest.raises(ModelNotFoundError, match=r"get_models\('openai'\)"):
        get_model("openai", "zzzzzz")


def test_get_model_id_of_another_provider_says_where_it_is() -> None:
    with pytest.raises(ModelNotFoundError, match="catalogued for 'openrouter'"):
        get_model("anthropic", "anthropic/claude-sonnet-4.5")


def test_get_model_unknown_provider_names_both_and_the_known_providers() -> None:
    with pytest.raises(ModelNotFoundError) as info:
        get_model("opnai", "gpt-5")
    message = str(info.value)
    assert "'opnai'" in message
    assert "'gpt-5'" in message
    assert all(repr(provider) in message for provider in BASE_URLS)
    assert "did you mean 'openai'" in message


def test_get_models_unknown_provider_names_the_known_providers() -> None:
    with pytest.raises(ModelNotFoundError) as info:
        get_models("bedrock")
    assert "'bedrock'" in str(info.value)
    assert all(repr(provider) in str(info.value) for provider in BASE_URLS)


@pytest.mark.parametrize(
    ("func", "args", "kwargs", "error"),
    [
        (get_model, ("openai", 5), {}, TypeError),
        (get_model, (None, "gpt-5"), {}, TypeError),
        (get_model, ("openai", ""), {}, ValueError),
        (get_models, (b"openai",), {}, TypeError),
        (get_env_api_key, ("",), {}, ValueError),
        (env_var_for, (1,), {}, TypeError),
        (require_api_key, ("openai",), {"base_url": 3}, TypeError),
    ],
)
def test_lookups_reject_bad_arguments(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        func(*args, **kwargs)


@pytest.fixture
def empty_catalogue_cache() -> Iterator[None]:
    models._catalogue.cache_clear()
    yield
    models._catalogue.cache_clear()


@pytest.mark.usefixtures("empty_catalogue_cache")
def test_catalogue_concurrent_first_calls_agree_then_it_is_cached(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loads: list[int] = []
    real_load = models._load

    def counting_load() -> Any:
        loads.append(1)
        return real_load()

    monkeypatch.setattr(models, "_load", counting_load)
    start = threading.Barrier(8, timeout=10)
    results: list[list[str]] = []

    def worker() -> None:
        start.wait()
        results.append([model.id for model in get_models("openai")])

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert not any(thread.is_alive() for thread in threads)
    assert 1 <= len(loads) <= 8  # racing first calls may each read it: harmless
    assert len(results) == 8
    assert all(result == results[0] for result in results)
    read = len(loads)
    get_models("openai")
    get_model("openai", results[0][0])
    assert len(loads) == read  # later calls use the cache


@pytest.mark.slow
def test_import_agentcore_does_not_read_the_catalogue() -> None:
    probe = textwrap.dedent(
        """
        import sys
        import agentcore
        module = sys.modules.get("agentcore.providers.models")
        print("not imported" if module is None
              else f"cached={module._catalogue.cache_info().currsize}")
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() in ("not imported", "cached=0")


# --- API keys --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "variable"),
    [
        ("openai", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("google", "GEMINI_API_KEY"),
        ("openrouter", "OPENROUTER_API_KEY"),
        ("groq", "GROQ_API_KEY"),
        ("xai", "XAI_API_KEY"),
        ("deepseek", "DEEPSEEK_API_KEY"),
        ("cerebras", "CEREBRAS_API_KEY"),
        ("mistral", "MISTRAL_API_KEY"),
        ("huggingface", "HF_TOKEN"),
        ("acme", "ACME_API_KEY"),
        ("my-provider.v2", "MY_PROVIDER_V2_API_KEY"),
    ],
)
def test_get_env_api_key_reads_the_provider_variable(
    clean_env: pytest.MonkeyPatch, provider: str, variable: str
) -> None:
    assert get_env_api_key(provider) is None
    clean_env.setenv(variable, SECRET)
    assert get_env_api_key(provider) == SECRET
    assert env_var_for(provider) == variable


def test_get_env_api_key_reads_at_call_time(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("GROQ_API_KEY", "first")
    assert get_env_api_key("groq") == "first"
    clean_env.setenv("GROQ_API_KEY", "second")
    assert get_env_api_key("groq") == "second"
    clean_env.delenv("GROQ_API_KEY")
    assert get_env_api_key("groq") is None


def test_get_env_api_key_treats_blank_as_unset(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("OPENAI_API_KEY", "  ")
    assert get_env_api_key("openai") is None


def test_get_env_api_key_anthropic_oauth_token_wins(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("ANTHROPIC_API_KEY", "api-key")
    assert get_env_api_key("anthropic") == "api-key"
    clean_env.setenv("ANTHROPIC_OAUTH_TOKEN", "oauth-token")
    assert get_env_api_key("anthropic") == "oauth-token"
    clean_env.delenv("ANTHROPIC_API_KEY")
    assert get_env_api_key("anthropic") == "oauth-token"


def test_get_env_api_key_google_reads_only_gemini_api_key(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("GOOGLE_API_KEY", SECRET)
    assert get_env_api_key("google") is None
    clean_env.setenv("GEMINI_API_KEY", "gemini")
    assert get_env_api_key("google") == "gemini"


def test_get_env_api_key_ollama_is_optional(clean_env: pytest.MonkeyPatch) -> None:
    assert get_env_api_key("ollama") is None
    assert env_var_for("ollama") is None
    clean_env.setenv("OLLAMA_API_KEY", "proxy-key")
    assert get_env_api_key("ollama") == "proxy-key"


def test_get_env_api_key_does_not_borrow_other_providers_keys(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setenv("OPENAI_API_KEY", SECRET)
    assert get_env_api_key("groq") is None
    assert get_env_api_key("openrouter") is None


def test_require_api_key_prefers_the_explicit_key(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("OPENAI_API_KEY", "from-env")
    assert require_api_key("openai", "explicit") == "explicit"
    assert require_api_key("openai") == "from-env"
    assert require_api_key("openai", "") == "from-env"


@pytest.mark.parametrize(
    ("provider", "expected"),
    [
        ("openai", "no API key for provider 'openai': set OPENAI_API_KEY or pass api_key"),
        (
            "anthropic",
            "no API key for provider 'anthropic': set ANTHROPIC_API_KEY "
            "(or ANTHROPIC_OAUTH_TOKEN) or pass api_key",
        ),
        ("google", "no API key for provider 'google': set GEMINI_API_KEY or pass api_key"),
        ("acme", "no API key for provider 'acme': set ACME_API_KEY or pass api_key"),
    ],
)
def test_require_api_key_missing_names_the_variable(
    clean_env: pytest.MonkeyPatch, provider: str, expected: str
) -> None:
    with pytest.raises(MissingApiKeyError) as info:
        require_api_key(provider)
    assert str(info.value) == expected
    assert isinstance(info.value, AgentcoreError)


def test_require_api_key_message_never_contains_a_key(clean_env: pytest.MonkeyPatch) -> None:
    for name in KEY_VARIABLES:
        if name not in ("GROQ_API_KEY",):
            clean_env.setenv(name, SECRET)
    clean_env.setenv("GROQ_API_KEY", "   ")
    with pytest.raises(MissingApiKeyError) as info:
        require_api_key("groq", "")
    assert SECRET not in str(info.value)
    assert SECRET not in repr(info.value)
    assert "GROQ_API_KEY" in str(info.value)


def test_require_api_key_bad_type_does_not_echo_the_value() -> None:
    with pytest.raises(TypeError) as info:
        require_api_key("openai", SECRET.encode())  # type: ignore[arg-type]
    assert SECRET not in str(info.value)


@pytest.mark.parametrize("model", get_models("ollama"), ids=lambda m: m.id)
def test_require_api_key_local_catalogue_models_need_none(
    clean_env: pytest.MonkeyPatch, model: Model
) -> None:
    assert require_api_key(model.provider, base_url=model.base_url) == "none"
    assert require_api_key(model.provider) == "none"


@pytest.mark.parametrize(
    "base_url",
    [
        "http://localhost:8000/v1",
        "http://LOCALHOST:8000/v1",
        "http://127.0.0.1:1234/v1",
        "http://127.0.0.2/v1",
        "http://[::1]:8080/v1",
        "http://0.0.0.0:11434/v1",
        "https://llm.localhost/v1",
    ],
)
def test_require_api_key_loopback_base_url_needs_none(
    clean_env: pytest.MonkeyPatch, base_url: str
) -> None:
    assert require_api_key("acme", base_url=base_url) == "none"


@pytest.mark.parametrize(
    "base_url",
    [
        "https://api.acme.com/v1",
        "http://localhost.evil.example/v1",
        "http://10.0.0.5/v1",
        "nonsense",
    ],
)
def test_require_api_key_remote_base_url_needs_a_key(
    clean_env: pytest.MonkeyPatch, base_url: str
) -> None:
    with pytest.raises(MissingApiKeyError, match="ACME_API_KEY"):
        require_api_key("acme", base_url=base_url)


def test_require_api_key_local_still_uses_a_key_when_given(clean_env: pytest.MonkeyPatch) -> None:
    assert require_api_key("ollama", "explicit") == "explicit"
    clean_env.setenv("OLLAMA_API_KEY", "proxy-key")
    assert require_api_key("ollama", base_url="http://localhost:11434/v1") == "proxy-key"
