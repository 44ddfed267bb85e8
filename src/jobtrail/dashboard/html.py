"""HTML for the dashboard, escaped by default.

Every value put into a page goes through `render`, which escapes it unless it is `Html`
(markup this package built itself). Provider words (states, errors, request ids, bodies)
are therefore always text: `<`, `&` and quotes are escaped, and `shown` makes control and
bidi characters visible instead of letting them reorder or hide what an operator reads.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from datetime import datetime
from string import Template
from urllib.parse import quote, urlencode

from jobtrail.core.words import iso, relative
from jobtrail.presentation.text import shown_lines


class Html(str):
    """Markup built by this package: inserted as is."""

    __slots__ = ()


def esc(value: object) -> Html:
    """`value` as HTML text (None as an empty string)."""
    if isinstance(value, Html):
        return value
    return Html(html.escape(shown_lines("" if value is None else str(value)), quote=True))


def render(template: Template, **values: object) -> Html:
    """`template` with every value escaped, except `Html`; a missing name is an error."""
    return Html(template.substitute({name: esc(value) for name, value in values.items()}))


def join(parts: Iterable[object], sep: str = "") -> Html:
    return Html(sep.join(esc(part) for part in parts))


def path(*segments: str) -> str:
    """A URL path from segments, each percent-encoded (an operation id stays one segment)."""
    return "/" + "/".join(quote(s, safe="") for s in segments)


def query(base: str, **params: object) -> str:
    kept = {k: str(v) for k, v in params.items() if v not in (None, "")}
    return f"{base}?{urlencode(kept)}" if kept else base


def when(value: datetime | None, now: datetime) -> Html:
    """A time as "3 min ago" / "in 12 s", with the exact UTC time in the tooltip."""
    if value is None:
        return Html("—")
    exact = iso(value) or ""
    return render(
        Template('<time datetime="$exact" title="$exact">$relative</time>'),
        exact=exact,
        relative=relative(value, now),
    )


PAGE = Template("""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title · jobtrail</title>
<link rel="stylesheet" href="/assets/dashboard.css">
<link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">
<script src="/assets/dashboard.js" defer></script>
</head>
<body>
<header class="top">
<a class="brand" href="/">jobtrail</a>
<nav><a href="/">Needs attention</a> <a href="/operations">Operations</a>
<a href="/census">Census</a></nav>
<span class="who">$who</span>
</header>
<main>
$body
</main>
</body>
</html>
""")


def page(title: str, body: Html, who: Html | str = "") -> Html:
    return render(PAGE, title=title, body=body, who=who)
