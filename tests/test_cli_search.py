"""``contextfold search`` as a user runs it: a table, --json, the folded filter, errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from contextfold import Memory, MessageCount
from contextfold.cli import cli


def _db(tmp_path: Path) -> str:
    db = str(tmp_path / "c.db")
    with Memory(db, policy=MessageCount(4, fold=3)) as memory:
        memory.add("trip", {"role": "user", "content": "We booked the ferry to Bodrum"},
                   {"role": "assistant", "content": "Ferry booked for the 14th."},
                   {"role": "user", "content": "My cat is called Pamuk"},
                   {"role": "assistant", "content": "Lovely."},
                   {"role": "user", "content": "Pamuk likes the Bodrum fish market"})
    return db


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def _stdout(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_search_prints_a_table_best_first(tmp_path: Path) -> None:
    db = _db(tmp_path)
    code, out = _run("search", "trip", "When is the FERRY to Bodrum?", "--db", db)
    assert code == 0, out
    assert out.index("We booked the ferry") < out.index("Pamuk likes")
    assert "folded" in out and "seq" in out


def test_search_json_limit_and_folded_filter(tmp_path: Path) -> None:
    db = _db(tmp_path)
    code, out = _run("search", "trip", "bodrum pamuk", "--json", "--store", f"sqlite:///{db}")
    hits = json.loads(out)
    assert code == 0 and hits[0]["seq"] == 5 and hits[0]["matched"] == 2
    assert set(hits[0]) == {"seq", "role", "timestamp", "snippet", "score", "folded", "matched"}
    live = json.loads(_run("search", "trip", "bodrum pamuk", "--live", "--json", "--db", db)[1])
    folded = json.loads(_run("search", "trip", "bodrum", "--folded", "--json", "--db", db)[1])
    assert [h["seq"] for h in live] == [5] and [h["seq"] for h in folded] == [1]
    one = json.loads(_run("search", "trip", "bodrum", "--limit", "1", "--json", "--db", db)[1])
    assert len(one) == 1


def test_search_nothing_unknown_session_and_bad_limit(tmp_path: Path) -> None:
    db = _db(tmp_path)
    code, out = _run("search", "trip", "zeppelin", "--db", db)
    assert code == 0 and "nothing in 'trip' matches" in out
    assert json.loads(_run("search", "trip", '"*', "--json", "--db", db)[1]) == []
    code, out = _run("search", "nobody", "ferry", "--db", db)
    assert code == 2 and "no session 'nobody'" in out
    code, out = _run("search", "trip", "ferry", "--limit", "0", "--db", db)
    assert code == 2 and "limit" in out


def _long_chat(tmp_path: Path) -> Path:
    path = tmp_path / "long.jsonl"
    lines = []
    for i in range(60):
        code = 7000 + i * 13
        lines.append({"role": "user", "content": f"The locker code for room {i} is {code}."})
        lines.append({"role": "assistant", "content": f"Noted the code of room {i}."})
    for i in range(100):
        lines.append({"role": "user" if i % 2 == 0 else "assistant",
                      "content": f"Turn {i}: more about the garden, tomatoes and the weather."})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def test_replay_query_recalls_folded_turns_into_the_context(tmp_path: Path) -> None:
    chat, db = _long_chat(tmp_path), str(tmp_path / "r.db")
    base = ["replay", str(chat), "--max-tokens", "600", "--db", db, "--format", "json"]
    query = ["--query", "What was the locker code for room 43?"]
    stats = json.loads(_stdout(*base, "--output", "stats", *query))
    assert stats["folds"] > 0 and 87 in stats["recalled"]  # room 43's turn
    assert stats["context_tokens"] <= 600
    with Memory(db) as memory:
        assert "7559" not in memory.summary("long").text  # type: ignore[union-attr]
    again = [*base, "--replace"]  # replay never touches an existing session by default
    assert "7559" in _stdout(*again, *query)
    assert "recalled" not in json.loads(_stdout(*again, "--output", "stats"))
