"""Account management, shared by the web console's endpoints (`auth_service.account_handlers`)
and the command line (`auth_service.console`): who may manage what, the checks of a new user,
and an administrator's changes to a user. No HTTP here.

Who calls is what the gateway vouches for behind the internal credential (the token's subject,
issue time and API key); the account itself is read from the database at every request, so a role,
a disabled account or a revocation takes effect at once, whatever the token says.
"""

from __future__ import annotations

from dataclasses import dataclass

from auth_service.accounts import (
    AccountError,
    AccountStore,
    Revocation,
    User,
    email_problem,
    role_problem,
    tier_problem,
)
from auth_service.passwords import password_problem
from common.errors import Forbidden, ParameterErrors, Unauthorized

USER_SUBJECT_PREFIX = "user:"


@dataclass(frozen=True)
class Caller:
    """The caller of an account endpoint, as the gateway forwards it."""

    subject: str | None
    issued_at: int | None = None
    api_key_id: str | None = None


@dataclass(frozen=True)
class UserChanges:
    """An administrator's changes to a user; None leaves a field as it is."""

    tier: str | None = None
    role: str | None = None
    disabled: bool | None = None


def new_user_problems(email: str, password: str, tier: str, role: str) -> list[tuple[str, str]]:
    """(field, message) for every reason the new user cannot be made; empty when it can."""
    checks = {
        "email": email_problem(email.strip()),
        "password": password_problem(password),
        "tier": tier_problem(tier),
        "role": role_problem(role),
    }
    return [(field, problem) for field, problem in checks.items() if problem]


def account_user(store: AccountStore, caller: Caller) -> User:
    """The caller's own account; refused for demo tokens, tokens issued for an API key (a
    leaked key must not lead to the password or more keys), disabled or removed accounts and
    tokens issued before the account's last revocation (read here, not only from Redis)."""
    if not caller.subject:
        raise Unauthorized("the request carries no caller: send 'Authorization: Bearer <token>' to the gateway")
    if not caller.subject.startswith(USER_SUBJECT_PREFIX):
        raise Forbidden("a demo token has no account: sign in with an e-mail address and password")
    if caller.api_key_id is not None:
        raise Forbidden("a token issued for an API key cannot manage the account: sign in with the password")
    user = _user_of(store, caller.subject)
    if user is None or user.disabled:
        raise Unauthorized("the account is disabled or no longer exists")
    revoked_at = store.latest_revocation("sub", user.subject)
    if revoked_at is not None and (caller.issued_at is None or caller.issued_at <= revoked_at):
        raise Unauthorized("the token has been revoked: sign in again")
    return user


def admin_user(store: AccountStore, caller: Caller) -> User:
    user = account_user(store, caller)
    if not user.is_admin:
        raise Forbidden("only an administrator account may manage users")
    return user


def _user_of(store: AccountStore, subject: str) -> User | None:
    user_id = subject.removeprefix(USER_SUBJECT_PREFIX)
    if not user_id.isdigit():
        return None
    try:
        return store.user_by_id(int(user_id))
    except AccountError:
        return None


def check_own_changes(admin: User, target: User, changes: UserChanges) -> None:
    """An administrator cannot lock themself out: no disabling or demoting their own account."""
    if admin.id != target.id:
        return
    errors = ParameterErrors()
    if changes.disabled:
        errors.add("disabled", "an administrator cannot disable their own account")
    if changes.role is not None and changes.role != "admin":
        errors.add("role", "an administrator cannot remove their own admin role")
    errors.raise_if_any()


def apply_changes(store: AccountStore, target: User, changes: UserChanges) -> tuple[User, list[Revocation]]:
    """The changed user and the revocations to publish: a new tier or disabling revokes the
    user's earlier tokens (they carry the old tier; their holders sign in again)."""
    revocations: list[Revocation] = []
    if changes.role is not None and changes.role != target.role:
        store.set_role(target.id, changes.role)
    if changes.tier is not None and changes.tier != target.tier:
        revocations.append(store.set_tier(target.id, changes.tier)[1])
    if changes.disabled is True and not target.disabled:
        revocations.append(store.disable_user_id(target.id))
    if changes.disabled is False and target.disabled:
        store.enable_user_id(target.id)
    return store.user_by_id(target.id), revocations
