"""Passwords: the policy a new password must meet, and Argon2id hashing with a bound on how many
hashes run at once.

- **Policy.** A new password has at least :data:`MIN_PASSWORD_LENGTH` characters and zxcvbn
  (Dropbox's password-strength estimator, in its Python port) scores it at least
  :data:`MIN_STRENGTH` on its 0-4 scale. zxcvbn looks the password up in its lists of common
  passwords, English words, names and keyboard patterns, and sees repeats, sequences, dates and
  the user's own name or address in it; a score of 3 means about 10⁸ guesses or more. The
  refusal says why (zxcvbn's warning and suggestions). zxcvbn reads at most its default of 72
  characters, so a longer password is judged by its first 72: a conservative estimate. Existing
  accounts keep their passwords; the policy applies when a password is set.
- **Hashing.** ``argon2-cffi``'s defaults (Argon2id, 64 MiB, 3 passes, 4 lanes). Every hash and
  verification holds one of :func:`hash_limit` slots of a process-wide semaphore
  (``EVALCORE_MAX_PASSWORD_HASHES``, default 2), so sixteen sign-ins at once use 128 MiB, not
  1 GiB. A caller that waits longer than :data:`HASH_WAIT` for a slot gets a
  :class:`~evalcore.errors.SignInError` saying the server is busy, instead of hanging.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from typing import Final

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from evalcore.errors import ConfigError, SignInError, WeakPasswordError

__all__ = [
    "DEFAULT_HASH_LIMIT",
    "HASH_LIMIT_ENV",
    "MAX_PASSWORD_LENGTH",
    "MIN_PASSWORD_LENGTH",
    "MIN_STRENGTH",
    "HashStats",
    "PasswordCheck",
    "check_password",
    "hash_limit",
    "hash_stats",
]

MIN_PASSWORD_LENGTH: Final = 12
#: Longer passwords are refused without hashing them (a bound on the work one request causes).
MAX_PASSWORD_LENGTH: Final = 1024
#: The lowest zxcvbn score (0-4) a new password may have: 3 is "safely unguessable" (10⁸ guesses).
MIN_STRENGTH: Final = 3
#: zxcvbn's own bound on what it reads (its time grows quickly with length).
STRENGTH_CHECKED_CHARS: Final = 72

HASH_LIMIT_ENV: Final = "EVALCORE_MAX_PASSWORD_HASHES"
#: Argon2 hashes at once in one process by default (each takes 64 MiB while it runs).
DEFAULT_HASH_LIMIT: Final = 2
#: How long a sign-in waits for a hashing slot before it is told the server is busy.
HASH_WAIT: Final = timedelta(seconds=30)
BUSY: Final = "The server is busy checking other sign-ins. Try again in a moment."

_HASHER = PasswordHasher()


# --- the policy -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PasswordCheck:
    """What the policy says of a candidate password: ``ok``, zxcvbn's ``score`` (0-4; None when
    the length alone decided), and the ``problems`` in words (empty when ok)."""

    ok: bool
    score: int | None
    problems: tuple[str, ...]

    @property
    def message(self) -> str:
        """The problems as one sentence for a person (empty when ok)."""
        if self.ok:
            return ""
        return "This password is refused: " + " ".join(self.problems)


# zxcvbn keeps the user inputs of a call in a module-level table: one call at a time.
_ZXCVBN_LOCK = threading.Lock()


def _strength(password: str, user_inputs: Iterable[str]) -> tuple[int, tuple[str, ...]]:
    from zxcvbn import zxcvbn

    inputs = [str(v) for v in user_inputs if v]
    with _ZXCVBN_LOCK:
        result = zxcvbn(password[:STRENGTH_CHECKED_CHARS], user_inputs=inputs)
    feedback = result.get("feedback") or {}
    words = [str(feedback.get("warning") or "").strip()]
    words += [str(s).strip() for s in feedback.get("suggestions") or ()]
    return int(result["score"]), tuple(w for w in words if w)


def check_password(password: object, *, user_inputs: Iterable[str] = ()) -> PasswordCheck:
    """Check a new password against the policy (see the module's notes); never raises.

    ``user_inputs`` are words the password must not lean on: the account's name and e-mail
    address, the product's name.

    >>> check_password("12345678").problems[0]
    'It has 8 characters: a password needs at least 12.'
    >>> check_password("password1234").ok, check_password("password1234").score
    (False, 1)
    >>> check_password("a brand new password").ok
    True
    """
    if not isinstance(password, str) or not password:
        return PasswordCheck(False, None, ("A password is needed.",))
    if len(password) < MIN_PASSWORD_LENGTH:
        return PasswordCheck(
            False,
            None,
            (
                f"It has {len(password)} characters: a password needs at least "
                f"{MIN_PASSWORD_LENGTH}.",
            ),
        )
    if len(password) > MAX_PASSWORD_LENGTH:
        return PasswordCheck(
            False, None, (f"A password may have at most {MAX_PASSWORD_LENGTH} characters.",)
        )
    score, advice = _strength(password, ("evalcore", *user_inputs))
    if score >= MIN_STRENGTH:
        return PasswordCheck(True, score, ())
    problems = (
        f"It is too easy to guess (strength {score} of 4, at least {MIN_STRENGTH} needed).",
        *advice,
    )
    return PasswordCheck(False, score, problems)


def require_password(password: object, *, user_inputs: Iterable[str] = ()) -> str:
    """``password`` when the policy accepts it; :class:`WeakPasswordError` saying why otherwise."""
    checked = check_password(password, user_inputs=user_inputs)
    if not checked.ok:
        raise WeakPasswordError(checked.message, problems=checked.problems)
    assert isinstance(password, str)
    return password


# --- hashing, a bounded number at once --------------------------------------------------------


@dataclass(frozen=True)
class HashStats:
    """The process's Argon2 work so far: the slot ``limit``, how many ``hashes`` and
    ``verifications`` ran, and the most that ever ran at once (``peak``)."""

    limit: int
    hashes: int
    verifications: int
    peak: int


def hash_limit() -> int:
    """How many Argon2 hashes may run at once in this process: ``EVALCORE_MAX_PASSWORD_HASHES``
    (a whole number of at least 1), :data:`DEFAULT_HASH_LIMIT` when unset. Read once.

    >>> DEFAULT_HASH_LIMIT
    2
    """
    raw = os.environ.get(HASH_LIMIT_ENV, "").strip()
    if not raw:
        return DEFAULT_HASH_LIMIT
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"{HASH_LIMIT_ENV}={raw!r} is not a whole number of at least 1.")
    return value


class _HashGate:
    """A semaphore of :func:`hash_limit` slots that also counts what ran through it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._slots = threading.BoundedSemaphore(limit)
        self._lock = threading.Lock()
        self._running = 0
        self.peak = 0
        self.hashes = 0
        self.verifications = 0

    @contextmanager
    def slot(self, kind: str) -> Iterator[None]:
        if not self._slots.acquire(timeout=HASH_WAIT.total_seconds()):
            raise SignInError(BUSY)
        try:
            with self._lock:
                self._running += 1
                self.peak = max(self.peak, self._running)
                if kind == "verify":
                    self.verifications += 1
                else:
                    self.hashes += 1
            yield
        finally:
            with self._lock:
                self._running -= 1
            self._slots.release()

    def stats(self) -> HashStats:
        with self._lock:
            return HashStats(self.limit, self.hashes, self.verifications, self.peak)

    def reset_peak(self) -> None:
        with self._lock:
            self.peak = self._running


@cache
def _gate() -> _HashGate:
    return _HashGate(hash_limit())


def hash_stats() -> HashStats:
    """What this process's Argon2 slots have done (for tests, benchmarks and monitoring)."""
    return _gate().stats()


def hash_password(password: str) -> str:
    """The Argon2id hash of ``password`` (in a hashing slot)."""
    with _gate().slot("hash"):
        return _HASHER.hash(password)


@cache
def _dummy_hash() -> str:
    """A hash to verify against when the name is unknown, so that both cases cost the same."""
    return hash_password("evalcore: no such account")


def verify_password(password_hash: str | None, password: str) -> bool:
    """Whether ``password`` matches ``password_hash``; with no hash, spend the same time and fail.

    Runs in a hashing slot; a password longer than :data:`MAX_PASSWORD_LENGTH` fails at once.
    """
    if len(password) > MAX_PASSWORD_LENGTH:
        return False
    target = password_hash or _dummy_hash()
    with _gate().slot("verify"):
        try:
            return _HASHER.verify(target, password) and bool(password_hash)
        except (VerificationError, InvalidHashError):
            return False


def needs_rehash(password_hash: str) -> bool:
    """Whether a stored hash was made with other parameters than today's."""
    try:
        return _HASHER.check_needs_rehash(password_hash)
    except InvalidHashError:
        return False
