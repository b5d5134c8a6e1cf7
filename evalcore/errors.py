"""Typed errors raised by evalcore.

Every error a user can cause (a bad file, a label off the scale, a judge template with a typo, an
endpoint that refuses) is an :class:`EvalcoreError`. Its message is written for the person who made the
mistake: it names the file, the column, the row or the item, so that the UI and the CLI can show it as it
is, without a traceback.

The structured fields (``source``, ``column``, ``rows``, ``item_id``) let a UI render the offending rows
beside the message.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ConfigError",
    "DataError",
    "DuplicateIdError",
    "EmptyFileError",
    "EncodingError",
    "EvalcoreError",
    "FileTooLargeError",
    "JudgeError",
    "LabelOutOfScaleError",
    "LayoutError",
    "MalformedFileError",
    "MetricError",
    "MissingColumnError",
    "MissingVariableError",
    "MixedLabelTypesError",
    "NotFoundError",
    "PermissionDeniedError",
    "SessionEndedError",
    "SignInError",
    "StoreError",
    "TemplateError",
    "UndefinedMetricError",
    "WeakPasswordError",
]

#: How many offending rows a message lists before it says "and N more".
MAX_ROWS_IN_MESSAGE = 5


def format_rows(rows: Sequence[int], *, limit: int = MAX_ROWS_IN_MESSAGE) -> str:
    """Render row numbers for a message: ``"rows 3, 7, 9"`` or ``"rows 3, 7, 9, 10, 12 and 40 more"``.

    >>> format_rows([4])
    'row 4'
    >>> format_rows([1, 2, 3, 4, 5, 6, 7])
    'rows 1, 2, 3, 4, 5 and 2 more'
    """
    rows = list(rows)
    if not rows:
        return "no rows"
    head = ", ".join(str(r) for r in rows[:limit])
    more = len(rows) - limit
    word = "row" if len(rows) == 1 else "rows"
    return f"{word} {head}" + (f" and {more} more" if more > 0 else "")


class EvalcoreError(Exception):
    """Base class of every error evalcore raises on purpose.

    ``str(err)`` is a complete, user-facing sentence. The optional fields carry the same facts in a
    structured form.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        column: str | None = None,
        rows: Sequence[int] = (),
        item_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.column = column
        self.rows: tuple[int, ...] = tuple(rows)
        self.item_id = item_id

    def __str__(self) -> str:
        return self.message


# --- data --------------------------------------------------------------------------------------


class DataError(EvalcoreError):
    """A file or table could not be read or does not fit what was asked of it."""


class FileTooLargeError(DataError):
    """The file is larger than the configured upload limit."""


class EncodingError(DataError):
    """The file is not valid UTF-8."""


class EmptyFileError(DataError):
    """The file has no rows."""


class MalformedFileError(DataError):
    """The file's syntax is broken (bad JSON on a line, a CSV that does not parse, not Parquet)."""


class MissingColumnError(DataError):
    """A column that is needed is not in the file."""


class LabelOutOfScaleError(DataError):
    """A label is not one of the declared scale's labels."""


class MixedLabelTypesError(DataError):
    """A label column mixes numbers and words."""


class DuplicateIdError(DataError):
    """Two rows share an item id."""


class LayoutError(DataError):
    """The file's columns match no known layout and no mapping was given."""


# --- metrics -----------------------------------------------------------------------------------


class MetricError(EvalcoreError):
    """A metric cannot be computed from the given labels."""


class UndefinedMetricError(MetricError):
    """The metric is mathematically undefined for this input (for example TPR + TNR <= 1)."""


# --- judge -------------------------------------------------------------------------------------


class TemplateError(EvalcoreError):
    """A judge template is invalid or cannot be rendered."""


class MissingVariableError(TemplateError):
    """A template uses a variable the item does not have."""

    def __init__(self, message: str, *, variable: str, item_id: str | None = None) -> None:
        super().__init__(message, item_id=item_id)
        self.variable = variable


class JudgeError(EvalcoreError):
    """A judge call or run failed in a way the user must act on (bad endpoint, missing API key)."""


class ConfigError(EvalcoreError):
    """A setting is missing or invalid."""


class WeakPasswordError(ConfigError):
    """A new password is refused by the password policy; ``problems`` says why, one sentence
    each (too short, a common password, a pattern that is easy to guess, and advice)."""

    def __init__(self, message: str, *, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems = tuple(problems)


# --- store -------------------------------------------------------------------------------------


class StoreError(EvalcoreError):
    """The database refused an operation."""


class NotFoundError(StoreError):
    """A project, dataset, item or run does not exist."""


class PermissionDeniedError(StoreError):
    """The caller's role does not allow this operation."""


class SignInError(EvalcoreError):
    """A sign-in was refused: a wrong name or password, a locked or disabled account, or an OIDC
    address no rule gives a role. The message never says whether the name exists."""


class SessionEndedError(SignInError):
    """A signed-in session is over: signed out, idle too long, the account disabled or removed, or
    its password changed. The message says which; the holder must sign in again."""
