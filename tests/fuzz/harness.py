"""What every fuzz test shares: the case count, the per-case hang guard, the typed-error check,
the tally printed at the end, and the structure-aware generators of hostile JSON.

**Counts.** A fuzz test runs :func:`fuzz_settings`'s ``max_examples``: its own small count in the
normal test run (CI), and ``EVALCORE_FUZZ_EXAMPLES`` cases when that variable is set (``make fuzz``
sets 10,000). The small run is derandomised, so CI is repeatable; the full run draws new cases
each time.

**Contract.** :func:`typed` runs one case: it must return, or raise an
:class:`~evalcore.errors.EvalcoreError` with a message; anything else fails the test (Hypothesis
then shrinks it to the smallest case). A case that uses :data:`CASE_SECONDS` of processor time, or
is still running after :data:`WALL_SECONDS`, is a hang: a signal interrupts it and the test fails.
The bounds detect hangs; they are not speed requirements (a case takes milliseconds).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from evalcore.errors import EvalcoreError
from evalcore.limits import MAX_JSON_DEPTH

T = TypeVar("T")

#: The environment variable that sets every fuzz test's case count (``make fuzz``: 10,000).
FUZZ_ENV = "EVALCORE_FUZZ_EXAMPLES"
#: A case using more processor time than this is a hang (seconds)...
CASE_SECONDS = 30.0
#: ...and so is one still running after this long on the clock (a wait that never ends).
WALL_SECONDS = 600.0

#: target → outcome ("accepted", an error type, "UNTYPED …", "HANG") → cases
TALLY: defaultdict[str, Counter[str]] = defaultdict(Counter)


def full_run() -> bool:
    return bool(os.environ.get(FUZZ_ENV, "").strip())


def fuzz_settings(ci: int) -> settings:
    """Hypothesis settings of a fuzz test: ``ci`` cases in the normal run, ``EVALCORE_FUZZ_EXAMPLES``
    in the full one; no Hypothesis deadline (the hang guard is ours) and no health check that
    would stop a slow, large case."""
    count = int(os.environ[FUZZ_ENV]) if full_run() else ci
    return settings(
        max_examples=count,
        deadline=None,
        derandomize=not full_run(),
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )


class Hang(BaseException):
    """A case ran past its bound (a BaseException, so no ``except Exception`` in the code under
    test can turn it into a typed error)."""


@contextlib.contextmanager
def hang_guard(
    cpu_seconds: float = CASE_SECONDS, wall_seconds: float = WALL_SECONDS
) -> Iterator[None]:
    """Interrupt the block after ``cpu_seconds`` of processor time (a loop that never ends), or
    ``wall_seconds`` on the clock (a wait that never ends). Processor time, so that a machine
    busy with other work does not make a quick case look hung. A signal that lands where Python
    ignores exceptions (a garbage-collector callback) is still noticed when the block ends."""
    fired: list[str] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        what = "processor time" if signum == signal.SIGPROF else "time on the clock"
        fired.append(what)
        raise Hang(f"the case ran past its bound of {what}")

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGPROF, signal.SIGALRM)}
    signal.setitimer(signal.ITIMER_PROF, cpu_seconds)
    signal.setitimer(signal.ITIMER_REAL, wall_seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if fired:
        raise Hang(f"the case ran past its bound of {fired[0]}")


def typed(
    target: str, case: Callable[[], T], *, label: Callable[[EvalcoreError], str] | None = None
) -> T | None:
    """Run one case of ``target``: its result, or ``None`` when it raised a typed error with a
    message. Any other exception, or a hang, fails the test; every outcome is tallied (a typed
    error under its type, or under ``label(error)`` when that is given)."""
    tally = TALLY[target]
    try:
        with hang_guard():
            value = case()
    except EvalcoreError as exc:
        tally[label(exc) if label is not None else type(exc).__name__] += 1
        if not str(exc).strip():
            raise AssertionError(f"{target}: {type(exc).__name__} without a message") from exc
        return None
    except Hang:
        tally["HANG"] += 1
        raise AssertionError(
            f"{target}: a case ran past {CASE_SECONDS:g} s of processor time or {WALL_SECONDS:g} s"
        ) from None
    except Exception as exc:
        tally[f"UNTYPED {type(exc).__name__}"] += 1
        raise AssertionError(f"{target}: untyped {type(exc).__name__}: {exc!r:.300}") from exc
    tally["accepted"] += 1
    return value


def never_raises(target: str, case: Callable[[], T]) -> T:
    """Run one case of a function that must never raise at all (the reply parser, a batch line):
    any exception, typed or not, fails the test."""
    tally = TALLY[target]
    try:
        with hang_guard():
            value = case()
    except Hang:
        tally["HANG"] += 1
        raise AssertionError(
            f"{target}: a case ran past {CASE_SECONDS:g} s of processor time or {WALL_SECONDS:g} s"
        ) from None
    except Exception as exc:
        tally[f"RAISED {type(exc).__name__}"] += 1
        raise AssertionError(f"{target}: raised {type(exc).__name__}: {exc!r:.300}") from exc
    tally["accepted"] += 1
    return value


def note(target: str, outcome: str) -> None:
    """Count an outcome the case itself checked (say, a refused upload that left the store as it
    was), in a tally of its own beside the one :func:`typed` keeps for ``target``."""
    TALLY[f"{target} (checked)"][outcome] += 1


# --- hostile JSON -------------------------------------------------------------------------------

#: Nesting depths around the limit, and far past the interpreter's recursion limit.
DEPTHS = st.sampled_from(
    [
        MAX_JSON_DEPTH - 2,
        MAX_JSON_DEPTH - 1,
        MAX_JSON_DEPTH,
        MAX_JSON_DEPTH + 1,
        MAX_JSON_DEPTH + 2,
        500,
        990,
        1_000,
        10_000,
        100_000,
    ]
) | st.integers(1, 200)

tricky_text = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12
) | st.sampled_from(
    ["", " ", "[[", '{"a":', '"', "\\", "\\u0000", "\u2028", "\ufeff", "NaN", "null", "=1+1"]
)
numbers = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 1, 10**20, -(10**20), 2**63, 2**63 - 1, 100_000_001]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, 1.5, 7.0, -0.0, 5e-324]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, tricky_text)


def json_values(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """JSON-like values: scalars (odd numbers and text included) in small lists and objects."""
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(tricky_text, inner, max_size=3),
        max_leaves=max_leaves,
    )


SMALL_JSON = json_values(4)


def dumps(value: Any) -> str:
    """JSON text of ``value`` (NaN and Infinity written as Python's json writes them)."""
    return json.dumps(value, allow_nan=True)


@st.composite
def deep_json(draw: st.DrawFn) -> str:
    """JSON text nested ``depth`` levels: arrays, objects or both in turn, closed or left open,
    around some inner value. Built as text (by repetition, so 100,000 levels cost little): no
    value this deep could be written by ``json.dumps``."""
    depth = draw(DEPTHS)
    shape = draw(st.sampled_from(["[", '{"k":', "mixed"]))
    inner = dumps(draw(SMALL_JSON))
    if shape == "mixed":  # array, object, array, … from a drawn start
        pair = ("[", '{"k":') if draw(st.booleans()) else ('{"k":', "[")
        opened = "".join(pair) * (depth // 2) + pair[0] * (depth % 2)
    else:
        opened = shape * depth
    closed = _closers(opened)
    ending = draw(st.sampled_from(["closed", "open", "half"]))
    if ending == "open":
        closed = ""
    elif ending == "half":
        closed = closed[: len(closed) // 2]
    return opened + inner + closed


def _closers(opened: str) -> str:
    """The closing brackets of ``opened`` (``[`` and ``{"k":`` openers), innermost first."""
    return opened.replace('{"k":', "}").replace("[", "]")[::-1]


class Raw:
    """A value to be written into JSON as the text it holds (a deep fragment, ``NaN`` …)."""

    def __init__(self, text: str) -> None:
        self.text = text


def write_json(value: Any, **options: Any) -> str:
    """``json.dumps`` of ``value`` with every :class:`Raw` inside written as its own text."""
    raws: list[str] = []

    def default(obj: Any) -> Any:
        if isinstance(obj, Raw):
            raws.append(obj.text)
            return f"\x00RAW{len(raws) - 1}\x00"
        raise TypeError(type(obj).__name__)

    text = json.dumps(value, default=default, allow_nan=True, **options)
    for index, raw in enumerate(raws):
        text = text.replace(json.dumps(f"\x00RAW{index}\x00"), raw, 1)
    return text


#: Strategies are built once (building one is what costs, not drawing from it).
JSON_VALUES = json_values(12)
DEEP_JSON = deep_json()
#: What a hostile file puts where a value goes: any JSON value, or a deep raw fragment.
HOSTILE = st.one_of(JSON_VALUES, DEEP_JSON.map(Raw))


@st.composite
def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with a few bytes overwritten, a run inserted or deleted, or cut short."""
    out = bytearray(data)
    for _ in range(draw(st.integers(0, 3))):
        if not out:
            break
        at = draw(st.integers(0, len(out) - 1))
        action = draw(st.sampled_from(["flip", "insert", "delete", "cut"]))
        if action == "flip":
            out[at] = draw(st.integers(0, 255))
        elif action == "insert":
            out[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif action == "delete":
            del out[at : at + draw(st.integers(1, 8))]
        else:
            del out[at:]
    return bytes(out)
