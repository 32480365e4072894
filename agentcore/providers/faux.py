"""The faux provider: a scripted, offline model for tests and demos.

Queue replies with `set_responses`/`append_responses`; each model call takes the next one and
streams it in chunks through the full event protocol, honouring abort after every chunk::

    faux = register_faux_provider()
    faux.set_responses([faux_assistant_message("Hello!")])
    complete(faux.get_model(), Context(None, [UserMessage("hi")])).text  # "Hello!"
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from .._core import (
    ABORTED_TEXT,
    AssistantContent,
    AssistantMessage,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    DoneEvent,
    ErrorEvent,
    ImageContent,
    Model,
    StartEvent,
    StopReason,
    StreamOptions,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    Usage,
    calculate_cost,
    describe,
    error_reply,
    now_ms,
)
from ._registry import register_provider, unregister_provider

__all__ = [
    "FauxProvider",
    "FauxResponse",
    "faux_assistant_message",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "register_faux_provider",
]

FauxResponse = AssistantMessage | Callable[[Context, StreamOptions, Model], AssistantMessage]
"""A queued reply: a message, or a function `(context, options, model) -> AssistantMessage`."""

_counter = iter(range(1, 1 << 62))


def faux_text(text: str) -> TextContent:
    """A text block for a scripted reply."""
    return TextContent(text)


def faux_thinking(thinking: str) -> ThinkingContent:
    """A thinking block for a scripted reply."""
    return ThinkingContent(thinking)


def faux_tool_call(name: str, args: dict[str, Any], id: str | None = None) -> ToolCall:
    """A tool call for a scripted reply; the id defaults to a unique `tool:<ms>:<n>`."""
    return ToolCall(id if id is not None else f"tool:{now_ms()}:{next(_counter)}", name, args)


def faux_assistant_message(
    content: str | AssistantContent | Sequence[AssistantContent],
    stop_reason: StopReason | str = StopReason.STOP,
    error_message: str | None = None,
) -> AssistantMessage:
    """A scripted reply; a string becomes one text block.

    With tool calls and the default stop reason, the reply stops with `toolUse`, as a real
    model's would. `api`, `provider` and `model` are filled in when it is served.
    """
    if isinstance(content, str):
        blocks: list[AssistantContent] = [TextContent(content)]
    elif isinstance(content, (TextContent, ThinkingContent, ToolCall)):
        blocks = [content]
    else:
        blocks = list(content)
    reason = StopReason(stop_reason)
    if reason is StopReason.STOP and any(isinstance(b, ToolCall) for b in blocks):
        reason = StopReason.TOOL_USE
    return AssistantMessage(blocks, "faux", "faux", "faux", stop_reason=reason,
                            error_message=error_message)


def _block_text(block: object) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ThinkingContent):
        return block.thinking
    if isinstance(block, ToolCall):
        return f"{block.name}:{json.dumps(block.arguments)}"
    if isinstance(block, ImageContent):
        return f"[image:{block.mime_type}:{len(block.data)}]"
    return ""


def _prompt_text(context: Context) -> str:
    parts = []
    if context.system_prompt:
        parts.append(f"system:{context.system_prompt}")
    for m in context.messages:
        content = m.content
        if isinstance(content, str):
            body = content
        elif m.role == "toolResult":
            body = "\n".join([getattr(m, "tool_name", ""), *map(_block_text, content)])
        else:
            body = "\n".join(_block_text(b) for b in content)
        parts.append(f"{m.role}:{body}")
    if context.tools:
        tools = [{"name": t.name, "description": t.description, "parameters": t.parameters}
                 for t in context.tools]
        parts.append(f"tools:{json.dumps(tools)}")
    return "\n\n".join(parts)


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class FauxProvider:
    """A registered faux provider and its queue of scripted replies.

    Thread-safe: the queue may be changed from any thread while runs use it.
    """

    def __init__(
        self,
        models: Sequence[Model],
        api: str,
        provider: str,
        tokens_per_second: float | None,
        token_size: tuple[int, int],
    ) -> None:
        self.api = api
        self.provider = provider
        self.models = list(models)
        self._tokens_per_second = tokens_per_second
        self._token_size = token_size
        self._lock = threading.Lock()
        self._queue: deque[FauxResponse] = deque()
        self._call_count = 0
        self._sessions: dict[str, str] = {}
        self._random = random.Random()

    @property
    def call_count(self) -> int:
        """How many model calls this provider has served (failed ones included)."""
        return self._call_count

    def get_model(self, id: str | None = None) -> Model:
        """The model with `id`, or the first model."""
        if id is None:
            return self.models[0]
        for m in self.models:
            if m.id == id:
                return m
        from .._core import ModelNotFoundError

        raise ModelNotFoundError(f"faux provider {self.provider!r} has no model {id!r}")

    def set_responses(self, items: Sequence[FauxResponse]) -> None:
        """Replace the queue of scripted replies."""
        checked = _check_items(items)
        with self._lock:
            self._queue = deque(checked)

    def append_responses(self, items: Sequence[FauxResponse]) -> None:
        """Add scripted replies to the end of the queue."""
        checked = _check_items(items)
        with self._lock:
            self._queue.extend(checked)

    def pending_response_count(self) -> int:
        """How many scripted replies are still queued."""
        with self._lock:
            return len(self._queue)

    def unregister(self) -> None:
        """Remove this provider from the registry."""
        unregister_provider(self.api)

    def __repr__(self) -> str:
        return f"FauxProvider(api={self.api!r}, models={[m.id for m in self.models]!r})"

    def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        """Serve one model call: take the next scripted reply and stream it.

        This is the stream function registered for `api`; wrap it to observe calls.
        """
        with self._lock:
            item = self._queue.popleft() if self._queue else None
            self._call_count += 1
        if options.on_response is not None:
            options.on_response(200, {})
        events = self._events(item, model, context, options)
        return AssistantMessageEventStream.from_iterator(events)

    def _usage(self, model: Model, context: Context, options: StreamOptions, output: str) -> Usage:
        prompt = _prompt_text(context)
        prompt_tokens = math.ceil(len(prompt) / 4)
        out = math.ceil(len(output) / 4)
        cache_read = cache_write = 0
        inp = prompt_tokens
        if options.session_id and options.cache_retention != "none":
            with self._lock:
                previous = self._sessions.get(options.session_id)
                self._sessions[options.session_id] = prompt
            if previous is None:
                cache_write, inp = prompt_tokens, 0
            else:
                prefix = _common_prefix(previous, prompt)
                cache_read = math.ceil(prefix / 4)
                cache_write = math.ceil((len(prompt) - prefix) / 4)
                inp = max(0, prompt_tokens - cache_read - cache_write)
        usage = Usage(inp, out, cache_read, cache_write, inp + out + cache_read + cache_write)
        return calculate_cost(model, usage)

    def _chunks(self, text: str) -> Iterator[str]:
        low, high = self._token_size
        i = 0
        while i < len(text):
            size = self._random.randint(low, high) * 4
            yield text[i : i + size]
            i += size

    def _events(
        self, item: FauxResponse | None, model: Model, context: Context, options: StreamOptions
    ) -> Iterator[AssistantMessageEvent]:
        signal = options.signal
        if item is None:
            usage = self._usage(model, context, options, "")
            yield _error(attrs.evolve(error_reply(model, "No more faux responses queued"),
                                      usage=usage))
            return
        if callable(item):
            try:
                reply = item(context, options, model)
                if not isinstance(reply, AssistantMessage):
                    raise TypeError(f"faux response function returned {reply!r}, "
                                    "not an AssistantMessage")
            except Exception as exc:
                yield _error(error_reply(model, describe(exc)))
                return
        else:
            reply = item
        # Rendered as `_prompt_text` renders an assistant message, so a reply costs the same
        # tokens as output now as it does when replayed in the next prompt.
        output = "\n".join(_block_text(b) for b in reply.content)
        final = attrs.evolve(
            reply, api=self.api, provider=self.provider, model=model.id,
            usage=self._usage(model, context, options, output),
        )
        base = attrs.evolve(final, content=[], stop_reason=StopReason.STOP, error_message=None)
        if signal is not None and signal.aborted:
            yield _aborted(base)
            return
        blocks: list[AssistantContent] = []
        live = attrs.evolve(base, content=blocks)  # the one partial every event carries

        def partial() -> AssistantMessage:
            return live

        def aborted() -> ErrorEvent:
            return _aborted(attrs.evolve(base, content=list(blocks)))

        def paused(chunk: str) -> bool:
            """Wait for the chunk's share of time; True once the request is aborted."""
            if self._tokens_per_second:
                delay = max(1, len(chunk) // 4) / self._tokens_per_second
                if signal is not None:
                    return signal.wait(delay)
                time.sleep(delay)
            return signal is not None and signal.aborted

        yield StartEvent(partial())
        for i, block in enumerate(final.content):
            if signal is not None and signal.aborted:
                yield aborted()
                return
            if isinstance(block, ToolCall):
                blocks.append(attrs.evolve(block, arguments={}))
                yield ToolCallStartEvent(i, partial())
                for chunk in self._chunks(json.dumps(block.arguments)):
                    yield ToolCallDeltaEvent(i, chunk, partial())
                    if paused(chunk):
                        yield aborted()
                        return
                blocks[i] = block
                yield ToolCallEndEvent(i, block, partial())
                continue
            thinking = isinstance(block, ThinkingContent)
            text = block.thinking if isinstance(block, ThinkingContent) else block.text
            blocks.append(_with_text(block, ""))
            yield (ThinkingStartEvent if thinking else TextStartEvent)(i, partial())
            so_far = ""
            for chunk in self._chunks(text):
                so_far += chunk
                blocks[i] = _with_text(block, so_far)
                yield (ThinkingDeltaEvent if thinking else TextDeltaEvent)(i, chunk, partial())
                if paused(chunk):
                    yield aborted()
                    return
            blocks[i] = block
            yield (ThinkingEndEvent if thinking else TextEndEvent)(i, text, partial())
        if final.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
            yield ErrorEvent(final.stop_reason, final)
        else:
            yield DoneEvent(final.stop_reason, final)


def _error(reply: AssistantMessage) -> ErrorEvent:
    return ErrorEvent(reply.stop_reason, reply)


def _aborted(partial: AssistantMessage) -> ErrorEvent:
    """The served reply so far, aborted: unlike `error_reply`, it keeps its usage and time."""
    return _error(attrs.evolve(partial, stop_reason=StopReason.ABORTED,
                               error_message=ABORTED_TEXT))


def _with_text(block: TextContent | ThinkingContent, text: str) -> AssistantContent:
    if isinstance(block, ThinkingContent):
        return attrs.evolve(block, thinking=text)
    return attrs.evolve(block, text=text)


def _check_items(items: object) -> list[FauxResponse]:
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise TypeError(f"'items' must be a list of AssistantMessage or functions, got {items!r}")
    for i, item in enumerate(items):
        if not (isinstance(item, AssistantMessage) or callable(item)):
            raise TypeError(
                f"'items[{i}]' must be an AssistantMessage or a function, got {item!r}"
            )
    return list(items)


def _faux_model(spec: str | Model, api: str, provider: str) -> Model:
    if isinstance(spec, str):
        return Model(spec, spec, api, provider, "http://localhost:0", input=["text", "image"])
    if isinstance(spec, Model):
        return attrs.evolve(spec, api=api, provider=provider)
    raise TypeError(f"'models' entries must be model ids or Model values, got {spec!r}")


def register_faux_provider(
    models: Sequence[str | Model] | None = None,
    api: str | None = None,
    provider: str = "faux",
    tokens_per_second: float | None = None,
    token_size: tuple[int, int] = (3, 5),
) -> FauxProvider:
    """Register a faux provider under a fresh `api` and return it.

    `models` are ids or `Model` values (their `api`/`provider` are replaced); the default is
    one model, `faux-1`. Replies stream in chunks of `token_size` tokens (4 characters each),
    paced at `tokens_per_second` when given.
    """
    if api is None:
        api = f"faux:{now_ms()}:{next(_counter)}"
    if not isinstance(api, str) or not api:
        raise TypeError(f"'api' must be a non-empty str, got {api!r}")
    if not isinstance(provider, str):
        raise TypeError(f"'provider' must be a str, got {provider!r}")
    if tokens_per_second is not None and (
        not isinstance(tokens_per_second, (int, float)) or tokens_per_second <= 0
    ):
        raise ValueError(
            f"'tokens_per_second' must be a positive number, got {tokens_per_second!r}"
        )
    if (
        not isinstance(token_size, tuple) or len(token_size) != 2
        or not all(isinstance(n, int) and n >= 1 for n in token_size)
        or token_size[0] > token_size[1]
    ):
        raise ValueError(
            f"'token_size' must be a (min, max) pair of positive ints, got {token_size!r}"
        )
    if models is None:
        specs: list[Model] = [
            Model("faux-1", "Faux Model", api, provider, "http://localhost:0",
                  input=["text", "image"])
        ]
    else:
        if isinstance(models, str) or not models:
            raise ValueError(f"'models' must be a non-empty list, got {models!r}")
        specs = [_faux_model(m, api, provider) for m in models]
    faux = FauxProvider(specs, api, provider, tokens_per_second, token_size)
    register_provider(api, faux.stream)
    return faux
