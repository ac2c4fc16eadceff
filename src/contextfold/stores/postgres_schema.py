"""The PostgreSQL schema (numbered migrations) and the statements that need more than one
line, kept apart from :mod:`.postgres` (the store) so each stays readable."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from psycopg import sql

from .base import LedgerEntry
from .postgres_search import (
    SEARCH_INDEX,
    index_existing,
    index_lexemes_per_session,
    index_per_session,
)
from .rows import LEDGER_COLUMNS, ledger_values

__all__ = [
    "LEDGER_INSERT",
    "LEDGER_SELECT",
    "MIGRATIONS",
    "MIGRATION_LOCK",
    "SESSION_COLS",
    "SESSION_COLS_S",
    "SNAPSHOT_AFTER",
    "SNAPSHOT_MANY",
    "SNAPSHOT_ONE",
    "STARTED_AT",
    "VERSIONS_SELECT",
    "VERSION_COLS",
    "ledger_params",
    "live_rows",
    "migrate",
]

_INITIAL = """
CREATE TABLE sessions (
    session_id text PRIMARY KEY,
    last_seq bigint NOT NULL DEFAULT 0,
    live_count bigint NOT NULL DEFAULT 0,
    live_tokens bigint NOT NULL DEFAULT 0,
    through_seq bigint NOT NULL DEFAULT 0,
    summary_version bigint NOT NULL DEFAULT 0,
    summary_text text,
    summary_tokens bigint NOT NULL DEFAULT 0,
    summary_updated_at timestamptz,
    pending_calls text NOT NULL DEFAULT '[]',
    last_activity timestamptz,
    reported_input_tokens bigint,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sessions_activity ON sessions (last_activity);
CREATE TABLE messages (
    session_id text NOT NULL,
    seq bigint NOT NULL,
    client_id text,
    role text NOT NULL,
    body text NOT NULL,
    tokens integer NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE UNIQUE INDEX messages_client_id ON messages (session_id, client_id)
    WHERE client_id IS NOT NULL;
CREATE TABLE ledger (
    id bigserial PRIMARY KEY,
    session_id text NOT NULL,
    outcome text NOT NULL,
    reason text NOT NULL DEFAULT '',
    lo bigint NOT NULL DEFAULT 0,
    hi bigint NOT NULL DEFAULT 0,
    messages_folded bigint NOT NULL DEFAULT 0,
    tokens_folded bigint NOT NULL DEFAULT 0,
    summary_tokens bigint NOT NULL DEFAULT 0,
    input_tokens bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    calls bigint NOT NULL DEFAULT 0,
    model text,
    latency_ms double precision NOT NULL DEFAULT 0,
    error_class text,
    error text,
    started_at timestamptz,
    key text
);
CREATE INDEX ledger_session ON ledger (session_id, id);
"""

_DUE_AND_LEASES = """
ALTER TABLE sessions
    ADD COLUMN due_at timestamptz,
    ADD COLUMN due_seq bigint NOT NULL DEFAULT -1,
    ADD COLUMN lease_owner text,
    ADD COLUMN lease_expires timestamptz,
    ADD COLUMN lease_token bigint NOT NULL DEFAULT 0;
CREATE INDEX sessions_due ON sessions (due_at) WHERE due_at IS NOT NULL;
ALTER TABLE ledger ADD COLUMN owner text, ADD COLUMN lease_token bigint;
"""

# Reversible redaction: placeholder -> value per session, apart from the summary.
_PII_VAULT = """
CREATE TABLE pii_vault (
    session_id text NOT NULL,
    placeholder text NOT NULL,
    value text NOT NULL,
    PRIMARY KEY (session_id, placeholder)
);
"""

# One row per committed fold: what the inspector diffs. ``text`` is NULL when the store
# keeps no summary history (delete retention by default).
_SUMMARY_VERSIONS = """
CREATE TABLE summary_versions (
    session_id text NOT NULL,
    version bigint NOT NULL,
    lo bigint NOT NULL,
    through_seq bigint NOT NULL,
    at_seq bigint NOT NULL,
    tokens bigint NOT NULL,
    live_tokens bigint NOT NULL,
    text text,
    created_at timestamptz,
    PRIMARY KEY (session_id, version)
);
"""

# Ledger rows by session id *prefix* (a tenant's usage): a range in code point order, which
# the default index serves only under a "C" database collation; SQLite compares BINARY.
_LEDGER_PREFIX = """
CREATE INDEX ledger_session_prefix ON ledger ((session_id COLLATE "C"));
"""


# Each sessions row's generation: drawn from a sequence when the row is made, so a session
# deleted and created again under the same id is told apart from the one before, whatever
# its ``created_at`` — what a cached live list is checked against (see :mod:`.live_cache`).
# The rows there already keep NULL: a session created again after this migration gets a
# number, so NULL never stands for two sessions; and adding a nullable column, then a
# default, rewrites no row (an identity column rewrote the table under its lock: ~3 s
# for a million sessions).
_SESSION_GENERATIONS = """
CREATE SEQUENCE session_generation;
ALTER TABLE sessions ADD COLUMN generation bigint;
ALTER TABLE sessions ALTER COLUMN generation SET DEFAULT nextval('session_generation');
ALTER SEQUENCE session_generation OWNED BY sessions.generation
"""


async def _full_text_search(conn: Any, search_config: str) -> None:
    """The search column and its GIN index, then every stored message indexed (a
    database made before search gains it here)."""
    for statement in SEARCH_INDEX.split(";"):
        if statement.strip():
            await conn.execute(statement)
    await index_existing(conn, search_config)


#: One migration step: SQL (statements separated by ``;``) or a coroutine function of
#: (connection, search configuration) run in the migration's transaction.
Step = str | Callable[[Any, str], Awaitable[None]]

#: Ordered (version, name, step): SQLite's first four, then 5 (PostgreSQL only), 6
#: (full-text search, SQLite's 5), 7 and 8 (PostgreSQL only), 9 (SQLite's 7). Append;
#: never edit one.
MIGRATIONS: list[tuple[int, str, Step]] = [
    (1, "initial schema", _INITIAL),
    (2, "due sessions and leases", _DUE_AND_LEASES),
    (3, "pii vault", _PII_VAULT),
    (4, "summary versions", _SUMMARY_VERSIONS),
    (5, "ledger by session prefix", _LEDGER_PREFIX),
    (6, "full-text search", _full_text_search),
    (7, "search index per session", index_per_session),
    (8, "search lexemes per session", index_lexemes_per_session),
    (9, "session generations", _SESSION_GENERATIONS),
]

VERSION_COLS = (
    "session_id, version, lo, through_seq, at_seq, tokens, live_tokens, text, created_at"
)
VERSIONS_SELECT = (
    "SELECT session_id, version, lo, through_seq, at_seq, tokens, live_tokens, "
    "CASE WHEN %s THEN text END, created_at FROM summary_versions "
    "WHERE session_id = %s AND version > %s ORDER BY version LIMIT %s"
)

SESSION_COLS = (
    "session_id, last_seq, live_count, live_tokens, through_seq, summary_version, "
    "summary_tokens, pending_calls, last_activity, reported_input_tokens"
)
LEDGER_INSERT = (
    f"INSERT INTO ledger ({', '.join(LEDGER_COLUMNS)}) "
    f"VALUES ({', '.join('%s' for _ in LEDGER_COLUMNS)}) RETURNING id"
)
LEDGER_SELECT = ", ".join(("id", *LEDGER_COLUMNS))
STARTED_AT = LEDGER_COLUMNS.index("started_at")
MIGRATION_LOCK = 0x636F6E74  # advisory lock key ("cont"), scoped to the database


SESSION_COLS_S = ", ".join(f"s.{c.strip()}" for c in SESSION_COLS.split(","))

def live_rows(after: str = "s.through_seq") -> str:
    """A ``LEFT JOIN`` of a ``sessions s`` row to its messages with ``seq`` above ``after``
    (an SQL expression of ``s``; never below the fold cursor): the live rows, read by
    the primary key's range.

    The range is bounded by ``last_seq`` too (no message is above it) and asked in a
    subquery the planner keeps apart (``OFFSET 0``): there the session's columns are
    parameters, the two bounds a range of ``seq`` the planner estimates as narrow, and it
    reads that range of the index. As a plain join, with nothing to tell how few of a long
    session's rows lie above its cursor (a third of them, it guesses), it would rather
    scan the whole table and hash the session row (100 ms on 200,000 messages, on every
    ``context()``)."""
    return (
        "LEFT JOIN LATERAL (SELECT m.seq, m.body, m.tokens FROM messages m "
        f"WHERE m.session_id = s.session_id AND m.seq > {after} AND m.seq <= s.last_seq "
        "OFFSET 0) m ON true "
    )


_SNAPSHOT = (
    f"SELECT {SESSION_COLS_S}, s.summary_text, s.summary_updated_at, "
    "m.seq, m.body, m.tokens FROM sessions s " + live_rows()
)
#: Stats, summary and live rows of one session (one row per live message).
SNAPSHOT_ONE = _SNAPSHOT + "WHERE s.session_id = %s ORDER BY m.seq"
#: The same for many sessions in one statement (a ``fold_many`` wave).
SNAPSHOT_MANY = _SNAPSHOT + "WHERE s.session_id = ANY(%s) ORDER BY s.session_id, m.seq"
#: One session's stats, summary, generation and live rows with ``seq`` above a given one
#: (the rows a cached live list does not have yet; see :mod:`.live_cache`).
SNAPSHOT_AFTER = (
    f"SELECT {SESSION_COLS_S}, s.summary_text, s.summary_updated_at, "
    "m.seq, m.body, m.tokens, s.generation FROM sessions s "
    + live_rows("GREATEST(s.through_seq, %s)")
    + "WHERE s.session_id = %s ORDER BY m.seq"
)


def ledger_params(entry: LedgerEntry) -> tuple[Any, ...]:
    values = list(ledger_values(entry))
    values[STARTED_AT] = entry.started_at  # a real timestamptz, not text
    return tuple(values)


async def migrate(conn: Any, schema: str, search_config: str = "simple") -> None:
    """Create the schema and apply the missing migrations, under an advisory lock so any
    number of processes may run it at once (inside the caller's transaction).
    ``search_config``: the text search configuration existing messages are indexed with."""
    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
    await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, "
        "name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
    )
    cur = await conn.execute("SELECT version FROM schema_migrations")
    done = {r[0] for r in await cur.fetchall()}
    for version, name, script in MIGRATIONS:
        if version in done:
            continue
        if callable(script):
            await script(conn, search_config)
        else:
            for statement in script.split(";"):
                if statement.strip():
                    await conn.execute(statement)
        await conn.execute(
            "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (version, name)
        )
