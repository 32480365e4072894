"""The Agent runs anywhere (API.md §0): a script, a worker thread, inside a running asyncio
loop, inside a tool of another agent, in a Jupyter kernel; Ctrl-C while waiting aborts the run."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from typing import Any

import pytest

import agentcore as ac
from agentcore.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)

WAIT_S = 10.0
PROCESS_TIMEOUT_S = 60.0


def run_python(code: str, timeout: float = PROCESS_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter; a hang (a stuck non-daemon thread) fails the test."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, check=False)


def text_of(messages: list[Any]) -> str:
    return messages[-1].text


# --- a plain script ----------------------------------------------------------------------------


@pytest.mark.slow
def test_agent_in_a_script_prints_the_result_and_exits() -> None:
    done = run_python("""
        from agentcore import Agent
        from agentcore.providers.faux import faux_assistant_message, register_faux_provider

        faux = register_faux_provider(tokens_per_second=2000)
        faux.set_responses([faux_assistant_message("hello from a script")])
        agent = Agent(faux.get_model())
        print(agent.prompt("hi").result(10)[-1].text)
    """)

    assert (done.returncode, done.stdout, done.stderr) == (0, "hello from a script\n", "")


@pytest.mark.slow
def test_agent_in_a_script_exits_after_an_unawaited_run() -> None:
    """The run thread is not a daemon: the script ends once the run has, with its output."""
    done = run_python("""
        from agentcore import Agent
        from agentcore.providers.faux import faux_assistant_message, register_faux_provider

        faux = register_faux_provider(tokens_per_second=200)
        faux.set_responses([faux_assistant_message("finished after the script's last line")])
        agent = Agent(faux.get_model())
        agent.subscribe(lambda event, signal: event.type == "agent_end"
                        and print(event.messages[-1].text))
        agent.prompt("hi")
    """)

    assert (done.returncode, done.stdout, done.stderr) == (
        0, "finished after the script's last line\n", ""
    )


# --- a worker thread, asyncio, nested agents ---------------------------------------------------


def test_agent_runs_from_a_worker_thread(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("from a worker")])
    agent = ac.Agent(faux.get_model())
    outcome: list[Any] = []

    def worker() -> None:
        try:
            run = agent.prompt("hi")
            outcome.append((run.result(WAIT_S), [e.type for e in run]))
        except BaseException as exc:  # reported by the test
            outcome.append(exc)

    thread = threading.Thread(target=worker, name="worker")
    thread.start()
    thread.join(WAIT_S)

    assert not thread.is_alive()
    [(messages, types)] = outcome
    assert text_of(messages) == "from a worker"
    assert types[0] == "agent_start"
    assert types[-1] == "agent_end"
    assert agent.messages == messages


def test_agent_result_inside_a_running_asyncio_loop(faux: FauxProvider) -> None:
    """A coroutine may block on `result()` directly: the core never touches an event loop."""
    faux.set_responses([
        faux_assistant_message(faux_tool_call("ask_async", {})),
        faux_assistant_message("from asyncio"),
    ])

    def ask_async(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        async def answer() -> str:  # a tool may run its own loop on its own thread
            await asyncio.sleep(0)
            return "async tool ran"

        return ac.AgentToolResult([ac.TextContent(asyncio.run(answer()))])

    tool = ac.AgentTool("ask_async", "Run a coroutine", {"type": "object"}, ask_async)
    agent = ac.Agent(faux.get_model(), tools=[tool])

    async def main() -> list[Any]:
        assert asyncio.get_running_loop().is_running()
        return agent.prompt("hi").result(WAIT_S)

    messages = asyncio.run(main())

    assert text_of(messages) == "from asyncio"
    [result] = [m for m in messages if isinstance(m, ac.ToolResultMessage)]
    assert (result.is_error, result.content) == (False, [ac.TextContent("async tool ran")])


def test_agent_result_awaited_through_to_thread(faux: FauxProvider) -> None:
    """The non-blocking way from a coroutine: the loop keeps running while the agent works."""
    faux.set_responses([faux_assistant_message("awaited")])
    agent = ac.Agent(faux.get_model())

    async def main() -> tuple[list[Any], int]:
        ticks = 0
        waiting = asyncio.ensure_future(asyncio.to_thread(agent.prompt("hi").result, WAIT_S))
        while not waiting.done():
            ticks += 1
            await asyncio.sleep(0)
        return await waiting, ticks

    messages, ticks = asyncio.run(main())

    assert text_of(messages) == "awaited"
    assert ticks > 0


def nested_agent_tool(inner: ac.Agent, ran: list[str]) -> ac.AgentTool:
    """A tool that runs `inner` to completion and returns its answer."""

    def delegate(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        ran.append(threading.current_thread().name)
        run = inner.prompt(args["question"])
        remove = signal.add_listener(run.abort)  # aborting the outer run aborts the inner one
        try:
            messages = run.result(WAIT_S)
        finally:
            remove()
        final = messages[-1]
        if final.stop_reason == "aborted":
            raise RuntimeError("the inner agent was aborted")
        return ac.AgentToolResult([ac.TextContent(final.text)])

    schema = {"type": "object", "properties": {"question": {"type": "string"}},
              "required": ["question"]}
    return ac.AgentTool("delegate", "Ask another agent", schema, delegate)


def test_agent_tool_runs_another_agent_to_completion(faux: FauxProvider) -> None:
    inner_faux = register_faux_provider(token_size=(1, 1))
    try:
        inner_faux.set_responses([faux_assistant_message("inner answer: 42")])
        inner = ac.Agent(inner_faux.get_model(), system_prompt="You are the inner agent.")
        faux.set_responses([
            faux_assistant_message(faux_tool_call("delegate", {"question": "6 * 7?"})),
            faux_assistant_message("outer says 42"),
        ])
        ran: list[str] = []
        outer = ac.Agent(faux.get_model(), tools=[nested_agent_tool(inner, ran)])

        messages = outer.prompt("what is 6 * 7?").result(WAIT_S)
    finally:
        inner_faux.unregister()

    assert text_of(messages) == "outer says 42"
    [result] = [m for m in messages if isinstance(m, ac.ToolResultMessage)]
    assert (result.is_error, result.content) == (False, [ac.TextContent("inner answer: 42")])
    assert [m.role for m in inner.messages] == ["user", "assistant"]
    assert inner.messages[0].content == "6 * 7?"
    assert not inner.state.is_streaming
    assert not outer.state.is_streaming
    assert len(ran) == 1


def test_agent_abort_reaches_a_nested_agent_run() -> None:
    outer_faux = register_faux_provider(token_size=(1, 1))
    inner_faux = register_faux_provider(tokens_per_second=50, token_size=(1, 1))
    try:
        inner_faux.set_responses([faux_assistant_message("slow inner words " * 100)])
        inner = ac.Agent(inner_faux.get_model())
        inner_streaming = threading.Event()
        inner.subscribe(lambda e, s: e.type == "message_update" and inner_streaming.set())
        outer_faux.set_responses([
            faux_assistant_message(faux_tool_call("delegate", {"question": "take your time"})),
        ])
        outer = ac.Agent(outer_faux.get_model(), tools=[nested_agent_tool(inner, [])])

        run = outer.prompt("go")
        assert inner_streaming.wait(WAIT_S)
        run.abort()
        messages = run.result(WAIT_S)
    finally:
        inner_faux.unregister()
        outer_faux.unregister()

    assert inner.messages[-1].stop_reason == "aborted"
    [result] = [m for m in messages if isinstance(m, ac.ToolResultMessage)]
    assert result.is_error
    assert result.content == [ac.TextContent("RuntimeError: the inner agent was aborted")]
    assert not inner.state.is_streaming
    assert not outer.state.is_streaming


# --- a tool that calls sys.exit() -------------------------------------------------------------

@pytest.mark.parametrize(
    ("mode", "calls"),
    [
        pytest.param(ac.ToolExecutionMode.PARALLEL, 2, id="parallel-pool"),
        pytest.param(ac.ToolExecutionMode.PARALLEL, 1, id="lone-call"),
        pytest.param(ac.ToolExecutionMode.SEQUENTIAL, 2, id="sequential"),
    ],
)
def test_agent_tool_calling_sys_exit_still_gets_a_tool_result(
    faux: FauxProvider, mode: ac.ToolExecutionMode, calls: int
) -> None:
    """Script habits inside a tool: `sys.exit()` ends that call, never the transcript's
    invariant that every tool call of a completed assistant message has one result."""

    def leave(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        sys.exit("the tool called sys.exit()")

    tool = ac.AgentTool("leave", "Calls sys.exit()", {"type": "object"}, leave)
    faux.set_responses([
        faux_assistant_message([faux_tool_call("leave", {}) for _ in range(calls)]),
        faux_assistant_message("after the exit"),
    ])
    agent = ac.Agent(faux.get_model(), tools=[tool], tool_execution=mode)

    agent.prompt("go").result(WAIT_S)

    [assistant, *rest] = agent.messages[1:]
    assert assistant.stop_reason == "toolUse"
    answered = [m.tool_call_id for m in rest if isinstance(m, ac.ToolResultMessage)]
    assert answered == [c.id for c in assistant.tool_calls]
    assert not agent.state.is_streaming


def test_agent_tool_raising_keyboard_interrupt_ends_the_run_and_answers_its_call(
    faux: FauxProvider,
) -> None:
    """A KeyboardInterrupt inside a tool stops the run, yet the call still gets a result."""

    def interrupted(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        raise KeyboardInterrupt

    tool = ac.AgentTool("stop", "Raises KeyboardInterrupt", {"type": "object"}, interrupted)
    faux.set_responses([faux_assistant_message([faux_tool_call("stop", {}, id="c1")]),
                        faux_assistant_message("never")])
    agent = ac.Agent(faux.get_model(), tools=[tool])

    added = agent.prompt("go").result(WAIT_S)

    assert [m.role for m in added] == ["toolResult", "assistant"]
    assert (added[0].tool_call_id, added[0].is_error) == ("c1", True)
    assert added[1].stop_reason == "error"
    assert faux.call_count == 1
    assert [m.role for m in agent.messages] == ["user", "assistant", "toolResult", "assistant"]


# --- Ctrl-C while the caller waits -------------------------------------------------------------

INTERRUPT_SCRIPT = """
    import os, signal, sys, threading, time
    from agentcore import Agent
    from agentcore.providers.faux import faux_assistant_message, register_faux_provider

    faux = register_faux_provider(tokens_per_second=20, token_size=(1, 1))
    faux.set_responses([faux_assistant_message("a long and slow reply " * 100)])
    agent = Agent(faux.get_model())
    streaming = threading.Event()
    agent.subscribe(lambda event, sig: event.type == "message_update" and streaming.set())
    WAITERS = {{"result": "result", "wait_for_idle": "wait_for_idle", "iterate": "__iter__"}}

    def wait(run):
        if "{how}" == "result":
            run.result()
        elif "{how}" == "wait_for_idle":
            agent.wait_for_idle()
        else:
            for _ in run:
                pass

    def interrupt_when_blocked():
        # Deliver SIGINT once the main thread is blocked inside the call under test, so the
        # KeyboardInterrupt is raised in it (and not in this script's own lines).
        assert streaming.wait(10)
        main = threading.main_thread().ident
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            frame, names = sys._current_frames().get(main), []
            while frame is not None:
                names.append(frame.f_code.co_name)
                frame = frame.f_back
            if names[:1] == ["wait"] and WAITERS["{how}"] in names:
                break
            time.sleep(0.005)
        os.kill(os.getpid(), signal.SIGINT)

    run = agent.prompt("hi")
    threading.Thread(target=interrupt_when_blocked, daemon=True).start()
"""

CAUGHT = """
    try:
        wait(run)
    except KeyboardInterrupt:
        pass
    else:
        sys.exit("no KeyboardInterrupt: the run ended by itself")
    messages = run.result(5)
    assert messages[-1].stop_reason == "aborted", messages[-1]
    assert not agent.state.is_streaming
    assert agent.messages[-1] is messages[-1]
    print("OK")
"""


@pytest.mark.slow
@pytest.mark.parametrize("how", ["result", "wait_for_idle", "iterate"])
def test_agent_keyboard_interrupt_while_waiting_aborts_the_run(how: str) -> None:
    done = run_python(INTERRUPT_SCRIPT.format(how=how) + CAUGHT)

    assert (done.returncode, done.stdout, done.stderr) == (0, "OK\n", "")


@pytest.mark.slow
def test_agent_uncaught_keyboard_interrupt_lets_the_script_exit() -> None:
    """Without the abort, the non-daemon run thread would keep the process alive for ~30 s."""
    done = run_python(INTERRUPT_SCRIPT.format(how="result") + "    wait(run)\n", timeout=20)

    assert done.returncode != 0
    assert "KeyboardInterrupt" in done.stderr
    assert done.stdout == ""


# --- a Jupyter kernel --------------------------------------------------------------------------

NOTEBOOK_CELLS = [
    """
    import threading
    from agentcore import Agent
    from agentcore.providers.faux import faux_assistant_message, register_faux_provider

    faux = register_faux_provider(tokens_per_second=50, token_size=(1, 1))
    faux.set_responses([faux_assistant_message("slow words " * 200)])
    agent = Agent(faux.get_model())
    streaming = threading.Event()
    agent.subscribe(lambda event, signal: event.type == "message_update" and streaming.set())
    run = agent.prompt("hello from a notebook")
    assert streaming.wait(10)
    """,
    """
    assert not run.done()
    run.abort()
    """,
    """
    messages = run.result(timeout=5)
    assert messages[-1].stop_reason == "aborted", messages[-1]
    assert not agent.state.is_streaming
    assert [m.role for m in agent.messages] == ["user", "assistant"]
    """,
    """
    from agentcore import AgentTool, AgentToolResult, TextContent
    from agentcore.providers.faux import faux_tool_call

    release, gate_entered = threading.Event(), threading.Event()

    def gate(tool_call_id, args, signal, on_update):
        gate_entered.set()
        assert release.wait(10)
        return AgentToolResult([TextContent("released")])

    agent.tools = [AgentTool("gate", "Wait for the next cell", {"type": "object"}, gate)]
    faux.set_responses([faux_assistant_message(faux_tool_call("gate", {})),
                        faux_assistant_message("steered")])
    run = agent.prompt("again")
    assert gate_entered.wait(10)
    """,
    """
    agent.steer("change of plan")
    release.set()
    """,
    """
    messages = run.result(timeout=10)
    roles = [m.role for m in messages]
    assert roles == ["user", "assistant", "toolResult", "user", "assistant"], messages
    assert messages[3].content == "change of plan"
    assert messages[-1].text == "steered"
    assert not agent.state.is_streaming and not agent.has_queued_messages()
    """,
    """
    import asyncio
    assert asyncio.get_event_loop().is_running()  # the kernel's own loop runs this cell
    faux.set_responses([faux_assistant_message("from the kernel's loop")])
    assert agent.prompt("once more").result(timeout=10)[-1].text == "from the kernel's loop"
    for thread in threading.enumerate():
        if thread.name.startswith("agentcore-"):
            thread.join(5)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("agentcore-")]
    print("notebook OK")
    """,
]


@pytest.mark.slow
def test_agent_in_a_jupyter_kernel(jupyter_env: str) -> None:
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (test extra)")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (test extra)")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (test extra)")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(textwrap.dedent(c)) for c in NOTEBOOK_CELLS]

    client = nbclient.NotebookClient(notebook, kernel_name=jupyter_env, timeout=60)
    client.execute()

    outputs = notebook.cells[-1].outputs
    assert [o.get("text") for o in outputs] == ["notebook OK\n"]
