"""Words for messages people read: a leaf module, like :mod:`evalcore.errors`."""

from __future__ import annotations

__all__ = ["plural"]


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and the word, plural unless ``n`` is 1.

    >>> plural(1, "item"), plural(0, "item"), plural(2, "reply", "replies")
    ('1 item', '0 items', '2 replies')
    """
    return f"{n} {word if n == 1 else (many or word + 's')}"
