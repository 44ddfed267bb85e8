"""The policy file's `[notify]` table (core/notify_file.py): what it accepts, and each
mistake refused with the key named and no value it was given repeated."""

from __future__ import annotations

from datetime import timedelta

import pytest

from jobtrail.core.notify_file import NotifyFile, SecretRef, parse_notify
from jobtrail.errors import InvalidInput
from jobtrail.ledger.policy import Action, parse_policy

KEY = "whsec_" + "c2VjcmV0LXNpZ25pbmcta2V5LWZvci10ZXN0cw=="
HOOK = "https://hooks.slack.com/services/T000/B000/SECRETPATHXYZ"


def test_a_full_table_is_read() -> None:
    """Endpoints (Slack's among them), the secret by reference, the link and the timeout."""
    table = {
        "endpoints": ["https://pager.example/hooks", f"slack+{HOOK}"],
        "secret": {"env": "PAGER_SECRET"},
        "dashboard_url": "https://ops.example/jobtrail",
        "timeout": "30s",
    }
    assert parse_notify(table, "p.toml") == NotifyFile(
        endpoints=("https://pager.example/hooks", f"slack+{HOOK}"),
        secret=SecretRef(env="PAGER_SECRET"),
        dashboard_url="https://ops.example/jobtrail",
        timeout=timedelta(seconds=30),
    )
    assert parse_notify({"secret": {"file": "/run/s"}}, "p.toml").secret == SecretRef(file="/run/s")
    assert parse_notify({}, "p.toml") == NotifyFile()


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ({"secret": KEY}, "[notify] secret must name where"),
        ({"secret": {"env": KEY}}, "[notify] secret.env holds a signing secret"),
        ({"secret": {"file": KEY}}, "[notify] secret.file holds a signing secret"),
        ({"secret": {"value": KEY}}, "[notify] secret must be exactly one of"),
        ({"secret": {"env": "A", "file": "/b"}}, "[notify] secret must be exactly one of"),
        ({"secret": {"env": "not a name"}}, "[notify] secret.env must be the name"),
        ({"signing_secret": KEY}, "[notify] has unknown key signing_secret"),
        ({"request_body": True}, "there is no key for it"),
        ({"endpoints": ["https://ok.example", KEY]}, "[notify] endpoints[1] is not an http(s)"),
        ({"endpoints": f"slack+{HOOK}"}, "[notify] endpoints must be a list"),
        ({"endpoints": ["slack+ftp://x"]}, "[notify] endpoints[0] is not an http(s) URL"),
        ({"dashboard_url": "ops.example"}, "[notify] dashboard_url is not an http(s) URL"),
        ({"timeout": "0s"}, "[notify] timeout must be between 1s and 5m"),
        ({"timeout": "soon"}, "[notify] timeout: cannot read the duration"),
    ],
)
def test_each_mistake_names_its_key_and_repeats_no_value(
    table: dict[str, object], named: str
) -> None:
    """A literal secret, an unknown key, a URL that is none: refused naming the key, and the
    error never carries the secret or the Slack hook's path."""
    with pytest.raises(InvalidInput) as refused:
        parse_notify(table, "p.toml")
    message = str(refused.value)
    assert named in message and "policy p.toml" in message
    assert KEY not in message and "c2VjcmV0" not in message and "SECRETPATHXYZ" not in message


def test_the_policy_file_takes_a_notify_table_and_checks_it() -> None:
    """`[notify]` sits beside the action policy, which it leaves as it was; a literal secret
    in it makes the whole file refused wherever it is read."""
    text = '[kinds.agent]\ncancel = "none"\n\n[notify]\nendpoints = ["https://pager.example"]\n'
    assert parse_policy(text, "p.toml").scope(Action.CANCEL, "agent:a").value == "none"
    with pytest.raises(InvalidInput, match=r"\[notify\] secret must name") as refused:
        parse_policy(f'[notify]\nsecret = "{KEY}"\n', "p.toml")
    assert KEY not in str(refused.value)
    with pytest.raises(InvalidInput, match=r"unknown tables \['notfy'\]"):
        parse_policy("[notfy]\n", "p.toml")
