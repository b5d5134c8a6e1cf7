"""Token F1 as a registered function metric (no model): the score, and pass/fail at a threshold."""

from __future__ import annotations

import math
from collections.abc import Sequence

from evalcore.judge._result import JudgeResult
from evalcore.judge._template import JudgeItem

__all__ = ["token_f1_results"]


def token_f1_results(items: Sequence[JudgeItem], *, threshold: float = 0.5) -> list[JudgeResult]:
    """:func:`evalcore.metrics.token_f1` of each item's ``response`` against its ``reference``.

    Each result has the F1 in ``score``, ``"pass"`` / ``"fail"`` (F1 ≥ ``threshold``) in ``label``
    and both in ``details`` (``f1_score``, ``result``, ``threshold``). An item missing either text
    is ``unparsed``.

    >>> [r.label for r in token_f1_results([JudgeItem("1", {"response": "a cat", "reference": "cat"})])]
    ['pass']
    """
    from evalcore.metrics import token_f1_scores  # scipy loads only when needed

    frame = token_f1_scores(
        [i.fields.get("response") for i in items],
        [i.fields.get("reference") for i in items],
        threshold=threshold,
    )
    out: list[JudgeResult] = []
    for item, score, verdict in zip(
        items, frame["f1_score"].tolist(), frame["f1_result"].tolist(), strict=True
    ):
        if verdict is None or math.isnan(score):
            out.append(
                JudgeResult(
                    item.item_id, "AB", "unparsed", error="the response or the reference is missing"
                )
            )
            continue
        out.append(
            JudgeResult(
                item.item_id,
                "AB",
                "ok",
                label=verdict,
                score=float(score),
                reason=f"token F1 {score:.3f} {'≥' if verdict == 'pass' else '<'} {threshold:g}",
                details={"f1_score": float(score), "result": verdict, "threshold": threshold},
            )
        )
    return out
