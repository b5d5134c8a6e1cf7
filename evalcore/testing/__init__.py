"""Test helpers that ship with evalcore: the fake OpenAI-compatible server tests and benchmarks share.

:class:`CalibratedJudge` is a reply rule of known calibration (served log-probabilities, a chance
of being right per confidence) for tests of confidences and their calibration.

Nothing here is used by the library at run time; it lives in the package so that the test suite, the
benchmarks and the browser tests (which start it as a process with
``python -m evalcore.testing.fake_openai``) use one server. Names are imported lazily so that running
the module as a script does not import it twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = [
    "OFF_SCALE_TOKEN",
    "BatchCall",
    "CalibratedJudge",
    "CalibratedVerdict",
    "FakeOpenAI",
    "Fault",
    "OptimizerMode",
    "RecordedRequest",
    "Scripted",
    "ScriptedItem",
    "ServedReply",
    "constant_reply",
    "http_date_in",
    "marker_reply",
    "prompt_text",
    "rule_line",
    "truth_marker",
]
_SCRIPTED = frozenset({"OptimizerMode", "Scripted", "ScriptedItem", "rule_line", "truth_marker"})
_CALIBRATED = frozenset({"OFF_SCALE_TOKEN", "CalibratedJudge", "CalibratedVerdict"})

if TYPE_CHECKING:
    from evalcore.testing._calibrated import OFF_SCALE_TOKEN, CalibratedJudge, CalibratedVerdict
    from evalcore.testing._scripted import (
        OptimizerMode,
        Scripted,
        ScriptedItem,
        rule_line,
        truth_marker,
    )
    from evalcore.testing.fake_openai import (
        BatchCall,
        FakeOpenAI,
        Fault,
        RecordedRequest,
        ServedReply,
        constant_reply,
        http_date_in,
        marker_reply,
        prompt_text,
    )


def __getattr__(name: str) -> Any:
    if name in _CALIBRATED:
        from evalcore.testing import _calibrated

        return getattr(_calibrated, name)
    if name in _SCRIPTED:
        from evalcore.testing import _scripted

        return getattr(_scripted, name)
    if name in __all__:
        from evalcore.testing import fake_openai

        return getattr(fake_openai, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
