"""A base URL that is still a placeholder, and the environment a provider needs.

The shipped profiles whose endpoint differs for every user carry a placeholder base URL
(`https://RESOURCE.cognitiveservices.azure.com`, ARM's `.../subscriptions/SUBSCRIPTION/...`)
and name the variable that gives the real one (`base_url_env`). A submit while the
placeholder is still in force would send the request (and its credential) to a host that
is not the user's, or to no host at all: it is refused, naming the variable to set.

A placeholder is a word in capitals (`SERVICE`, `SUBSCRIPTION`, `VERSION`): anywhere in a
host name (no real host is written in capitals), and in a path segment or query value of
a base URL that is still the one a shipped profile carries.
"""

from __future__ import annotations

import os
import re
import shutil
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

from jobtrail.profiles import profile_names, shipped_profile
from jobtrail.providers.file.spec import ProviderSpec

_WORD = re.compile(r"(?<![A-Za-z0-9])[A-Z][A-Z0-9_]{2,}(?![A-Za-z0-9])")


def placeholder_words(base_url: str, *, whole: bool) -> list[str]:
    """The placeholder words of `base_url`: in its host, and with `whole` in its path and
    query too."""
    parts = urlsplit(base_url)
    host = parts.netloc.rpartition("@")[2]  # as written: urlsplit's `hostname` is lowercased
    words = _WORD.findall(host)
    if whole:
        words += _WORD.findall(parts.path) + _WORD.findall(parts.query)
    return list(dict.fromkeys(words))


@cache  # the package's files do not change under a running process; a submit asks each time
def _shipped_base_urls() -> frozenset[str]:
    urls = set()
    for name in profile_names():
        profile = shipped_profile(name)
        match = re.search(r'^base_url\s*=\s*"([^"]*)"', profile.text if profile else "", re.M)
        if match:
            urls.add(match.group(1).rstrip("/"))
    return frozenset(urls)


def unfilled(spec: ProviderSpec) -> str | None:
    """Why `spec`'s base URL cannot be used yet (it is still a placeholder), or None."""
    variable = spec.document.get("base_url_env")
    given = os.environ.get(variable) if isinstance(variable, str) else None
    if given and given.rstrip("/") == spec.base_url:
        return None  # the user's own URL, from the variable: used as given
    words = placeholder_words(spec.base_url, whole=spec.base_url in _shipped_base_urls())
    if not words:
        return None
    named = ", ".join(words)
    if isinstance(variable, str):
        return (
            f"the base URL of provider {spec.name!r} is still a placeholder ({named} in "
            f"{spec.base_url}): set the environment variable {variable} to your endpoint "
            "(nothing was recorded)"
        )
    return (
        f"the base URL of provider {spec.name!r} is still a placeholder ({named} in "
        f"{spec.base_url}): write your endpoint as base_url in the provider file "
        "(nothing was recorded)"
    )


def environment(spec: ProviderSpec) -> list[str]:
    """Every environment variable (or program, or file) the provider needs, and whether it
    is there now, for `provider check`."""
    found = []
    variable = spec.document.get("base_url_env")
    if isinstance(variable, str):
        problem = unfilled(spec)
        if os.environ.get(variable):
            state = "set"
        elif problem is not None:
            state = "NOT SET, required: the base URL is a placeholder"
        else:
            state = f"not set: {spec.base_url} is used"
        found.append(f"${variable} (base URL; {state})")
    auth = spec.auth
    if auth is not None and auth.env:
        state = "set" if os.environ.get(auth.env) else "NOT SET"
        found.append(f"${auth.env} (credential; {state})")
    elif auth is not None and auth.command:
        program = auth.command[0]
        state = "found" if shutil.which(program) else "NOT FOUND on PATH"
        found.append(f"token command {program} ({state}); no variable")
    elif auth is not None and auth.file is not None:
        state = "present" if Path(auth.file).expanduser().is_file() else "MISSING"
        found.append(f"token file {auth.file} ({state}); no variable")
    if spec.webhooks:
        env = spec.webhooks.secret_env
        state = "set" if os.environ.get(env) else "NOT SET"
        found.append(f"${env} (webhook secret; {state})")
    return found
