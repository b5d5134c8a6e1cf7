"""A judge of known calibration for :class:`~evalcore.testing.FakeOpenAI`.

:class:`CalibratedJudge` is a reply rule that serves log-probabilities (:class:`ServedReply`) whose
relation to the truth a test sets, so that what a judge run parses can be compared with what was
served, and calibration statistics with a known answer.

**Per item** (the judged item is the last ``<<item ID truth=LABEL>>`` marker in the prompt, see
:func:`~evalcore.testing.truth_marker`; a prompt without one is an item keyed by the prompt's hash
with a drawn truth), with draws that are a hash of the seed and the item id, uniform in [0, 1):

1. the top-label probability ``p``: ``confidence`` when it is one number, else drawn uniformly from
   the interval ``(low, high)`` it gives;
2. the label is right with probability ``q = accuracy(p)``: by default ``q = p − overconfidence``
   (clipped to [0, 1]), so ``overconfidence=0`` is a well-calibrated judge and a positive value an
   over-confident one; a callable ``accuracy`` replaces that rule. A right label is the truth; a
   wrong one is drawn uniformly from the other labels;
3. the served distribution over the scale puts ``p`` on the label and ``(1 − p)/(k − 1)`` on each
   of the other ``k − 1`` labels (so the truth is distributed as served: the other labels are
   calibrated too), all scaled by ``1 − off_scale``; the remaining ``off_scale`` goes to the token
   ``"maybe"``, which spells no label. Renormalised over the scale, the served probabilities are
   exactly :attr:`CalibratedVerdict.probabilities`.

With ``n > 1`` samples every sample is served the same distribution (as one prompt gets at the same
position) and writes a label drawn from it, sample by sample (hashes of the seed, the item and the
sample's number); ``n = 1`` writes the top label, as greedy decoding does.

Options that change only how the probabilities are written: ``variants`` splits each label's mass
3 : 1 over the token ``"4"`` and the token ``" 4"`` (with a leading space); ``split_words`` writes
each word label of more than one character in two tokens (its first character, then the rest), and
serves the first characters as the alternatives (``"T"`` for ``TIE``), which is how a parser must
read a label written in several tokens. Numbers are always one token.

The reply is the request's JSON schema object when it asks for one, else prose ending in
``Score: LABEL`` (as :func:`~evalcore.testing.marker_reply` answers). :meth:`CalibratedJudge.verdict`
gives, without any request, everything the rule serves for an item: what a test compares with.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalcore.testing.fake_openai import _DEFAULT_LABELS, ServedReply, _render_label, _schema_props
from evalcore.testing.fake_openai import prompt_text as _prompt

__all__ = ["OFF_SCALE_TOKEN", "CalibratedJudge", "CalibratedVerdict"]

_MARKER = re.compile(r"<<item ([A-Za-z0-9_.\-]+) truth=([A-Za-z0-9_.\-]+)>>")
#: The token that carries the mass a :class:`CalibratedJudge` puts off the scale.
OFF_SCALE_TOKEN = "maybe"


@dataclass(frozen=True)
class CalibratedVerdict:
    """What a :class:`CalibratedJudge` serves for one item.

    ``label`` is the top label (what one sample writes) and ``confidence`` its probability ``p``;
    ``correct`` whether it is the truth (drawn with probability ``accuracy``); ``probabilities``
    the served distribution over the scale, renormalised (it sums to 1); ``samples`` the labels
    written by ``n`` samples.
    """

    item_id: str
    truth: str
    label: str
    confidence: float
    accuracy: float
    correct: bool
    probabilities: Mapping[str, float]
    samples: tuple[str, ...]


def _draw(seed: int, *parts: object) -> float:
    text = "|".join(str(p) for p in ("calibrated", seed, *parts))
    digest = hashlib.sha256(text.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@dataclass
class CalibratedJudge:
    """The reply rule (see the module docstring for the exact model).

    ``labels`` is the scale as written (default: the request's schema enum, else 1–5).
    """

    confidence: float | tuple[float, float] = (0.5, 1.0)
    overconfidence: float = 0.0
    accuracy: Callable[[float], float] | None = None
    off_scale: float = 0.0
    labels: Sequence[str] | None = None
    seed: int = 0
    variants: bool = False
    split_words: bool = False
    _served: dict[str, CalibratedVerdict] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        low, high = self._bounds()
        if not 0.0 <= low <= high <= 1.0:
            raise ValueError(f"confidence must lie in [0, 1], not {self.confidence!r}")
        if not 0.0 <= self.off_scale < 1.0:
            raise ValueError(f"off_scale must lie in [0, 1), not {self.off_scale}")
        if self.labels is not None:
            self.labels = [str(x) for x in self.labels]

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> CalibratedJudge:
        """Build from plain JSON data: the keyword arguments (``confidence`` a number or a
        ``[low, high]`` list; no ``accuracy`` callable)."""
        options = dict(config)
        raw = options.get("confidence")
        if isinstance(raw, list):
            options["confidence"] = (float(raw[0]), float(raw[1]))
        return cls(**options)

    @classmethod
    def from_file(cls, path: str | Path) -> CalibratedJudge:
        """:meth:`from_config` of a JSON file."""
        return cls.from_config(json.loads(Path(path).read_text(encoding="utf-8")))

    def _bounds(self) -> tuple[float, float]:
        if isinstance(self.confidence, tuple):
            return float(self.confidence[0]), float(self.confidence[1])
        return float(self.confidence), float(self.confidence)

    # --- the truth -------------------------------------------------------------------------------

    def verdict(
        self, item_id: str, truth: str, scale: Sequence[str], *, n: int = 1
    ) -> CalibratedVerdict:
        """What this judge serves for item ``item_id`` whose true label is ``truth`` on ``scale``
        (labels as written), with ``n`` samples."""
        labels = [str(x) for x in scale]
        if truth not in labels:
            raise ValueError(
                f"the truth {truth!r} of item {item_id!r} is not on the scale {labels}"
            )
        low, high = self._bounds()
        p = low + (high - low) * _draw(self.seed, item_id, "p")
        q = self.accuracy(p) if self.accuracy is not None else p - self.overconfidence
        q = min(1.0, max(0.0, q))
        correct = _draw(self.seed, item_id, "right") < q
        others = [x for x in labels if x != truth]
        if correct or not others:
            label = truth
        else:
            label = others[int(_draw(self.seed, item_id, "wrong") * len(others)) % len(others)]
        rest = (1.0 - p) / (len(labels) - 1) if len(labels) > 1 else 0.0
        probabilities = {x: (p if x == label else rest) for x in labels}
        if n <= 1:
            samples: tuple[str, ...] = (label,)
        else:
            samples = tuple(
                _pick(probabilities, _draw(self.seed, item_id, "sample", i)) for i in range(n)
            )
        return CalibratedVerdict(item_id, truth, label, p, q, correct, probabilities, samples)

    def served(self) -> dict[str, CalibratedVerdict]:
        """Every verdict served so far, by item id (the last one per item)."""
        return dict(self._served)

    # --- the reply rule --------------------------------------------------------------------------

    def __call__(self, request: dict[str, Any]) -> list[ServedReply]:
        text = _prompt(request)
        _, enum = _schema_props(request)
        scale = [str(x) for x in enum] if enum else list(self.labels or _DEFAULT_LABELS)
        markers = _MARKER.findall(text)
        if markers:
            item_id, truth = markers[-1]
        else:
            item_id = hashlib.sha256(text.encode()).hexdigest()[:16]
            truth = scale[int(_draw(self.seed, item_id, "truth") * len(scale)) % len(scale)]
        n = int(request.get("n") or 1)
        verdict = self.verdict(item_id, truth, scale, n=n)
        self._served[item_id] = verdict
        return [self._reply(label, verdict, request) for label in verdict.samples]

    def _reply(
        self, written: str, verdict: CalibratedVerdict, request: Mapping[str, Any]
    ) -> ServedReply:
        content = _render_label(written, request)
        keep = 1.0 - self.off_scale
        alternatives: list[tuple[str, float]] = []
        for label, p in verdict.probabilities.items():
            token = self._first_token(label)
            if p <= 0:
                continue
            if self.variants:
                alternatives += [(token, 0.75 * p * keep), (" " + token, 0.25 * p * keep)]
            else:
                alternatives.append((token, p * keep))
        if self.off_scale > 0:
            alternatives.append((OFF_SCALE_TOKEN, self.off_scale))
        tokens: tuple[str, ...] = ()
        first = self._first_token(written)
        if first != written:
            tokens = (first, written[len(first) :])
        return ServedReply(content, written, tuple(alternatives), tokens)

    def _first_token(self, label: str) -> str:
        if self.split_words and len(label) > 1 and not _is_number(label):
            return label[0]
        return label


def _pick(probabilities: Mapping[str, float], draw: float) -> str:
    """The label whose share of [0, 1) holds ``draw`` (labels in order)."""
    total = 0.0
    last = ""
    for label, p in probabilities.items():
        total += p
        last = label
        if draw < total:
            return label
    return last
