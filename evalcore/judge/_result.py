"""What a judge run produces: one :class:`JudgeResult` per (item, order), progress and a summary."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from evalcore.labels import Label, format_label, normalize_label

__all__ = ["Estimate", "JudgeResult", "Order", "Progress", "RunSummary", "Status"]

Status: TypeAlias = Literal["ok", "unparsed", "failed"]
#: ``"AB"``: the item's fields as given (every pointwise result); ``"BA"``: pairwise, swapped.
Order: TypeAlias = Literal["AB", "BA"]


def _label_json(label: Label | None) -> Any:
    if isinstance(label, float) and label.is_integer():
        return int(label)
    return label


@dataclass(frozen=True)
class JudgeResult:
    """The judge's verdict on one item in one order.

    ``status`` is ``"ok"`` (``label`` is on the scale), ``"unparsed"`` (the model replied but no
    label could be read; ``error`` says why) or ``"failed"`` (no usable reply after the allowed
    attempts, or an error that is not retried; ``error`` says which). A pairwise ``label`` is always in
    the item's own frame: ``A`` is the item's ``response_a`` / ``response`` whatever order it was shown
    in. ``score`` is the logprob-weighted score when logprobs were requested (the expected value on
    a numeric scale, the probability of the first label on a binary one). ``raw`` is the reply as
    received (several samples are joined under ``[sample i]`` headings). ``cost`` is the price of the
    original call; a ``cached`` result cost nothing this run (:attr:`cost_this_run`).

    ``probabilities`` (label → probability over every label of the scale, in the item's frame) and
    ``confidence`` (the probability of ``label``) are known when the endpoint gave log-probabilities
    (several samples: the mean of their probabilities), else when several samples were read (the
    share of samples per label), or for a jury (the members' vote shares); ``details["confidence"]``
    says which (``{"from": "logprobs" | "samples" | "jury", ...}``).
    """

    item_id: str
    order: Order
    status: Status
    label: Label | None = None
    score: float | None = None
    reason: str = ""
    raw: str = ""
    error: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = None
    latency_s: float = 0.0
    attempts: int = 0
    cache_key: str = ""
    cached: bool = False
    samples: tuple[Label | None, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)
    probabilities: Mapping[Label, float] | None = None
    confidence: float | None = None

    @property
    def key(self) -> tuple[str, str]:
        """``(item_id, order)``: what a sink records once."""
        return (self.item_id, self.order)

    @property
    def cost_this_run(self) -> float:
        """What this result cost in the run that produced it (0 when it came from the cache)."""
        return 0.0 if self.cached or self.cost is None else self.cost

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (whole-number labels as ints); ``tokens`` is in + out."""
        return {
            "item_id": self.item_id,
            "order": self.order,
            "status": self.status,
            "label": _label_json(self.label),
            "label_text": format_label(self.label),
            "score": self.score,
            "reason": self.reason,
            "raw": self.raw,
            "error": self.error,
            "tokens": self.tokens_in + self.tokens_out,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cost": self.cost,
            "latency_s": round(self.latency_s, 6),
            "attempts": self.attempts,
            "cache_key": self.cache_key,
            "cached": self.cached,
            "samples": [_label_json(x) for x in self.samples],
            "details": dict(self.details),
            "probabilities": None
            if self.probabilities is None
            else {format_label(k): p for k, p in self.probabilities.items()},
            "confidence": self.confidence,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgeResult:
        """Inverse of :meth:`to_dict` (numeric labels come back as floats)."""
        return cls(
            item_id=str(data["item_id"]),
            order=data.get("order", "AB"),
            status=data["status"],
            label=normalize_label(data.get("label")),
            score=data.get("score"),
            reason=data.get("reason") or "",
            raw=data.get("raw") or "",
            error=data.get("error") or "",
            tokens_in=int(data.get("tokens_in") or 0),
            tokens_out=int(data.get("tokens_out") or 0),
            cost=data.get("cost"),
            latency_s=float(data.get("latency_s") or 0.0),
            attempts=int(data.get("attempts") or 0),
            cache_key=data.get("cache_key") or "",
            cached=bool(data.get("cached")),
            samples=tuple(normalize_label(x) for x in data.get("samples") or ()),
            details=dict(data.get("details") or {}),
            probabilities=_probabilities(data.get("probabilities")),
            confidence=None if data.get("confidence") is None else float(data["confidence"]),
        )


def _probabilities(value: Any) -> dict[Label, float] | None:
    if not isinstance(value, Mapping):
        return None
    out: dict[Label, float] = {}
    for key, p in value.items():
        label = normalize_label(key)
        if label is not None:
            out[label] = float(p)
    return out


@dataclass(frozen=True)
class Progress:
    """Handed to the progress callback after each result (once for the cache hits found at the start).

    ``total`` counts every (item, order) of the run, ``done`` those finished, including ones skipped
    because an earlier run finished them; ``rate`` is results per second in this run.
    """

    done: int
    total: int
    ok: int
    unparsed: int
    failed: int
    cost: float
    rate: float
    cached: int = 0
    skipped: int = 0
    requests: int = 0


@dataclass(frozen=True)
class RunSummary:
    """Counts of one call of :meth:`JudgeRunner.run`."""

    total: int
    skipped: int
    ok: int
    unparsed: int
    failed: int
    cached: int
    requests: int
    tokens_in: int
    tokens_out: int
    cost: float
    elapsed_s: float
    cancelled: bool = False

    @property
    def done(self) -> int:
        return self.skipped + self.ok + self.unparsed + self.failed

    @property
    def complete(self) -> bool:
        """Every (item, order) has a result (failed ones included)."""
        return self.done == self.total


@dataclass(frozen=True)
class Estimate:
    """What a run would cost before it starts.

    Tokens in are estimated as characters / 4 plus 4 per message (no tokenizer is needed); tokens out
    as ``n`` × min(``max_tokens``, :data:`~evalcore.judge.TYPICAL_REPLY_TOKENS`), with
    ``max_tokens_out`` the upper bound. ``expected_cost`` is ``None`` when the model has no price.
    """

    n_units: int
    n_skipped: int
    n_cached: int
    n_requests: int
    expected_tokens_in: int
    expected_tokens_out: int
    max_tokens_out: int | None
    expected_cost: float | None
    model: str
