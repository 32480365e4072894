"""The conversations' routes of `agentcore.web.app`: list, rename, delete (API §28).

Over real HTTP against the app on a uvicorn thread server; the model is the faux provider
answering `echo <n>: <prompt>` (n counting the user messages it was shown), so a conversation
that was deleted and begun again is seen to start from nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ag_ui")
pytest.importorskip("uvicorn")

from served import WAIT, Maker, Served, error_of, run_body

import agentcore as ac
from agentcore.providers.faux import FauxProvider, faux_assistant_message, register_faux_provider
from agentcore.sessions import SqliteSession
from agentcore.web import MemoryCatalog, SqliteCatalog, ThreadInfo, app


def echo(context: ac.Context, options: ac.StreamOptions, model: ac.Model) -> ac.AssistantMessage:
    users = [m for m in context.messages if isinstance(m, ac.UserMessage)]
    return faux_assistant_message(f"echo {len(users)}: {users[-1].text}")


@pytest.fixture
def faux() -> Iterator[FauxProvider]:
    provider = register_faux_provider()
    provider.set_responses([echo] * 50)
    yield provider
    provider.unregister()


@pytest.fixture
def slow_faux() -> Iterator[FauxProvider]:
    """Streams 20 one-word tokens a second: a run still going when the test acts on it."""
    provider = register_faux_provider(tokens_per_second=20, token_size=(1, 1))
    provider.set_responses([faux_assistant_message(" ".join(["word"] * 400))])
    yield provider
    provider.unregister()


@pytest.fixture
def serve() -> Iterator[Callable[..., Served]]:
    servers: list[Served] = []

    def start(maker: Maker, **options: Any) -> Served:
        servers.append(Served(app(maker, **options)))
        return servers[-1]

    yield start
    for served in servers:
        served.stop()


def answer(served: Served, thread_id: str, text: str) -> str:
    reply = served.post(run_body(thread_id, text))
    assert reply.status_code == 200, reply.text
    assert '"RUN_FINISHED"' in reply.text
    history = served.http.get(f"{served.url}/ag-ui/threads/{thread_id}", timeout=WAIT).json()
    return str(history["messages"][-1]["content"])


def listed(served: Served) -> list[dict[str, Any]]:
    reply = served.http.get(f"{served.url}/ag-ui/threads", timeout=WAIT)
    assert reply.status_code == 200, reply.text
    threads: list[dict[str, Any]] = reply.json()["threads"]
    return threads


def test_conversations_are_listed_by_last_use_titled_by_their_first_prompt(
        serve: Callable[..., Served], faux: FauxProvider) -> None:
    served = serve(Maker(faux.get_model()))
    assert listed(served) == []
    answer(served, "z", "\n  Plan a trip to Lisbon\nwith two days in Sintra")
    answer(served, "b", "x" * 100)
    assert [t["threadId"] for t in listed(served)] == ["b", "z"]
    answer(served, "z", "and a third day?")  # used last: listed first, title unchanged
    threads = listed(served)
    assert [(t["threadId"], t["title"], t["running"]) for t in threads] == [
        ("z", "Plan a trip to Lisbon", False), ("b", "x" * 79 + "…", False)]
    assert threads[0]["updatedAt"] > threads[1]["updatedAt"] > 0


def test_rename_changes_the_title_and_bad_renames_say_why(serve: Callable[..., Served],
                                                          faux: FauxProvider) -> None:
    served = serve(Maker(faux.get_model()))
    answer(served, "a", "hello")
    url = f"{served.url}/ag-ui/threads/a"
    renamed = served.http.patch(url, json={"title": "  Greetings  "}, timeout=WAIT)
    assert renamed.status_code == 200
    assert renamed.json() == {"threadId": "a", "title": "Greetings",
                              "updatedAt": listed(served)[0]["updatedAt"], "running": False}
    assert [t["title"] for t in listed(served)] == ["Greetings"]
    answer(served, "a", "again")  # a later prompt keeps the name it was given
    assert [t["title"] for t in listed(served)] == ["Greetings"]
    for title in ("", "   ", "a\nb", "x" * 201, 5, None):
        bad = served.http.patch(url, json={"title": title}, timeout=WAIT)
        assert "'title' must be 1 to 200 printable characters" in error_of(bad, 422)
    assert "not JSON" in error_of(served.http.patch(
        url, data=b"{", headers={"Content-Type": "application/json"}, timeout=WAIT), 400)
    error_of(served.http.patch(url, data=b"title=x", timeout=WAIT), 415)
    unknown = served.http.patch(f"{served.url}/ag-ui/threads/zz", json={"title": "x"},
                                timeout=WAIT)
    assert "unknown threadId 'zz'" in error_of(unknown, 404)


def test_delete_clears_the_transcript_and_its_session_and_the_id_starts_afresh(
        serve: Callable[..., Served], faux: FauxProvider, tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    served = serve(Maker(faux.get_model(), path))
    assert answer(served, "a", "one") == "echo 1: one"
    assert answer(served, "a", "two") == "echo 2: two"
    answer(served, "b", "other")
    deleted = served.http.delete(f"{served.url}/ag-ui/threads/a", timeout=WAIT)
    assert deleted.status_code == 204
    assert [t["threadId"] for t in listed(served)] == ["b"]
    assert served.http.get(f"{served.url}/ag-ui/threads/a", timeout=WAIT).status_code == 404
    with SqliteSession(path, session_id="a") as stored:
        assert stored.load() == []
    with SqliteSession(path, session_id="b") as kept:
        assert len(kept.load()) == 2
    assert answer(served, "a", "three") == "echo 1: three"  # nothing of before
    again = served.http.delete(f"{served.url}/ag-ui/threads/nobody", timeout=WAIT)
    assert "unknown threadId 'nobody'" in error_of(again, 404)


def test_deleting_a_conversation_while_it_runs_aborts_the_run(
        serve: Callable[..., Served], slow_faux: FauxProvider) -> None:
    maker = Maker(slow_faux.get_model())
    served = serve(maker)
    streamed: list[str] = []
    started = threading.Event()

    def read() -> None:
        with served.post(run_body("a", "go on"), stream=True) as reply:
            for line in reply.iter_lines(decode_unicode=True):
                streamed.append(line)
                if "TEXT_MESSAGE_CONTENT" in line:
                    started.set()

    reader = threading.Thread(target=read)
    reader.start()
    try:
        assert started.wait(WAIT)
        assert listed(served)[0]["running"] is True
        deleted = served.http.delete(f"{served.url}/ag-ui/threads/a", timeout=WAIT)
        assert deleted.status_code == 204
    finally:
        reader.join(WAIT)
    assert not reader.is_alive()
    assert any('"RUN_FINISHED"' in line for line in streamed)  # the stream ended, stopped
    assert listed(served) == []
    assert served.http.get(f"{served.url}/ag-ui/threads/a", timeout=WAIT).status_code == 404


def test_a_sqlite_catalog_keeps_the_list_across_a_restart(
        serve: Callable[..., Served], faux: FauxProvider, tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    first = serve(Maker(faux.get_model(), path), catalog=SqliteCatalog(path))
    answer(first, "a", "first conversation")
    first.http.patch(f"{first.url}/ag-ui/threads/a", json={"title": "Named"}, timeout=WAIT)
    answer(first, "b", "second conversation")
    first.stop()
    second = serve(Maker(faux.get_model(), path), catalog=SqliteCatalog(path))
    assert [(t["threadId"], t["title"]) for t in listed(second)] == [
        ("b", "second conversation"), ("a", "Named")]


@pytest.mark.parametrize("make", [MemoryCatalog, lambda: SqliteCatalog(":memory:")])
def test_a_catalog_touches_renames_and_forgets(make: Callable[[], Any]) -> None:
    catalog = make()
    catalog.touch("a", "A")
    catalog.touch("b", "B")
    assert [t.thread_id for t in catalog.threads()] == ["b", "a"]  # within one ms too
    catalog.touch("a", "ignored: a known conversation keeps its title")
    assert [t.thread_id for t in catalog.threads()] == ["a", "b"]
    assert isinstance(catalog.threads()[0], ThreadInfo)
    assert catalog.threads()[0].title == "A"
    assert catalog.rename("b", "Bee") is True
    assert catalog.rename("zz", "x") is False
    assert catalog.forget("a") is True
    assert catalog.forget("a") is False
    assert [(t.thread_id, t.title) for t in catalog.threads()] == [("b", "Bee")]
    close = getattr(catalog, "close", None)
    if close is not None:
        close()
        with pytest.raises(ValueError, match="is closed"):
            catalog.threads()


def test_a_catalog_without_the_methods_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="'catalog' must have the methods of a ThreadCatalog"):
        app(lambda thread_id: ac.Agent(ac.Model("m", "m", "openai-completions", "openai",
                                                "http://127.0.0.1:9")), catalog=object())
