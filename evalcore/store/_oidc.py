"""The claims of an OpenID Connect ID token, as evalcore reads them to find an account.

The sign-in page gets the claims of a verified ID token (Streamlit's ``st.user`` after
``st.login``, which has checked the token's signature, issuer, audience and expiry); evalcore
reads only what it needs into an :class:`OidcClaims`, and
:meth:`~evalcore.store.Store.oidc_sign_in` takes that. What finds an account is the issuer and
subject, or an e-mail address the provider says it verified (``email_verified``); the display
name (``name``) is kept for nothing but the audit log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from evalcore.errors import SignInError

__all__ = ["MAX_CLAIM_LENGTH", "OidcClaims"]

#: Longer issuers, subjects, addresses, names and groups are refused (a bound on stored text).
MAX_CLAIM_LENGTH: Final = 320
MAX_GROUPS: Final = 500


def _text(claims: Mapping[str, Any], key: str, *, required: bool = False) -> str | None:
    value = claims.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise SignInError(
                f"The identity provider's token has no {key!r} claim, so it cannot name an "
                "account. Ask an admin to check the single sign-on settings."
            )
        return None
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise SignInError(f"The identity provider's {key!r} claim is not text.")
    text = str(value).strip()
    if len(text) > MAX_CLAIM_LENGTH:
        raise SignInError(
            f"The identity provider's {key!r} claim is longer than {MAX_CLAIM_LENGTH} characters."
        )
    return text


def _verified(value: object) -> bool:
    """``email_verified`` as a yes only when it is JSON true (or the text "true", which a few
    providers send); anything else, absence included, is a no."""
    if isinstance(value, bool):
        return value
    return isinstance(value, str) and value.strip().lower() == "true"


def _groups(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    items: Iterable[object]
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list | tuple):
        items = value
    else:
        return ()
    found = [str(g).strip() for g in items if isinstance(g, str | int) and str(g).strip()]
    return tuple(dict.fromkeys(g for g in found if len(g) <= MAX_CLAIM_LENGTH))[:MAX_GROUPS]


@dataclass(frozen=True)
class OidcClaims:
    """What evalcore reads of an ID token: ``issuer`` (``iss``) and ``subject`` (``sub``), the
    identity that never changes; ``email`` and whether the provider verified it; the display
    ``name`` (for the audit log only); and ``groups`` (``groups``, else ``roles``)."""

    issuer: str
    subject: str
    email: str | None = None
    email_verified: bool = False
    name: str | None = None
    groups: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for key, value in (("iss", self.issuer), ("sub", self.subject)):
            if not isinstance(value, str) or not value.strip():
                raise SignInError(
                    f"The identity provider's token has no {key!r} claim, so it cannot name an "
                    "account. Ask an admin to check the single sign-on settings."
                )
        object.__setattr__(self, "groups", tuple(self.groups))

    @classmethod
    def from_claims(cls, claims: Mapping[str, Any]) -> OidcClaims:
        """Read the claims of a verified ID token (a mapping such as ``st.user.to_dict()``).

        ``iss`` and ``sub`` are required; ``email_verified`` counts only when it is true.

        >>> c = OidcClaims.from_claims({"iss": "https://id.example.org", "sub": "42",
        ...     "email": "Ann@Example.org", "email_verified": "true", "name": "admin",
        ...     "groups": ["graders"]})
        >>> c.subject, c.email, c.email_verified, c.groups
        ('42', 'Ann@Example.org', True, ('graders',))
        """
        if not isinstance(claims, Mapping):
            raise SignInError("The identity provider gave no claims.")
        issuer = _text(claims, "iss", required=True)
        subject = _text(claims, "sub", required=True)
        assert issuer is not None
        assert subject is not None
        groups = claims.get("groups")
        return cls(
            issuer=issuer,
            subject=subject,
            email=_text(claims, "email"),
            email_verified=_verified(claims.get("email_verified")),
            name=_text(claims, "name"),
            groups=_groups(groups if groups is not None else claims.get("roles")),
        )
