"""How a ledger URL may be shown: never with its password.

Every place that prints, logs or reports where the ledger is (the worker's banner, `serve`'s
logs, `demo`, errors) shows `shown_url(url)`. The password is masked whether it sits in the
user information (`postgresql://user:PASSWORD@host/db`, even unencoded with `@` or `/` in
it) or in the query (`?password=...`, `?sslpassword=...`, `pwd`, `secret`, `token`). A
SQLite path is shown as it is. The mask is the redactor's one word, `[redacted]`, and a
password found in any other text is masked by the redactor's rules (`without_passwords`).
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from jobtrail.core.redact import REDACTED, Redactor

MASK = REDACTED  # the one mask word of every redaction (core/redact.py)
_QUERY_PASSWORD = re.compile(r"(?i)([?&](?:(?:ssl)?password|passwd|pwd|secret|token)=)[^&#]*")


def _split(url: str) -> tuple[str, str, str] | None:
    """(scheme and `//`, user information, the rest) of a URL with user information."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return None
    before_query = rest.split("?", 1)[0]
    at = before_query.rfind("@")
    if at < 0:
        return None
    return scheme + sep, rest[:at], rest[at:]


def shown_url(url: str) -> str:
    """`url` with any password replaced by the mask word, `[redacted]`."""
    parts = _split(url)
    if parts is not None:
        head, userinfo, rest = parts
        user, colon, _ = userinfo.partition(":")
        url = head + (f"{user}:{MASK}" if colon else user) + rest
    return _QUERY_PASSWORD.sub(rf"\g<1>{MASK}", url)


def url_passwords(url: str) -> list[str]:
    """The passwords `url` holds, as written and decoded: what a redactor must know."""
    found = []
    parts = _split(url)
    if parts is not None and ":" in parts[1]:
        found.append(parts[1].partition(":")[2])
    found += [m.group(0).partition("=")[2] for m in _QUERY_PASSWORD.finditer(url)]
    return [value for raw in found if raw for value in dict.fromkeys((raw, unquote(raw)))]


def without_passwords(text: str, url: str) -> str:
    """`text` with `url`, and each password it holds (as written and decoded), masked by
    the redactor's one rule: a password shorter than 4 characters is left as it is (masking
    it would mask every such run of letters), a longer one wherever it or a long beginning
    of it appears."""
    text = text.replace(url, shown_url(url)) if url else text
    return Redactor().extended(values=url_passwords(url)).text(text)


def unencoded_at(url: str) -> str | None:
    """Why `url` cannot be used as it is, or None: an `@` left unencoded in its user
    information (`postgresql://user:p@ss@host/db`). libpq ends the password at the first
    `@` and takes the rest of it for the host name, which every error would then show; so
    the URL is refused, in a sentence that shows none of it."""
    parts = _split(url)
    if parts is None or "@" not in parts[1]:
        return None
    return (
        "the ledger URL's user information holds an unencoded '@' (in the password, say), "
        "which would end the password early: write each '@' in it as %40 "
        f"(postgresql://user:pa%40ss@host/db); the URL as given: {shown_url(url)}"
    )
