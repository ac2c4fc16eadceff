"""The command line, run as a user would (subprocess for `demo`, CliRunner elsewhere)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from contextfold.cli import cli


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "chat.jsonl"
    lines = []
    for i in range(300):
        who = "user" if i % 2 == 0 else "assistant"
        text = f"Turn {i}: we talked about the garden, the budget of {1000 + i} euros and Lisbon."
        lines.append(
            json.dumps(
                {
                    "role": who,
                    "content": text,
                    "name": "Ann" if who == "user" else None,
                    "timestamp": f"2024-05-{1 + i // 20:02d}T10:00:00Z",
                }
            )
        )
    path.write_text("\n".join(line.replace(', "name": null', "") for line in lines) + "\n")
    return path


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout


def test_demo_runs_from_the_installed_entry_point(tmp_path: Path) -> None:
    env = {**os.environ, "CONTEXTFOLD_HOME": str(tmp_path), "COLUMNS": "120"}
    out = subprocess.run(
        [sys.executable, "-m", "contextfold.cli", "demo", "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "planted facts survive" in out.stdout
    kept = int(out.stdout.split("planted facts survive")[0].split()[-1].split("/")[0])
    assert kept >= 16
    assert (tmp_path / "contextfold.db").exists()


def test_replay_context_json_is_within_budget_with_summary_first(
    transcript: Path, tmp_path: Path
) -> None:
    db = tmp_path / "r.db"
    code, out = run(
        "replay", str(transcript), "--max-tokens", "1000", "--db", str(db), "--format", "json"
    )
    assert code == 0
    messages = json.loads(out)
    assert messages[0]["role"] == "system"
    assert messages[0]["content"].startswith("Summary of the earlier conversation")
    assert all(
        set(m) <= {"role", "content", "name", "tool_calls", "tool_call_id"} for m in messages
    )
    code, out = run(
        "replay",
        str(transcript),
        "--max-tokens",
        "1000",
        "--db",
        str(db),
        "--output",
        "stats",
        "--format",
        "json",
        "--tokenizer",
        "cl100k",
        "--replace",
    )
    stats = json.loads(out)
    assert stats["messages"] == 300 and stats["folds"] > 0 and stats["context_tokens"] <= 1000


def test_listing_commands_and_json(transcript: Path, tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    run(
        "replay",
        str(transcript),
        "--max-tokens",
        "800",
        "--db",
        str(db),
        "--session",
        "chat",
        "--output",
        "summary",
    )
    code, out = run("sessions", "--db", str(db), "--json")
    assert code == 0 and json.loads(out)[0]["session"] == "chat"
    code, out = run("show", "chat", "--db", str(db), "--json")
    shown = json.loads(out)
    assert (
        shown["summary"] and shown["messages"] and not any(m["folded"] for m in shown["messages"])
    )
    code, out = run("show", "chat", "--db", str(db), "--json", "--all")
    assert len(json.loads(out)["messages"]) == 300
    code, out = run("stats", "--db", str(db), "--json")
    assert json.loads(out)["usage"]["folds"] > 0
    code, out = run("fold", "chat", "--force", "--db", str(db), "--json")
    assert code == 0 and json.loads(out)[0]["status"] == "committed"


def test_bad_transcript_line_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "ok"}\n{"role": "wizard", "content": "x"}\n')
    result = CliRunner().invoke(
        cli, ["replay", str(bad), "--max-tokens", "500", "--db", str(tmp_path / "b.db")]
    )
    assert result.exit_code == 2
    assert "bad.jsonl:2" in result.output and "wizard" in result.output


def test_show_unknown_session(transcript: Path, tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    run("replay", str(transcript), "--max-tokens", "800", "--db", str(db), "--output", "stats")
    result = CliRunner().invoke(cli, ["show", "nobody", "--db", str(db)])
    assert result.exit_code == 2 and "no session 'nobody'" in result.output


@pytest.mark.parametrize("command", [["sessions"], ["show", "s"], ["stats"], ["fold", "s"]])
def test_reading_a_missing_database_is_an_error_and_creates_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    db = tmp_path / "x" / "y.db"
    result = CliRunner().invoke(cli, [*command, "--db", str(db)])
    assert result.exit_code == 2 and "no contextfold database at" in result.output
    assert not (tmp_path / "x").exists()


def test_fold_of_an_unknown_session_is_an_error(transcript: Path, tmp_path: Path) -> None:
    db = tmp_path / "f.db"
    run("replay", str(transcript), "--max-tokens", "800", "--db", str(db), "--session", "chat",
        "--output", "stats")
    result = CliRunner().invoke(cli, ["fold", "chat", "nosuch", "--db", str(db)])
    assert result.exit_code == 2 and "no session 'nosuch'" in result.output
    assert "nothing was folded" in result.output


def test_fold_states_its_budget_and_force_keeps_keep_last(
    transcript: Path, tmp_path: Path
) -> None:
    db = tmp_path / "k.db"
    run("replay", str(transcript), "--max-tokens", "100000", "--db", str(db), "--session",
        "chat", "--output", "stats")
    result = CliRunner().invoke(cli, ["fold", "chat", "--force", "--db", str(db)])
    assert result.exit_code == 0
    assert "policy: TokenBudget(4000, keep_last=2) (the default; --max-tokens N)" in (
        result.output)
    _, out = run("show", "chat", "--db", str(db), "--json")
    assert [m["seq"] for m in json.loads(out)["messages"]] == [299, 300]
    _, out = run("fold", "chat", "--force", "--keep-last", "0", "--db", str(db), "--json")
    row = json.loads(out)[0]
    assert row["status"] == "committed" and (row["lo"], row["hi"]) == (299, 300)
    assert row["budget"] == 4000


def test_sessions_shows_long_ids_whole(tmp_path: Path) -> None:
    db, path = tmp_path / "s.db", tmp_path / "t.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n')
    sid = "tenant-7f3c2a91:conversation-" + "0123456789abcdef" * 4
    run("replay", str(path), "--max-tokens", "800", "--db", str(db), "--session", sid,
        "--output", "stats")
    result = subprocess.run(
        [sys.executable, "-m", "contextfold.cli", "sessions", "--db", str(db)],
        capture_output=True, text=True, env={**os.environ, "COLUMNS": "80"}, check=True)
    assert any(sid in line for line in result.stdout.splitlines()), result.stdout


def test_store_urls_work_wherever_db_does(transcript: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'u.db'}"
    code, _ = run(
        "replay",
        str(transcript),
        "--max-tokens",
        "800",
        "--store",
        url,
        "--session",
        "viaurl",
        "--output",
        "stats",
    )
    assert code == 0
    code, out = run("sessions", "--db", url, "--json")
    assert [s["session"] for s in json.loads(out)] == ["viaurl"]


def test_worker_takes_agent_settings(tmp_path: Path) -> None:
    settings = tmp_path / "agent.yaml"
    settings.write_text("context_limit_tokens: 500\ntimeout_summarize_seconds: 60\n")
    code, out = run(
        "worker",
        "--store",
        f"sqlite:///{tmp_path / 'w.db'}",
        "--once",
        "--settings",
        str(settings),
        "--json",
    )
    assert code == 0 and json.loads(out)["claimed"] == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("context_limit_tokens: lots\n")
    result = CliRunner().invoke(
        cli, ["worker", "--once", "--settings", str(bad), "--db", str(tmp_path / "w.db")]
    )
    assert result.exit_code == 2 and "context_limit_tokens" in result.output
