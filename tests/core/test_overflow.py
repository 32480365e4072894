"""`is_context_overflow`: every provider's overflow error (pi-ai §9), silent and length overflow."""

from __future__ import annotations

import paths
import pytest
from _internals import is_context_overflow

import agentcore as ac
from agentcore import AssistantMessage, StopReason, TextContent, Usage, UserMessage

FIXTURES = paths.FIXTURES
WINDOW = 200_000

# What our providers put in `error_message` for their overflow fixtures (`http_400.json`).
OPENAI_COMPLETIONS_400 = (
    "400 This model's maximum context length is 128000 tokens. However, your messages resulted "
    "in 140000 tokens. Please reduce the length of the messages."
)
OPENAI_RESPONSES_400 = (
    "400 Your input exceeds the context window of this model. Please adjust your input and try "
    "again."
)
ANTHROPIC_400 = (
    '400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: '
    '213462 tokens > 200000 maximum"},"request_id":"req_011CSHq2Wd8xT4nB6mK9pL3v"}'
)
GOOGLE_400 = (
    '{"error":{"code":400,"message":"The input token count (1196265) exceeds the maximum number '
    'of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}'
)

OVERFLOW_TEXTS = {
    "openai-completions": OPENAI_COMPLETIONS_400,
    "openai-responses": OPENAI_RESPONSES_400,
    "anthropic": ANTHROPIC_400,
    "google": GOOGLE_400,
    "anthropic-request-too-large": (
        '413 {"type":"error","error":{"type":"request_too_large",'
        '"message":"Request exceeds the maximum size"}}'
    ),
    "bedrock": "ValidationException: Input is too long for requested model.",
    "openai-sdk-new": (
        'OpenAI API error (400): {"message":"Your input exceeds the context window of this '
        'model.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}'
    ),
    "litellm-of-tokens": "prompt exceeds the model's maximum context length of 32,768 tokens",
    "litellm-parenthesised": "Request exceeds maximum context length (8192)",
    "xai": (
        "400 This model's maximum prompt length is 131072 but the request contains 537812 "
        "tokens."
    ),
    "groq": "400 Please reduce the length of the messages or completion.",
    "openrouter": (
        "This endpoint's maximum context length is 200000 tokens. However, you requested about "
        "250000 tokens (250000 of text input). Please reduce the length of either one."
    ),
    "poolside": "Input exceeds maximum allowed input length of 128,000 tokens",
    "together": "Input (40000 tokens) is longer than the model's context length (32768 tokens).",
    "copilot": "prompt token count of 130000 exceeds the limit of 128000",
    "llama.cpp": "the request exceeds the available context size, try increasing it",
    "lm-studio": (
        "The number of tokens to keep from the initial prompt is greater than the context length"
    ),
    "minimax": "invalid params, context window exceeds limit (2013)",
    "kimi": "Invalid request: Your request exceeded model token limit: 262144",
    "mistral": (
        "Prompt contains 140000 tokens and 0 draft tokens, too large for model with 131072 "
        "maximum context length"
    ),
    "z.ai": "model_context_window_exceeded",
    "ollama": "prompt too long; exceeded max context length by 1200 tokens",
    "ollama-short": "prompt too long; exceeded context length",
    "vllm-max-context": "This model's maximum context length is 4096 tokens.",
    "vllm-requested-output": "Invalid request: you requested 2000 output tokens",
    "vllm-prompt-contains": "your prompt contains at least 3000 input tokens",
    "vllm-total": "for a total of at least 5000 tokens",
    "generic-context-length-exceeded": "context_length_exceeded",
    "generic-context-length-exceeded-spaces": "Error: context length exceeded",
    "generic-too-many-tokens": "Too many tokens in the prompt",
    "generic-token-limit": "token limit exceeded for this model",
    "cerebras-400": "400 status code (no body)",
    "cerebras-413": "413 (no body)",
    "upper-case": "PROMPT IS TOO LONG",
}

NOT_OVERFLOW_TEXTS = {
    "bedrock-throttling": "Throttling error: Too many tokens, please wait before trying again.",
    "service-unavailable": "Service unavailable: input is too long for requested model",
    "rate-limit": (
        "429 Rate limit reached for gpt-4o: too many tokens per minute (TPM). Limit 30000, "
        "Requested 40000."
    ),
    "too-many-requests": "Too Many Requests: token limit exceeded, slow down",
    "overloaded": '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    "server-error": "500 The server had an error while processing your request.",
    "cerebras-500": "500 status code (no body)",
    "cerebras-not-at-start": "upstream said: 400 status code (no body)",
    "connection": "Connection error.",
}


def message(stop_reason: str = "error", error_message: str | None = None, *, input: int = 0,
            output: int = 0, cache_read: int = 0) -> AssistantMessage:
    usage = Usage(input, output, cache_read, 0, input + output + cache_read)
    return AssistantMessage([TextContent("")], "openai-completions", "openai", "gpt-4o", usage,
                            stop_reason, error_message)


@pytest.mark.parametrize("text", OVERFLOW_TEXTS.values(), ids=OVERFLOW_TEXTS.keys())
def test_overflow_error_texts_are_recognised(text) -> None:
    assert is_context_overflow(message("error", text)) is True
    assert is_context_overflow(message("error", text), WINDOW) is True


@pytest.mark.parametrize("text", NOT_OVERFLOW_TEXTS.values(), ids=NOT_OVERFLOW_TEXTS.keys())
def test_overflow_other_errors_are_not_overflow(text) -> None:
    assert is_context_overflow(message("error", text)) is False
    # an error is judged by its text alone, whatever the usage says
    assert is_context_overflow(message("error", text, input=WINDOW * 2), WINDOW) is False


@pytest.mark.parametrize("stop_reason", ["stop", "length", "toolUse", "aborted"])
def test_overflow_text_counts_only_on_error(stop_reason) -> None:
    assert is_context_overflow(message(stop_reason, "prompt is too long")) is False


@pytest.mark.parametrize("error_message", [None, ""])
def test_overflow_error_without_a_message(error_message) -> None:
    assert is_context_overflow(message("error", error_message)) is False
    assert is_context_overflow(message("error", error_message, input=WINDOW * 2), WINDOW) is False


@pytest.mark.parametrize("stop_reason", ["stop", "length", "toolUse", "aborted"])
def test_overflow_without_a_window_ignores_usage(stop_reason) -> None:
    assert is_context_overflow(message(stop_reason, input=WINDOW * 5)) is False


@pytest.mark.parametrize(("input", "cache_read", "expected"), [
    (WINDOW + 1, 0, True),
    (WINDOW, 0, False),  # exactly full still fits
    (100_000, 100_001, True),  # cached prompt tokens count too
    (100_000, 100_000, False),
    (1_000, 0, False),
])
def test_overflow_silent_on_stop(input, cache_read, expected) -> None:
    stopped = message("stop", input=input, cache_read=cache_read, output=50)
    assert is_context_overflow(stopped, WINDOW) is expected


def test_overflow_silent_only_on_stop() -> None:
    assert is_context_overflow(message("toolUse", input=WINDOW + 1), WINDOW) is False
    assert is_context_overflow(message("aborted", input=WINDOW + 1), WINDOW) is False


@pytest.mark.parametrize(("input", "cache_read", "output", "expected"), [
    (198_000, 0, 0, True),  # exactly 99 %
    (150_000, 48_000, 0, True),
    (WINDOW + 5, 0, 0, True),
    (197_999, 0, 0, False),
    (199_000, 0, 1, False),  # it produced output: a normal length stop
    (1_000, 0, 0, False),
])
def test_overflow_length_stop_without_output(input, cache_read, output, expected) -> None:
    cut = message("length", input=input, cache_read=cache_read, output=output)
    assert is_context_overflow(cut, WINDOW) is expected


@pytest.mark.parametrize("value", [UserMessage("prompt is too long"), None,
                                   {"stop_reason": "error", "error_message": "prompt is too long"}])
def test_overflow_rejects_what_is_not_an_assistant_message(value) -> None:
    with pytest.raises(TypeError, match="AssistantMessage"):
        is_context_overflow(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(("api", "provider", "model_id", "path", "expected"), [
    ("openai-completions", "openai", "gpt-4o-mini", "openai_completions/http_400.json",
     OPENAI_COMPLETIONS_400),
    ("openai-responses", "openai", "gpt-4o", "openai_responses/http_400.json",
     OPENAI_RESPONSES_400),
    ("anthropic-messages", "anthropic", "claude-sonnet-4-5", "anthropic/http_400.json",
     ANTHROPIC_400),
    ("google-generative-ai", "google", "gemini-2.5-flash", "google/http_400.json", GOOGLE_400),
], ids=["openai-completions", "openai-responses", "anthropic", "google"])
def test_overflow_from_the_providers_overflow_fixtures(sse_server, api, provider, model_id, path,
                                                       expected) -> None:
    sse_server.status(400, (FIXTURES / path).read_bytes())
    model = ac.Model(model_id, model_id, api, provider, sse_server.url, context_window=128_000)
    reply = ac.complete(model, ac.Context(None, [UserMessage("hi")]),
                        ac.StreamOptions(api_key="test-key-1234", max_retries=0, timeout=5.0))
    assert (reply.stop_reason, reply.error_message) == (StopReason.ERROR, expected)
    assert is_context_overflow(reply) is True
