"""`ScriptedModel`: an offline model serving scripted replies and recording every request."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, final

import attrs

from .._core import (
    AssistantMessage,
    AssistantMessageEventStream,
    Context,
    ErrorEvent,
    Message,
    Model,
    ProviderNotFoundError,
    StreamOptions,
    ToolCall,
    ToolResultMessage,
    error_reply,
)
from ..providers import register_provider, unregister_provider
from ..providers.faux import FauxProvider, register_faux_provider
from ._calls import ModelCall, how_often, plural
from ._replies import Reply, describe_reply, to_message

__all__ = ["ScriptedModel", "scripted_model"]


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
            model: A model id (provider `"faux"`; the model takes `output_mode="native"`), or
                a `Model` whose fields (provider, context window, cost, `compat`, ...) to keep;
                its `api` is replaced by the fresh one.
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
        if isinstance(model, str):  # it answers in any format asked for: JSON, if scripted so
            self.model = attrs.evolve(self.model, compat={"supports_native_output": True})
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
        items = [self._dynamic(r) if callable(r) else to_message(r) for r in replies]
        with self._lock:
            self.provider.append_responses(items)
            self._script.extend(describe_reply(r) for r in replies)

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
                                 f"{how_often(len(calls))}")
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
        wanted = "at least once" if times is None else how_often(times)
        lines = [f"expected the scripted model to be called {wanted}, it was called "
                 f"{how_often(len(calls))}"]
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
            raise AssertionError(f"{plural(len(unused), 'scripted reply', 'scripted replies')} "
                                 f"{were} never requested (the model was called "
                                 f"{how_often(count)}): {', '.join(unused)}")

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
                 else f"{plural(self.pending_replies, 'reply', 'replies')} pending")
        return f"<ScriptedModel {self.model.id!r} {state}, called {how_often(self.call_count)}>"

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
            return to_message(fn(context, options, model))

        reply.__qualname__ = getattr(fn, "__qualname__", "reply")
        return reply


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
        replies: The replies, in order (their kinds: see `agentcore.testing`).
        model: A model id, or a `Model` to keep the fields of.
        tokens_per_second: Pace the streamed replies (None: as fast as possible).
        token_size: Replies stream in chunks of this many tokens (min, max).

    Returns:
        The registered `ScriptedModel`.
    """
    return ScriptedModel(replies, model=model, tokens_per_second=tokens_per_second,
                         token_size=token_size)
