"""What a metric is: :class:`MetricSpec`, the inputs it reads (:class:`MetricInput`) and its pass rule."""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from evalcore.errors import ConfigError
from evalcore.judge._requests import OrderMode
from evalcore.judge._result import JudgeResult
from evalcore.judge._template import JudgeTemplate
from evalcore.labels import Label, Scale, format_label

if TYPE_CHECKING:
    from evalcore.judge.builtins._pipeline import PipelineMetric

__all__ = [
    "FIELD_ALIASES",
    "FunctionMetric",
    "MetricExample",
    "MetricInput",
    "MetricKind",
    "MetricSpec",
]

MetricKind: TypeAlias = Literal["template", "function", "pipeline"]

#: A metric computed without a model: ``function(items, threshold=t)`` gives one result per item.
FunctionMetric: TypeAlias = Callable[..., list[JudgeResult]]

#: Other names under which an item may carry a canonical field (the reference systems' vocabulary),
#: tried in order when the canonical field is absent or empty.
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "prompt": ("question", "query", "user_input", "instruction"),
    "response": ("answer",),
    "context": ("retrieved_contexts", "reference_contexts", "contexts"),
    "reference": ("ground_truth", "ground_truths"),
    "response_a": ("response",),
    "response_b": ("baseline_model_response",),
    "conversation": ("messages",),
}

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class MetricInput:
    """One input a metric reads.

    ``name`` is the input as the reference system calls it (Azure's ``question``, ``answer``,
    ``ground_truth``; Vertex's ``baseline_model_response`` …); ``field`` is the canonical item field
    it lives in inside evalcore (``prompt``, ``response``, ``context``, ``reference``,
    ``conversation``, ``response_a``, ``response_b``). An item may also carry the value under one of
    :data:`FIELD_ALIASES`.
    """

    name: str
    field: str
    description: str = ""
    optional: bool = False

    @property
    def shown(self) -> str:
        """``"question (prompt)"``: the reference name with the canonical field when they differ."""
        return self.name if self.name == self.field else f"{self.name} ({self.field})"


@dataclass(frozen=True)
class MetricExample:
    """A worked example for the catalogue: inputs in the reference vocabulary and the output."""

    inputs: tuple[tuple[str, str], ...]
    output: str

    def __init__(self, inputs: Mapping[str, str] | Sequence[tuple[str, str]], output: str) -> None:
        pairs = tuple(inputs.items()) if isinstance(inputs, Mapping) else tuple(inputs)
        object.__setattr__(self, "inputs", tuple((str(k), str(v)) for k, v in pairs))
        object.__setattr__(self, "output", output)


@dataclass(frozen=True)
class MetricSpec:
    """A registered metric: what it measures, what it reads, how it scores and how it is run.

    ``kind`` says how it is computed, with exactly one of the three engines set:

    - ``"template"``: one judge request per item (per order, for pairwise) with ``template``, an
      ordinary :class:`~evalcore.judge.JudgeTemplate` (copy it, edit it, compare the versions);
    - ``"pipeline"``: several requests per item (``pipeline``, a
      :class:`~evalcore.judge.builtins.PipelineMetric`), every intermediate kept in the result's
      ``details``, the final number in ``score`` and pass/fail in ``label``;
    - ``"function"``: no model at all (``function(items, threshold=t) -> [JudgeResult]``).

    ``scale`` is the scale of the results' labels (1–5, severity levels, A/B/TIE, pass/fail), the one
    human labels are calibrated against. ``threshold`` is the default pass threshold: a label for
    template metrics (``3``, ``"medium"``), a score for pipeline and function metrics (``0.5``),
    ``None`` for pairwise choices. With ``higher_is_better`` an item passes when its value is at or
    above the threshold; without it (severity) when it is below.

    ``inputs`` are what a single-turn item must carry; ``conversation_inputs``, when set, are what an
    item carrying a ``conversation`` must carry instead (a conversation is judged as one item).
    """

    name: str
    title: str
    description: str
    kind: MetricKind
    inputs: tuple[MetricInput, ...]
    scale: Scale
    threshold: Label | None = None
    higher_is_better: bool = True
    group: str = "custom"
    origin: str = "your own"
    example: MetricExample | None = None
    conversation_inputs: tuple[MetricInput, ...] | None = None
    conversation_note: str = ""
    template: JudgeTemplate | None = None
    pipeline: PipelineMetric | None = None
    function: FunctionMetric | None = field(default=None, compare=False)
    order_mode: OrderMode = "single"

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ConfigError(
                f"metric name {self.name!r} must be lower-case letters, digits and underscores, "
                "starting with a letter"
            )
        engines = {
            "template": self.template,
            "pipeline": self.pipeline,
            "function": self.function,
        }
        if self.kind not in engines:
            raise ConfigError(
                f"metric {self.name!r}: kind must be template, function or pipeline, not "
                f"{self.kind!r}"
            )
        set_ = [k for k, v in engines.items() if v is not None]
        if set_ != [self.kind]:
            raise ConfigError(
                f"metric {self.name!r} of kind {self.kind!r} needs its {self.kind} and no other "
                f"engine (it has: {', '.join(set_) or 'none'})"
            )
        if self.template is not None and self.template.scale != self.scale:
            raise ConfigError(
                f"metric {self.name!r}: its scale {self.scale.display_labels} differs from its "
                f"template's {self.template.scale.display_labels}"
            )
        object.__setattr__(self, "inputs", tuple(self.inputs))
        if self.conversation_inputs is not None:
            object.__setattr__(self, "conversation_inputs", tuple(self.conversation_inputs))
        if self.pipeline is not None and self.threshold is None:
            object.__setattr__(self, "threshold", self.pipeline.threshold)
        if self.threshold is not None:
            object.__setattr__(self, "threshold", self._check_threshold(self.threshold))
        if self.pipeline is not None and self.pipeline.threshold != self.threshold:
            # the spec's threshold is the one that counts: the pipeline labels items with it
            pipeline = replace(self.pipeline, threshold=float(self.threshold))  # type: ignore[arg-type]
            object.__setattr__(self, "pipeline", pipeline)

    # --- thresholds -----------------------------------------------------------------------------

    @property
    def scores_numbers(self) -> bool:
        """Whether the pass rule compares the result's numeric ``score`` (pipelines, functions)."""
        return self.kind in ("pipeline", "function")

    def _check_threshold(self, value: object) -> Label:
        if self.scale.kind == "pairwise":
            raise ConfigError(f"metric {self.name!r} gives a pairwise choice; it has no threshold")
        if self.scores_numbers or self.scale.is_numeric:
            if isinstance(value, str):
                try:
                    value = float(value)
                except ValueError:
                    raise ConfigError(
                        f"metric {self.name!r}: threshold must be a number, not {value!r}"
                    ) from None
            if (
                isinstance(value, bool)
                or not isinstance(value, numbers.Real)
                or not math.isfinite(value)
            ):
                raise ConfigError(
                    f"metric {self.name!r}: threshold must be a number, not {value!r}"
                )
            return float(value)
        label = _word_label(self.scale, value)
        if label is None:
            raise ConfigError(
                f"metric {self.name!r}: threshold must be one of "
                f"{', '.join(self.scale.display_labels)}, not {value!r}"
            )
        return label

    def with_threshold(self, threshold: object) -> MetricSpec:
        """A copy with another default threshold (``"4"`` and ``4`` are the same).

        >>> from evalcore.judge.builtins import get_metric
        >>> get_metric("coherence").with_threshold("4").pass_rule
        'pass when the score is at least 4'
        """
        value = self._check_threshold(threshold)
        if self.pipeline is not None:
            return replace(
                self, threshold=value, pipeline=replace(self.pipeline, threshold=float(value))
            )
        return replace(self, threshold=value)

    def with_template(self, template: JudgeTemplate) -> MetricSpec:
        """A copy of a template metric judged with another version of its template (an edited
        copy), keeping the metric's inputs, threshold and pass rule; the scale must not change."""
        if self.kind != "template":
            raise ConfigError(f"metric {self.name!r} is a {self.kind} metric, not a template")
        return replace(self, template=template)

    @property
    def pass_rule(self) -> str:
        """The pass rule in words, with the default threshold."""
        if self.threshold is None:
            return "no pass/fail: the result is a choice"
        shown = format_label(self.threshold)
        what = "score" if self.scores_numbers or self.scale.is_numeric else "level"
        if self.higher_is_better:
            return f"pass when the {what} is at least {shown}"
        return f"pass when the {what} is below {shown} (at or above it is a defect)"

    def passes(self, value: Label | None, *, threshold: object = None) -> bool | None:
        """Whether a value passes: the ``score`` of a pipeline or function result, the ``label`` of
        a template result. ``None`` for a missing value or a metric without a threshold.

        >>> from evalcore.judge.builtins import get_metric
        >>> get_metric("groundedness").passes(3.0), get_metric("violence").passes("medium")
        (True, False)
        """
        limit = self.threshold if threshold is None else self._check_threshold(threshold)
        if value is None or limit is None:
            return None
        if isinstance(value, float) and math.isnan(value):
            return None
        if self.scores_numbers or self.scale.is_numeric:
            above = float(value) >= float(limit)
        else:
            label = _word_label(self.scale, value)
            if label is None:
                return None
            above = self.scale.index(label) >= self.scale.index(limit)
        return above if self.higher_is_better else not above

    def verdict(self, result: JudgeResult, *, threshold: object = None) -> str | None:
        """``"pass"`` / ``"fail"`` for a result (``None`` when it has no label or no rule)."""
        if result.status != "ok":
            return None
        value = result.score if self.scores_numbers else result.label
        passed = self.passes(value, threshold=threshold)
        return None if passed is None else ("pass" if passed else "fail")

    # --- inputs -----------------------------------------------------------------------------------

    def inputs_for(self, fields: Mapping[str, Any]) -> tuple[MetricInput, ...]:
        """The inputs an item must carry: ``conversation_inputs`` when it has a conversation."""
        if self.conversation_inputs is not None and not _blank(fields.get("conversation")):
            return self.conversation_inputs
        return self.inputs

    @property
    def all_inputs(self) -> tuple[MetricInput, ...]:
        """Every input of both forms, each field once."""
        seen: dict[str, MetricInput] = {}
        for item in (*self.inputs, *(self.conversation_inputs or ())):
            seen.setdefault(item.field, item)
        return tuple(seen.values())

    # --- identity ---------------------------------------------------------------------------------

    @property
    def version(self) -> str:
        """The engine's version: the template's or pipeline's short content hash (``""`` for a
        function)."""
        if self.template is not None:
            return self.template.version
        if self.pipeline is not None:
            return self.pipeline.version
        return ""

    @property
    def is_pairwise(self) -> bool:
        return self.scale.kind == "pairwise"


def _word_label(scale: Scale, value: object) -> Label | None:
    """``value`` as a label of a word scale, matched case-insensitively; None when it is not one."""
    try:
        return scale.coerce(value)
    except ValueError:
        pass
    if isinstance(value, str):
        wanted = value.strip().lower()
        for label in scale.labels:
            if isinstance(label, str) and label.lower() == wanted:
                return label
    return None


def _blank(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, list | tuple):
        return not any(not _blank(v) for v in value)
    return type(value).__name__ in ("NAType", "NaTType")


def blank(value: object) -> bool:
    """Whether an input value is absent: None, NaN, an empty or white-space string, an empty list."""
    return _blank(value)


def plain_list(value: Any) -> Any:
    """A NumPy array (as Parquet gives list cells) as a list; anything else as it is."""
    return value.tolist() if hasattr(value, "tolist") and not isinstance(value, str) else value
