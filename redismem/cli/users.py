"""``redismem users``: ACL users with a role, their passwords, and
locking the default user."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from ..acl import NAMESPACE_ROLES, ROLES, Role
from ..errors import InvalidArgumentError
from .base import CommandError, emit, json_option, main, run_sync, url_option


def _admin_client(url: str | None) -> Any:
    """An async context for a raw client of the server (for operator commands)."""
    from ..client import open_client, resolve_url

    @contextlib.asynccontextmanager
    async def opened() -> Any:
        client = await open_client(await resolve_url(url))
        try:
            yield client
        finally:
            await client.aclose()

    return opened()


@main.group("users")
def users_group() -> None:
    """Credentials: ACL users with a role in one namespace (reader, writer,
    admin, worker) or server-wide (operator). Needs an operator (or the
    default user)."""


def _password_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--write-password", "write_to", type=click.Path(dir_okay=False),
                      default=None,
                      help="Generate the password into this new file (mode 0600) instead "
                           "of printing it.")(fn)
    return click.option("--password-file", type=click.Path(dir_okay=False, exists=True),
                        default=None,
                        help="Read the password from this file's first line (default: "
                             "generate one and print it once).")(fn)


@contextlib.contextmanager
def _chosen_password(read_from: str | None, write_to: str | None) -> Iterator[str | None]:
    """The password to give: read from ``--password-file``; or generated
    into ``--write-password``'s new file, which is removed again when the
    command fails; or None (generated, and printed once)."""
    from .. import users

    if read_from and write_to:
        raise click.UsageError("give --password-file or --write-password, not both")
    if write_to is None:
        yield _read_password(read_from)
        return
    secret = users.new_password()
    try:
        fd = os.open(write_to, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise click.UsageError(f"{write_to} exists: --write-password makes a new file, "
                               "it never replaces one") from None
    except OSError as exc:
        raise click.UsageError(f"cannot write {write_to}: {exc.strerror}") from None
    with os.fdopen(fd, "w") as out:
        out.write(secret + "\n")
    try:
        yield secret
    except BaseException:
        Path(write_to).unlink(missing_ok=True)
        raise


def _emit_saved(data: dict[str, Any], as_json: bool, text: Callable[[Any], str]) -> None:
    """``emit``, then a warning on stderr when the users are not saved to a file."""
    from .. import users

    emit(data, as_json, text)
    if not data["saved_to_file"]:
        click.echo(f"warning: {users.NOT_SAVED}", err=True)


def _read_password(path: str | None) -> str | None:
    """The password in ``--password-file``; a usage error when it holds none."""
    from .. import users

    if path is None:
        return None
    try:
        return users.read_password(Path(path).read_text())
    except InvalidArgumentError as exc:
        raise click.BadParameter(f"{path}: {exc}", param_hint="--password-file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"cannot read {path}: {exc}",
                                 param_hint="--password-file") from None


def _credential_text(data: dict[str, Any]) -> str:
    where = f" in namespace {data['namespace']}" if data["namespace"] else " (server-wide)"
    lines = [f"user {data['user']}: {data['role']}{where}"]
    if data["sessions"] or data["workflows"]:
        lines.append("  grants: " + ", ".join([*(f"session:{s}" for s in data["sessions"]),
                                                *(f"workflow:{w}" for w in data["workflows"])]))
    if "password" in data:
        lines.append(f"  password (shown once): {data['password']}")
    return "\n".join(lines)


@users_group.command("add")
@url_option
@click.argument("name")
@click.option("--role", type=click.Choice(ROLES), required=True, help="The role.")
@click.option("--namespace", "-n", default=None,
              help=f"The namespace (every role but operator: {', '.join(NAMESPACE_ROLES)}).")
@click.option("--session", "sessions", multiple=True,
              help="A session id the worker may read and write (repeatable).")
@click.option("--workflow", "workflows", multiple=True,
              help="A workflow root id the worker may read and write (repeatable).")
@_password_option
@json_option
def users_add(url: str | None, name: str, role: str, namespace: str | None,
              sessions: tuple[str, ...], workflows: tuple[str, ...],
              password_file: str | None, write_to: str | None, as_json: bool) -> None:
    """Create ACL user NAME with a role; --json prints its exact ACL rules."""
    from .. import users

    try:
        spec = Role(role, namespace, tuple(sessions), tuple(workflows))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None

    async def run(password: str | None) -> dict[str, Any]:
        async with _admin_client(url) as client:
            made = await users.add_user(client, name, spec, password=password)
            return {**made.public(), "saved_to_file": await users.saved_to_file(client)}

    with _chosen_password(password_file, write_to) as password:
        _emit_saved(run_sync(run(password)), as_json, _credential_text)


@users_group.command("list")
@url_option
@json_option
def users_list(url: str | None, as_json: bool) -> None:
    """Every ACL user with its role and rules."""
    from .. import users

    async def run() -> list[dict[str, Any]]:
        async with _admin_client(url) as client:
            return await users.list_users(client)

    def text(found: list[dict[str, Any]]) -> str:
        rows = [("USER", "ROLE", "NAMESPACE", "SCOPES", "ENABLED")] + [
            (u["user"], u["role"] or "(not made by redismem)", u["namespace"] or "-",
             " ".join([*(f"session:{s}" for s in u["sessions"]),
                       *(f"workflow:{w}" for w in u["workflows"])]) or "-",
             "yes" if "on" in u["rules"] else "no") for u in found]
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False))
                         + "  " + row[4] for row in rows) + "\n(--json shows each user's ACL rules)"

    emit(run_sync(run()), as_json, text)


@users_group.command("remove")
@url_option
@click.argument("name")
@json_option
def users_remove(url: str | None, name: str, as_json: bool) -> None:
    """Delete ACL user NAME (the server closes its connections)."""
    from .. import users

    async def run() -> dict[str, Any]:
        async with _admin_client(url) as client:
            return {"user": name, "removed": await users.remove_user(client, name),
                    "saved_to_file": await users.saved_to_file(client)}

    done = run_sync(run())
    if not done["removed"]:
        raise CommandError(f"there is no ACL user {name!r} (users list shows them)",
                           "not_found")
    _emit_saved(done, as_json, lambda d: f"removed {d['user']}")


@users_group.command("rotate-password")
@url_option
@click.argument("name")
@_password_option
@json_option
def users_rotate(url: str | None, name: str, password_file: str | None, write_to: str | None,
                 as_json: bool) -> None:
    """Give NAME a new password; the old one stops working at once."""
    from .. import users

    async def run(password: str | None) -> dict[str, Any]:
        async with _admin_client(url) as client:
            new = await users.rotate_password(client, name, password=password)
            return {"user": name, **({"password": new} if new else {}),
                    "saved_to_file": await users.saved_to_file(client)}

    with _chosen_password(password_file, write_to) as password:
        _emit_saved(run_sync(run(password)), as_json,
                    lambda d: f"new password for {d['user']}"
                    + (f" (shown once): {d['password']}" if "password" in d else " set"))


@users_group.command("lock-default")
@url_option
@json_option
def users_lock_default(url: str | None, as_json: bool) -> None:
    """Close the server to clients that give no password: the default user
    keeps its rights (the server replays its AOF as that user) but has no
    password, so nobody can log in as it. Also puts right a default user
    that was turned off, which loses data at a restart with AOF on. Needs
    an enabled operator user (connect as it from then on)."""
    from .. import users

    async def run() -> dict[str, Any]:
        async with _admin_client(url) as client:
            return {"locked": await users.lock_default(client),
                    "saved_to_file": await users.saved_to_file(client)}

    _emit_saved(run_sync(run()), as_json,
                lambda d: "locked the default user: a client must now log in as one of the "
                "ACL users (an operator manages them)" if d["locked"] else
                "the server already refuses clients that give no password, and its default "
                "user keeps what AOF needs: nothing to lock")
