"""Budgets for rendering a template: loop iterations, characters per message and seconds.

A template is code a user wrote, rendered on every preview and for every item of a run, inside the
server process. Jinja's sandbox stops it from reaching Python's internals, but not from running long
or building huge strings. :class:`BudgetedEnvironment` adds three limits, per rendered message
(:class:`RenderBudget`):

- **loop iterations**: every ``{% for %}`` loop counts its iterations against one counter for the
  message (nested loops multiply, and are stopped as soon as the product passes the limit), and
  ``range()`` refuses a range longer than the limit before it is made;
- **characters**: every operation that can multiply a size (``*``, ``**``, ``+``, ``%``, ``~``,
  the ``center`` / ``indent`` / ``replace`` / ``join`` / ``format`` filters and string methods,
  ``lipsum``) checks the size of what it would build *before* building it, and the message as a
  whole is cut off when its output passes the limit;
- **time**: the rendering thread's processor time (``time.thread_time``), read at every
  checkpoint above and every 256 loop iterations. Not the wall clock: on a busy server (a load of
  12 on two cores while this was fuzzed) a one-line template took over 2 s of wall time to render
  and failed its item; its processor time stays what the template costs.

Mutating methods of lists, dicts and sets (``append``, ``update`` ...) are refused, as in Jinja's
immutable sandbox, so a template cannot grow a structure in a loop either.

A limit reached raises :class:`BudgetExceeded` inside the render; the caller
(:func:`evalcore.judge.render`) turns it, like every other failure, into a
:class:`~evalcore.errors.TemplateError` naming the template, the message and the item.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import string
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import jinja2.nodes
from jinja2 import pass_context
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import _PassArg, generate_lorem_ipsum

__all__ = ["DEFAULT_BUDGET", "LOOP_GUARD", "BudgetExceeded", "BudgetedEnvironment", "RenderBudget"]

#: The name under which every ``{% for %}`` loop's iterable is counted (templates may not use it).
LOOP_GUARD = "__evalcore_loop__"
_CLOCK_EVERY = 256
#: String methods whose result may be far larger than their inputs, checked before they run.
_WIDTH_METHODS = frozenset({"center", "ljust", "rjust", "zfill"})


@dataclass(frozen=True)
class RenderBudget:
    """Limits for rendering one message of a template (each message has its own).

    >>> RenderBudget().max_chars
    1000000
    """

    max_iterations: int = 100_000
    max_chars: int = 1_000_000
    #: processor time of the rendering thread, not time on the clock: a render that is slow only
    #: because the machine is busy (other renders, other runs) is not stopped
    max_seconds: float = 2.0


DEFAULT_BUDGET = RenderBudget()


class BudgetExceeded(Exception):
    """A render passed one of its :class:`RenderBudget` limits (the message says which)."""


class _Meter:
    """What one message's render has spent so far."""

    def __init__(self, budget: RenderBudget, clock: Callable[[], float]) -> None:
        self.budget = budget
        self.clock = clock
        self.deadline = clock() + budget.max_seconds
        self.iterations = 0

    def iterate(self) -> None:
        self.iterations += 1
        if self.iterations > self.budget.max_iterations:
            raise BudgetExceeded(
                f"its loops ran more than {self.budget.max_iterations:,} iterations"
            )
        if self.iterations % _CLOCK_EVERY == 0:
            self.check_time()

    def check_time(self) -> None:
        if self.clock() > self.deadline:
            raise BudgetExceeded(
                f"rendering took more than {self.budget.max_seconds:g} s of processor time"
            )

    def check_size(self, size: float, what: str = "a value") -> None:
        if size > self.budget.max_chars:
            raise BudgetExceeded(
                f"{what} would be longer than {self.budget.max_chars:,} characters"
            )
        self.check_time()


_METER: contextvars.ContextVar[_Meter | None] = contextvars.ContextVar(
    "evalcore_meter", default=None
)


def _meter() -> _Meter:
    meter = _METER.get()
    # outside a budgeted render (nothing of a template runs there): a fresh default meter
    return meter if meter is not None else _Meter(DEFAULT_BUDGET, time.thread_time)


@contextlib.contextmanager
def metered(
    budget: RenderBudget, clock: Callable[[], float] = time.thread_time
) -> Iterator[_Meter]:
    """Count one message's render against ``budget`` for the block."""
    token = _METER.set(_Meter(budget, clock))
    try:
        meter = _METER.get()
        assert meter is not None
        yield meter
    finally:
        _METER.reset(token)


def budgeted_chunks(chunks: Iterable[str], budget: RenderBudget) -> str:
    """Join a render's output chunks, stopping once the message passes ``budget.max_chars``."""
    meter = _meter()
    parts: list[str] = []
    total = 0
    for chunk in chunks:
        total += len(chunk)
        meter.check_size(total, "the message")
        parts.append(chunk)
    return "".join(parts)


def _size(value: object) -> int:
    return len(value) if isinstance(value, str | bytes | list | tuple) else 0


def _longest_number(text: str) -> int:
    """The largest run of digits in ``text`` read as a number (a width or precision in a format)."""
    best = 0
    run = 0
    for char in text:
        if "0" <= char <= "9":
            run = run * 10 + (ord(char) - 48)
            if run > 10**12:
                return run
        else:
            best = max(best, run)
            run = 0
    return max(best, run)


def _format_width(template: str) -> int:
    """The largest width in the replacement fields of a ``str.format`` template."""
    try:
        specs = [spec or "" for _, _, spec, _ in string.Formatter().parse(template)]
    except ValueError:
        return 0
    return max((_longest_number(spec) for spec in specs), default=0)


def _check_power(left: Any, right: Any) -> None:
    whole = isinstance(left, int) and isinstance(right, int)
    if (
        whole
        and right > 0
        and abs(left) > 1
        and abs(left).bit_length() * right > 64 * _meter().budget.max_chars
    ):
        raise BudgetExceeded(f"{left} ** {right} is too large a number")


def _check_binop(operator: str, left: Any, right: Any) -> None:
    meter = _meter()
    if operator == "**":
        _check_power(left, right)
    elif operator == "*":
        for seq, times in ((left, right), (right, left)):
            if isinstance(times, int) and _size(seq):
                meter.check_size(_size(seq) * times, "a repeated value")
    elif operator == "+":
        meter.check_size(_size(left) + _size(right), "a sum")
    elif operator == "%" and isinstance(left, str):
        meter.check_size(len(left) + _longest_number(left), "a formatted string")
        args = right if isinstance(right, tuple) else (right,)
        meter.check_size(len(left) + sum(len(str(a)) for a in args[:1000]), "a formatted string")
    meter.check_time()


def _check_call(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Refuse a string method call that would build more than the budget allows."""
    owner = getattr(obj, "__self__", None)
    if not isinstance(owner, str):
        _meter().check_time()
        return
    meter = _meter()
    name = getattr(obj, "__name__", "")
    first = args[0] if args else None
    if name in _WIDTH_METHODS and isinstance(first, int):
        meter.check_size(first, f"{name}()'s result")
    elif name == "expandtabs":
        width = first if isinstance(first, int) else kwargs.get("tabsize", 8)
        if isinstance(width, int):
            meter.check_size(len(owner) + owner.count("\t") * width, "expandtabs()'s result")
    elif name == "replace" and len(args) >= 2 and isinstance(first, str):
        new = args[1]
        hits = owner.count(first) if first else len(owner) + 1
        meter.check_size(len(owner) + hits * _size(new), "replace()'s result")
    elif name in ("format", "format_map"):
        meter.check_size(len(owner) + _format_width(owner), "format()'s result")
    meter.check_time()


def _guarded_join(sep: str, items: Iterable[Any]) -> list[str]:
    """The items of a join as strings, refused before joining when the result would be too long."""
    meter = _meter()
    parts: list[str] = []
    total = 0
    for item in items:
        text = item if isinstance(item, str) else str(item)
        total += len(text) + (len(sep) if parts else 0)
        meter.check_size(total, "a joined string")
        parts.append(text)
    return parts


def _loop_guard(iterable: Any) -> Iterator[Any]:
    """Count every iteration of a ``{% for %}`` loop against the message's budget."""
    meter = _meter()
    for value in iterable:
        meter.iterate()
        yield value


def _range(*args: int) -> range:
    """``range()`` that refuses a range longer than the budget's loop iterations."""
    numbers = range(*args)
    try:
        length = len(numbers)
    except OverflowError:
        length = math.inf  # type: ignore[assignment]
    limit = _meter().budget.max_iterations
    if length > limit:
        raise BudgetExceeded(f"range() of more than {limit:,} numbers")
    return numbers


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    """Jinja's ``lipsum`` with the number of words it may make checked first."""
    _meter().check_size(10 * n * max, "lipsum()'s text")  # about ten characters a word
    return str(generate_lorem_ipsum(n=n, html=html, min=min, max=max))


def _guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """A filter that checks the sizes it would build first; it takes the context, so that the
    optimiser never runs it at compile time, outside any budget."""
    pass_arg = _PassArg.from_obj(func)

    @pass_context
    def guarded(context: Context, value: Any, *args: Any, **kwargs: Any) -> Any:
        meter = _meter()
        if name in ("center", "indent"):
            width = args[0] if args else kwargs.get("width", 80 if name == "center" else 4)
            lines = str(value).count("\n") + 1 if name == "indent" else 1
            if isinstance(width, int):
                meter.check_size(_size(str(value)) + lines * width, f"the {name} filter's result")
        elif name == "replace" and len(args) >= 2:
            text = str(value)
            old, new = str(args[0]), str(args[1])
            hits = text.count(old) if old else len(text) + 1
            meter.check_size(len(text) + hits * len(new), "the replace filter's result")
        elif name == "join":
            sep = str(args[0]) if args else str(kwargs.get("d", ""))
            attribute = args[1] if len(args) > 1 else kwargs.get("attribute")
            if attribute is None and not isinstance(value, str):
                value = _guarded_join(sep, value)
        elif name == "format" and isinstance(value, str):
            meter.check_size(len(value) + _longest_number(value), "the format filter's result")
        if pass_arg is _PassArg.context:
            result = func(context, value, *args, **kwargs)
        elif pass_arg is _PassArg.eval_context:
            result = func(context.eval_ctx, value, *args, **kwargs)
        elif pass_arg is _PassArg.environment:
            result = func(context.environment, value, *args, **kwargs)
        else:
            result = func(value, *args, **kwargs)
        if isinstance(result, str | list | tuple):
            meter.check_size(len(result), f"the {name} filter's result")
        return result

    return guarded


class _BudgetedCodeGenerator(CodeGenerator):
    """Jinja's code generator with ``~`` (string concatenation) checked against the budget."""

    def visit_Concat(self, node: jinja2.nodes.Concat, frame: Frame) -> None:
        self.write("environment.budgeted_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class BudgetedEnvironment(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox with the budgets of :class:`RenderBudget` (see the module)."""

    code_generator_class = _BudgetedCodeGenerator
    intercepted_binops = frozenset({"*", "**", "+", "%", "/", "//"})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.globals["range"] = _range
        self.globals["lipsum"] = _lipsum
        self.globals[LOOP_GUARD] = _loop_guard
        self.filters = {name: _guard_filter(name, f) for name, f in self.filters.items()}

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        _check_binop(operator, left, right)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _check_call(__obj, args, kwargs)
        if (
            getattr(__obj, "__name__", "") == "join"
            and isinstance(getattr(__obj, "__self__", None), str)
            and args
        ):
            args = (_guarded_join(__obj.__self__, args[0]), *args[1:])
        result = super().call(__context, __obj, *args, **kwargs)
        if isinstance(result, str | list | tuple):
            _meter().check_size(len(result))
        return result

    def budgeted_concat(self, parts: Iterable[Any]) -> str:
        """``a ~ b ~ ...``: refused before joining when the result would be too long."""
        return "".join(_guarded_join("", parts))


def guard_loops(tree: jinja2.nodes.Template) -> jinja2.nodes.Template:
    """Wrap every ``{% for %}`` loop's iterable in the iteration counter (in place)."""
    for loop in tree.find_all(jinja2.nodes.For):
        loop.iter = jinja2.nodes.Call(
            jinja2.nodes.Name(LOOP_GUARD, "load"), [loop.iter], [], None, None
        )
    return tree
