"""The account console: `python -m auth_service.console COMMAND …`.

Uses the same configuration as the service (DATABASE_URL or DATA_DIR and AUTH_DB_PATH,
REDIS_URL, …), so it works on the database the service uses, PostgreSQL or SQLite. Errors are one line on stderr and exit code 1.
"""

from __future__ import annotations

import argparse
import getpass
import os
import secrets
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from auth_service.accounts import AccountError, AccountStore, Revocation, email_problem, now_seconds, open_store
from auth_service.config import MAX_DEMO_TOKEN_SECONDS, ROLES, TIERS, AuthConfig
from auth_service.database import StoreError, location
from auth_service.keys import KeyRing, ensure_signing_key, rotate_signing_key
from auth_service.management import UserChanges, apply_changes, new_user_problems
from auth_service.parsing import DAY_SECONDS, MAX_API_KEY_DAYS
from auth_service.passwords import passwords_for
from auth_service.tokens import TokenIssuer, demo_subject

DEMO_EMAIL = "demo@example.com"


class ConsoleError(Exception):
    """A problem reported to the operator as one line, without a traceback."""


# ---------------------------------------------------------------- for the launcher


def ensure_demo_user(config: AuthConfig, tier: str = "standard") -> tuple[str, str | None]:
    """Creates demo@example.com with a random password on first start.

    Returns (email, password) when it was created now, (email, None) when it existed. The
    password is also kept in `<data_dir>/auth/demo-credentials.txt` (mode 0600), which
    `read_demo_credentials` reads, so the launcher can show it at every start.
    """
    store = open_store(config)
    try:
        if store.find_user(DEMO_EMAIL) is not None:
            return DEMO_EMAIL, None
        password = secrets.token_urlsafe(18)
        store.add_user(DEMO_EMAIL, passwords_for(config).hash(password), tier)
        _write_private_file(config, f"user={DEMO_EMAIL}\npassword={password}\n")
        return DEMO_EMAIL, password
    finally:
        store.close()


def read_demo_credentials(config: AuthConfig) -> tuple[str, str] | None:
    """(email, password) of the demo user as stored at its creation, or None."""
    try:
        text = config.demo_credentials_path.read_text()
    except OSError:
        return None
    values = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    if "user" in values and "password" in values:
        return values["user"], values["password"]
    return None


def _write_private_file(config: AuthConfig, text: str) -> None:
    path = config.demo_credentials_path
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(text)
    os.chmod(path, 0o600)


# ---------------------------------------------------------------- commands


def _ask_password() -> str:
    first = getpass.getpass("Password: ")
    if getpass.getpass("Repeat the password: ") != first:
        raise ConsoleError("the two passwords differ")
    return first


def cmd_add_user(config: AuthConfig, store: AccountStore, args: argparse.Namespace) -> None:
    email = args.email.strip()
    problem = email_problem(email)
    if problem:
        raise ConsoleError(problem)
    if store.find_user(email) is not None:
        raise ConsoleError(f"a user with the e-mail {email} exists already")
    password = args.password if args.password is not None else _ask_password()
    role = "admin" if args.admin else "user"
    problems = new_user_problems(email, password, args.tier, role)
    if problems:
        raise ConsoleError(", ".join(problem for _, problem in problems))
    user = store.add_user(email, passwords_for(config).hash(password), args.tier, role)
    print(f"user {user.id} {user.email} created (tier {user.tier}, role {user.role})")


def cmd_add_apikey(config: AuthConfig, store: AccountStore, args: argparse.Namespace) -> None:
    days = args.expires_in_days
    if days is not None and not 1 <= days <= MAX_API_KEY_DAYS:
        raise ConsoleError(f"--expires-in-days must be between 1 and {MAX_API_KEY_DAYS}")
    expires_at = now_seconds() + days * DAY_SECONDS if days is not None else None
    api_key, key = store.add_api_key(args.email, expires_at=expires_at)
    print(key)
    owner = store.user_by_id(api_key.user_id).email
    expiry = f", expires {_time(expires_at)}" if expires_at else ""
    note = f"API key {api_key.id} (prefix {api_key.prefix}) made for {owner}{expiry}; it is shown only this once."
    print(note, file=sys.stderr)


def _time(unix: int | None) -> str:
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%d %H:%M:%SZ") if unix else "-"


def _print_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    cells = [list(header), *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for row in cells:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def cmd_list_users(config: AuthConfig, store: AccountStore, args: argparse.Namespace) -> None:
    rows = [
        (u.id, u.email, u.tier, "yes" if u.disabled else "no", u.active_keys, _time(u.created_at), u.role)
        for u in store.list_users()
    ]
    # The role last: scripts reading the older columns by position keep working.
    _print_table(("id", "email", "tier", "disabled", "keys", "created", "role"), rows)


def cmd_list_apikeys(config: AuthConfig, store: AccountStore, args: argparse.Namespace) -> None:
    rows = [
        (k.id, k.prefix, _time(k.created_at), _time(k.revoked_at), _time(k.expires_at))
        for k in store.api_keys_of(args.email)
    ]
    # The expiry last: scripts reading the older columns by position keep working.
    _print_table(("id", "prefix", "created", "revoked", "expires"), rows)


def _publish(config: AuthConfig, revocation: Revocation) -> None:
    # Imported here: the Redis client takes a tenth of a second to import, most commands don't need it.
    from auth_service.revocation import publish_now
    from common.redis import redacted

    if publish_now(config.redis_url, [revocation]):
        print(f"revocation published to Redis ({revocation.redis_key})")
    else:
        print(
            f"warning: Redis at {redacted(config.redis_url)} is unreachable; the revocation is recorded and the auth "
            f"service publishes it within {config.revocation_sync_seconds} s of Redis being back",
            file=sys.stderr,
        )


def cmd_disable_user(config: AuthConfig, store: AccountStore, args: argparse.Namespace) -> None:
    revocation = store.disable_user(args.email)
    print(f"user {args.email} disabled; its API keys and tokens stop working")
    _publish(config, revocation)


def cmd_enable_user(config: AuthConfig, store: AccountStore, args: argparse.Namespace) -> None:
    user = store.enable_user(args.email)
    print(f"user {user.email} enabled; tokens issued before it was disabled stay revoked")


def cmd_set_tier(config: AuthConfig, store: AccountStore, args: argparse.Namespace) -> None:
    user, revocations = apply_changes(store, store.user(args.email), UserChanges(tier=args.tier))
    print(f"user {user.email} now has the tier {user.tier}")
    for revocation in revocations:
        print("its earlier tokens are revoked: its clients sign in again (API keys keep working)")
        _publish(config, revocation)


def cmd_set_role(config: AuthConfig, store: AccountStore, args: argparse.Namespace) -> None:
    user, _ = apply_changes(store, store.user(args.email), UserChanges(role=args.role))
    print(f"user {user.email} now has the role {user.role}; it applies to the next request")


def cmd_revoke_apikey(config: AuthConfig, store: AccountStore, args: argparse.Namespace) -> None:
    key, revocation = store.revoke_api_key(args.key_prefix)
    print(f"API key {key.id} (prefix {key.prefix}) revoked")
    _publish(config, revocation)


def cmd_demo_token(config: AuthConfig, store: AccountStore, args: argparse.Namespace) -> None:
    if not 1 <= args.duration <= MAX_DEMO_TOKEN_SECONDS:
        raise ConsoleError(f"--duration must be between 1 and {MAX_DEMO_TOKEN_SECONDS} seconds")
    ensure_signing_key(store)
    issuer = TokenIssuer(
        KeyRing(store),
        issuer=config.jwt_issuer,
        audience=config.jwt_audience,
        default_seconds=config.default_token_seconds,
    )
    print(issuer.issue(demo_subject(), args.duration).token)


def cmd_rotate_key(config: AuthConfig, store: AccountStore, args: argparse.Namespace) -> None:
    ensure_signing_key(store)
    key, retired = rotate_signing_key(store)
    print(f"signing key {key.kid} is now active; older keys stay published until their tokens expired")
    if retired:
        print(f"retired: {', '.join(retired)}")


Command = Callable[[AuthConfig, AccountStore, argparse.Namespace], None]


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(
        prog="python -m auth_service.console", description="Manage accounts, API keys and signing keys."
    )
    sub = main.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Command, help_text: str) -> argparse.ArgumentParser:
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        command_parser.set_defaults(handler=handler)
        return command_parser

    add_user = command("add-user", cmd_add_user, "create a user (asks for the password when --password is omitted)")
    add_user.add_argument("email")
    add_user.add_argument("--password", help="the password (visible to other local users; prefer the prompt)")
    add_user.add_argument("--tier", choices=TIERS, default="standard")
    add_user.add_argument("--admin", action="store_true", help="an administrator: manages users in /console")
    add_apikey = command("add-apikey", cmd_add_apikey, "make an API key for a user; prints it once")
    add_apikey.add_argument("email")
    add_apikey.add_argument(
        "--expires-in-days",
        type=int,
        metavar="DAYS",
        help=f"the key gives no token after DAYS days (1..{MAX_API_KEY_DAYS})",
    )
    command("list-users", cmd_list_users, "list the users")
    command("list-apikeys", cmd_list_apikeys, "list a user's API keys (prefixes only)").add_argument("email")
    command("disable-user", cmd_disable_user, "disable a user and revoke their tokens").add_argument("email")
    command("enable-user", cmd_enable_user, "enable a disabled user").add_argument("email")
    set_tier = command("set-tier", cmd_set_tier, "change a user's tier (their earlier tokens are revoked)")
    set_tier.add_argument("email")
    set_tier.add_argument("tier", choices=TIERS)
    set_role = command("set-role", cmd_set_role, "make a user an administrator (admin) or not (user)")
    set_role.add_argument("email")
    set_role.add_argument("role", choices=ROLES)
    revoke = command(
        "revoke-apikey", cmd_revoke_apikey, "revoke the API key starting with KEY_PREFIX (or the whole key)"
    )
    revoke.add_argument("key_prefix")
    demo = command("demo-token", cmd_demo_token, "print a signed demo token")
    demo.add_argument("--duration", type=int, default=3600, help=f"seconds, 1..{MAX_DEMO_TOKEN_SECONDS} (default 3600)")
    command("rotate-key", cmd_rotate_key, "make a new signing key; older ones stay published until retired")
    return main


def run_command(config: AuthConfig, args: argparse.Namespace) -> None:
    try:
        store = open_store(config)
    except (StoreError, OSError) as exc:
        raise ConsoleError(f"cannot open the accounts database {location(config)}: {exc}") from exc
    try:
        handler: Command = args.handler
        handler(config, store, args)
    except AccountError as exc:
        raise ConsoleError(str(exc)) from exc
    except StoreError as exc:
        raise ConsoleError(f"accounts database {store.description}: {exc}") from exc
    finally:
        store.close()


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        run_command(AuthConfig.from_env("auth_service"), args)
    except ConsoleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
