"""`JsonlSession`: a transcript as an append-only file of JSON lines, one message a line."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from .._core import (
    AgentMessage,
    AssistantMessage,
    JournalEntry,
    SerializationError,
    ToolResultMessage,
    from_dict,
    from_json,
    to_json,
    type_error,
    unanswered_tool_calls,
)
from ._encode import encode

__all__ = ["JsonlSession"]

_log = logging.getLogger("agentcore.sessions")

_BLOCK = 64 * 1024


class JsonlSession:
    """One session's transcript in a file of JSON lines (`to_json` of each message, in order).

    `append` adds lines at the end of the file; `replace` and `clear` write a new file beside
    it and rename it over the old one (`os.replace`), so that a crash leaves the old transcript
    or the new one. A process killed in the middle of an append may leave a half-written last
    line: `load` ignores it and says so in a WARNING on the `agentcore.sessions` logger (it
    never raises for it), and the next `append` cuts it off before writing. A bad line
    anywhere else is not a crash's doing: `load` raises `SerializationError` naming it.

    Durability: by default (`durable=False`) each append is written to the operating system
    before `append` returns, which is all that killing the process needs; a power loss or an
    OS crash may lose the last lines. `durable=True` adds an `os.fsync` per append (one per
    batch of messages). The same choice, and the same word, as `SqliteSession`'s.

    The file holds one session; its id is the file's stem (`chat` for `chat.jsonl`), and
    `session_ids()` is `[stem]` once the file holds a message, else `[]`. One writer at a
    time: two processes appending to one file may interleave their lines (use
    `SqliteSession` for that).

    Only agentcore's own message kinds are stored: `append` and `replace` raise
    `SerializationError` for an application's own message class, which would not load again.

    Journal (`SessionJournal`; API §24): a second file beside the transcript, its name the
    transcript's with `-journal` added (`chat.jsonl-journal`), holds the tool calls of the
    current batch, one JSON object a line: `{"start": {"call_id": ..., "tool_name": ...,
    "idempotency_key": ...}}` before a call runs, `{"end": <its ToolResultMessage>}` when it
    has ended. It is emptied when the first call of a batch starts and once the transcript
    holds the results of every call it recorded, so it stays small; `replace` keeps only the
    records of calls its transcript leaves unanswered, `clear` empties it. It is created with
    the transcript's first tool call (before the message holding it is appended); a transcript
    with calls but without it (written before the journal existed, or copied alone) has no
    record of its calls: `load_journal()` returns None, and its interrupted calls
    get the old text. A damaged last line (a kill in the middle of a write) is ignored. Each
    record is one `write` (two per tool call, each fsynced with `durable=True`).
    `identity` (`"jsonl:<absolute path>"`) is the scope of the session's idempotency keys.

    Threading: every method may be called from any thread (a lock guards the file).
    `close()` releases the open file (or use `with`); the `Agent` never closes a session.

    Args:
        path: The file (created on the first append).
        durable: Also survive a power loss: an fsync per append.
    """

    def __init__(self, path: str | os.PathLike[str], *, durable: bool = False) -> None:
        if not isinstance(durable, bool):
            raise type_error("durable", "a bool", durable)
        self.path = Path(path)
        """The file."""
        self.durable = durable
        """Whether every append is flushed to the disk (`os.fsync`)."""
        self.identity = f"jsonl:{os.path.realpath(self.path)}"
        """The session's identity: its file's absolute path (see the class)."""
        self._journal_path = self.path.with_name(f"{self.path.name}-journal")
        self._lock = threading.Lock()
        self._file: io.FileIO | None = None  # opened for appending by the first append
        self._journal_file: io.FileIO | None = None  # opened by the first journal write
        self._recorded: set[str] = set()  # calls journaled here whose results are not appended
        self._journal_ready = False  # whether the journal's file is known to exist

    @property
    def session_id(self) -> str:
        """The session's id: the file's stem."""
        return self.path.stem

    def __repr__(self) -> str:
        return f"JsonlSession({str(self.path)!r})"

    def load(self) -> list[AgentMessage]:
        """The transcript, oldest message first; a damaged last line is left out (logged)."""
        with self._lock:
            try:
                data = self.path.read_bytes()
            except FileNotFoundError:
                return []
        lines = data.split(b"\n")
        while lines and not lines[-1].strip():
            lines.pop()
        messages: list[AgentMessage] = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                messages.append(from_json(AgentMessage, line.decode("utf-8")))
            except (SerializationError, UnicodeDecodeError) as exc:
                if number < len(lines):
                    raise SerializationError(f"{self.path}: line {number}: {exc}") from exc
                _log.warning("%s: the last line (%d bytes) is damaged, left by a write that "
                             "never finished; loaded the %d messages before it", self.path,
                             len(line), len(messages))
        return messages

    def append(self, messages: Sequence[AgentMessage]) -> None:
        """Add `messages` at the end of the file, one line each, in one write."""
        data = "".join(text + "\n" for _, text in encode(messages)).encode("utf-8")
        if not data:
            return
        with self._lock:
            file = self._open()
            if not self._journal_ready and any(
                    isinstance(m, AssistantMessage) and m.tool_calls for m in messages):
                # The journal exists before any call it will record does: a transcript
                # without one was written before journals (see `load_journal`)
                io.FileIO(self._journal_path, "a").close()
                self._journal_ready = True
            _write_all(file, data, self.durable)
            if self._recorded:
                self._recorded.difference_update(
                    m.tool_call_id for m in messages if isinstance(m, ToolResultMessage))
                if not self._recorded:  # the journal's calls all have their results now
                    self._empty_journal()

    def replace(self, messages: Sequence[AgentMessage]) -> None:
        """Make `messages` the transcript: a new file renamed over the old one."""
        data = "".join(text + "\n" for _, text in encode(messages)).encode("utf-8")
        with self._lock:
            self._close()  # the rename leaves an open handle writing to the old file
            temporary = self.path.with_name(
                f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            try:
                handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
                with contextlib.suppress(FileNotFoundError):  # keep the file's permissions
                    os.chmod(handle, os.stat(self.path).st_mode & 0o7777)
                with open(handle, "wb") as file:
                    file.write(data)
                    file.flush()
                    os.fsync(file.fileno())  # always: a rename may reach the disk before data
                os.replace(temporary, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
            # Then the journal (a crash in between leaves records of answered calls: ignored)
            keep = {call.id for call in unanswered_tool_calls(messages)}
            kept = [(line, call_id) for line, call_id in self._journal_lines()
                    if call_id in keep]
            self._close_journal()
            if kept or self._journal_path.exists():
                self._rewrite_journal(b"".join(line for line, _ in kept))
            self._recorded = {call_id for _, call_id in kept}
            if self.durable:
                _fsync_directory(self.path.parent)

    def clear(self) -> None:
        """Empty the transcript and the journal (the files stay, empty)."""
        self.replace([])

    def journal_start(self, call_id: str, tool_name: str, idempotency_key: str) -> None:
        """Record that the call is about to run.

        The journal is emptied first when every call it records has its result in the
        transcript: this is the first call of a batch.
        """
        record = {"call_id": call_id, "tool_name": tool_name, "idempotency_key": idempotency_key}
        self._journal_write(json.dumps({"start": record}), call_id)

    def journal_end(self, result: ToolResultMessage) -> None:
        """Record the ended call's result message."""
        self._journal_write(f'{{"end":{to_json(result)}}}', result.tool_call_id)

    def load_journal(self) -> list[JournalEntry] | None:
        """The journal's records (None when the transcript has no journal beside it)."""
        with self._lock:
            try:
                data = self._journal_path.read_bytes()
            except FileNotFoundError:
                return None if self.path.exists() and self.path.stat().st_size else []
        entries: dict[str, JournalEntry] = {}
        lines = data.split(b"\n")
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if "start" in record:
                    start = record["start"]
                    entries[start["call_id"]] = JournalEntry(
                        start["call_id"], start["tool_name"], start["idempotency_key"])
                else:
                    result = from_dict(ToolResultMessage, record["end"])
                    started = entries.get(result.tool_call_id)
                    entries[result.tool_call_id] = JournalEntry(
                        result.tool_call_id, result.tool_name,
                        "" if started is None else started.idempotency_key, result)
            except (ValueError, TypeError, KeyError, SerializationError) as exc:
                level = logging.WARNING if number >= len(lines) - 1 else logging.ERROR
                _log.log(level, "%s: line %d is damaged, ignored: %s", self._journal_path,
                         number, exc)
        return list(entries.values())

    def session_ids(self) -> list[str]:
        """`[stem]` when the file holds anything, else `[]`."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return []
        return [self.session_id] if size else []

    def close(self) -> None:
        """Close the files kept open for appending; a later append opens them again."""
        with self._lock:
            self._close()
            self._close_journal()

    def __enter__(self) -> JsonlSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _close(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            file.close()

    def _open(self) -> io.FileIO:
        """The file, open for appending, its damaged last line (if any) cut off first."""
        if self._file is not None:
            return self._file
        created = not self.path.exists()
        file = io.FileIO(self.path, "a+")
        try:
            _mend_tail(file, self.path)
        except BaseException:
            file.close()
            raise
        if created and self.durable:
            _fsync_directory(self.path.parent)
        self._file = file
        return file

    def _journal_write(self, line: str, call_id: str) -> None:
        """Append one record to the journal; a first record of a batch empties it first."""
        data = f"{line}\n".encode("utf-8", "surrogatepass")
        with self._lock:
            if not self._recorded:
                self._empty_journal()
            file = self._journal_file
            if file is None:
                file = self._journal_file = io.FileIO(self._journal_path, "a+")
                self._journal_ready = True
                size = os.fstat(file.fileno()).st_size
                if size and _byte_at(file, size - 1) != b"\n":  # a write a kill cut short
                    data = b"\n" + data
            _write_all(file, data, self.durable)
            self._recorded.add(call_id)

    def _rewrite_journal(self, data: bytes) -> None:
        """Make `data` the journal (under the lock, its file closed): at once, if not empty."""
        if not data:
            io.FileIO(self._journal_path, "w").close()
            return
        temporary = self._journal_path.with_name(
            f".{self._journal_path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            with open(temporary, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self._journal_path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    def _empty_journal(self) -> None:
        """Cut the journal to nothing (under the lock)."""
        self._recorded.clear()
        if self._journal_file is not None:
            self._journal_file.truncate(0)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.truncate(self._journal_path, 0)

    def _close_journal(self) -> None:
        file, self._journal_file = self._journal_file, None
        if file is not None:
            file.close()

    def _journal_lines(self) -> list[tuple[bytes, str]]:
        """Each whole, readable line of the journal with its call id (under the lock)."""
        try:
            data = self._journal_path.read_bytes()
        except FileNotFoundError:
            return []
        out = []
        for line in data.splitlines(keepends=True):
            try:
                record = json.loads(line)
                call_id = record["start"]["call_id"] if "start" in record \
                    else record["end"]["toolCallId"]
            except (ValueError, TypeError, KeyError):
                continue
            if line.endswith(b"\n") and isinstance(call_id, str):
                out.append((line, call_id))
        return out


def _write_all(file: io.FileIO, data: bytes, durable: bool) -> None:
    view = memoryview(data)
    while view:
        view = view[file.write(view) or 0:]
    if durable:
        os.fsync(file.fileno())


def _mend_tail(file: io.FileIO, path: Path) -> None:
    """Make the file end with a whole message and a newline: cut off a damaged last line.

    Only the last line is looked at (read backwards, a block at a time, as a line may hold
    megabytes of image data): that is the one an unfinished write leaves.
    """
    size = os.fstat(file.fileno()).st_size
    content_end = _back(file, size, skip_blanks=True)
    if content_end == 0:
        if size:
            file.truncate(0)
        return
    line_start = _back(file, content_end, skip_blanks=False)
    file.seek(line_start)
    line = file.read(content_end - line_start) or b""
    try:
        from_json(AgentMessage, line.decode("utf-8"))
    except (SerializationError, UnicodeDecodeError):
        _log.warning("%s: cutting off a damaged last line (%d bytes) before appending",
                     path, size - line_start)
        file.truncate(line_start)
        return
    if size - content_end != 1 or _byte_at(file, content_end) != b"\n":
        file.truncate(content_end)  # a whole message without its newline: end it
        file.write(b"\n")


def _back(file: io.FileIO, end: int, *, skip_blanks: bool) -> int:
    """Where a backward scan from `end` stops; 0 when it reaches the start.

    With `skip_blanks`, the offset just past the last non-blank byte; else just past the last
    newline.
    """
    while end > 0:
        start = max(0, end - _BLOCK)
        file.seek(start)
        block = file.read(end - start) or b""
        if skip_blanks:
            kept = len(block.rstrip())
            if kept:
                return start + kept
        else:
            newline = block.rfind(b"\n")
            if newline >= 0:
                return start + newline + 1
        end = start
    return 0


def _byte_at(file: io.FileIO, offset: int) -> bytes:
    file.seek(offset)
    return file.read(1) or b""


def _fsync_directory(directory: Path) -> None:
    """Flush a directory's entries (a new or renamed file) to the disk, where that is possible."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

