"""The optimiser's settings, declared once: :data:`OPTIMIZE_SETTINGS` and :class:`OptimizeSettings`.

Each :class:`OptimizeSetting` row says what a setting is called (``name``, the field of
:class:`OptimizeSettings`; ``label``, what people read; ``flag``, the command line's option), its
default, the least and most it may be, the step a form moves it by, and a line of help.
:class:`OptimizeSettings` takes its defaults from the table and checks every value against it; the
command line (``evalcore judge optimize``) makes its options from it and the Judge page its form.

This module imports nothing heavy (the command line reads it while it builds its parser).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from evalcore.errors import ConfigError, MetricError

if TYPE_CHECKING:
    from evalcore.metrics import MetricDef

__all__ = ["OPTIMIZE_SETTINGS", "OptimizeSetting", "OptimizeSettings", "optimize_setting"]


@dataclass(frozen=True)
class OptimizeSetting:
    """One setting of an optimisation (see the module docstring). ``optional`` settings may be
    ``None`` (no cap); ``least`` and ``most`` are inclusive bounds (``None``: unbounded)."""

    name: str
    label: str
    default: Any
    least: float | None
    most: float | None
    step: float | None
    help: str
    kind: type = int
    optional: bool = False

    @property
    def whole(self) -> bool:
        """Whether the setting takes whole numbers (a form's input steps by whole numbers)."""
        return self.kind is int

    @property
    def flag(self) -> str:
        """The command line's option: ``--test-share`` for ``test_share``.

        >>> optimize_setting("test_share").flag
        '--test-share'
        """
        return "--" + self.name.replace("_", "-")

    def check(self, value: Any) -> Any:
        """``value`` as this setting holds it; :class:`~evalcore.errors.ConfigError` (naming the
        setting in ``column``) when it is of the wrong type or out of bounds."""
        if value is None and self.optional:
            return None
        if self.kind is str:
            if not isinstance(value, str) or not value.strip():
                raise self._refuse(f"{self.label} is a name, not {value!r}")
            return value.strip()
        number = _number(value, self.kind)
        if number is None:
            raise self._refuse(f"{self.label} is {_a(self.kind)}, not {value!r}")
        low = -math.inf if self.least is None else self.least
        high = math.inf if self.most is None else self.most
        if not low <= number <= high:
            raise self._refuse(
                f"{self.label} must be {_bounds(self.least, self.most)}, not {value}"
            )
        return number

    def _refuse(self, message: str) -> ConfigError:
        return ConfigError(message, column=self.name)


def _number(value: Any, kind: type) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if kind is int:
        return int(value) if float(value).is_integer() else None
    return float(value) if math.isfinite(value) else None


def _a(kind: type) -> str:
    return "a whole number" if kind is int else "a number"


def _bounds(least: float | None, most: float | None) -> str:
    if least is not None and most is not None:
        return f"between {least:g} and {most:g}"
    if least is not None:
        return f"at least {least:g}"
    return f"at most {most:g}"


#: Every setting of an optimisation, in the order a form shows them.
OPTIMIZE_SETTINGS: tuple[OptimizeSetting, ...] = (
    OptimizeSetting(
        "test_share",
        "Test share",
        0.4,
        0.1,
        0.9,
        0.05,
        "The share of labelled items kept for the proof on test. The split of a share and seed "
        "is saved, so later optimisations are measured on the same test items.",
        float,
    ),
    OptimizeSetting("split_seed", "Split seed", 0, 0, None, 1, "The seed of the dev/test split."),
    OptimizeSetting(
        "metric",
        "Headline metric",
        "balanced_accuracy",
        None,
        None,
        None,
        "The declared calibration metric candidates are ranked and proven by (higher is better).",
        str,
    ),
    OptimizeSetting(
        "finalists", "Finalists", 3, 1, 5, 1, "The best candidates on dev, judged on test."
    ),
    OptimizeSetting(
        "fewshot_max",
        "Examples per few-shot candidate",
        4,
        1,
        20,
        1,
        "At most this many labelled dev examples in one candidate's prompt.",
    ),
    OptimizeSetting(
        "fewshot_candidates",
        "Few-shot candidates",
        6,
        0,
        20,
        1,
        "Subsets of dev examples tried (0: none).",
    ),
    OptimizeSetting(
        "rewrites",
        "Rewrites",
        3,
        0,
        10,
        1,
        "Instruction rewrites asked of the optimiser (0: none).",
    ),
    OptimizeSetting(
        "token_budget",
        "Example tokens",
        2000,
        1,
        None,
        100,
        "Tokens of examples a few-shot candidate may add to the prompt, at most.",
    ),
    OptimizeSetting(
        "budget_usd",
        "Budget (USD)",
        None,
        0.01,
        None,
        0.5,
        "No cap when empty. The search stops before a step that would pass it.",
        float,
        optional=True,
    ),
    OptimizeSetting(
        "max_requests",
        "Max requests",
        None,
        1,
        None,
        100,
        "No cap when empty. The search stops before a step that would send more.",
        optional=True,
    ),
    OptimizeSetting(
        "margin",
        "Margin",
        0.0,
        0.0,
        1.0,
        0.01,
        "A candidate is offered when its paired interval on test is above zero, or its gain "
        "is at least this margin.",
        float,
    ),
    OptimizeSetting(
        "disagreements_shown",
        "Disagreements shown",
        8,
        1,
        50,
        1,
        "Dev items where the judge and people disagree, shown to the optimiser per rewrite.",
    ),
    OptimizeSetting(
        "confidence",
        "Confidence",
        0.95,
        0.5,
        0.999,
        0.01,
        "The confidence of every interval in the report (dev, test and the paired difference).",
        float,
    ),
    OptimizeSetting(
        "n_boot",
        "Bootstrap resamples",
        1000,
        100,
        100_000,
        100,
        "Resamples of every bootstrap interval in the report.",
    ),
)

_BY_NAME = {s.name: s for s in OPTIMIZE_SETTINGS}


def optimize_setting(name: str) -> OptimizeSetting:
    """The declared setting called ``name``.

    >>> optimize_setting("finalists").default, optimize_setting("finalists").most
    (3, 5)
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ConfigError(
            f"unknown optimisation setting {name!r}; one of {', '.join(_BY_NAME)}"
        ) from None


def _default(name: str) -> Any:
    return _BY_NAME[name].default


@dataclass(frozen=True)
class OptimizeSettings:
    """What an optimisation searches and how far it may go (see :func:`~evalcore.improve.optimize`).

    Every field is a row of :data:`OPTIMIZE_SETTINGS`, which gives its default and bounds; a value
    out of bounds is a :class:`~evalcore.errors.ConfigError` naming the setting.
    """

    test_share: float = _default("test_share")
    split_seed: int = _default("split_seed")
    metric: str = _default("metric")
    finalists: int = _default("finalists")
    fewshot_max: int = _default("fewshot_max")
    fewshot_candidates: int = _default("fewshot_candidates")
    rewrites: int = _default("rewrites")
    token_budget: int = _default("token_budget")
    budget_usd: float | None = _default("budget_usd")
    max_requests: int | None = _default("max_requests")
    margin: float = _default("margin")
    disagreements_shown: int = _default("disagreements_shown")
    confidence: float = _default("confidence")
    n_boot: int = _default("n_boot")

    @classmethod
    def from_values(cls, values: Mapping[str, Any], **others: Any) -> OptimizeSettings:
        """Settings from a form's values, by the names of :data:`OPTIMIZE_SETTINGS`: a setting not
        given keeps its default, a cap given as ``None`` or 0 means no cap, and every value is
        checked (:meth:`OptimizeSetting.check`); ``others`` sets fields the form does not show.

        >>> s = OptimizeSettings.from_values({"rewrites": 1, "budget_usd": 0})
        >>> s.rewrites, s.budget_usd
        (1, None)
        """
        chosen: dict[str, Any] = {}
        for setting in OPTIMIZE_SETTINGS:
            if setting.name in values:
                value = values[setting.name]
                if setting.optional and (value is None or value == 0):
                    value = None
                chosen[setting.name] = setting.check(value)
        return cls(**{**chosen, **others})

    def __post_init__(self) -> None:
        for field in fields(self):
            checked = optimize_setting(field.name).check(getattr(self, field.name))
            object.__setattr__(self, field.name, checked)

    def headline(self, scale_kind: str) -> MetricDef:
        """The declared metric ranked by (:data:`~evalcore.metrics.CALIBRATION_METRICS`); refuses
        one that is lower-is-better, not computed for the scale, or read from one class only
        (a true-positive rate is perfect for a judge that always says pass)."""
        from evalcore.metrics import TABLE_METRICS, metric_def  # heavy: only when ranking

        try:
            found = metric_def(self.metric)
        except MetricError as exc:  # it lists the known metrics
            raise ConfigError(str(exc), column="metric") from None
        if not found.higher_is_better:
            raise ConfigError(
                f"{found.name} is lower-is-better; rank by a higher-is-better metric",
                column="metric",
            )
        if not found.applies_to(scale_kind):
            raise ConfigError(
                f"{found.name} is not computed for {scale_kind} scales", column="metric"
            )
        if found.key not in TABLE_METRICS:
            raise ConfigError(
                f"{found.name} reads one class only; rank by a metric of every class",
                column="metric",
            )
        return found
