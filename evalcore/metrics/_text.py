"""Text metrics that need no LLM: Azure's token-overlap F1 and the arithmetic of two RAGAS scores."""

from __future__ import annotations

import math
import numbers
import re
import string
from collections import Counter
from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd

from evalcore.errors import MetricError
from evalcore.labels import is_missing

_DROP_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLE = re.compile(r"\b(?:a|an|the)\b")


def _tokens(text: str) -> list[str]:
    """Lower-case, drop ASCII punctuation, drop the words a/an/the, split on white space."""
    lowered = text.lower().translate(_DROP_PUNCTUATION)
    return _ARTICLE.sub(" ", lowered).split()


def token_f1(response: str, ground_truth: str) -> float:
    """Token-overlap F1 of a response against a ground truth (Azure AI evaluation's F1 score).

    Both texts are lower-cased, stripped of ASCII punctuation (``string.punctuation``; other symbols
    such as curly quotes stay), stripped of the whole words "a", "an" and "the" (not of letters inside
    words: "theory" keeps its "the") and split on white space. The common tokens are the multiset
    intersection of the two token lists; ``P = common / response tokens``, ``R = common / truth
    tokens`` and ``F1 = 2PR / (P + R)``. Range 0 (no overlap, including two empty texts) to 1.

    >>> token_f1("The cat sat.", "a cat sat down")  # tokens cat sat / cat sat down: P 1, R 2/3
    0.8
    """
    if not isinstance(response, str) or not isinstance(ground_truth, str):
        raise MetricError("token_f1 compares two strings")
    predicted, truth = _tokens(response), _tokens(ground_truth)
    common = sum((Counter(predicted) & Counter(truth)).values())
    if common == 0:
        return 0.0
    precision = common / len(predicted)
    recall = common / len(truth)
    return 2.0 * precision * recall / (precision + recall)


def token_f1_scores(
    responses: Sequence[object] | pd.Series,
    ground_truths: Sequence[object] | pd.Series,
    *,
    threshold: float = 0.5,
) -> pd.DataFrame:
    """:func:`token_f1` of aligned responses and ground truths, with a pass/fail verdict per row.

    Returns a DataFrame with ``f1_score`` (float) and ``f1_result`` (``"pass"`` when the score is at
    least ``threshold``, else ``"fail"``). A row where either text is missing (None, NaN) gets NaN
    and no verdict (None). Arrays of different lengths raise ``MetricError``.

    >>> token_f1_scores(["the cat", "dog"], ["cat", "a bird"]).to_dict("list")
    {'f1_score': [1.0, 0.0], 'f1_result': ['pass', 'fail']}
    """
    left, right = list(responses), list(ground_truths)
    if len(left) != len(right):
        raise MetricError(
            f"responses has {len(left)} rows but ground_truths has {len(right)}; they must align"
        )
    if not isinstance(threshold, numbers.Real) or math.isnan(threshold):
        raise MetricError(f"threshold must be a number (got {threshold!r})")
    scores: list[float] = []
    results: list[str | None] = []
    for response, truth in zip(left, right, strict=True):
        if _missing_text(response) or _missing_text(truth):
            scores.append(math.nan)
            results.append(None)
            continue
        score = token_f1(str(response), str(truth))
        scores.append(score)
        results.append("pass" if score >= threshold else "fail")
    return pd.DataFrame(
        {
            "f1_score": np.asarray(scores, dtype=np.float64),
            "f1_result": pd.Series(results, dtype=object),
        }
    )


def _missing_text(value: object) -> bool:
    # Unlike labels, an empty string or the word "error" is real text here.
    return value is None or (not isinstance(value, str) and is_missing(value))


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 0:
        raise MetricError(f"{name} must be a non-negative whole number (got {value!r})")
    return int(value)


def factual_correctness_score(
    tp: int,
    fp: int,
    fn: int,
    *,
    mode: Literal["precision", "recall", "f1"] = "f1",
    beta: float = 1.0,
) -> float:
    """RAGAS factual correctness from claim counts.

    ``tp`` = response claims supported by the reference, ``fp`` = response claims it does not
    support, ``fn`` = reference claims the response does not support.

    - ``mode="precision"``: ``tp / (tp + fp + 1e-8)``;
    - ``mode="recall"``: ``tp / (tp + fn + 1e-8)`` (the 1e-8 is the reference implementation's
      guard against empty claim lists, and it sits only in these two modes);
    - ``mode="f1"``: F-beta ``(1 + beta**2) * P * R / (beta**2 * P + R)`` of the exact ``P = tp /
      (tp + fp)`` and ``R = tp / (tp + fn)``, each 0 when its denominator is 0, and 0 when both
      are 0; ``beta > 1`` favours recall. No epsilon here.

    Every mode then rounds to 2 decimals half to even, as ``numpy.round(x, 2)``, so the guard can
    decide a tie: precision 3/8 = 0.375 becomes 0.37, while F1 of P = R = 3/8 becomes 0.38. Range 0
    to 1 (best). Raises ``MetricError`` for an unknown mode, ``beta <= 0`` or a negative count.

    >>> factual_correctness_score(3, 1, 2)  # P = 3/4, R = 3/5: 2 * 0.45 / 1.35
    0.67
    >>> factual_correctness_score(3, 5, 5), factual_correctness_score(3, 5, 5, mode="precision")
    (0.38, 0.37)
    """
    tp, fp, fn = _count("tp", tp), _count("fp", fp), _count("fn", fn)
    if mode not in ("precision", "recall", "f1"):
        raise MetricError(f"mode must be 'precision', 'recall' or 'f1' (got {mode!r})")
    if not isinstance(beta, numbers.Real) or not math.isfinite(beta) or beta <= 0:
        raise MetricError(f"beta must be a positive number (got {beta!r})")
    if mode == "precision":
        score = tp / (tp + fp + 1e-8)
    elif mode == "recall":
        score = tp / (tp + fn + 1e-8)
    else:
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        if precision == 0.0 and recall == 0.0:
            score = 0.0
        else:
            b2 = float(beta) ** 2
            score = (1.0 + b2) * precision * recall / (b2 * precision + recall)
    return float(np.round(score, 2))


def summarization_qa_score(answers: Sequence[object]) -> float:
    """Share of the summary's answers to the source's yes/no questions that are ``"1"`` (RAGAS).

    An answer counts when, as a string lower-cased and nothing else, it equals ``"1"``: there is no
    stripping, so ``" 1"``, ``"1.0"`` and ``"yes"`` do not count (as in the reference
    implementation). Range 0 to 1 (best). An empty answer list raises ``MetricError``.

    >>> summarization_qa_score(["1", " 1", "yes", "0"])  # only the first counts: 1 of 4
    0.25
    """
    answers = list(answers)
    if not answers:
        raise MetricError("summarization needs at least one answer (the question list is empty)")
    return sum(1 for a in answers if str(a).lower() == "1") / len(answers)


def conciseness_score(summary: str, contexts: Sequence[str]) -> float:
    """RAGAS conciseness: ``1 - min(len(summary), len(text)) / len(text)`` in characters.

    ``text`` is the contexts joined with ``"\\n"``. Range 0 (the summary is as long as the text or
    longer) to 1. Empty contexts (or an empty joined text) raise ``MetricError``.

    >>> conciseness_score("abc", ["abcd", "efghi"])  # text "abcd\\nefghi" has 10 characters
    0.7
    """
    contexts = list(contexts)
    if not contexts:
        raise MetricError("summarization needs at least one context")
    text = "\n".join(str(c) for c in contexts)
    if not text:
        raise MetricError("the contexts are empty, so conciseness is undefined")
    return 1.0 - min(len(summary), len(text)) / len(text)


def summarization_score(
    answers: Sequence[object], summary: str, contexts: Sequence[str], *, coeff: float = 0.5
) -> float:
    """RAGAS summarization score: ``QA * (1 - coeff) + conciseness * coeff``.

    ``QA`` is :func:`summarization_qa_score` of ``answers`` and ``conciseness`` is
    :func:`conciseness_score` of ``summary`` against ``contexts``. Range 0 to 1 (best). Raises
    ``MetricError`` for an empty answer list, empty contexts or ``coeff`` outside [0, 1].

    >>> summarization_score(["1", "0"], "abc", ["abcd", "efghi"])  # 0.5 * 0.5 + 0.7 * 0.5
    0.6
    """
    if not isinstance(coeff, numbers.Real) or not 0.0 <= float(coeff) <= 1.0:
        raise MetricError(f"coeff must be between 0 and 1 (got {coeff!r})")
    qa = summarization_qa_score(answers)
    concise = conciseness_score(summary, contexts)
    return qa * (1.0 - float(coeff)) + concise * float(coeff)
