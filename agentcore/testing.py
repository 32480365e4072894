"""Helpers for testing code built on agentcore: scripted models and event recorders.

Everything here runs offline. `scripted_model` serves replies you script and records every
request, so a test can say what the model answers and then check what it was sent::

    from agentcore import Agent, ToolExecutionEndEvent, tool
    from agentcore.testing import record_events, scripted_model, tool_call

    @tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    def test_the_agent_adds() -> None:
        with scripted_model([tool_call("add", {"a": 1, "b": 2}), "The answer is 3"]) as fake:
            agent = Agent(fake.model, system_prompt="Be brief.", tools=[add])
            run = agent.prompt("What is 1 + 2?")
            events = record_events(run, timeout=5)
        assert run.result()[-1].text == "The answer is 3"
        fake.assert_called(times=2)
        assert fake.sent_system_prompt == "Be brief."
        assert fake.sent_tool_results()[0].text == "3"
        fake.assert_tool_called("add", {"a": 1, "b": 2})
        assert events.of(ToolExecutionEndEvent)[0].is_error is False

A reply is a string (one text block), a content block or a list of them (strings become text
blocks), an `AssistantMessage` (e.g. `faux_assistant_message([], "error", "boom")` for a
failing call), or a function `(context, options, model)` returning any of those, for replies
that depend on the request. A call with no reply left fails the way a real provider does: with
an `error` event, "No more faux responses queued" (`run.raise_for_error()` raises it; the
assertion helpers mark such calls). Wait for a run inside the `with` block (`run.result()`,
`run.text`): a run still going when the block ends fails with "the scripted model ... was
closed while a run used it".

The lower-level faux provider (`register_faux_provider` & co., see `agentcore.providers.faux`)
is re-exported here. The module has no pytest dependency: assertion helpers raise
`AssertionError` with a message describing what the model actually saw. A fixture is two lines::

    @pytest.fixture
    def fake() -> Iterator[ScriptedModel]:
        with scripted_model() as model:
            yield model
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, TypeVar, final

import attrs

from ._agent import Agent, AgentRun
from ._core import (
    AbortSignal,
    AgentEvent,
    AssistantContent,
    AssistantMessage,
    AssistantMessageEventStream,
    Context,
    ErrorEvent,
    EventStream,
    Message,
    MessageUpdateEvent,
    Model,
    ProviderNotFoundError,
    StreamOptions,
    TextContent,
    TextDeltaEvent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    error_reply,
)
from .providers import register_provider, unregister_provider
from .providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    register_faux_provider,
)

__all__ = [
    "EventRecorder",
    "FauxProvider",
    "ModelCall",
    "Reply",
    "ScriptedModel",
    "faux_assistant_message",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "record_events",
    "register_faux_provider",
    "scripted_model",
    "tool_call",
]

ReplyContent = str | TextContent | ThinkingContent | ToolCall | Sequence[
    str | TextContent | ThinkingContent | ToolCall
]
Reply = (
    ReplyContent
    | AssistantMessage
    | Callable[[Context, StreamOptions, Model], ReplyContent | AssistantMessage]
)
"""One scripted reply: text, block(s), an `AssistantMessage`, or a function of the request."""

E = TypeVar("E")


def tool_call(name: str, args: dict[str, Any] | None = None, *, id: str | None = None) -> ToolCall:
    """A tool call block for a scripted reply (a reply holding one stops with `toolUse`).

    Args:
        name: The tool to call.
        args: Its arguments; none by default.
        id: The call id; a unique one by default.

    Returns:
        The `ToolCall` block.
    """
    return faux_tool_call(name, {} if args is None else dict(args), id)


def _to_message(reply: object) -> AssistantMessage:
    """A reply as the `AssistantMessage` the faux provider streams."""
    if isinstance(reply, AssistantMessage):
        return reply
    if isinstance(reply, (str, TextContent, ThinkingContent, ToolCall)):
        return faux_assistant_message(_to_block(reply))
    if isinstance(reply, (list, tuple)):
        return faux_assistant_message([_to_block(item) for item in reply])
    raise TypeError(f"a scripted reply must be a str, content block(s), an AssistantMessage or "
                    f"a function, got {reply!r}")


def _to_block(item: object) -> AssistantContent:
    if isinstance(item, str):
        return TextContent(item)
    if isinstance(item, (TextContent, ThinkingContent, ToolCall)):
        return item
    raise TypeError(f"a scripted reply's blocks must be str, TextContent, ThinkingContent or "
                    f"ToolCall, got {item!r}")


def _describe(reply: object) -> str:
    if callable(reply):
        return f"<function {getattr(reply, '__qualname__', repr(reply))}>"
    message = _to_message(reply)
    parts = [repr(message.text)] if message.text else []
    parts += [f"{c.name}({c.arguments!r})" for c in message.tool_calls]
    return " + ".join(parts) or repr(message)


def _shorten(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@attrs.frozen
class ModelCall:
    """One request the scripted model received: the model, the context and the options."""

    model: Model
    context: Context
    options: StreamOptions

    @property
    def system_prompt(self) -> str | None:
        """The system prompt sent."""
        return self.context.system_prompt

    @property
    def messages(self) -> list[Message]:
        """The messages sent, oldest first (a copy)."""
        return list(self.context.messages)

    @property
    def tools(self) -> list[Tool]:
        """The tools offered to the model (empty when none)."""
        return list(self.context.tools or ())

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools offered."""
        return [t.name for t in self.context.tools or ()]

    @property
    def tool_results(self) -> list[ToolResultMessage]:
        """The tool results among the messages sent, oldest first."""
        return [m for m in self.context.messages if isinstance(m, ToolResultMessage)]

    def summary(self) -> str:
        """A one-line description, used in assertion messages: the last message sent."""
        if not self.context.messages:
            return "no messages"
        last = self.context.messages[-1]
        if isinstance(last, AssistantMessage):
            text = last.text
        elif isinstance(last, ToolResultMessage):
            text = f"{last.tool_name}: {last.text}"
        else:
            text = last.text
        count = _plural(len(self.context.messages), "message")
        return f"{count}, last {last.role}: {_shorten(text)!r}"


@final
class ScriptedModel:
    """A scripted, offline model that records every request it serves.

    Pass `model` to an `Agent` or an `AgentLoopConfig`. Each model call takes the next scripted
    reply and streams it through the full event protocol. The model is registered under a fresh
    `api` until `close()` (or the end of a `with` block), so tests running at the same time do
    not interfere. A run that calls the model after that fails with "the scripted model ... was
    closed while a run used it".

    Thread-safe: replies may be added and calls inspected from any thread while runs use it.

    Attributes:
        model: The `Model` to pass to an `Agent` or `AgentLoopConfig`.
        provider: The underlying `FauxProvider` (for its pacing and `call_count`).
    """

    def __init__(
        self,
        replies: Sequence[Reply] = (),
        *,
        model: str | Model = "scripted-1",
        tokens_per_second: float | None = None,
        token_size: tuple[int, int] = (3, 5),
    ) -> None:
        """Register the model and queue `replies`.

        Args:
            replies: The replies, in the order the model will give them.
            model: A model id (provider `"faux"`), or a `Model` whose fields (provider, context
                window, cost, ...) to keep; its `api` is replaced by the fresh one.
            tokens_per_second: Pace the streamed replies (None: as fast as possible).
            token_size: Replies stream in chunks of this many tokens (min, max), 4 chars each.
        """
        self._lock = threading.Lock()
        self._serving = threading.Lock()  # a call takes the next reply and notes if there was one
        self._calls: list[ModelCall] = []
        self._script: list[str] = []
        self._unanswered: set[int] = set()  # calls that found no reply left
        self._closed = False
        provider = model.provider if isinstance(model, Model) else "faux"
        self.provider: FauxProvider = register_faux_provider(
            [model], provider=provider, tokens_per_second=tokens_per_second,
            token_size=token_size)
        self.model: Model = self.provider.get_model()
        register_provider(self.provider.api, self._stream)  # record, then serve
        try:
            self.add_replies(replies)
        except BaseException:
            self._closed = True
            self.provider.unregister()
            raise

    def add_replies(self, replies: Sequence[Reply]) -> None:
        """Queue more replies after the ones still pending.

        Raises:
            TypeError: A reply is of no supported kind (checked now, not when served).
        """
        if isinstance(replies, (str, bytes)) or not isinstance(replies, Sequence):
            raise TypeError(f"'replies' must be a list of replies, got {replies!r}")
        items = [self._dynamic(r) if callable(r) else _to_message(r) for r in replies]
        with self._lock:
            self.provider.append_responses(items)
            self._script.extend(_describe(r) for r in replies)

    @property
    def pending_replies(self) -> int:
        """How many scripted replies no call has taken yet."""
        return self.provider.pending_response_count()

    @property
    def calls(self) -> list[ModelCall]:
        """Every request served so far, oldest first (a copy)."""
        with self._lock:
            return list(self._calls)

    @property
    def call_count(self) -> int:
        """How many requests the model has received (including ones it had no reply for)."""
        with self._lock:
            return len(self._calls)

    def call(self, index: int = -1) -> ModelCall:
        """One request, by position (negative counts from the end).

        Raises:
            AssertionError: There is no such call.
        """
        __tracebackhide__ = True
        calls = self.calls
        if not -len(calls) <= index < len(calls):
            raise AssertionError(f"the scripted model has no call {index}: it was called "
                                 f"{_times(len(calls))}")
        return calls[index]

    @property
    def last_call(self) -> ModelCall:
        """The most recent request (`AssertionError` if there was none)."""
        __tracebackhide__ = True
        return self.call(-1)

    @property
    def last_context(self) -> Context:
        """The `Context` of the most recent request."""
        __tracebackhide__ = True
        return self.call(-1).context

    @property
    def sent_system_prompt(self) -> str | None:
        """The system prompt of the most recent request."""
        __tracebackhide__ = True
        return self.call(-1).system_prompt

    def sent_messages(self, call: int = -1) -> list[Message]:
        """The messages sent in one request (the last by default)."""
        __tracebackhide__ = True
        return self.call(call).messages

    def sent_tool_results(self, call: int = -1) -> list[ToolResultMessage]:
        """The tool results among the messages of one request (the last by default)."""
        __tracebackhide__ = True
        return self.call(call).tool_results

    def assert_called(self, times: int | None = None) -> None:
        """Check the model was called `times` times (at least once when None).

        Raises:
            AssertionError: It was not; the message lists the calls it did get.
        """
        __tracebackhide__ = True
        calls = self.calls
        if times is None and calls:
            return
        if times is not None and len(calls) == times:
            return
        wanted = "at least once" if times is None else _times(times)
        lines = [f"expected the scripted model to be called {wanted}, it was called "
                 f"{_times(len(calls))}"]
        with self._lock:
            unanswered = set(self._unanswered)
        lines += [f"  call {i}: {c.summary()}"
                  + ("  [no scripted reply left]" if i in unanswered else "")
                  for i, c in enumerate(calls)]
        raise AssertionError("\n".join(lines))

    def assert_tool_called(self, name: str, args: dict[str, Any] | None = None) -> ToolCall:
        """Check the model called the tool `name` (with exactly `args`, when given).

        A tool call counts once a later request carries it, with its result: the call of a
        reply that no request followed (the run's last) is not seen.

        Returns:
            The first matching `ToolCall`.

        Raises:
            AssertionError: No call matched; the message lists the calls the model made.
        """
        __tracebackhide__ = True
        made: dict[str, ToolCall] = {}
        for call in self.calls:
            for message in call.context.messages:
                if isinstance(message, AssistantMessage):
                    made.update((c.id, c) for c in message.tool_calls)
        for tool_call in made.values():
            if tool_call.name == name and (args is None or tool_call.arguments == args):
                return tool_call
        wanted = repr(name) if args is None else f"{name!r} with {args!r}"
        seen = ", ".join(f"{c.name}({c.arguments!r})" for c in made.values()) or "none"
        raise AssertionError(f"expected the model to call {wanted}; the tool calls it made: "
                             f"{seen}")

    def assert_all_replies_used(self) -> None:
        """Check every scripted reply was requested.

        Raises:
            AssertionError: Some were not; the message lists them.
        """
        __tracebackhide__ = True
        with self._lock:
            pending = self.provider.pending_response_count()
            unused = self._script[len(self._script) - pending :] if pending else []
            count = len(self._calls)
        if unused:
            were = "was" if len(unused) == 1 else "were"
            raise AssertionError(f"{_plural(len(unused), 'scripted reply', 'scripted replies')} "
                                 f"{were} never requested (the model was called {_times(count)}):"
                                 f" {', '.join(unused)}")

    @property
    def closed(self) -> bool:
        """Whether `close()` has run: the model is no longer registered."""
        return self._closed

    def close(self) -> None:
        """Unregister the model; runs using it afterwards fail. Safe to call twice.

        While scripted replies are left, a run may still be coming for them (one not waited
        for): the model's `api` then stays registered to a stand-in until its first call,
        which fails saying that the scripted model was closed while a run used it.
        """
        self._close(expect_runs=True)

    def _close(self, expect_runs: bool) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            unregister_provider(self.provider.api)
        except ProviderNotFoundError:  # already unregistered by hand
            return
        if expect_runs and self.provider.pending_response_count():
            register_provider(self.provider.api, _closed_stand_in(self.provider.api, self.model))

    def __enter__(self) -> ScriptedModel:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # after an exception, the block's own failure is the one to report: leave nothing behind
        self._close(expect_runs=exc_type is None)

    def __repr__(self) -> str:
        state = ("closed" if self._closed
                 else f"{_plural(self.pending_replies, 'reply', 'replies')} pending")
        return f"<ScriptedModel {self.model.id!r} {state}, called {_times(self.call_count)}>"

    def _stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        # The loop builds a fresh message list per call; copy anyway so that a caller reusing
        # its list cannot rewrite what was recorded.
        recorded = attrs.evolve(context, messages=list(context.messages),
                                tools=None if context.tools is None else list(context.tools))
        with self._serving:
            with self._lock:
                self._calls.append(ModelCall(model, recorded, options))
                if not self.provider.pending_response_count():
                    self._unanswered.add(len(self._calls) - 1)
            return self.provider.stream(model, context, options)

    @staticmethod
    def _dynamic(
        fn: Callable[[Context, StreamOptions, Model], Any],
    ) -> Callable[[Context, StreamOptions, Model], AssistantMessage]:
        def reply(context: Context, options: StreamOptions, model: Model) -> AssistantMessage:
            return _to_message(fn(context, options, model))

        reply.__qualname__ = getattr(fn, "__qualname__", "reply")
        return reply


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _plural(count: int, word: str, words: str | None = None) -> str:
    return f"{count} {word if count == 1 else words or word + 's'}"


def _closed_text(model: Model) -> str:
    """The error of a run that calls a scripted model after its `with` block ended."""
    return (f"the scripted model {model.id!r} was closed while a run used it: wait for the run "
            "inside the `with scripted_model(...)` block (e.g. call run.result() there)")


def _closed_stand_in(api: str, model: Model) -> Callable[..., AssistantMessageEventStream]:
    """What serves `api` once its scripted model is closed: one failed call, then nothing."""
    text = _closed_text(model)

    def closed(model: Model, context: Context, options: StreamOptions
               ) -> AssistantMessageEventStream:
        with contextlib.suppress(ProviderNotFoundError):
            unregister_provider(api)
        final = error_reply(model, text)
        stream = AssistantMessageEventStream()
        stream.push(ErrorEvent(final.stop_reason, final))
        return stream

    return closed


def scripted_model(
    replies: Sequence[Reply] = (),
    *,
    model: str | Model = "scripted-1",
    tokens_per_second: float | None = None,
    token_size: tuple[int, int] = (3, 5),
) -> ScriptedModel:
    """Register a `ScriptedModel` serving `replies`; use it in a `with` block or `close()` it.

    Args:
        replies: The replies, in order (see the module docstring for the kinds).
        model: A model id, or a `Model` to keep the fields of.
        tokens_per_second: Pace the streamed replies (None: as fast as possible).
        token_size: Replies stream in chunks of this many tokens (min, max).

    Returns:
        The registered `ScriptedModel`.
    """
    return ScriptedModel(replies, model=model, tokens_per_second=tokens_per_second,
                         token_size=token_size)


@final
class EventRecorder:
    """Collects agent events; call it as a sink (`emit=`) or an `Agent` listener.

    Thread-safe: events may arrive on a run's thread while a test reads them.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: list[AgentEvent] = []
        self._unsubscribe: Callable[[], None] | None = None

    def __call__(self, event: AgentEvent, signal: AbortSignal | None = None) -> None:
        """Record `event` (`signal`, passed to `Agent` listeners, is ignored)."""
        with self._lock:
            self._events.append(event)

    @property
    def events(self) -> list[AgentEvent]:
        """The events recorded, in order (a copy)."""
        with self._lock:
            return list(self._events)

    @property
    def types(self) -> list[str]:
        """The `type` tag of each event recorded, e.g. `["agent_start", "turn_start", ...]`."""
        return [e.type for e in self.events]

    def of(self, cls: type[E]) -> list[E]:
        """The recorded events of class `cls`, in order."""
        return [e for e in self.events if isinstance(e, cls)]

    @property
    def streamed_text(self) -> str:
        """The text deltas of every assistant message, joined: what a user saw stream in."""
        return "".join(e.assistant_message_event.delta for e in self.of(MessageUpdateEvent)
                       if isinstance(e.assistant_message_event, TextDeltaEvent))

    def clear(self) -> None:
        """Forget the events recorded so far."""
        with self._lock:
            self._events.clear()

    def close(self) -> None:
        """Stop listening to the agent given to `record_events`, if any."""
        unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None:
            unsubscribe()

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)

    def __enter__(self) -> EventRecorder:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<EventRecorder {len(self)} events>"


def record_events(
    source: Agent | AgentRun | EventStream[AgentEvent, Any] | None = None,
    timeout: float | None = None,
) -> EventRecorder:
    """An `EventRecorder`, filled from `source`.

    Args:
        source: An `Agent`: the recorder is subscribed and records every later run until
            `close()` (or the end of a `with` block). An `AgentRun`: waits for it to end and
            records all its events. The stream of `agent_loop`: waits for it to end and records
            its events (consuming it; `result()` still works). None: an empty recorder, to
            pass as `emit=` or to `Agent.subscribe`.
        timeout: For a run or a stream, how long to wait for the end, in seconds.

    Returns:
        The recorder.

    Raises:
        TimeoutError: The run or stream did not end within `timeout`.
    """
    recorder = EventRecorder()
    if isinstance(source, Agent):
        recorder._unsubscribe = source.subscribe(recorder)
    elif isinstance(source, (AgentRun, EventStream)):
        source.result(timeout)
        for event in source:
            recorder(event)
    elif source is not None:
        raise TypeError(f"'source' must be an Agent, an AgentRun, an EventStream or None, "
                        f"got {source!r}")
    return recorder
