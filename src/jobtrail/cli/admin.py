"""Commands for operators: audit verification, provider checks, the simulator."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING

import click

from jobtrail.cli.context import (
    Settings,
    emit_json,
    fail,
    json_option,
    opened,
    pass_settings,
    provider_module_option,
    run_async,
)
from jobtrail.core.audit import ChainReport, verify
from jobtrail.providers.check import check_lines
from jobtrail.providers.code.contract import CodeSpec

if TYPE_CHECKING:
    from jobtrail.ledger.histories import Forgery


@click.group()
def audit() -> None:
    """Check the tamper-evident audit log."""


@audit.command("verify")
@click.option(
    "--anchor",
    metavar="COUNT:HASH",
    help="A head printed earlier by `audit head` (its entry number and hash): also detects "
    "entries cut off the end.",
)
@click.option(
    "--replay",
    is_flag=True,
    help="Also replay every operation's history and name operations whose stored state or "
    "remote job id was forged.",
)
@json_option
@pass_settings
@run_async
async def audit_verify(settings: Settings, anchor: str | None, replay: bool, as_json: bool) -> None:
    """Recompute the hash chain (HMAC-keyed when JOBTRAIL_AUDIT_KEY is set) and check each
    row's indexed columns against its entry, and each attempt row against what its entries
    bound by hash, and each closed observation run. Exit 0 only when intact; otherwise name
    the first entry edited, deleted, inserted, moved or relabelled, and each attempt row or
    observation run edited (by column) or deleted."""
    expected = None
    if anchor:
        count, _, head = anchor.partition(":")
        if not count.isdigit() or len(head) != 64:
            fail("write the anchor as COUNT:HASH, as `jobtrail audit head` prints it")
        expected = (int(count), head)
    async with opened(settings) as ledger:
        keying = await ledger.keying_problem()
        rows = await ledger.audit_rows()
        edited = await ledger.edited_rows()
        forged = await ledger.forged_operations() if replay else []
    verdict = verify(rows, settings.audit_key, expected)
    if keying is not None:  # every link would fail: say which key, not which entry
        verdict = ChainReport(ok=False, entries=0, head="", problem=keying)
    if as_json:
        document = {
            "ok": verdict.ok and not forged and not edited,
            "entries": verdict.entries,
            "head": verdict.head,
            "problem": verdict.problem,
            "seq": verdict.seq,
            "pruned": verdict.pruned,
            "edited": edited,
        }
        if replay:
            document["forged"] = [
                {"operation_id": f.operation_id, "problem": f.problem} for f in forged
            ]
        emit_json(document)
    else:
        click.echo(f"audit log not verified: {keying}" if keying else verdict.message())
        _say_rows(edited, forged if replay else None)
    if not verdict.ok or forged or edited:
        raise SystemExit(1)


def _say_rows(edited: list[str], forged: list[Forgery] | None) -> None:
    """The rows the chain binds that were edited, and (with --replay) the forged operations."""
    for problem in edited:
        click.echo(f"row edited: {problem}")
    if forged is None:
        return
    for forgery in forged:
        click.echo(f"operation forged: {forgery.message()}")
    if not forged:
        click.echo("every operation's state is what its history replays to")


@audit.command("head")
@json_option
@pass_settings
@run_async
async def audit_head(settings: Settings, as_json: bool) -> None:
    """Print COUNT:HASH of the chain's head, to keep somewhere else as an anchor."""
    async with opened(settings) as ledger:
        keying = await ledger.keying_problem()
        rows = await ledger.audit_rows()
    if keying is not None:
        fail(keying)
    verdict = verify(rows, settings.audit_key)
    if not verdict.ok:
        fail(verdict.message())
    # The head's number, not the count of rows: after a prune the two differ.
    seq = rows[-1].seq if rows else 0
    if as_json:
        emit_json({"seq": seq, "head": verdict.head, "anchor": f"{seq}:{verdict.head}"})
    else:
        click.echo(f"{seq}:{verdict.head}")


@click.group()
def provider() -> None:
    """Inspect provider files."""


@provider.command("check")
@click.argument("file")
@json_option
@provider_module_option
def provider_check(file: str, as_json: bool, provider_modules: tuple[str, ...]) -> None:
    """Load a provider file (or a code provider, by name) and say in plain words what
    jobtrail can guarantee with it."""
    from jobtrail.errors import JobtrailError
    from jobtrail.providers.code.plugins import load_plugins
    from jobtrail.providers.resolve import resolve_provider

    try:
        spec = resolve_provider(file, load_plugins(provider_modules))
    except JobtrailError as exc:
        fail(str(exc))
    lines = check_lines(spec)
    if isinstance(spec, CodeSpec):
        where = f"code provider {spec.name!r} version {spec.version}"
    else:
        where = f"provider {spec.name!r} at {spec.base_url}"
    if as_json:
        emit_json(
            {
                "name": spec.name,
                "kind": spec.kind.value,
                "version": spec.version,
                "base_url": getattr(spec, "base_url", None),
                "at_most_once_provable": spec.capabilities.at_most_once_provable,
                "tier": spec.capabilities.tier.value,
                "remote_deadline": spec.remote_deadline is not None,
                "guarantees": dict(lines),
            }
        )
        return
    click.echo(where)
    width = max(len(name) for name, _ in lines)
    for name, text in lines:
        click.echo(f"  {name.ljust(width)}  {text}")


@provider.command("list")
@json_option
def provider_list(as_json: bool) -> None:
    """The provider profiles shipped with jobtrail (usable by name anywhere), one a line."""
    from jobtrail.profiles import shipped_profiles

    profiles = shipped_profiles()
    if as_json:
        emit_json([{"name": p.name, "summary": p.summary} for p in profiles])
        return
    width = max(len(p.name) for p in profiles)
    for p in profiles:
        click.echo(f"{p.name.ljust(width)}  {p.summary}")


@provider.command("show")
@click.argument("name")
def provider_show(name: str) -> None:
    """Print a shipped profile's provider file, to read or to save as providers/NAME.toml."""
    from jobtrail.profiles import profile_names, shipped_profile

    profile = shipped_profile(name) if name.replace("-", "").isalnum() else None
    if profile is None:
        fail(f"no shipped profile {name!r}; shipped: {', '.join(profile_names())}")
    click.echo(profile.text, nl=False)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8700, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--token-env",
    default="REPORTS_API_TOKEN",
    show_default=True,
    help="Require `Authorization: Bearer <value of this variable>` when it is set.",
)
@click.option("--webhook-url", help="Send signed job events to this URL.")
@click.option(
    "--webhook-secret-env",
    default="REPORTS_WEBHOOK_SECRET",
    show_default=True,
    help="Variable holding the webhook signing secret.",
)
@click.option(
    "--webhook-signing",
    type=click.Choice(["standard", "hmac"]),
    default="standard",
    show_default=True,
)
def simulator(
    host: str,
    port: int,
    token_env: str,
    webhook_url: str | None,
    webhook_secret_env: str,
    webhook_signing: str,
) -> None:
    """Serve the provider simulator (the source article's API, with fault injection).

    The same server speaks the vendor modes the shipped profiles use, under /azure-arm,
    /azure-ai, /google, /openai, /anthropic, /gemini, /mistral, /replicate and /vertex
    (their keys: the same token), and Bedrock batch inference under /bedrock (SigV4)."""
    from jobtrail.simulator import serve_forever

    secret = os.environ.get(webhook_secret_env)
    if webhook_url and not secret:
        fail(f"--webhook-url needs a signing secret in ${webhook_secret_env}")
    try:
        asyncio.run(
            serve_forever(
                host,
                port,
                token=os.environ.get(token_env) or None,
                webhook_url=webhook_url,
                webhook_secret=secret,
                webhook_signing=webhook_signing,
            )
        )
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror}")
    except KeyboardInterrupt:
        pass


COMMANDS = [audit, provider, simulator]
