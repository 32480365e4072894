"""A conversation kept in PostgreSQL, which any process on any machine can pick up again.

    pip install 'agentcore[postgres]'
    AGENTCORE_POSTGRES_DSN=postgresql://user@host:5432/db python examples/postgres_session.py

Each run adds one exchange to the session `example` (offline: a scripted model answers) and
prints how many messages the session holds: run it twice, or from two machines, and the count
goes on growing. Without `AGENTCORE_POSTGRES_DSN` it says what to set, and stops.
"""

import os

import agentcore as ac
from agentcore.sessions import PostgresSession
from agentcore.testing import scripted_model


def main() -> None:
    dsn = os.environ.get("AGENTCORE_POSTGRES_DSN")
    if not dsn:
        print("set AGENTCORE_POSTGRES_DSN to a PostgreSQL database, e.g. "
              "postgresql://user@localhost:5432/mydb (the tables are made on first use)")
        return
    with scripted_model(["Noted: the sky is blue."]) as fake, \
            PostgresSession(dsn, "example") as session:
        agent = ac.Agent(fake.model, session=session)  # loads what earlier runs stored
        run = agent.prompt("Remember: the sky is blue.")
        print(run.text)
        run.raise_for_error()
        print(f"the session holds {len(session.load())} messages")  # each one durable


if __name__ == "__main__":
    main()
