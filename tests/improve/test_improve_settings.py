"""The declared table of the optimiser's settings: what a form shows, and the checks of its values."""

from __future__ import annotations

import pytest

from evalcore.errors import ConfigError
from evalcore.improve import OPTIMIZE_SETTINGS, OptimizeSettings

BY_NAME = {s.name: s for s in OPTIMIZE_SETTINGS}


def test_every_declared_default_is_the_dataclasss_own() -> None:
    defaults = OptimizeSettings()
    for setting in OPTIMIZE_SETTINGS:
        assert getattr(defaults, setting.name) == setting.default, setting.name
    assert OptimizeSettings.from_values({}) == defaults
    assert OptimizeSettings.from_values({s.name: s.default for s in OPTIMIZE_SETTINGS}) == defaults


def test_a_default_lies_within_its_bounds_and_whole_settings_step_by_whole_numbers() -> None:
    for s in OPTIMIZE_SETTINGS:
        if s.kind is str:  # the headline metric: a name, checked by OptimizeSettings.headline
            continue
        if s.default is not None:
            assert s.least <= s.default, s.name
            assert s.most is None or s.default <= s.most, s.name
        assert s.whole == isinstance(s.default if s.default is not None else s.least, int), s.name


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("test_share", 0.95, "between 0.1 and 0.9"),
        ("finalists", 0, "between 1 and 5"),
        ("rewrites", 1.5, "is a whole number"),
        ("margin", "a lot", "is a number"),
        ("margin", float("inf"), "is a number, not inf"),
        ("split_seed", None, "is a whole number, not None"),
    ],
)
def test_a_value_out_of_its_bounds_is_refused_naming_the_setting(
    name: str, value: object, message: str
) -> None:
    label = BY_NAME[name].label
    with pytest.raises(ConfigError, match=label) as caught:
        OptimizeSettings.from_values({name: value})
    assert message in str(caught.value)


def test_an_empty_or_zero_cap_means_no_cap_and_numbers_keep_their_type() -> None:
    settings = OptimizeSettings.from_values(
        {"budget_usd": 0.0, "max_requests": None, "rewrites": 2.0, "margin": 0}
    )
    assert (settings.budget_usd, settings.max_requests) == (None, None)
    assert settings.rewrites == 2
    assert isinstance(settings.rewrites, int)
    assert settings.margin == 0.0
    assert OptimizeSettings.from_values({"budget_usd": 1.5}).budget_usd == 1.5
