"""The agent loop: stream a reply, run the tools it asks for, feed the results back, repeat.

`Run` is the algorithm of reference/pi-agent-core.md §2.2 on one thread (`_entry` starts it):
turn, reply (`ModelCall`), tools (`ToolBatch`), the hooks between turns, the queues. Events
are emitted from the run's thread, in order. Failures of the model, tools and hooks become
messages; only the caller's own sink raising propagates.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from .._core import (
    LLM_TYPES,
    NESTING,
    AbortController,
    AbortSignal,
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AgentStartEvent,
    AgentTool,
    AssistantMessage,
    Decisions,
    EventSink,
    HandoffEvent,
    MessageEndEvent,
    MessageStartEvent,
    Model,
    Nesting,
    StopReason,
    StreamOptions,
    ThinkingLevel,
    ToolApprovalRequestEvent,
    ToolResultMessage,
    TurnEndEvent,
    TurnStartEvent,
    decision_message,
    default_breaker,
    default_convert_to_llm,
    describe,
    error_reply,
    waiting_calls,
)
from ..providers import StreamFn
from ._approvals import Resume, ask
from ._config import AgentLoopConfig, AgentLoopTurnUpdate, PrepareNextTurnContext
from ._exit import ABORT_GRACE_S, in_flight
from ._fallback import options_for
from ._guardrails import Guards
from ._handoff import HandoffTarget, Screen, refusing, screen
from ._limits import LimitCounter
from ._observe import RunStart, RunTrace, start_trace
from ._output import OutputState, Verdict, check_run
from ._reply import ModelCall, SinkError
from ._tool_exec import Submitter, ToolBatch
from ._tool_messages import Inbox, tool_inbox
from ._workers import WorkerPool

__all__ = ["Run"]

_log = logging.getLogger(__name__)


@attrs.define(eq=False)
class Run:
    """One run of the loop; lives on one thread from start to end.

    `caller` is the caller's signal: the run follows it and never aborts it. `halt` stops the
    run from inside too: it follows `caller` and is aborted when the run ends early, when the
    interpreter exits, and when the consumer of a `detached` run (`agent_loop`) lets it go.
    Tools get `halt`'s signal. Hooks and the provider get `signal`: the caller's, so that an
    `Agent` hands its own signal through, or in a `detached` run `halt`'s.
    """

    context: AgentContext
    config: AgentLoopConfig
    sink: EventSink
    caller: AbortSignal
    stream_fn: StreamFn
    output: OutputState | None = None  # with an output_type: its tool and retries
    detached: bool = False
    resume: Resume | None = None  # a `*_continue` run that begins with a paused batch (§20)
    halt: AbortController = attrs.field(init=False, factory=AbortController)
    halt_signal: AbortSignal = attrs.field(init=False)  # `halt`'s, read every turn
    signal: AbortSignal = attrs.field(init=False)
    model: Model = attrs.field(init=False)  # prepare_next_turn may swap these two for the run
    reasoning: ThinkingLevel | None = attrs.field(init=False)
    new_messages: list[AgentMessage] = attrs.field(factory=list)
    turn_open: bool = False
    turns: int = 0  # turn_start events so far
    _options: StreamOptions | None = None
    _choice: str | None = None  # the tool choice of the next model call
    _schema: dict[str, Any] | None = None  # in native output mode, the answer's JSON Schema
    _options_for: tuple[Any, ...] = ()
    _executor: Submitter | None = None
    _pool: WorkerPool | None = None  # the run's own, when the config names no executor
    _inbox: Inbox | None = None  # where tool calls report, once the run has any
    _limits: LimitCounter | None = None  # with usage limits: what the run has used
    _llm_only: bool = False  # every message in the context is a user/assistant/tool result
    _trace: RunTrace | None = None  # what observes the run, when anything does
    _scope: str | None = None  # the idempotency scope of its tool calls, once it has any
    _guards: Guards | None = None  # its guardrails, when it has any (API §26)
    _nesting: Nesting = attrs.field(init=False, factory=NESTING.get)  # among agents (§25)
    _only: frozenset[str] | None = None  # a resume's calls of paused children (API §25)
    _paused_results: list[ToolResultMessage] = attrs.field(init=False, factory=list)
    agent_name: str = attrs.field(init=False)  # the agent it runs as (API §25: handoffs)
    handoffs: int = attrs.field(init=False, default=0)  # handoffs made so far

    def __attrs_post_init__(self) -> None:
        self.halt_signal = self.halt.signal
        self.signal = self.halt_signal if self.detached else self.caller
        self.model = self.config.model
        self.reasoning = self.config.reasoning
        self.agent_name = self.config.agent_name
        config = self.config
        # With none of the hooks that see the live context, the loop alone writes its
        # messages: it can then know, at O(1) a message, that all of them are plain LLM
        # messages, and spare every model call the O(n) check of default_convert_to_llm.
        sole_writer = (config.convert_to_llm is default_convert_to_llm
                       and config.transform_context is None and config.before_tool_call is None
                       and config.after_tool_call is None and config.prepare_next_turn is None
                       and config.should_stop_after_turn is None)
        self._llm_only = sole_writer and LLM_TYPES.issuperset(map(type, self.context.messages))
        if config.limits is not None:
            self._limits = LimitCounter(config.limits, self._answers_by_tool)
        self._choice = config.tool_choice or self._default_choice()
        if config.input_guardrails or config.output_guardrails:
            self._guards = Guards(config.input_guardrails, config.output_guardrails,
                                  config.output_retries, self._send)
        if self.output is not None and self.output.native:
            self._schema = self.output.tool.parameters

    def execute(self, prompts: list[AgentMessage] | None) -> list[AgentMessage]:
        """Run on this thread until done (observed, if anything observes runs); the new messages."""
        trace = start_trace(RunStart(self.model, self.context, prompts, self.halt.signal))
        if trace is None:
            return self._execute(prompts)
        self._trace, sink = trace, self.sink

        def traced(event: AgentEvent) -> None:
            trace.event(event)
            sink(event)

        self.sink = traced
        try:
            messages = self._execute(prompts)
        except BaseException as exc:
            trace.end(exc)
            raise
        trace.end(None)
        return messages

    def _execute(self, prompts: list[AgentMessage] | None) -> list[AgentMessage]:
        signal, halt = self.caller, self.halt
        unlink = signal.add_listener(lambda: halt.abort(signal.reason))
        early = True  # the run ends by an exception: tell the tools still running, wait a bit
        try:
            with in_flight(halt.abort):
                try:
                    messages = self._loop(prompts)
                except SinkError:
                    raise
                except Exception as exc:  # a hook's, or the loop's own: the run's last message
                    _log.debug("agent loop failed", exc_info=True)
                    messages = self._end_with_error(describe(exc))
            early = False
            return messages
        except SinkError as wrapped:
            raise wrapped.args[0] from None  # the sink's own exception
        finally:
            unlink()
            if early:
                halt.abort("the run ended early")
            if self._pool is not None:  # a tool ignoring its abort is left behind, not waited for
                self._pool.shutdown(wait=early, timeout=ABORT_GRACE_S)

    def _loop(self, prompts: list[AgentMessage] | None) -> list[AgentMessage]:
        self._emit(AgentStartEvent())
        self._emit(TurnStartEvent())
        for message in prompts or ():
            self._add(message)
        resume, self.resume = self.resume, None
        # A paused batch's results must follow its reply: steering waits for the next turn
        pending = [] if resume else self._poll(self.config.get_steering_messages)
        halt_signal, first = self.halt_signal, True
        while True:
            more_tools = True
            while more_tools or pending:
                if not first:
                    if halt_signal.aborted:
                        return self._end()
                    self._emit(TurnStartEvent())
                first = False
                for message in pending:
                    if halt_signal.aborted:
                        break  # the rest stay with their owner (the Agent requeues them)
                    self._add(message)
                decisions = None
                if resume is not None:
                    reply, decisions, self._only = resume.reply, resume.decisions, resume.only
                    resume = None
                else:
                    reply = self._reply()
                    if reply.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
                        self._emit(TurnEndEvent(reply, []))
                        return self._end()
                ran = self._tools_and_handoff(reply, decisions)
                if ran is None:  # calls wait for approval: the run ends, they stay pending
                    self._emit(TurnEndEvent(reply, self._paused_results))
                    return self._end()
                results, terminate = ran
                if results and self.config.reset_tool_choice:  # a forced choice was obeyed
                    self._choice = self._default_choice()
                self._emit(TurnEndEvent(reply, results))
                more_tools = bool(results) and not terminate
                nudge: list[AgentMessage] = []
                output = self.output  # with an output_type (API §14), a verdict on the turn
                verdict = None if output is None else output.after_turn(reply, results)
                if verdict is Verdict.FAILED:
                    return self._end_with_error(output.failure_text())  # type: ignore[union-attr]
                if verdict is Verdict.NUDGE:
                    nudge.append(output.nudge())  # type: ignore[union-attr]
                if self._guards is not None and (verdict is Verdict.DONE or (
                        verdict is None and not more_tools)):  # the run's last reply (§26)
                    check = self._guards.after_final(reply, results, output)
                    if isinstance(check, str):
                        return self._end_with_error(check)
                    if check is not None:  # sent back to the model: the run goes on
                        nudge.append(check)
                        verdict = None
                if verdict is Verdict.DONE:
                    return self._end()
                if self._between_turns(reply, results) or halt_signal.aborted:
                    return self._end()
                pending = nudge + self._poll(self.config.get_steering_messages)
            pending = self._poll(self.config.get_follow_up_messages)
            if not pending:
                return self._end()

    def _reply(self) -> AssistantMessage:
        limits = self._limits
        limit = charge = None
        if limits is not None:
            limit = lambda: limits.before_model_call(self.turns)  # noqa: E731
            charge = limits.charge
        # The process's breaker watches the runs that have somewhere to fall back to
        config = self.config
        breaker = config.circuit_breaker or (default_breaker() if config.fallback_models
                                             else None)
        guards = self._guards  # input guardrails run beside the first call (API §26)
        halt = guards.first_call(self.context.messages, self._get_pool, self.halt_signal) \
            if guards is not None else None
        options = self._call_options if halt is None else (  # a trip cuts the request too
            lambda model: attrs.evolve(self._call_options(model), signal=halt))
        call = ModelCall(self.context, config, self.model, options, self.stream_fn,
                         self.signal, halt or self.halt_signal, self._send, self._emit,
                         self.new_messages, limit, self._llm_only, self._trace,
                         breaker if breaker is not None and breaker.failure_threshold else None,
                         charge, guards.tripped if guards is not None else None)
        final = call.reply()
        if guards is not None and (ended := guards.after_first_reply(
                self.halt_signal, final, self.model)) is not None:
            self._add(ended)
            final = ended
        self._llm_only = call.llm_only  # a before_model_call hook may have replaced the messages
        return final

    def _call_options(self, model: Model) -> StreamOptions:
        """The provider options of the next call to `model` (the run's, or a fallback)."""
        config = self.config
        key = config.get_api_key(model.provider) if config.get_api_key else None
        if model is not self.model:  # a fallback: its own key, never another provider's
            return options_for(model, self.model, config.stream_options(
                self.signal, key or config.options.api_key, self.reasoning, self._choice,
                self._schema), key)
        wanted = (key or config.options.api_key, self.reasoning, self._choice)
        if self._options is None or self._options_for != wanted:  # rebuilt only on a change
            self._options = config.stream_options(self.signal, *wanted, self._schema)
            self._options_for = wanted
        return self._options

    @property
    def _answers_by_tool(self) -> bool:
        """Whether the run's output comes through the `final_result` tool (API §14)."""
        return self.output is not None and not self.output.native

    def _default_choice(self) -> str | None:
        """The tool choice when none is set (or it was reset): `"required"` if a tool answers.

        A run whose output comes through `final_result` must call a tool, that one included,
        to end; any other run leaves the choice to the provider.
        """
        return "required" if self._answers_by_tool else None

    def _run_tools(self, reply: AssistantMessage, decisions: Decisions | None,
                   ) -> tuple[list[ToolResultMessage], bool] | None:
        """Run the calls of `reply`; None when some wait for approval and nobody can decide.

        `decisions` are those of a resumed batch; without them, calls needing approval are
        announced (`tool_approval_request`) and decided by `approve` if the config has one.
        Decisions enter the transcript (a `ToolApprovalMessage`) before any call runs.
        """
        calls, only, self._only = reply.tool_calls, self._only, None
        if not calls:
            return [], False
        if only is not None:  # calls of paused children, decided: only they run (API §25)
            calls = [c for c in calls if c.id in only]
        # A usage limit reached refuses the calls (and then the next model call)
        refusal = self._limits.before_tools(reply) if self._limits and only is None else None
        if refusal is None and reply.stop_reason != StopReason.LENGTH:
            if decisions is None:
                waiting = waiting_calls(reply, self.context.tools)
                for call in waiting:
                    self._send(ToolApprovalRequestEvent(call.id, call.name, call.arguments))
                if waiting:
                    if self.config.approve is None:
                        return None
                    by_name = {t.name: t for t in self.context.tools}
                    decisions = ask(self.config.approve,
                                    [(c, by_name[c.name]) for c in waiting],
                                    self._get_pool(), self.halt_signal)
            if decisions:
                self._add(decision_message(decisions))
        if self._inbox is None:
            self._inbox = tool_inbox(self.halt_signal)
        denied = {k: v for k, v in decisions.items() if v is not None} if decisions else None
        if self._scope is None:  # without one configured, a random scope per run (API §24)
            scope = self.config.idempotency_scope
            self._scope = os.urandom(16).hex() if scope is None else scope
        batch = ToolBatch(reply, self.context, self.config, self.signal, self._send,
                          self._get_executor, self.halt_signal, self._inbox,
                          self._trace.tool_work if self._trace is not None else None, denied,
                          scope=self._scope, nesting=self._tool_nesting())
        results, terminate = batch.run(calls, refusal)
        self.context.messages.extend(results)
        self.new_messages.extend(results)
        if batch.paused:  # calls left open (`CallLeftOpen`): the run ends, they wait
            self._paused_results = results
            return None
        return results, terminate

    def _tool_nesting(self) -> Nesting:
        """The run's nesting as its tools see it: with the run's `approve` (API §25)."""
        if self.config.approve is not None and self._nesting.approve is not self.config.approve:
            self._nesting = attrs.evolve(self._nesting, approve=self.config.approve)
        return self._nesting

    def _tools_and_handoff(self, reply: AssistantMessage, decisions: Decisions | None,
                           ) -> tuple[list[ToolResultMessage], bool] | None:
        """`_run_tools`, then the reply's handoff, if any (`_handoff`: `screen`, `_hand_off`)."""
        judged: Screen | None = None
        if reply.tool_calls:
            judged = screen(reply.tool_calls, self.context.tools, self.handoffs,
                            self.agent_name, self._check_target)
        if judged is None:
            return self._run_tools(reply, decisions)
        config = self.config
        if judged.refused:  # the run's config, for this batch only
            self.config = attrs.evolve(config, before_tool_call=refusing(
                config.before_tool_call, judged.refused))
        try:
            ran = self._run_tools(reply, decisions)
        finally:
            self.config = config
        if ran is not None and judged.chosen is not None:
            call_id, target = judged.chosen
            if any(r.tool_call_id == call_id and not r.is_error for r in ran[0]):
                self._hand_off(target)
        return ran

    def _own_tools(self, tools: list[AgentTool]) -> list[AgentTool]:
        """`tools` and, in a run answering through `final_result`, that tool (API §14)."""
        own = None if self.output is None or self.output.native else self.output.tool
        return tools if own is None else [*tools, own]

    def _check_target(self, target: HandoffTarget) -> None:
        """Raise `ValueError` if the run cannot go on with `target` (as `check_run` says)."""
        check_run(self.config, target.model, target.tools)

    def _hand_off(self, target: HandoffTarget) -> None:
        """Go on as `target`: its model, system prompt, tools and thinking level.

        The transcript, the config (hooks, limits, options, output settings) and the stream
        function stay the run's; the context is the run's own snapshot, changed in place.
        """
        self._send(HandoffEvent(self.agent_name, target.name))
        self.handoffs += 1
        self.agent_name = target.name
        self.model, self.reasoning = target.model, target.reasoning
        self.context.system_prompt = target.system_prompt
        self.context.tools = self._own_tools(list(target.tools))

    def _between_turns(self, reply: AssistantMessage, results: list[ToolResultMessage]) -> bool:
        """Run the between-turn hooks; True when the run should stop now."""
        config = self.config
        if config.prepare_next_turn is not None:
            turn = PrepareNextTurnContext(reply, results, self.context, list(self.new_messages))
            update = config.prepare_next_turn(turn, self.signal)
            if isinstance(update, AgentLoopTurnUpdate):  # what it gives replaces its own
                self.context = self.context if update.context is None else update.context
                self.model = self.model if update.model is None else update.model
                level = update.thinking_level
                self.reasoning = self.reasoning if level is None else level
                if update.context is not None or update.model is not None:
                    own = None if self.output is None else self.output.tool
                    check_run(config, self.model, [t for t in self.context.tools if t is not own])
        if config.should_stop_after_turn is not None:
            turn = PrepareNextTurnContext(reply, results, self.context, list(self.new_messages))
            return bool(config.should_stop_after_turn(turn))
        return False

    def _poll(self, source: Callable[[], Sequence[AgentMessage]] | None) -> list[AgentMessage]:
        if source is None or self.halt_signal.aborted:
            return []
        return list(source() or ())

    def _add(self, message: AgentMessage) -> None:
        if type(message) not in LLM_TYPES:
            self._llm_only = False
        self._send(MessageStartEvent(message))
        self._send(MessageEndEvent(message))
        self.context.messages.append(message)
        self.new_messages.append(message)

    def _end(self) -> list[AgentMessage]:
        self._send(AgentEndEvent(list(self.new_messages)))
        return self.new_messages

    def _end_with_error(self, text: str) -> list[AgentMessage]:
        """End the run with an assistant message of `stop_reason` error saying `text`."""
        message = error_reply(self.model, text, aborted=self.halt_signal.aborted)
        if not self.turn_open:
            self._emit(TurnStartEvent())
        self._add(message)
        self._emit(TurnEndEvent(message, []))
        return self._end()

    def _emit(self, event: AgentEvent) -> None:
        """Emit any event (hooks emit through this): a turn's start or end is counted."""
        if isinstance(event, TurnStartEvent):
            self.turn_open = True
            self.turns += 1
        elif isinstance(event, TurnEndEvent):
            self.turn_open = False
        self._send(event)

    def _send(self, event: AgentEvent) -> None:
        """Emit an event of the run's own that neither starts nor ends a turn."""
        try:
            self.sink(event)
        except Exception as exc:
            raise SinkError(exc) from exc

    def _get_executor(self) -> Submitter:
        if self._executor is None:
            executor = self.config.tool_executor
            self._executor = self._get_pool() if executor is None else executor
        return self._executor

    def _get_pool(self) -> WorkerPool:
        """The run's own threads (`approve` runs there even when the config names an executor)."""
        if self._pool is None:
            self._pool = WorkerPool()
        return self._pool
