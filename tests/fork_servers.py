"""Fork servers for the crash tests: interpreters that import agentcore once and fork a child
per sample, so that no sample pays for an interpreter's start (`test_session_crash`,
`test_approvals_durable`; the child side is each test's own `*_child.py serve`)."""

from __future__ import annotations

import subprocess

__all__ = ["ForkServers"]


class ForkServers:
    """`count` servers started with `command`, each reading one sample a line on its stdin and
    writing what its children report on its stdout; `close()` ends them and checks they exited
    cleanly (a server that does not end within 10 s is killed, and the test fails)."""

    def __init__(self, command: list[str], count: int) -> None:
        self.servers = [subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                        for _ in range(count)]

    def close(self) -> None:
        for server in self.servers:
            assert server.stdin is not None
            server.stdin.close()
        for server in self.servers:
            try:
                assert server.wait(timeout=10) == 0
            finally:
                server.kill()
                server.wait()
                assert server.stdout is not None
                server.stdout.close()
