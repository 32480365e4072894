"""Recognising "the prompt no longer fits" errors, for compaction logic."""

from __future__ import annotations

import re

from ._enums import StopReason
from ._messages import AssistantMessage

__all__ = ["is_context_overflow"]

_OVERFLOW = re.compile(
    "|".join((
        r"prompt is too long",                                    # Anthropic
        r"request_too_large",
        r"input is too long for requested model",                 # Bedrock
        r"exceeds the context window",                            # OpenAI Responses
        r"exceeds (the )?(model'?s )?maximum context length( of [\d,]+ tokens?|\s*\([\d,]+\))",
        r"maximum context length is \d+ tokens",                  # OpenAI, OpenRouter
        r"input token count.*exceeds the maximum",                # Google
        r"maximum prompt length is \d+",                          # xAI
        r"reduce the length of the messages",                     # Groq, OpenAI
        r"exceeds (the )?maximum allowed input length of [\d,]+ tokens?",
        r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",
        r"exceeds the limit of \d+",                              # GitHub Copilot
        r"exceeds the available context size",                    # llama.cpp
        r"greater than the context length",                       # LM Studio
        r"context window exceeds limit",                          # MiniMax
        r"exceeded model token limit",                            # Kimi
        r"too large for model with \d+ maximum context length",   # Mistral
        r"model_context_window_exceeded",                         # z.ai
        r"prompt too long; exceeded (max )?context length",       # Ollama
        r"this model.?s maximum context length is \d+",           # vLLM
        r"requested \d+ output tokens",
        r"prompt contains.*\d+ input tokens",
        r"for a total of.*\d+ tokens",
        r"context[_ ]length[_ ]exceeded",
        r"too many tokens",
        r"token limit exceeded",
        r"^4(00|13)\s*(status code)?\s*\(no body\)",              # Cerebras
    )),
    re.IGNORECASE,
)
_NOT_OVERFLOW = re.compile(r"^(Throttling error|Service unavailable):|rate limit|too many requests",
                           re.IGNORECASE)


def is_context_overflow(message: AssistantMessage, context_window: int | None = None) -> bool:
    """Whether `message` failed (or was silently cut) because its prompt was too long.

    Recognises the overflow errors of OpenAI, Anthropic, Gemini and the OpenAI-compatible
    servers; with `context_window`, also a reply whose reported input exceeded it.
    """
    if not isinstance(message, AssistantMessage):
        raise TypeError(f"is_context_overflow: 'message' must be an AssistantMessage, "
                        f"got {message!r}")
    if message.stop_reason == StopReason.ERROR and message.error_message:
        text = message.error_message
        return bool(_OVERFLOW.search(text)) and not _NOT_OVERFLOW.search(text)
    if context_window is None:
        return False
    prompt = message.usage.input + message.usage.cache_read
    if message.stop_reason == StopReason.STOP:
        return prompt > context_window
    if message.stop_reason == StopReason.LENGTH:
        return message.usage.output == 0 and prompt >= 0.99 * context_window
    return False
