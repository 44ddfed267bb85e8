"""`jobtrail submit` refuses a request that carries a credential or a connection header, in
one line, and writes nothing."""

from __future__ import annotations

from cliutil import Workspace
from harness import SECRET


def test_submit_refuses_credentials_and_connection_headers_and_writes_nothing(
    ws: Workspace,
) -> None:
    """Credential headers, the secret in use (header or body), Host and CR/LF are refused."""
    cases = [
        (["--header", "X-Goog-Api-Key: abc123"], "`auth`"),
        (["--header", f"X-Note: Bearer {SECRET}"], "`auth`"),
        (["--body", f'{{"note": "{SECRET}"}}'], "`auth`"),
        (["--header", "Host: evil.example"], "belongs to the connection"),
        (["--header", "X-Note: a\r\nX-Injected: 1"], "control character"),
    ]
    for options, said in cases:
        args = ["submit", "simulator", "--body", "{}", *options, "--key", "k"]
        done = ws.run(*args, check=False)
        assert done.returncode == 1 and said in done.stderr, (options, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and SECRET not in done.stderr
    assert ws.json("list")["operations"] == []
