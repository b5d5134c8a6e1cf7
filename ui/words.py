"""Counted nouns for the pages' messages ("1 item", "2 items")."""

from __future__ import annotations


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun`` in the number that fits.

    >>> count(1, "item"), count(0, "item"), count(2, "reply", "replies")
    ('1 item', '0 items', '2 replies')
    """
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
