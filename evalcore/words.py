"""Words for messages people read: a leaf module, like :mod:`evalcore.errors`."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["either", "plural"]


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and the word, plural unless ``n`` is 1.

    >>> plural(1, "item"), plural(0, "item"), plural(2, "reply", "replies")
    ('1 item', '0 items', '2 replies')
    """
    return f"{n} {word if n == 1 else (many or word + 's')}"


def either(names: Sequence[str], word: str = "or") -> str:
    """The names as a list read aloud: ``a``, ``a or b``, ``a, b or c`` (empty: ``""``).

    >>> either(["ada"]), either(["ada", "bo"]), either(["ada", "bo", "cy"], "and")
    ('ada', 'ada or bo', 'ada, bo and cy')
    """
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} {word} {names[-1]}"
