"""The chat page (`agentcore/web/page.html`) as a person uses it: headless Chromium, real server.

Each test serves `agentcore.web.app` with uvicorn on 127.0.0.1 (a free port, in a thread) and
drives Debian's Chromium through Playwright's sync API. One browser serves the module (launching
one takes about a second); each test opens its own contexts (fresh storage) and closes them.
Playwright keeps a thread (`asyncio-waitpid-0`) alive while it runs: started by a module
fixture, before any test's thread check, it is part of what every test starts with. The models
are faux: the chat's offline model (arithmetic goes to the calculator) or scripted replies.
Screenshots land in `tests/web/screenshots/` (ignored by git).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from chromium import launched, skip_without_chromium

skip_without_chromium()

import uvicorn  # noqa: E402
from _internals import (  # noqa: E402
    calculator_tool,
    clock_tool,
    parse_run_input,
    register_offline,
)
from approval_tools import Ran, make_tool  # noqa: E402
from uvicorn_thread import ThreadServer  # noqa: E402

import agentcore as ac  # noqa: E402
from agentcore.providers.faux import (  # noqa: E402
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    register_faux_provider,
)
from agentcore.web import app  # noqa: E402

pytestmark = pytest.mark.slow

DESKTOP = {"width": 1100, "height": 800}
PHONE = {"width": 390, "height": 844}
SCREENSHOTS = Path(__file__).parent / "screenshots"
WAIT_MS = 10_000  # the longest any other wait of a page

MakeAgent = Callable[[str], ac.Agent]


class Served:
    """An ASGI app on a real uvicorn server in a thread; `stop()` shuts it down (lifespan too)."""

    def __init__(self, asgi: Any) -> None:
        config = uvicorn.Config(asgi, host="127.0.0.1", port=0, log_level="warning",
                                lifespan="on")
        self.server = ThreadServer(config)
        self.thread = self.server.start()
        assert self.server.ready.wait(10), "uvicorn did not start"
        assert self.server.started, "uvicorn failed to start"
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/"

    def stop(self) -> None:
        self.server.stop(10)


class Browser:
    """Chromium as one test sees it; `open` a page, in a context of its own. It records the
    pages' script errors and content security policy violations, which the fixture fails the
    test on, and closes the test's contexts at its end."""

    def __init__(self, chromium: Any) -> None:
        self.chromium = chromium
        self.errors: list[str] = []
        self.contexts: list[Any] = []

    def open(self, url: str, viewport: dict[str, int] = DESKTOP) -> Any:
        self.contexts.append(self.chromium.new_context(viewport=viewport))
        page = self.contexts[-1].new_page()
        self.watch(page)
        page.goto(url)
        expect(page.locator("h1")).to_have_text("agentcore")
        return page

    def watch(self, page: Any) -> None:
        page.set_default_timeout(WAIT_MS)
        page.on("pageerror", lambda exc: self.errors.append(f"script error: {exc}"))
        page.on("console", lambda message: self.errors.append(message.text)
                if message.type == "error" and "Content Security Policy" in message.text
                else None)


@pytest.fixture
def serve() -> Iterator[Callable[[Any], Served]]:
    """Serve `make_agent`'s app (or an ASGI app); each server stops at teardown, after the
    browser has closed (the `browser` fixture depends on this one)."""
    servers: list[Served] = []

    def start(make_agent_or_asgi: Any) -> Served:
        asgi = make_agent_or_asgi
        if not hasattr(asgi, "router"):  # a make_agent function
            asgi = app(make_agent_or_asgi)
        servers.append(Served(asgi))
        return servers[-1]

    yield start
    for served in servers:
        if served.thread.is_alive():
            served.stop()


def expect(target: Any) -> Any:
    """Playwright's `expect` (the module fixture `chromium` has imported Playwright)."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(target)


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One Chromium for the module's tests (`tests/chromium.py`)."""
    yield from launched(tmp_path_factory, 10_000)  # the longest any expectation waits


@pytest.fixture
def browser(chromium: Any, serve: Any) -> Iterator[Browser]:
    """Chromium for one test; no page of it may throw or break the content security policy."""
    wrapper = Browser(chromium)
    try:
        yield wrapper
    finally:
        for context in wrapper.contexts:
            context.close()
    assert not wrapper.errors, f"the page failed: {wrapper.errors}"


@pytest.fixture
def offline() -> Iterator[FauxProvider]:
    """The chat's offline model, streaming visibly (100 tokens a second)."""
    provider = register_offline(100.0)
    yield provider
    provider.unregister()


@pytest.fixture
def fast_offline() -> Iterator[FauxProvider]:
    """The offline model at full speed, for long replies."""
    provider = register_offline(None)
    yield provider
    provider.unregister()


def ask(page: Any, text: str) -> None:
    expect(page.locator("#send")).to_be_enabled()  # the history has loaded, no run streams
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")


def conversation(page: Any) -> list[Any]:
    """What the page shows of the messages and tool cards, in order (usage lines aside)."""
    return page.evaluate("""() => Array.from(
        document.querySelectorAll("#messages > .msg, #messages > .tool-card"),
        (n) => n.matches(".tool-card")
            ? ["tool", n.dataset.toolCallId, n.querySelector(".tool-name").textContent,
               n.querySelector(".tool-args").textContent,
               n.querySelector(".tool-result").textContent]
            : [n.className, n.textContent])""")


# --- a reply streams, with its tool card -------------------------------------------------------


def test_page_streams_the_reply_and_shows_the_tool_card(serve, browser, offline):
    agents: list[ac.Agent] = []

    def make_agent(thread_id: str) -> ac.Agent:
        agents.append(ac.Agent(offline.get_model(), tools=[calculator_tool(), clock_tool()]))
        return agents[-1]

    page = browser.open(serve(make_agent).url)
    expect(page.locator("#stop")).to_be_hidden()
    page.evaluate("""() => {
        window.seen = [];
        new MutationObserver(() => {
            const first = document.querySelector(".msg.assistant");
            if (first) window.seen.push(first.textContent);
        }).observe(document.querySelector("#messages"),
                   {subtree: true, childList: true, characterData: true});
    }""")
    ask(page, "what is 6*7?")

    expect(page.locator(".msg.user")).to_have_text("what is 6*7?")
    card = page.locator(".tool-card")
    expect(card.locator(".tool-result")).to_have_text("42")
    expect(card.locator(".tool-name")).to_have_text("calculator")
    expect(card.locator(".tool-duration")).to_have_text(re.compile(r"^\d+(\.\d)? (ms|s)$"))
    assert json.loads(card.locator(".tool-args").text_content()) == {"expression": "6*7"}
    assert '\n  "expression": "6*7"\n' in card.locator(".tool-args").text_content()  # pretty
    expect(card).not_to_have_class(re.compile(r"\b(error|running)\b"))
    replies = page.locator(".msg.assistant")
    expect(replies).to_have_text(['You said "what is 6*7?". Let me ask the calculator.',
                                  "The calculator says 6*7 = 42."])
    expect(page.locator(".usage")).to_have_text(re.compile(r"^\d+ in / \d+ out tokens$"))
    expect(page.locator("#stop")).to_be_hidden()
    expect(page.locator("#send")).to_be_enabled()

    final = replies.first.text_content()
    partial = {text for text in page.evaluate("window.seen") if text != final}
    assert len(partial) >= 2, f"the reply did not stream: {partial!r}"
    assert all(final.startswith(text) for text in partial)
    assert [m.role for m in agents[-1].state.messages] == [
        "user", "assistant", "toolResult", "assistant"]

    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "chat.png"), full_page=True)

    thread_id = page.evaluate("localStorage.getItem('agentcore.threadId')")
    page.click("#new-chat")
    expect(page.locator("#messages > *")).to_have_count(0)
    assert page.evaluate("localStorage.getItem('agentcore.threadId')") not in (thread_id, None)


# --- Stop ---------------------------------------------------------------------------------------


def test_stop_aborts_the_run_on_the_server_and_the_next_prompt_works(serve, browser):
    faux = register_faux_provider(tokens_per_second=40, token_size=(1, 1))
    long_reply = "word " * 300  # 375 chunks of 4 characters, 25 ms each: about 9 s
    faux.set_responses([faux_assistant_message(long_reply), faux_assistant_message("Again.")])
    agents: list[ac.Agent] = []

    def make_agent(thread_id: str) -> ac.Agent:
        agents.append(ac.Agent(faux.get_model()))
        return agents[-1]

    try:
        page = browser.open(serve(make_agent).url)
        ask(page, "talk for a while")
        reply = page.locator(".msg.assistant")
        expect(reply).to_contain_text("word word")
        expect(page.locator("#send")).to_be_disabled()
        running = page.locator("#threads > li.current .thread-running")  # marked in the list
        expect(running).to_have_text("running")
        other = page.context.new_page()  # the same conversation in another tab, meanwhile
        browser.watch(other)
        other.goto(page.url)
        expect(other.locator(".msg.user")).to_have_text("talk for a while")
        expect(other.locator(".note")).to_contain_text("still going")
        other.close()
        page.click("#stop")

        expect(reply.locator(".stopped")).to_have_text("[stopped]")
        expect(running).to_be_hidden()  # once the server's run has wound down
        expect(page.locator("#stop")).to_be_hidden()
        expect(page.locator("#send")).to_be_enabled()
        agent = agents[-1]  # (the page's first look at its history made and closed one)
        assert agent.wait_for_idle(timeout=10.0)
        last = agent.state.messages[-1]
        assert isinstance(last, ac.AssistantMessage)
        assert last.stop_reason is ac.StopReason.ABORTED
        assert long_reply.startswith(last.text)
        assert 0 < len(last.text) < len(long_reply)

        ask(page, "once more")
        expect(page.locator(".msg.assistant").last).to_have_text("Again.")
        expect(page.locator(".run-error")).to_have_count(0)
        assert agent.wait_for_idle(timeout=5.0)
        assert [m.role for m in agent.state.messages] == ["user", "assistant", "user",
                                                          "assistant"]
        page.reload()  # the history shows the stopped reply as stopped
        expect(page.locator(".msg")).to_have_text([
            "talk for a while", re.compile(r"^(word )+\S* ?\[stopped\]$"), "once more",
            "Again."])
        shown = page.locator(".msg.assistant").first.text_content()
        assert shown.split() == f"{last.text} [stopped]".split()  # as Markdown: spaces fold
    finally:
        faux.unregister()


# --- approvals ----------------------------------------------------------------------------------


def _summary(context: ac.Context, options: Any, model: ac.Model) -> ac.AssistantMessage:
    """The scripted model: two calls for a prompt; after results, what they came to."""
    if isinstance(context.messages[-1], ac.UserMessage):
        return faux_assistant_message([
            faux_text("Wiping both."),
            faux_tool_call("wipe", {"path": "old.log"}, id="call_old"),
            faux_tool_call("wipe", {"path": "new.log"}, id="call_new")])
    results = []
    for message in reversed(context.messages):
        if isinstance(message, ac.AssistantMessage):
            break
        if isinstance(message, ac.ToolResultMessage):
            results.insert(0, message.text)
    return faux_assistant_message("; ".join(results))


def test_allow_runs_the_call_and_deny_does_not_in_one_resume(serve, browser):
    faux = register_faux_provider()
    faux.set_responses([_summary, _summary])
    ran = Ran()

    def make_agent(thread_id: str) -> ac.Agent:
        wipe = make_tool("wipe", ran, True, {"type": "object",
                                             "properties": {"path": {"type": "string"}}})
        return ac.Agent(faux.get_model(), tools=[wipe], tool_execution="sequential")

    try:
        page = browser.open(serve(make_agent).url)
        posts: list[Any] = []
        page.on("request", lambda r: posts.append(r.post_data_json)
                if r.method == "POST" else None)
        ask(page, "wipe the logs")
        old = page.locator('.tool-card[data-tool-call-id="call_old"]')
        new = page.locator('.tool-card[data-tool-call-id="call_new"]')
        for card in (old, new):
            expect(card.locator(".approval button.allow")).to_have_text("Allow")
            expect(card.locator(".approval button.deny")).to_have_text("Deny")
        waiting = page.locator("#waiting")  # Send is off until both are decided, and says why
        expect(waiting).to_have_text("Waiting for your approval of 2 tool calls above.")
        expect(page.locator("#send")).to_be_disabled()
        page.fill("#prompt", "anything else?")
        page.press("#prompt", "Enter")  # Enter sends nothing either
        expect(page.locator("#prompt")).to_have_value("anything else?")

        page.reload()  # the waiting calls come back from the history, still to decide
        expect(old.locator(".approval-question")).to_have_text(
            'Allow wipe({"path": "old.log"})?')
        expect(new.locator(".approval button.deny")).to_have_text("Deny")
        expect(page.locator(".msg")).to_have_text(["wipe the logs", "Wiping both."])
        expect(waiting).to_have_text("Waiting for your approval of 2 tool calls above.")
        expect(page.locator("#send")).to_be_disabled()

        old.locator("button.allow").click()
        expect(old.locator(".approval")).to_have_text("allowed")
        expect(waiting).to_have_text("Waiting for your approval of 1 tool call above.")
        assert len(posts) == 1  # the prompt: no resume while one waits
        new.locator("button.deny").click()
        expect(new.locator(".approval")).to_have_text("denied")

        expect(old.locator(".tool-result")).to_have_text("wipe {'path': 'old.log'}")
        expect(new.locator(".tool-result")).to_have_text(re.compile(r"^denied"))
        expect(new.locator(".tool-state")).to_have_text("denied")  # the person said no: no
        expect(new).to_have_class(re.compile(r"\bdenied\b"))  # "failed" (an error result
        expect(old.locator(".tool-state")).to_have_text("done")  # for the model, still)
        expect(old).not_to_have_class(re.compile(r"\b(error|denied)\b"))
        expect(page.locator(".msg.assistant").last).to_have_text(
            "wipe {'path': 'old.log'}; denied: the user did not allow this call")
        expect(waiting).to_be_hidden()
        expect(page.locator("#send")).to_be_enabled()
        assert ran.ids == ["call_old"]
        resumes = [p for p in posts if p.get("resume")]
        assert len(resumes) == 1
        assert resumes[0]["messages"] == []
        assert resumes[0]["resume"] == [
            {"interruptId": "call_old", "status": "resolved", "payload": {"approved": True}},
            {"interruptId": "call_new", "status": "resolved", "payload": {"approved": False}}]
        assert len({p["runId"] for p in posts}) == len(posts) == 2
        assert len({p["threadId"] for p in posts}) == 1

        page.reload()  # the history says "denied" too
        expect(new.locator(".tool-state")).to_have_text("denied")
        expect(old.locator(".tool-state")).to_have_text("done")
    finally:
        faux.unregister()


# --- a reload shows what the stream showed -----------------------------------------------------


def _audit(context: ac.Context, options: Any, model: ac.Model) -> ac.AssistantMessage:
    """The scripted model: for "audit the logs", a calculator call, then two calls of `wipe`
    (each waits for approval), then what they came to; any other prompt gets a short reply."""
    last = context.messages[-1]
    if isinstance(last, ac.UserMessage):
        if last.text != "audit the logs":
            return faux_assistant_message([faux_thinking("A short one."),
                                           faux_text(f"Noted: *{last.text}*.")])
        return faux_assistant_message([faux_thinking("Count first."),
                                       faux_text("Counting the logs first."),
                                       faux_tool_call("calculator", {"expression": "2*3"},
                                                      id="call_calc")])
    if isinstance(last, ac.ToolResultMessage) and last.tool_call_id == "call_calc":
        return faux_assistant_message([
            faux_text(f"{last.text} logs. Wiping two."),
            faux_tool_call("wipe", {"path": "old.log"}, id="call_old"),
            faux_tool_call("wipe", {"path": "new.log"}, id="call_new")])
    return _summary(context, options, model)


CONVERSATION_DOM = """() => Array.from(document.querySelectorAll("#messages > *"),
    (node) => node.outerHTML)"""


def test_a_reload_shows_exactly_what_the_stream_showed(serve, browser):
    """Durations, allowed and denied marks, token lines, thinking and the message ids: after
    a reload the conversation's DOM is the one the streams built, element for element."""
    faux = register_faux_provider()
    faux.set_responses([_audit] * 5)
    ran = Ran()

    def make_agent(thread_id: str) -> ac.Agent:
        wipe = make_tool("wipe", ran, True, {"type": "object",
                                             "properties": {"path": {"type": "string"}}})
        return ac.Agent(faux.get_model(), tools=[calculator_tool(), wipe],
                        tool_execution="sequential", thinking_level="low")

    try:
        page = browser.open(serve(make_agent).url)
        ask(page, "audit the logs")
        old = page.locator('.tool-card[data-tool-call-id="call_old"]')
        new = page.locator('.tool-card[data-tool-call-id="call_new"]')
        old.locator("button.allow").click()
        new.locator("button.deny").click()
        expect(page.locator(".msg.assistant").last).to_have_text(
            "wipe {'path': 'old.log'}; denied: the user did not allow this call")
        ask(page, "thanks")
        expect(page.locator(".msg.assistant").last).to_have_text("Noted: thanks.")
        expect(page.locator(".usage")).to_have_count(3)  # the paused run, its resume, the last
        expect(page.locator("#send")).to_be_enabled()
        streamed = page.evaluate(CONVERSATION_DOM)

        calc = page.locator('.tool-card[data-tool-call-id="call_calc"]')
        expect(calc.locator(".tool-duration")).to_have_text(re.compile(r"^\d+(\.\d)? (ms|s)$"))
        expect(old.locator(".approval")).to_have_text("allowed")
        expect(new.locator(".approval")).to_have_text("denied")
        expect(new.locator(".tool-state")).to_have_text("denied")
        expect(new.locator(".tool-duration")).to_have_text("")
        expect(page.locator(".usage")).to_have_text([re.compile(r"^\d+ in / \d+ out tokens$")] * 3)
        assert page.locator(".usage").first.get_attribute("title").startswith("faux/faux-1: ")
        ids = page.evaluate("""() => Array.from(document.querySelectorAll(
            "#messages [data-message-id]"), (n) => n.dataset.messageId)""")
        # the prompt m0; thinking, text and a call in m1 (its result m2); text and two calls
        # in m3, decided in m4 (their results m5, m6); the summary m7; the prompt m8, and m9
        assert ids == ["m0", "m1-r0", "m1", "m1", "m3", "m3", "m4", "m3", "m4", "m7", "m8",
                       "m9-r0", "m9"]
        assert page.evaluate("""() => Array.from(document.querySelectorAll(
            "#messages .tool-card"), (n) => n.dataset.resultId)""") == ["m2", "m5", "m6"]
        assert ran.ids == ["call_old"]

        page.reload()
        expect(page.locator(".usage")).to_have_count(3)
        expect(page.locator("#send")).to_be_enabled()
        assert page.evaluate(CONVERSATION_DOM) == streamed
    finally:
        faux.unregister()


# --- the conversations' sidebar ----------------------------------------------------------------


def _echo(context: ac.Context, options: Any, model: ac.Model) -> ac.AssistantMessage:
    users = [m for m in context.messages if isinstance(m, ac.UserMessage)]
    return faux_assistant_message(f"echo {len(users)}: {users[-1].text}")


def test_the_sidebar_opens_renames_and_deletes_conversations_and_is_a_drawer_on_a_phone(
        serve, browser):
    faux = register_faux_provider()
    faux.set_responses([_echo] * 10)
    try:
        served = serve(lambda thread_id: ac.Agent(faux.get_model()))
        page = browser.open(served.url)
        rows, titles = page.locator("#threads > li"), page.locator("#threads .thread-title")
        expect(page.locator("#threads-empty")).to_have_text("No conversations yet.")
        ask(page, "first topic")
        expect(page.locator(".msg.assistant")).to_have_text("echo 1: first topic")
        first_id = page.evaluate("localStorage.getItem('agentcore.threadId')")
        first = page.locator(f'#threads > li[data-thread-id="{first_id}"]')
        expect(titles).to_have_text(["first topic"])
        expect(first).to_have_class(re.compile(r"\bcurrent\b"))
        expect(first.locator(".thread-open")).to_have_attribute("aria-current", "true")
        expect(first.locator("time")).to_have_text(re.compile(r"^(just now|1 min ago)$"))
        expect(first.locator(".thread-running")).to_be_hidden()

        page.click("#new-chat")  # the first conversation stays listed
        expect(page.locator("#messages > *")).to_have_count(0)
        expect(first).not_to_have_class(re.compile(r"\bcurrent\b"))
        ask(page, "second topic")
        expect(page.locator(".msg.assistant")).to_have_text("echo 1: second topic")
        expect(titles).to_have_text(["second topic", "first topic"])  # the latest first
        second_id = page.evaluate("localStorage.getItem('agentcore.threadId')")
        second = page.locator(f'#threads > li[data-thread-id="{second_id}"]')
        expect(second).to_have_class(re.compile(r"\bcurrent\b"))

        first.locator(".thread-open").click()  # each shows its own messages
        expect(page.locator(".msg")).to_have_text(["first topic", "echo 1: first topic"])
        assert page.evaluate("localStorage.getItem('agentcore.threadId')") == first_id
        expect(first).to_have_class(re.compile(r"\bcurrent\b"))
        ask(page, "more")
        expect(page.locator(".msg.assistant").last).to_have_text("echo 2: more")
        expect(titles).to_have_text(["first topic", "second topic"])

        first.locator(".thread-rename").click()  # Escape cancels, Enter saves
        field = first.locator("input")
        expect(field).to_be_focused()
        field.fill("never mind")
        field.press("Escape")
        expect(first.locator(".thread-title")).to_have_text("first topic")
        expect(first.locator(".thread-rename")).to_be_focused()
        page.keyboard.press("Enter")
        field.fill("   ")  # the server refuses a blank title: its error shows
        field.press("Enter")
        expect(page.locator("#threads-error")).to_contain_text("'title' must be 1 to 200")
        field.fill("Tides and moons")
        field.press("Enter")
        expect(first.locator(".thread-title")).to_have_text("Tides and moons")
        expect(page.locator("#threads-error")).to_be_hidden()
        page.reload()  # the new title is the server's
        expect(titles).to_have_text(["Tides and moons", "second topic"])
        expect(page.locator(".msg")).to_have_count(4)
        assert page.title() == "Tides and moons · agentcore"
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "sidebar.png"))

        phone = browser.open(served.url, viewport=PHONE)  # a drawer, over the chat
        sidebar, toggle = phone.locator("#sidebar"), phone.locator("#drawer-toggle")
        expect(sidebar).to_be_hidden()
        expect(toggle).to_have_attribute("aria-expanded", "false")
        toggle.click()
        expect(sidebar).to_be_visible()
        expect(toggle).to_have_attribute("aria-expanded", "true")
        expect(phone.locator("#threads .thread-title")).to_have_text(
            ["Tides and moons", "second topic"])
        phone.wait_for_function(  # slid in
            "() => document.querySelector('#sidebar').getBoundingClientRect().left === 0")
        for box in [sidebar, *phone.locator("#threads > li, #threads button").all()]:
            bounds = box.bounding_box()
            assert 0 <= bounds["x"] <= bounds["x"] + bounds["width"] <= PHONE["width"], bounds
        assert phone.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]
        phone.screenshot(path=str(SCREENSHOTS / "drawer.png"))
        phone.keyboard.press("Escape")
        expect(sidebar).to_be_hidden()
        expect(toggle).to_be_focused()
        toggle.click()
        phone.locator("#threads .thread-open", has_text="second topic").click()
        expect(sidebar).to_be_hidden()  # opening one closes the drawer
        expect(phone.locator(".msg")).to_have_text(["second topic", "echo 1: second topic"])
        assert phone.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]

        second.locator(".thread-delete").click()  # a confirm step; Cancel keeps it
        expect(second.locator(".question")).to_have_text("Delete “second topic”?")
        expect(second.get_by_role("button", name="Cancel")).to_be_focused()
        page.keyboard.press("Enter")
        expect(titles).to_have_text(["Tides and moons", "second topic"])
        second.locator(".thread-delete").click()
        second.get_by_role("button", name="Delete “second topic” for good").click()
        expect(titles).to_have_text(["Tides and moons"])
        expect(page.locator(".msg")).to_have_count(4)  # the open one stays open
        first.locator(".thread-delete").click()  # the open one: a new, empty chat
        first.locator("button.danger").click()
        expect(rows).to_have_count(0)
        expect(page.locator("#messages > *")).to_have_count(0)
        assert page.evaluate("localStorage.getItem('agentcore.threadId')") != first_id
        gone = page.request.get(f"{served.url}ag-ui/threads/{first_id}")
        assert gone.status == 404
        page.reload()
        expect(page.locator("#threads-empty")).to_be_visible()
        expect(page.locator("#messages > *")).to_have_count(0)
    finally:
        faux.unregister()


# --- the history after a reload, and from a new server -----------------------------------------


def test_reload_and_a_new_server_show_the_history(serve, browser, offline, tmp_path):
    def make_agent(thread_id: str) -> ac.Agent:
        session = ac.SqliteSession(tmp_path / "s.db", session_id=thread_id)
        return ac.Agent(offline.get_model(), tools=[calculator_tool()], session=session)

    first = serve(make_agent)
    page = browser.open(first.url)
    ask(page, "what is 6*7?")
    expect(page.locator(".msg.assistant").last).to_have_text("The calculator says 6*7 = 42.")
    shown = conversation(page)
    assert [row[0] for row in shown] == ["msg user", "msg assistant", "tool", "msg assistant"]
    assert shown[2][2:] == ["calculator", '{\n  "expression": "6*7"\n}', "42"]
    thread_id = page.evaluate("localStorage.getItem('agentcore.threadId')")

    page.reload()
    expect(page.locator(".tool-card .tool-result")).to_have_text("42")
    assert conversation(page) == shown
    expect(page.locator(".tool-card")).not_to_have_class(re.compile(r"\brunning\b"))

    first.stop()
    second = serve(make_agent)  # a restart: a new app over the same SQLite file
    page.goto(second.url)  # another origin (port): its own localStorage
    page.evaluate("id => localStorage.setItem('agentcore.threadId', id)", thread_id)
    page.reload()
    expect(page.locator(".tool-card .tool-result")).to_have_text("42")
    assert conversation(page) == shown
    ask(page, "thanks")
    expect(page.locator(".msg.assistant").last).to_contain_text('You said "thanks".')


# --- thinking -----------------------------------------------------------------------------------


def test_thinking_is_folded(serve, browser, offline):
    def make_agent(thread_id: str) -> ac.Agent:
        return ac.Agent(offline.get_model(), thinking_level="low")

    page = browser.open(serve(make_agent).url)
    ask(page, "hello")
    expect(page.locator(".msg.assistant")).to_contain_text('You said "hello".')
    thinking = page.locator("details.thinking")
    expect(thinking).to_have_count(1)
    expect(thinking.locator("summary")).to_have_text("Thinking")
    expect(thinking.locator(".thinking-body")).to_be_hidden()
    assert thinking.evaluate("d => d.open") is False
    thought = "Nothing to compute or look up here, so I'll echo it back."
    assert thinking.locator(".thinking-body").text_content() == thought
    assert page.evaluate("""() => {  // it comes before the reply it belongs to
        const t = document.querySelector("details.thinking");
        return t.nextElementSibling.matches(".msg.assistant"); }""")

    thinking.locator("summary").click()
    expect(thinking.locator(".thinking-body")).to_have_text(thought)

    expect(page.locator(".usage")).to_be_visible()  # the run is over
    page.reload()  # from the history: folded again
    expect(page.locator("details.thinking .thinking-body")).to_have_text(thought)
    assert page.locator("details.thinking").evaluate("d => d.open") is False


# --- errors -------------------------------------------------------------------------------------


def test_a_failed_run_and_a_refused_request_show_their_errors(serve, browser):
    faux = register_faux_provider()  # nothing queued: the model call fails

    try:
        page = browser.open(serve(lambda thread_id: ac.Agent(faux.get_model())).url)
        ask(page, "hello")
        expect(page.locator(".run-error")).to_contain_text("No more faux responses queued")
        expect(page.locator("#send")).to_be_enabled()
        page.evaluate("localStorage.setItem('agentcore.threadId', 'x'.repeat(500))")
        page.reload()  # a thread id the server refuses: its JSON error shows
        expect(page.locator(".run-error")).to_contain_text("threadId must be")
    finally:
        faux.unregister()


# --- a phone --------------------------------------------------------------------------------------


def test_phone_width_nothing_overflows(serve, browser, fast_offline):
    def make_agent(thread_id: str) -> ac.Agent:
        return ac.Agent(fast_offline.get_model(), tools=[calculator_tool()])

    page = browser.open(serve(make_agent).url, viewport=PHONE)
    total = "+".join(str(n) for n in range(1, 121))  # 400 characters with no space
    ask(page, f"what is {total}?")
    card = page.locator(".tool-card")
    expect(card.locator(".tool-result")).to_have_text(str(sum(range(1, 121))))
    expect(page.locator(".msg.assistant").last).to_contain_text("The calculator says")
    expect(page.locator(".usage")).to_be_visible()  # the run is over
    assert page.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]
    for selector in (".tool-card", ".tool-args", ".msg.user", ".msg.assistant", "form"):
        for box in page.locator(selector).all():
            bounds = box.bounding_box()
            assert bounds["x"] >= 0, (selector, bounds)
            assert bounds["x"] + bounds["width"] <= PHONE["width"] + 0.5, (selector, bounds)
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "phone.png"))  # what the phone's screen shows


# --- mounted under a prefix ---------------------------------------------------------------------


def test_page_works_mounted_under_a_prefix(serve, browser, offline):
    from starlette.applications import Starlette
    from starlette.routing import Mount

    def make_agent(thread_id: str) -> ac.Agent:
        return ac.Agent(offline.get_model(), tools=[calculator_tool()])

    outer = Starlette(routes=[Mount("/agent", app(make_agent))])
    base = serve(outer).url
    page = browser.open(base + "agent/")  # its requests go to /agent/ag-ui: relative URLs
    ask(page, "what is 2+3?")
    expect(page.locator(".tool-card .tool-result")).to_have_text("5")
    expect(page.locator(".msg.assistant").last).to_have_text("The calculator says 2+3 = 5.")
    page.reload()
    expect(page.locator(".tool-card .tool-result")).to_have_text("5")
    expect(page.locator(".run-error")).to_have_count(0)


# --- the page's own SSE reading ----------------------------------------------------------------


def test_page_reads_events_split_anywhere_with_comments_and_crlf(serve, browser):
    """A scripted server sends the page its events a few bytes at a time, with CRLF line ends,
    comment lines (heartbeats), an event's JSON over two `data:` lines and multi-byte text."""
    import asyncio

    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    import agentcore.web

    page_html = (Path(agentcore.web.__file__).parent / "page.html").read_bytes()
    text = "Grüße — 🙂 done."
    events: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        *({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": part}
          for part in ("Grüße — ", "🙂 ", "done.")),
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "success"},
         "usage": [{"inputTokens": 120, "outputTokens": 3}, {"inputTokens": 3,
                                                             "outputTokens": 4}]},
    ]
    wire = ": connected\r\n\r\n"
    for event in events:
        encoded = json.dumps(event, ensure_ascii=False)
        half = encoded.index(",") + 1  # JSON allows the newline the two data lines join with
        wire += f"data: {encoded[:half]}\r\ndata:{encoded[half:]}\r\n: heartbeat\r\n\r\n"
    body = wire.encode()
    received: list[Any] = []

    async def stream() -> Any:
        for i in range(0, len(body), 3):  # splits lines, CRLFs and UTF-8 characters
            yield body[i : i + 3]
            await asyncio.sleep(0.001)

    async def run(request: Any) -> Response:
        received.append(json.loads(await request.body()))
        return StreamingResponse(stream(), media_type="text/event-stream")

    async def history(request: Any) -> Response:
        return JSONResponse({"error": "unknown threadId"}, status_code=404)

    async def chat_page(request: Any) -> Response:
        return Response(page_html, media_type="text/html; charset=utf-8")

    scripted = Starlette(routes=[Route("/", chat_page), Route("/ag-ui", run, methods=["POST"]),
                                 Route("/ag-ui/threads/{id:path}", history)])
    page = browser.open(serve(scripted).url)
    ask(page, "hi")
    expect(page.locator(".msg.assistant")).to_have_text(text)
    expect(page.locator(".usage")).to_have_text("123 in / 7 out tokens")
    expect(page.locator(".run-error")).to_have_count(0)
    expect(page.locator("#send")).to_be_enabled()
    (sent,) = received
    assert sent["messages"] == [{"id": sent["messages"][0]["id"], "role": "user",
                                 "content": "hi"}]
    assert sent["threadId"] == page.evaluate("localStorage.getItem('agentcore.threadId')")


def test_the_eval_report_page_renders_its_table_and_chart_with_no_request(
        chromium: Any, tmp_path: Path) -> None:
    from agentcore.evals import Case, Contains, Dataset, evaluate
    from agentcore.testing import scripted_model

    def answer(context: Any, options: Any, model: Any) -> str:
        question = str(context.messages[-1].content)
        return {"2 + 2?": "4", "capital of France?": "Paris"}.get(question, "no idea")

    cases = Dataset([Case("2 + 2?", "4", name="sum"), Case("capital of France?", "Paris",
                                                           name="capital"),
                     Case("meaning of life?", "42", name="life")])
    with scripted_model([answer] * 6) as model:
        report = evaluate(lambda: ac.Agent(model.model), cases, [Contains()], repeat=2,
                          progress=False)
    path = tmp_path / "report.html"
    report.to_html(path)
    context = chromium.new_context(viewport=DESKTOP)
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        requests: list[str] = []
        errors: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(path.as_uri())
        expect(page.locator("svg").first).to_be_visible()
        table = page.locator("table").first
        for name in ("sum", "capital", "life"):
            expect(table).to_contain_text(name)
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "eval_report.png"), full_page=True)
    finally:
        context.close()
    assert errors == []
    assert requests == [path.as_uri()]  # the page itself, and nothing it would fetch


# --- Markdown -------------------------------------------------------------------------------------

MARKDOWN_REPLY = """## Sum of squares

The **answer** is *5*, from the `calculator`:

| n | n² |
|---|----|
| 1 | 1 |
| 2 | 4 |

```python
def squares(n):
    return sum(i * i for i in range(1, n + 1))
```

- one
- two

See [the docs](https://example.com/docs)."""

HOSTILE_REPLY = """<script>window.pwned = "script"</script>

Text <img src=x onerror="window.pwned = 'img'"> and [a link](javascript:window.pwned='link')
and <a href="javascript:window.pwned='a'" onclick="window.pwned='click'">raw</a>.

<iframe src="javascript:window.pwned='iframe'"></iframe>

![a picture](javascript:window.pwned='image') [here](./)"""


def test_replies_render_as_markdown_with_code_to_copy_tables_and_safe_links(
        serve, browser, fast_offline):
    """One page: a Markdown reply after a tool card (the README's screenshot, with
    AGENTCORE_SCREENSHOTS=1), then a hostile one: rendered inert, scripts never run."""
    faux = register_faux_provider()
    faux.set_responses([
        faux_assistant_message([faux_text("Let me compute it."),
                                faux_tool_call("calculator", {"expression": "1*1 + 2*2"})]),
        faux_assistant_message(MARKDOWN_REPLY),
        faux_assistant_message(HOSTILE_REPLY)])

    def make_agent(thread_id: str) -> ac.Agent:
        return ac.Agent(faux.get_model(), tools=[calculator_tool()])

    try:
        page = browser.open(serve(make_agent).url, viewport={"width": 900, "height": 840})
        page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        ask(page, "What are the squares of 1 and 2, summed?")
        reply = page.locator(".msg.assistant").last
        expect(reply.locator("h2")).to_have_text("Sum of squares")
        expect(page.locator(".tool-card .tool-result")).to_have_text("5")
        expect(page.locator(".usage")).to_be_visible()  # the run is over
        expect(reply.locator("strong")).to_have_text("answer")
        expect(reply.locator("em")).to_have_text("5")
        expect(reply.locator("p code")).to_have_text("calculator")
        expect(reply.locator("ul > li")).to_have_text(["one", "two"])
        expect(reply.locator("table th")).to_have_text(["n", "n²"])
        expect(reply.locator("table tbody tr")).to_have_count(2)
        code = reply.locator(".code-block pre code")
        assert "monospace" in code.evaluate("c => getComputedStyle(c).fontFamily")
        assert code.evaluate("c => getComputedStyle(c.parentElement).whiteSpace") == "pre"
        source = "def squares(n):\n    return sum(i * i for i in range(1, n + 1))"
        assert code.text_content() == source + "\n"
        copy = reply.locator(".code-block button.copy")
        expect(copy).to_have_attribute("aria-label", "Copy the code")
        if os.environ.get("AGENTCORE_SCREENSHOTS") == "1":  # the README's and the web guide's
            root = Path(__file__).parents[2]
            for picture in (root / "examples" / "web_chat.png",
                            root / "docs" / "assets" / "web_chat.png"):
                page.screenshot(path=str(picture))
        copy.click()
        expect(copy).to_have_attribute("aria-label", "Copied")
        assert page.evaluate("navigator.clipboard.readText()") == source
        link = reply.locator("a", has_text="the docs")
        expect(link).to_have_attribute("href", "https://example.com/docs")
        expect(link).to_have_attribute("target", "_blank")
        expect(link).to_have_attribute("rel", "noopener noreferrer")

        ask(page, "Say something hostile.")
        hostile = page.locator(".msg.assistant").last
        expect(hostile).to_contain_text('<script>window.pwned = "script"</script>')  # as text
        expect(page.locator(".usage")).to_have_count(2)
        expect(hostile).to_contain_text("<img src=x onerror=")
        assert page.evaluate("""() => {
            const box = document.querySelector("#messages");
            return box.querySelectorAll("script, iframe, img, [onerror], [onclick]").length
                + Array.from(box.querySelectorAll("[href], [src]"), (n) =>
                    n.getAttribute("href") || n.getAttribute("src"))
                    .filter((url) => /^\\s*javascript:/i.test(url)).length;
        }""") == 0
        for text in ("a link", "a picture"):  # kept as words, their targets dropped
            hostile.locator("a", has_text=text).click()
        with page.context.expect_page() as opened:  # a link opens in a new tab
            hostile.locator("a", has_text="here").click()
        opened.value.close()
        assert page.evaluate("window.pwned") is None
        assert page.url == browser.contexts[-1].pages[0].url  # this tab stayed
    finally:
        faux.unregister()


# --- following the conversation -----------------------------------------------------------------


def _answer(context: ac.Context, options: Any, model: ac.Model) -> ac.AssistantMessage:
    """A dozen lines of Markdown for a prompt, with a wide line of code and a wide table; a
    call of `slow` for the prompt "slow"."""
    last = context.messages[-1]
    if isinstance(last, ac.UserMessage) and last.text == "slow":
        return faux_assistant_message(faux_tool_call("slow", {}))
    title = "the slow one" if isinstance(last, ac.ToolResultMessage) else last.text
    lines = "\n".join(f"{i}. line {i} of the answer to *{title}*" for i in range(1, 13))
    code = "total = " + " + ".join(f"value_{i}" for i in range(30))
    table = "| " + " | ".join(f"column {i}" for i in range(12)) + " |\n" + "|---" * 12 + "|"
    return faux_assistant_message(f"Answer to {title}:\n\n{lines}\n\n```python\n{code}\n```"
                                  f"\n\n{table}\n\nThe end of {title}.")


END_IN_VIEW = """async () => {  // after two frames: the page has had one to follow
    await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
    const last = Array.from(document.querySelectorAll("#messages > .msg.assistant")).pop();
    const end = last.getBoundingClientRect().bottom;
    return end > document.querySelector("header").getBoundingClientRect().bottom
        && end <= document.querySelector("#composer").getBoundingClientRect().top + 1;
}"""
RUN_OVER = """(n) => document.querySelectorAll(".usage").length === n
    && !document.querySelector("#send").disabled"""


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_page_follows_the_answer_unless_scrolled_up_then_jumps_to_latest(
        serve, browser, viewport):
    faux = register_faux_provider(tokens_per_second=8000, token_size=(8, 8))  # 32 characters
    faux.set_responses([_answer] * 16)  # a millisecond: an answer streams over a few frames
    release = threading.Event()

    @ac.tool
    def slow() -> str:
        """Wait for the test."""
        release.wait(WAIT_MS / 1000)
        return "ready"

    try:
        page = browser.open(serve(lambda thread_id: ac.Agent(faux.get_model(), tools=[slow])).url,
                            viewport=viewport)
        for n in range(1, 13):
            ask(page, f"question {n}")
            page.wait_for_function(RUN_OVER, arg=n)  # (polled each frame: expect waits longer)
            assert page.evaluate(END_IN_VIEW), f"answer {n} ends out of view"
        expect(page.locator("#jump")).to_be_hidden()
        assert page.evaluate("document.scrollingElement.scrollHeight") > 5 * viewport["height"]

        ask(page, "slow")  # while its tool runs, the person scrolls up
        expect(page.locator(".tool-card.running")).to_be_visible()
        page.mouse.move(viewport["width"] / 2, viewport["height"] / 2)
        page.mouse.wheel(0, -400)
        jump = page.locator("#jump")
        expect(jump).to_be_visible()
        expect(jump).to_have_text(re.compile("^Jump to latest"))
        top = page.evaluate("document.scrollingElement.scrollTop")
        release.set()  # the answer streams below, out of view: the page stays put
        page.wait_for_function(RUN_OVER, arg=13)
        expect(page.locator(".msg.assistant").last).to_contain_text("The end of the slow one.")
        assert page.evaluate("document.scrollingElement.scrollTop") <= top + 1
        assert not page.evaluate(END_IN_VIEW)
        expect(jump).to_be_visible()
        jump.click()
        expect(jump).to_be_hidden()
        assert page.evaluate(END_IN_VIEW)
        assert page.evaluate("""() => { const d = document.scrollingElement;
            return d.scrollHeight - d.scrollTop - d.clientHeight; }""") <= 1

        page.evaluate("window.scrollTo(0, 0)")  # at the top, sending brings the end back
        expect(jump).to_be_visible()
        ask(page, "question 14")
        page.wait_for_function(RUN_OVER, arg=14)
        assert page.evaluate(END_IN_VIEW)
        expect(jump).to_be_hidden()
        assert page.evaluate("document.scrollingElement.scrollWidth") <= viewport["width"]
        for wide in (".code-block pre", ".table-wrap"):  # scroll inside the reply instead
            assert page.locator(wide).last.evaluate("n => n.scrollWidth > n.clientWidth")
    finally:
        release.set()
        faux.unregister()


# --- a fallback, and sub-agents ------------------------------------------------------------------


def test_a_fallback_shows_as_a_notice_and_a_sub_agent_as_a_nested_card_asking_there(
        serve, browser):
    """A failed model's streamed text is dropped for a notice; a sub-agent streams in a folding
    card under the call running it, where its call waiting for approval is Allowed; a tripped
    guardrail is a notice too."""
    first = register_faux_provider(["gpt-x"])
    backup = register_faux_provider(["backup"])
    child = register_faux_provider(["researcher-model"])
    first.set_responses([faux_assistant_message("I will ans", "error", "boom"),
                         faux_assistant_message("DONE: TIDES!"),
                         faux_assistant_message("Done: **tides** it is.")])

    def calm(message: ac.AssistantMessage, output: Any) -> str | None:
        return "no shouting" if message.text.isupper() else None
    backup.set_responses([faux_assistant_message(
        faux_tool_call("researcher", {"input": "tides?"}, id="call_research"))])
    child.set_responses([faux_assistant_message(faux_tool_call("search", {"query": "tides"})),
                         faux_assistant_message("Found: **tides** follow the moon.")])

    @ac.tool(requires_approval=True)
    def search(query: str) -> str:
        """Search the notes."""
        return "Tides follow the moon."

    def make_agent(thread_id: str) -> ac.Agent:
        researcher = ac.Agent(child.get_model(), name="researcher", tools=[search])
        return ac.Agent(first.get_model(), fallback_models=[backup.get_model()],
                        circuit_breaker=ac.CircuitBreaker(), tools=[researcher.as_tool()],
                        output_guardrails=[ac.retry_guardrail(calm)])

    try:
        page = browser.open(serve(make_agent).url)
        ask(page, "tell me about tides")
        expect(page.locator(".note.fallback")).to_have_text(
            "faux/gpt-x failed: boom; trying faux/backup")
        expect(page.locator("#messages")).not_to_contain_text("I will ans")  # dropped

        card = page.locator('#messages > .tool-card[data-tool-call-id="call_research"]')
        sub = card.locator("details.subagent")
        nested = sub.locator(".tool-card")  # the child's call waits for approval, in its card
        expect(sub.locator("summary")).to_have_text(
            re.compile(r"^researcher\s*waiting for approval$"))
        expect(page.locator("#waiting")).to_have_text(
            "Waiting for your approval of 1 tool call above.")
        expect(page.locator("#send")).to_be_disabled()
        nested.locator("button.allow").click()
        expect(nested.locator(".approval")).to_have_text("allowed")

        expect(page.locator(".msg.assistant").last).to_have_text("Done: tides it is.")
        expect(page.locator(".note.guardrail")).to_have_text(
            "Guardrail calm stopped the reply: no shouting; the model is asked to try again")
        expect(card.locator("> .tool-result")).to_have_text("Found: **tides** follow the moon.")
        expect(sub.locator("summary")).to_have_text(re.compile(r"^researcher\s*done$"))
        expect(nested.locator(".tool-name")).to_have_text("search")
        expect(nested.locator(".tool-state")).to_have_text("done")
        expect(nested.locator(".tool-result")).to_have_text("Tides follow the moon.")
        assert json.loads(nested.locator(".tool-args").text_content()) == {"query": "tides"}
        expect(sub.locator(".sub-reply")).to_have_text("Found: tides follow the moon.")
        expect(sub.locator(".sub-reply strong")).to_have_text("tides")
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "subagent.png"), full_page=True)
        sub.locator("summary").click()  # it folds
        expect(nested).to_be_hidden()
        assert sub.evaluate("d => d.open") is False
    finally:
        for provider in (first, backup, child):
            provider.unregister()


# --- another site's page (API §28) -------------------------------------------------------------


def test_a_page_of_another_origin_can_neither_post_a_form_nor_fetch_a_run(serve, browser,
                                                                           offline):
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    asked: list[str] = []

    def make_agent(thread_id: str) -> ac.Agent:
        asked.append(thread_id)
        return ac.Agent(offline.get_model(), tools=[calculator_tool()])

    target = serve(make_agent).url + "ag-ui"
    run = {"threadId": "t", "runId": "r", "messages": [
        {"id": "u", "role": "user", "content": "what is 6*7?"}]}
    text = json.dumps(run)
    # the classic cross-site form: enctype text/plain sends `name=value`, which reads as this
    # very run's JSON (the `=` inside a string), so a server that skips the checks runs it
    name, value = text[:-1] + ', "forwardedProps": "', '"}'
    assert parse_run_input(f"{name}={value}".encode()).prompt[0].text == "what is 6*7?"
    page_html = f"""<!doctype html><meta charset="utf-8"><title>another site</title>
        <form id="form" method="post" action="{target}" enctype="text/plain">
          <input type="hidden" name='{name}' value='{value}'></form>
        <script>
          window.results = [];
          const body = {json.dumps(text)};
          fetch("{target}", {{method: "POST", mode: "no-cors", body,
                              headers: {{"Content-Type": "text/plain"}}}})
            .then(r => results.push("no-cors: " + r.type), e => results.push("no-cors: failed"));
          fetch("{target}", {{method: "POST", body,
                              headers: {{"Content-Type": "application/json"}}}})
            .then(r => results.push("json: " + r.status), e => results.push("json: blocked"));
        </script>"""
    other = serve(Starlette(routes=[Route("/", lambda request: HTMLResponse(page_html))]))
    assert other.url != target.removesuffix("ag-ui")  # another port: another origin

    context = browser.chromium.new_context()
    browser.contexts.append(context)
    page = context.new_page()
    browser.watch(page)
    page.goto(other.url)
    page.wait_for_function("window.results.length === 2")
    assert sorted(page.evaluate("window.results")) == ["json: blocked", "no-cors: opaque"]
    with page.expect_navigation() as navigation:
        page.evaluate("document.getElementById('form').submit()")
    assert navigation.value.status == 403
    assert "are not allowed" in page.text_content("body")
    assert asked == []  # no agent was made, so none ran
