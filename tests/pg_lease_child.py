"""A child process for `tests/integrations/test_postgres_session.py`: a lease holder to kill.

    python tests/pg_lease_child.py DSN SESSION_ID

Takes the lease of the session SESSION_ID of the database DSN, prints `ready`, then waits for
stdin to close (the test SIGKILLs it first), holding the lease all the while.
"""

from __future__ import annotations

import sys

from agentcore.sessions import PostgresSession

if __name__ == "__main__":
    session = PostgresSession(sys.argv[1], sys.argv[2])
    lease = session.lease()
    print("ready", flush=True)
    sys.stdin.read()
    lease.release()
    session.close()
