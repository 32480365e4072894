"""Jupyter: Markdown views of messages and runs (`_render`), `agentcore.notebook.display`
following a run, and examples/notebook.ipynb executed in a real kernel."""

from __future__ import annotations

import itertools
import logging
import re
import sys
import threading
import time
from types import SimpleNamespace
from typing import Any

import attrs
import paths
import pytest
from _internals import escape_markdown, message_markdown, run_markdown, usage_markdown

import agentcore as ac
from agentcore import notebook
from agentcore.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_thinking,
    faux_tool_call,
    register_faux_provider,
)

WAIT_S = 10.0
EXAMPLE = paths.EXAMPLES / "notebook.ipynb"


CODE = re.compile(r"(?ms)^(`{3,})[^\n]*\n.*?\n\1$|(`+)(?!`).*?(?<!`)\2(?!`)")
"""Fenced code blocks and code spans, where Markdown shows HTML as text."""
OUR_TAGS = re.compile(r"</?details( open)?>|</?summary>")
"""The only HTML the views contain on purpose."""


def reply(*content: Any, stop: str = "stop", error: str | None = None,
          usage: ac.Usage | None = None) -> ac.AssistantMessage:
    return ac.AssistantMessage(list(content), "api", "acme", "m-1", usage=usage or ac.Usage(),
                               stop_reason=stop, error_message=error)


def join_display_threads() -> None:
    for thread in threading.enumerate():
        if thread.name.endswith("-display"):
            thread.join(WAIT_S)


# --- escaping ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "markdown"),
    [
        pytest.param("Hello, world", "Hello, world", id="plain"),
        pytest.param("<script>alert(1)</script>", "&lt;script&gt;alert\\(1\\)&lt;/script&gt;",
                     id="html"),
        pytest.param("<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert\\(1\\)&gt;",
                     id="html-attribute"),
        pytest.param("AT&T &amp;", "AT&amp;T &amp;amp;", id="entities"),
        pytest.param("**bold** _em_ `code`", "\\*\\*bold\\*\\* \\_em\\_ \\`code\\`",
                     id="emphasis-and-code"),
        pytest.param("[click](javascript:x) ![i](u)",
                     "\\[click\\]\\(javascript:x\\) \\!\\[i\\]\\(u\\)", id="links"),
        pytest.param("costs $5, not $6", "costs \\$5, not \\$6", id="math"),
        pytest.param("a | b ~c~ {d}", "a \\| b \\~c\\~ \\{d\\}", id="tables-and-strikethrough"),
        pytest.param("# title", "\\# title", id="heading"),
        pytest.param("- item\n+ item\n12. item\n3) item",
                     "\\- item\\\n\\+ item\\\n12\\. item\\\n3\\) item", id="lists"),
        pytest.param("text\n===", "text\\\n\\===", id="setext-heading"),
        pytest.param("> quote", "&gt; quote", id="blockquote"),
        pytest.param("    code", "&nbsp;&nbsp;&nbsp;&nbsp;code", id="indented-code"),
        pytest.param("\tcode", "&nbsp;&nbsp;&nbsp;&nbsp;code", id="tab"),
        pytest.param("one\ntwo", "one\\\ntwo", id="line-break"),
        pytest.param("one\r\ntwo  ", "one\\\ntwo", id="crlf-and-trailing-space"),
        pytest.param("one\n\n \n\ntwo\n", "one\n\ntwo", id="paragraphs"),
        pytest.param("back\\slash", "back\\\\slash", id="backslash"),
        pytest.param("", "", id="empty"),
    ],
)
def test_render_escape_markdown_shows_text_as_is(text: str, markdown: str) -> None:
    assert escape_markdown(text) == markdown


def test_render_model_output_never_becomes_raw_html() -> None:
    evil = "<script>alert(1)</script></details><b>"
    message = reply(faux_thinking(evil), ac.TextContent(evil),
                    ac.ToolCall("c<1>", "<b>tool</b>", {"html": evil}), error=evil)
    rendered = [
        message_markdown(message),
        message_markdown(message, streaming=True),
        message_markdown(ac.UserMessage(evil)),
        message_markdown(ac.ToolResultMessage("c<1>", evil, [ac.TextContent(evil)])),
        message_markdown(ac.BashExecutionMessage(evil, evil, 1)),
        message_markdown(ac.CompactionSummaryMessage(evil, 1)),
        message_markdown(ac.BranchSummaryMessage(evil, evil)),
    ]

    for markdown in rendered:
        assert "<" not in OUR_TAGS.sub("", CODE.sub("", markdown)), markdown


def test_render_code_spans_and_blocks_outgrow_backticks_inside() -> None:
    call = ac.ToolCall("id`1", "`tick`", {"code": "```\nx\n````"})

    assert message_markdown(reply(call)).split("\n\n")[1:3] == [
        "**Tool call** · `` `tick` `` · ``id`1``",
        '`````json\n{\n  "code": "```\\nx\\n````"\n}\n`````',
    ]


# --- messages ----------------------------------------------------------------------------------


def test_render_user_message() -> None:
    assert ac.UserMessage("What is 2 + 40?")._repr_markdown_() == "**User**\n\nWhat is 2 + 40?"


def test_render_user_message_with_an_image() -> None:
    message = ac.UserMessage([ac.TextContent("Look:"), ac.ImageContent("AAAA", "image/png")])

    assert message._repr_markdown_() == "**User**\n\nLook:\n\n*\\[image: image/png, 3 bytes\\]*"


def test_render_assistant_message_with_thinking_text_and_a_tool_call() -> None:
    usage = ac.Usage(1200, 34, 500, 0, 1734, ac.Cost(total=0.00123))
    message = reply(faux_thinking("First add,\nthen answer."), ac.TextContent("Adding."),
                    faux_tool_call("add", {"a": 2, "b": 40}, id="call-1"),
                    stop="toolUse", usage=usage)

    assert message._repr_markdown_() == (
        "**Assistant** · `acme/m-1` · stop: `toolUse`\n\n"
        "<details><summary>thinking</summary>\n\n> First add,\\\n> then answer.\n\n"
        "</details>\n\n"
        "Adding.\n\n"
        "**Tool call** · `add` · `call-1`\n\n"
        '```json\n{\n  "a": 2,\n  "b": 40\n}\n```\n\n'
        "*tokens: 1,200 in, 34 out, 500 cache read (1,734 total) · cost \\$0.0012*"
    )


def test_render_assistant_error_shows_stop_reason_and_message() -> None:
    message = reply(stop="error", error="rate limited (429)")

    assert message._repr_markdown_() == (
        "**Assistant** · `acme/m-1` · stop: `error`\n\n"
        "**Error:** rate limited \\(429\\)\n\n"
        "*tokens: 0 in, 0 out (0 total) · cost \\$0*"
    )


def test_render_redacted_thinking_shows_no_content() -> None:
    message = reply(ac.ThinkingContent("secret", redacted=True))

    assert "*thinking (redacted)*" in message_markdown(message)
    assert "secret" not in message_markdown(message)


def test_render_streaming_reply_opens_its_latest_thinking_and_has_no_usage() -> None:
    message = reply(faux_thinking("hmm"))

    assert message_markdown(message, streaming=True) == (
        "**Assistant** · `acme/m-1` · *streaming…*\n\n"
        "<details open><summary>thinking</summary>\n\n> hmm\n\n</details>"
    )


def test_render_tool_result_marks_errors() -> None:
    ok = ac.ToolResultMessage("call-1", "add", [ac.TextContent("42")])
    failed = attrs.evolve(ok, content=[ac.TextContent("boom")], is_error=True)
    empty = attrs.evolve(ok, content=[])

    assert ok._repr_markdown_() == "**Tool result** · `add` · `call-1`\n\n```text\n42\n```"
    assert failed._repr_markdown_() == (
        "**Tool result** · `add` · `call-1` · **error**\n\n```text\nboom\n```"
    )
    assert empty._repr_markdown_() == "**Tool result** · `add` · `call-1`\n\n*(no output)*"


def test_render_bash_execution() -> None:
    ran = ac.BashExecutionMessage("ls", "a\nb\n", 0)
    cut = ac.BashExecutionMessage("yes", "y\n", None, cancelled=True, truncated=True,
                                  full_output_path="/tmp/out.txt")

    assert ran._repr_markdown_() == "**Shell** · `$ ls` · exit code 0\n\n```text\na\nb\n```"
    assert cut._repr_markdown_() == (
        "**Shell** · `$ yes` · cancelled\n\n```text\ny\n```\n\n"
        "*output truncated: full output in `/tmp/out.txt`*"
    )


def test_render_summaries() -> None:
    compaction = ac.CompactionSummaryMessage("We *agreed* on 42.", 12_345)
    branch = ac.BranchSummaryMessage("Tried plan B.", "entry-7")

    assert compaction._repr_markdown_() == (
        "**Compaction summary** · 12,345 tokens before\n\nWe \\*agreed\\* on 42."
    )
    assert branch._repr_markdown_() == "**Branch summary** · from `entry-7`\n\nTried plan B."


def test_render_tool_approvals() -> None:
    decided = ac.ToolApprovalMessage(["c1", "c`2"], {"c3": "not *now*", "c4": "<b>no</b>"})

    assert decided._repr_markdown_() == (
        "**Tool approvals**\n\n- allowed `c1`\n- allowed ``c`2``\n"
        "- denied `c3`: not \\*now\\*\n- denied `c4`: &lt;b&gt;no&lt;/b&gt;"
    )
    assert message_markdown(decided) == decided._repr_markdown_()


def test_render_an_applications_own_message_shows_role_and_repr() -> None:
    @attrs.frozen
    class Note:
        role = "note_<x>"
        text: str

    assert message_markdown(Note("hi")) == (
        "**note\\_&lt;x&gt;**\n\n```\n"
        "Note(text='hi')\n```"
    )


@pytest.mark.parametrize(
    ("usage", "line"),
    [
        pytest.param(ac.Usage(), "tokens: 0 in, 0 out (0 total) · cost \\$0", id="zero"),
        pytest.param(ac.Usage(10, 20, 0, 0, 30, ac.Cost(total=1.5)),
                     "tokens: 10 in, 20 out (30 total) · cost \\$1.5000", id="dollars"),
        pytest.param(ac.Usage(1, 2, 3, 4, 10, ac.Cost(total=0.000049)),
                     "tokens: 1 in, 2 out, 3 cache read, 4 cache write (10 total) · cost \\$0.0000",
                     id="cache-and-tiny-cost"),
        pytest.param(ac.Usage(1_000_000, 0, 0, 0, 1_000_000, ac.Cost(total=1234.5)),
                     "tokens: 1,000,000 in, 0 out (1,000,000 total) · cost \\$1,234.5000",
                     id="thousands"),
    ],
)
def test_render_usage_line(usage: ac.Usage, line: str) -> None:
    assert usage_markdown(usage) == line


# --- runs --------------------------------------------------------------------------------------


def finished_run(*added: Any) -> list[ac.AgentEvent]:
    events: list[ac.AgentEvent] = [ac.AgentStartEvent()]
    for message in added:
        events += [ac.MessageStartEvent(message), ac.MessageEndEvent(message)]
    return [*events, ac.AgentEndEvent(list(added))]


def test_render_run_in_progress_shows_the_streaming_reply_and_running_tools() -> None:
    call = faux_tool_call("slow", {}, id="c1")
    first = reply(call, stop="toolUse", usage=ac.Usage(5, 5, 0, 0, 10, ac.Cost(total=0.5)))
    progress = ac.AgentToolResult([ac.TextContent("50%")])
    events: list[ac.AgentEvent] = [
        ac.AgentStartEvent(), ac.MessageStartEvent(ac.UserMessage("go")),
        ac.MessageEndEvent(ac.UserMessage("go")), ac.MessageStartEvent(first),
        ac.MessageEndEvent(first), ac.ToolExecutionStartEvent("c1", "slow", {}),
        ac.ToolExecutionStartEvent("c2", "quick", {}),
        ac.ToolExecutionUpdateEvent("c1", "slow", {}, progress),
        ac.ToolExecutionEndEvent("c2", "quick", ac.AgentToolResult([]), False),
    ]

    markdown = run_markdown(events)

    assert markdown.split("\n\n---\n\n") == [
        "**Agent run** · ⏳ running · 2 messages · tokens: 5 in, 5 out (10 total) · cost \\$0.5000",
        "**User**\n\ngo",
        message_markdown(first),
        "**Running tool** · `slow` · `c1`\n\n```text\n50%\n```",
    ]


def test_render_run_shows_the_reply_being_streamed() -> None:
    partial = reply(ac.TextContent("Hel"))
    events: list[ac.AgentEvent] = [
        ac.AgentStartEvent(), ac.MessageStartEvent(reply()),
        ac.MessageUpdateEvent(partial, ac.StartEvent(partial)),
    ]

    assert run_markdown(events, abort_requested=True).split("\n\n---\n\n") == [
        "**Agent run** · ⏹ aborting… · 0 messages · tokens: 0 in, 0 out (0 total) · cost \\$0",
        "**Assistant** · `acme/m-1` · *streaming…*\n\nHel",
    ]


def test_render_run_drops_a_reply_a_fallback_took_over_but_counts_its_usage() -> None:
    partial = reply(ac.TextContent("Hel"))
    failed = reply(ac.TextContent("Hel"), stop="error", error="503 down",
                   usage=ac.Usage(3, 1, 0, 0, 4, ac.Cost(total=0.25)))
    backup = ac.Model("m-2", "m-2", "api", "acme", "http://127.0.0.1:9")
    events: list[ac.AgentEvent] = [
        ac.AgentStartEvent(), ac.MessageStartEvent(reply()),
        ac.MessageUpdateEvent(partial, ac.StartEvent(partial)),
        ac.ModelFallbackEvent(failed, backup, "acme/m-1 failed: 503 down"),
    ]

    assert run_markdown(events).split("\n\n---\n\n") == [
        "**Agent run** · ⏳ running · 0 messages · tokens: 3 in, 1 out (4 total) · cost \\$0.2500",
    ]


@pytest.mark.parametrize(
    ("last", "status"),
    [
        pytest.param(reply(ac.TextContent("hi")), "✅ done", id="done"),
        pytest.param(reply(stop="aborted", error="Request was aborted"), "⏹ aborted",
                     id="aborted"),
        pytest.param(reply(stop="error", error="boom"), "❌ failed", id="failed"),
    ],
)
def test_render_run_status_follows_its_last_reply(last: ac.AssistantMessage, status: str) -> None:
    markdown = run_markdown(finished_run(ac.UserMessage("hi"), last))

    assert markdown.startswith(f"**Agent run** · {status} · 2 messages · ")


def test_render_run_waiting_for_approval_lists_the_waiting_calls() -> None:
    calls = [faux_tool_call("rm", {"path": "/x"}, id="c1"), faux_tool_call("ls", {}, id="c2"),
             faux_tool_call("rm", {"path": "/y"}, id="c3")]
    asked = reply(*calls, stop="toolUse")
    events = finished_run(ac.UserMessage("go"), asked)
    events[-1:-1] = [ac.ToolApprovalRequestEvent("c1", "rm", {"path": "/x"}),
                     ac.ToolApprovalRequestEvent("c3", "rm", {"path": "/y"}),
                     ac.TurnEndEvent(asked, [])]

    assert run_markdown(events).split("\n\n---\n\n") == [
        "**Agent run** · ⏸ waiting for approval · 2 messages · "
        "tokens: 0 in, 0 out (0 total) · cost \\$0",
        "**User**\n\ngo",
        message_markdown(asked),
        "**⏸ waiting for approval** · `rm` · `c1`",
        "**⏸ waiting for approval** · `rm` · `c3`",
    ]


def test_render_run_decided_by_approve_is_not_waiting() -> None:
    call = faux_tool_call("rm", {}, id="c1")
    asked = reply(call, stop="toolUse")
    decision = ac.ToolApprovalMessage([], {"c1": "no"})
    denied = ac.ToolResultMessage("c1", "rm", [ac.TextContent("denied: no")], is_error=True)
    events: list[ac.AgentEvent] = [
        ac.AgentStartEvent(), ac.MessageStartEvent(asked), ac.MessageEndEvent(asked),
        ac.ToolApprovalRequestEvent("c1", "rm", {}),
        ac.MessageStartEvent(decision), ac.MessageEndEvent(decision),
        ac.ToolExecutionStartEvent("c1", "rm", {}),
    ]

    running = run_markdown(events)
    assert running.startswith("**Agent run** · ⏳ running · 2 messages")
    assert "waiting for approval" not in running
    assert running.endswith("**Running tool** · `rm` · `c1`")
    events += [ac.ToolExecutionEndEvent("c1", "rm", ac.AgentToolResult(), True),
               ac.MessageStartEvent(denied), ac.MessageEndEvent(denied),
               ac.MessageStartEvent(reply(ac.TextContent("ok"))),
               ac.MessageEndEvent(reply(ac.TextContent("ok"))), ac.AgentEndEvent([])]
    done = run_markdown(events)
    assert done.startswith("**Agent run** · ✅ done · 4 messages")
    assert message_markdown(decision) in done.split("\n\n---\n\n")


def test_render_run_totals_usage_of_replies_and_tool_results() -> None:
    cost = ac.Cost(total=0.25)
    events = finished_run(
        reply(usage=ac.Usage(10, 1, 0, 0, 11, cost)),
        ac.ToolResultMessage("c", "t", usage=ac.Usage(100, 10, 0, 0, 110, cost)),
        reply(usage=ac.Usage(20, 2, 5, 0, 27, cost)),
    )

    assert run_markdown(events).split("\n\n")[0] == (
        "**Agent run** · ✅ done · 3 messages · "
        "tokens: 130 in, 13 out, 5 cache read (148 total) · cost \\$0.7500"
    )


def test_render_run_clips_long_tool_output() -> None:
    result = ac.ToolResultMessage("c", "cat", [ac.TextContent("x" * 2_500)])
    markdown = run_markdown(finished_run(result))

    assert f"```text\n{'x' * 2_000}\n```\n\n*… 500 more characters*" in markdown
    assert "x" * 2_500 in message_markdown(result)


def test_agent_run_repr_markdown_shows_the_finished_run(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("2 + 40 = 42")])
    run = ac.Agent(faux.get_model()).prompt("What is 2 + 40?")
    messages = run.result(WAIT_S)

    assert run._repr_markdown_() == "\n\n---\n\n".join([
        f"**Agent run** · ✅ done · 2 messages · {usage_markdown(messages[-1].usage)}",
        "**User**\n\nWhat is 2 + 40?",
        messages[-1]._repr_markdown_(),
    ])


# --- notebook.display outside a kernel ---------------------------------------------------------


def test_notebook_display_waits_and_prints_the_final_view_outside_ipython(
    faux: FauxProvider, capsys: pytest.CaptureFixture[str],
) -> None:
    faux.set_responses([faux_assistant_message("printed once")])
    run = ac.Agent(faux.get_model()).prompt("hi")

    run.display(wait=True)

    assert run.done()
    assert capsys.readouterr().out == run._repr_markdown_() + "\n"


def test_notebook_display_returns_at_once_and_prints_when_the_run_ends(
    faux: FauxProvider, capsys: pytest.CaptureFixture[str],
) -> None:
    release = threading.Event()

    def gate(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        assert release.wait(WAIT_S)
        return ac.AgentToolResult([ac.TextContent("released")])

    tool = ac.AgentTool("gate", "Wait for the test", {"type": "object"}, gate)
    faux.set_responses([faux_assistant_message(faux_tool_call("gate", {})),
                        faux_assistant_message("after the gate")])
    run = ac.Agent(faux.get_model(), tools=[tool]).prompt("hi")

    notebook.display(run)
    assert not run.done()
    assert capsys.readouterr().out == ""
    release.set()
    run.result(WAIT_S)
    join_display_threads()

    assert capsys.readouterr().out == run._repr_markdown_() + "\n"


def test_notebook_display_knows_a_run_by_its_interface(
    faux: FauxProvider, capsys: pytest.CaptureFixture[str],
) -> None:
    class Wrapped:  # not an AgentRun, but it has everything display needs of a run
        def __init__(self, run: ac.AgentRun) -> None:
            self.run = run

        def __getattr__(self, name: str) -> Any:
            return getattr(self.run, name)

    faux.set_responses([faux_assistant_message("wrapped")])
    run = ac.Agent(faux.get_model()).prompt("hi")

    notebook.display(Wrapped(run), wait=True)

    assert capsys.readouterr().out == run._repr_markdown_() + "\n"


def test_notebook_display_of_a_message_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    notebook.display(ac.UserMessage("hi *there*"))

    assert capsys.readouterr().out == "**User**\n\nhi \\*there\\*\n"


def test_notebook_display_rejects_what_it_cannot_show() -> None:
    with pytest.raises(TypeError, match="expected an AgentRun or a message, got 42"):
        notebook.display(42)


def test_notebook_display_without_ipython_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "IPython", None)
    monkeypatch.setitem(sys.modules, "IPython.display", None)

    with pytest.raises(ImportError, match=r"needs IPython.*pip install ipython"):
        notebook.display(ac.UserMessage("hi"))


def test_notebook_display_in_a_terminal_shell_shows_only_the_final_view() -> None:
    shown: list[tuple[dict[str, str], dict[str, Any]]] = []
    terminal = SimpleNamespace(
        get_ipython=lambda: SimpleNamespace(),  # a shell without a kernel
        display=SimpleNamespace(display=lambda data, **kw: shown.append((data, kw))),
    )
    publish = notebook._publisher(terminal)

    publish("**Agent run** · ⏳ running", False)
    publish("**Agent run** · ✅ done\n\nmore", True)

    assert shown == [({"text/markdown": "**Agent run** · ✅ done\n\nmore",
                       "text/plain": "**Agent run** · ✅ done\n\nmore"}, {"raw": True})]


# --- following a run ---------------------------------------------------------------------------


class Recorder:
    """A `publish` that keeps every view with the time it was shown."""

    def __init__(self, fail_on: int | None = None) -> None:
        self.views: list[tuple[float, str, bool]] = []
        self.fail_on = fail_on

    def __call__(self, markdown: str, final: bool) -> None:
        self.views.append((time.monotonic(), markdown, final))
        if len(self.views) == self.fail_on:
            raise RuntimeError("the display went away")


def test_notebook_follow_throttles_updates_then_shows_the_end_at_once() -> None:
    fast = register_faux_provider(tokens_per_second=1000, token_size=(1, 1))
    try:
        fast.set_responses([faux_assistant_message("many small tokens " * 70)])
        run = ac.Agent(fast.get_model()).prompt("hi")
        recorder = Recorder()
        notebook._display_run(run, recorder, wait=True)
    finally:
        fast.unregister()

    times, views, finals = zip(*recorder.views, strict=True)
    assert finals == (*[False] * (len(views) - 1), True)
    assert "⏳ running" in views[0]
    assert views[-1] == run._repr_markdown_()
    assert "✅ done" in views[-1]
    updates = times[1:-1]  # the first view is shown at once, the final one as soon as it exists
    gaps = [b - a for a, b in itertools.pairwise(updates)]
    assert all(gap >= notebook.MIN_INTERVAL_S for gap in gaps), gaps
    assert 3 <= len(views) < len(list(run)) // 10


def test_notebook_follow_of_a_finished_run_shows_it_once(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("done already")])
    run = ac.Agent(faux.get_model()).prompt("hi")
    run.result(WAIT_S)
    recorder = Recorder()

    notebook._display_run(run, recorder, wait=False)

    assert [(view, final) for _, view, final in recorder.views] == [
        (run._repr_markdown_(), True)
    ]


def test_notebook_follow_stops_quietly_when_the_display_breaks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    slow = register_faux_provider(tokens_per_second=200, token_size=(1, 1))
    try:
        slow.set_responses([faux_assistant_message("words " * 20)])
        run = ac.Agent(slow.get_model()).prompt("hi")
        with caplog.at_level(logging.ERROR, logger="agentcore.notebook"):
            notebook._display_run(run, Recorder(fail_on=2), wait=True)
    finally:
        slow.unregister()

    assert run.result(0)[-1].text == "words " * 20
    assert "stopped updating the display" in caplog.text


# --- the example notebook in a real kernel -----------------------------------------------------


NO_THREAD_LEFT = """\
import threading
for thread in threading.enumerate():
    if thread.name.startswith("agentcore-"):
        thread.join(5)
print([t.name for t in threading.enumerate() if t.name.startswith("agentcore-")])
"""


def test_example_notebook_is_clean() -> None:
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (test extra)")
    notebook_node = nbformat.read(EXAMPLE, as_version=4)
    nbformat.validate(notebook_node)
    code = [c for c in notebook_node.cells if c.cell_type == "code"]

    assert notebook_node.nbformat == 4
    assert len(code) == 5
    assert all(c.outputs == [] and c.execution_count is None for c in code)
    assert "run.display()" in code[1].source


@pytest.mark.slow
def test_example_notebook_runs_and_updates_its_display_in_place(jupyter_env: str) -> None:
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (test extra)")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (test extra)")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (test extra)")
    notebook_node = nbformat.read(EXAMPLE, as_version=4)
    # No extra waiting: the run publishes its final view before `run.result()` returns, so
    # even this headless client saves the finished view.
    cells = notebook_node.cells
    cells.append(nbformat.v4.new_code_cell(NO_THREAD_LEFT))
    received: list[str] = []

    class Client(nbclient.NotebookClient):
        def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
            received.append(msg["msg_type"])
            return super().process_message(msg, cell, cell_index)

    client = Client(notebook_node, kernel_name=jupyter_env, timeout=60,
                    resources={"metadata": {"path": str(EXAMPLE.parent)}})
    client.execute()  # raises CellExecutionError if a cell fails

    start, steer, result, message = (next(c for c in cells if c.get("id") == name)
                                     for name in ("start", "steer", "result", "message"))
    [shown] = start.outputs
    view = shown.data["text/markdown"]
    assert shown.output_type == "display_data"
    assert shown.data["text/plain"] == view.split("\n", 1)[0]
    assert view.startswith("**Agent run** · ✅ done · 5 messages · ")
    for part in ("**User**\n\nWhat's the weather in Paris?",
                 "**Tool call** · `get_weather`",
                 "```text\nParis: 18 °C, sunny\n```",
                 "**User**\n\nPlease give the temperature in Fahrenheit too.",
                 "It is 18 °C and sunny in Paris, which is 64 °F: a fine day for a walk along "
                 "the Seine."):
        assert part in view
    assert received.count("display_data") == 1
    assert received.count("update_display_data") >= 2
    assert steer.outputs == []
    [printed] = result.outputs
    assert printed.text == (
        "roles: ['user', 'assistant', 'toolResult', 'user', 'assistant']\n"
        "still running: False\n"
        "It is 18 °C and sunny in Paris, which is 64 °F: a fine day for a walk along the Seine.\n"
    )
    [rendered] = message.outputs
    assert rendered.data["text/markdown"].startswith(
        "**Assistant** · `faux/faux-1` · stop: `stop`\n\nIt is 18 °C and sunny in Paris"
    )
    assert "*tokens: " in rendered.data["text/markdown"]
    assert [o.get("text") for o in cells[-1].outputs] == ["[]\n"]


def test_notebook_final_view_is_published_before_result_returns(faux: FauxProvider) -> None:
    """A cell waiting in `run.result()` always leaves the finished view behind."""
    for _ in range(20):
        faux.set_responses([faux_assistant_message("done")])
        agent = ac.Agent(faux.get_model())
        run = agent.prompt("hi")
        published: list[bool] = []

        def publish(markdown: str, final: bool, published: list[bool] = published) -> None:
            published.append(final)

        notebook._display_run(run, publish, wait=False)
        run.result(5)
        assert published[-1] is True
