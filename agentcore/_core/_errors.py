"""The exception tree.

Everything agentcore raises on purpose derives from one root, so callers can catch it at once::

    AgentcoreError
    ├── AgentBusyError            a run is active (prompt, continue_, reset, messages=)
    │   └── SessionBusyError      another holder drives the agent's session (API §27)
    ├── AgentClosedError          the agent is closed (prompt, continue_, steer, follow_up)
    ├── AbortError                throw_if_aborted(), iter_until() past its grace
    ├── ToolArgumentsError        (also ValueError) a tool call's arguments fail its schema
    ├── ProviderNotFoundError     (also LookupError) no provider registered for model.api
    ├── ModelNotFoundError        (also LookupError) no such model in the catalogue
    ├── MissingApiKeyError        (also ValueError) no API key given and none in the environment
    ├── RunError                  AgentRun.raise_for_error(): the run ended in error or abort
    │   ├── UsageLimitExceeded    a `UsageLimits` bound ended the run
    │   ├── GuardrailTripped      a guardrail tripped and ended the run (API §26)
    │   └── OutputValidationError no valid `final_result` within the output retries
    └── SerializationError        (also ValueError) data that does not decode into the type

Failures of models, tools and hooks are not raised: they become messages (see the loop).
"""

from __future__ import annotations

from ._enums import StopReason

ABORTED_TEXT = "Request was aborted"
"""The error text of a reply that ended because its run was aborted."""


def describe(exc: BaseException) -> str:
    """The text a failure becomes in a message: its message, else the exception's type name."""
    return str(exc) or type(exc).__name__


def failure_text(exc: BaseException) -> str:
    """A failure with its type named (`KeyError: 'Rome'`), as a tool's error or a batch's.

    The type matters to the model and to whoever reads the transcript: `str(KeyError('Rome'))`
    alone is `'Rome'`.
    """
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class AgentcoreError(Exception):
    """Root of every exception agentcore raises on purpose."""


class AgentBusyError(AgentcoreError):
    """An operation needs an idle agent, but a run is active."""


class SessionBusyError(AgentBusyError):
    """Another agent, in this process or another, holds the session's lease (API §27).

    Raised by `prompt`/`continue_` (after `lease_timeout` seconds, if given), `reset()` and
    assigning `messages`, when a run of another holder is driving the same session.
    """


class AgentClosedError(AgentcoreError):
    """The agent was closed (`Agent.close()`): it starts no more runs and queues no message."""


class AbortError(AgentcoreError):
    """An aborted signal: from `AbortSignal.throw_if_aborted`, or `EventStream.iter_until`."""


class ToolArgumentsError(AgentcoreError, ValueError):
    """A tool call's arguments do not match the tool's JSON Schema."""


class ProviderNotFoundError(AgentcoreError, LookupError):
    """No provider is registered for a model's `api`."""


class ModelNotFoundError(AgentcoreError, LookupError):
    """The catalogue has no model with that provider and id."""


class MissingApiKeyError(AgentcoreError, ValueError):
    """No API key was passed and the provider's environment variable is not set."""


class RunError(AgentcoreError):
    """A run ended with `stop_reason` `"error"` or `"aborted"` (`AgentRun.raise_for_error()`).

    `stop_reason` is the `StopReason` the run ended with; `message` is its error text.
    """

    def __init__(self, stop_reason: StopReason, message: str) -> None:
        super().__init__(f"the run ended with stop_reason {stop_reason.value!r}: {message}")
        self.stop_reason = stop_reason
        self.message = message

    def __reduce__(self) -> tuple[object, ...]:  # picklable with its two fields
        return (type(self), (self.stop_reason, self.message))


class UsageLimitExceeded(RunError):
    """The run reached one of its `UsageLimits` (`"usage limit reached: max_model_calls=50"`)."""


class GuardrailTripped(RunError):
    """A guardrail tripped and ended the run (`"guardrail tripped: <name>: <reason>"`; §26)."""


class OutputValidationError(RunError):
    """The model gave no valid `final_result` for the run's `output_type` within its retries."""


USAGE_LIMIT_TEXT = "usage limit reached: "
"""How the error message of a run ended by a usage limit starts (then `<name>=<value>`)."""

GUARDRAIL_TEXT = "guardrail tripped: "
"""How the error message of a run ended by a guardrail starts (then `<name>: <reason>`)."""

OUTPUT_FAILED_TEXT = "no valid output: "
"""How the error message of a run that got no valid structured output starts."""


def run_error(stop_reason: StopReason, message: str) -> RunError:
    """The `RunError` (or the subclass its message marks) for a run that ended in failure."""
    if message.startswith(USAGE_LIMIT_TEXT):
        return UsageLimitExceeded(stop_reason, message)
    if message.startswith(OUTPUT_FAILED_TEXT):
        return OutputValidationError(stop_reason, message)
    if message.startswith(GUARDRAIL_TEXT):
        return GuardrailTripped(stop_reason, message)
    return RunError(stop_reason, message)


class SerializationError(AgentcoreError, ValueError):
    """Data could not be converted to or from the requested type."""
