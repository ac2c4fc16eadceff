"""``contextfold replay`` shares the service's batch semantics: the whole file is checked
before anything is stored, and an import can be run again without storing a line twice."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from contextfold import Memory
from contextfold.cli import cli


def lines(n: int) -> list[str]:
    out = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        out.append(json.dumps({"role": role, "content": f"turn {i}: the plan is step {i}"}))
    return out


def replay(path: Path, db: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["replay", str(path), "--max-tokens", "2000", "--db",
                                      str(db), "--session", "s", "--output", "stats",
                                      "--format", "json", *extra])
    return result.exit_code, result.output


def stored(db: Path) -> list[str]:
    with Memory(f"sqlite:///{db}") as memory:
        return [m.message.text for m in memory.messages("s")]


def test_a_bad_line_stores_nothing_and_the_fixed_file_stores_each_line_once(
    tmp_path: Path,
) -> None:
    db, path = tmp_path / "r.db", tmp_path / "chat.jsonl"
    good = lines(6)
    broken = [*good[:2], '{"role": "user", "content": ', *good[3:]]
    path.write_text("\n".join(broken) + "\n")
    code, out = replay(path, db, "--append")
    assert code == 2 and "chat.jsonl:3: not JSON" in out and "Traceback" not in out
    assert len(out.strip().splitlines()) == 1
    assert not db.exists() or stored(db) == []
    path.write_text("\n".join(good) + "\n")
    for _ in range(2):  # fixed, then run again: each line stored once
        code, out = replay(path, db, "--append")
        assert code == 0, out
    assert stored(db) == [json.loads(line)["content"] for line in good]
    assert json.loads(out)["already_stored"] == 6


def test_an_interrupted_import_finishes_when_run_again(tmp_path: Path) -> None:
    db, path = tmp_path / "r.db", tmp_path / "chat.jsonl"
    all_lines = lines(10)
    path.write_text("\n".join(all_lines[:4]) + "\n")  # the part a killed run had stored
    assert replay(path, db, "--append")[0] == 0
    path.write_text("\n".join(all_lines) + "\n")
    code, out = replay(path, db, "--append")
    assert code == 0 and json.loads(out)["already_stored"] == 4
    assert stored(db) == [json.loads(line)["content"] for line in all_lines]


def test_a_bad_file_leaves_the_existing_session_alone(tmp_path: Path) -> None:
    db, path = tmp_path / "r.db", tmp_path / "chat.jsonl"
    path.write_text("\n".join(lines(4)) + "\n")
    assert replay(path, db)[0] == 0
    before = stored(db)
    path.write_text("\n".join([*lines(2), '{"role": "tool", "content": "orphan",'
                                          ' "tool_call_id": "c9"}']) + "\n")
    code, out = replay(path, db)  # replace mode: still nothing replaced
    assert code == 2 and "chat.jsonl:3:" in out and "c9" in out
    assert stored(db) == before


def test_binary_and_non_utf8_files_are_one_line_errors(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    png = tmp_path / "image.jsonl"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    code, out = replay(png, db)
    assert code == 2 and "image.jsonl:1: not UTF-8 text (byte 0x89 at column 1)" in out
    assert "Traceback" not in out and "UnicodeDecodeError" not in out
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(lines(1)[0].encode() + b"\n" + '{"role": "user", "content": "café"}'
                      .encode("latin-1") + b"\n")
    code, out = replay(latin, db)
    assert code == 2 and "latin.jsonl:2: not UTF-8 text" in out
    assert not db.exists() or stored(db) == []


def test_lines_with_their_own_ids_keep_them(tmp_path: Path) -> None:
    db, path = tmp_path / "r.db", tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "hi", "id": "mine-1"}) + "\n"
                    + lines(2)[1] + "\n")
    assert replay(path, db, "--append")[0] == 0
    with Memory(f"sqlite:///{db}") as memory:
        ids = [m.message.id for m in memory.messages("s")]
    assert ids[0] == "mine-1" and ids[1] is not None and ids[1].startswith("chat.jsonl:2:")


def test_replay_onto_an_existing_session_refuses_without_replace_or_append(
    tmp_path: Path,
) -> None:
    db, path, other = tmp_path / "r.db", tmp_path / "chat.jsonl", tmp_path / "other.jsonl"
    path.write_text("\n".join(lines(6)) + "\n")
    assert replay(path, db)[0] == 0
    before = stored(db)
    other.write_text("\n".join(lines(2)) + "\n")
    code, out = replay(other, db)
    assert code == 2 and "session 's' already exists (6 messages)" in out
    assert "--append" in out and "--replace" in out
    assert stored(db) == before
    code, out = replay(other, db, "--append", "--replace")
    assert code == 2 and "exclude each other" in out and stored(db) == before
    code, out = replay(other, db, "--replace")
    assert code == 0 and json.loads(out.split("\n", 1)[1])["session"] == "s"
    assert stored(db) == [json.loads(line)["content"] for line in lines(2)]


def test_an_empty_transcript_is_an_error_and_touches_nothing(tmp_path: Path) -> None:
    db, path, empty = tmp_path / "r.db", tmp_path / "chat.jsonl", tmp_path / "empty.jsonl"
    path.write_text("\n".join(lines(4)) + "\n")
    assert replay(path, db)[0] == 0
    before = stored(db)
    for text in ("", "\n\n  \n"):
        empty.write_text(text)
        for flags in ((), ("--replace",), ("--append",)):
            code, out = replay(empty, db, *flags)
            assert code == 2 and "empty.jsonl: no messages" in out, (flags, out)
            assert stored(db) == before


def test_replay_names_the_session_it_wrote(tmp_path: Path) -> None:
    db, path = tmp_path / "r.db", tmp_path / "chat.jsonl"
    path.write_text("\n".join(lines(4)) + "\n")
    result = CliRunner().invoke(cli, ["replay", str(path), "--max-tokens", "2000", "--db",
                                      str(db), "--output", "summary"])
    assert result.exit_code == 0
    assert f"replayed into session 'chat' of {db.resolve()}: 4 messages" in result.stderr
