"""Operator tokens, sessions and CSRF tokens of the dashboard, and the agents' tokens of
/mcp (the same scheme), without a server."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from jobtrail.dashboard.access import (
    SESSION_FOR,
    Access,
    Role,
    agents_from_env,
    match_token,
    operators_from_env,
    token_hash,
)
from jobtrail.errors import InvalidInput

NOW = datetime(2026, 12, 1, 10, tzinfo=UTC)
ALICE = "alice-" + "a" * 20


def test_tokens_from_the_environment_and_from_a_file_of_hashes(tmp_path: Path) -> None:
    """Operators come from NAME:TOKEN pairs or from a file of sha256 hashes, with roles."""
    file = tmp_path / "operators"
    digest = hashlib.sha256(b"dave-" + b"d" * 20).hexdigest()
    file.write_text(f"# name role hash\ndave read-only sha256:{digest}\n", encoding="utf-8")
    env = {"JOBTRAIL_OPERATOR_TOKENS": f"alice:{ALICE}", "JOBTRAIL_OPERATOR_FILE": str(file)}
    access = Access(operators_from_env(env))
    alice, dave = access.by_token(ALICE), access.by_token("dave-" + "d" * 20)
    assert alice is not None and alice.role is Role.OPERATOR and alice.actor == "dashboard:alice"
    assert dave is not None and dave.role is Role.READ_ONLY
    assert access.by_token("nobody-" + "x" * 20) is None


def test_a_bad_token_list_is_refused_without_echoing_it() -> None:
    """A malformed or short token is an error that does not repeat the token."""
    with pytest.raises(InvalidInput) as refused:
        operators_from_env({"JOBTRAIL_OPERATOR_TOKENS": "alice:short-secret"})
    assert "short-secret" not in str(refused.value)


def test_sessions_expire_and_end_when_tampered_or_the_token_changes() -> None:
    """A session cookie opens the dashboard until it expires; an edited one, or one made
    before the operator's token changed, opens nothing."""
    key = b"k" * 32
    access = Access(operators_from_env({"JOBTRAIL_OPERATOR_TOKENS": f"alice:{ALICE}"}), key)
    op = access.by_token(ALICE)
    assert op is not None
    cookie, made = access.new_session(op, NOW)
    assert access.from_cookie(cookie, NOW + timedelta(minutes=5)) == made
    assert access.from_cookie(cookie, NOW + SESSION_FOR) is None
    body, _, signature = cookie.partition(".")
    assert access.from_cookie(f"{body}x.{signature}", NOW) is None
    renewed = Access(operators_from_env({"JOBTRAIL_OPERATOR_TOKENS": f"alice:{ALICE}-new"}), key)
    assert renewed.from_cookie(cookie, NOW) is None
    assert ALICE not in cookie


def test_a_csrf_token_belongs_to_one_session() -> None:
    """The CSRF token of one session is refused for another."""
    access = Access(operators_from_env({"JOBTRAIL_OPERATOR_TOKENS": f"alice:{ALICE}"}))
    op = access.by_token(ALICE)
    assert op is not None
    _, first = access.new_session(op, NOW)
    _, second = access.new_session(op, NOW)
    assert access.csrf_ok(first, access.csrf(first))
    assert not access.csrf_ok(second, access.csrf(first)) and not access.csrf_ok(first, "")


def test_agents_come_from_tokens_and_a_file_of_hashes(tmp_path: Path) -> None:
    """JOBTRAIL_AGENT_TOKENS and JOBTRAIL_AGENT_FILE (`NAME sha256:HEX`) name agents by the
    operators' scheme: only hashes kept, a bad line named by its number, no name twice."""
    token = "etl-token-" + "e" * 20
    file = tmp_path / "agents"
    file.write_text(f"# agents\netl sha256:{token_hash(token)}\n", encoding="utf-8")
    env = {"JOBTRAIL_AGENT_TOKENS": "reports:" + "r" * 20, "JOBTRAIL_AGENT_FILE": str(file)}
    found = agents_from_env(env)
    assert [(a.name, a.actor) for a in found] == [
        ("reports", "agent:reports"),
        ("etl", "agent:etl"),
    ]
    assert all("r" * 20 not in a.token_hash for a in found)
    by_hash = [(a.token_hash, a) for a in found]
    assert match_token(by_hash, token) == found[1] and match_token(by_hash, "x" * 20) is None
    file.write_text("etl operator sha256:" + "0" * 64 + "\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"agents:1: expected `NAME sha256:HEX`"):
        agents_from_env(env)
    with pytest.raises(InvalidInput, match="given twice"):
        agents_from_env({"JOBTRAIL_AGENT_TOKENS": f"a:{'1' * 20},a:{'2' * 20}"})
