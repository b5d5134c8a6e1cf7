"""Judge templates: immutable, content-hashed prompt versions, rendered in a sandbox.

A :class:`JudgeTemplate` is data: a system prompt and a user prompt with ``{{ variables }}`` filled from an
item's fields, the label scale the judge answers on, how its reply is read (:class:`OutputSpec`) and the
model settings it is sent with (:class:`ModelSettings`). Its :attr:`~JudgeTemplate.content_hash` (sha256
of the canonical JSON of :meth:`~JudgeTemplate.content_dict`) is the identity of a template version:
any change to any field makes a new version.

Rendering uses Jinja2's sandboxed environment with strict undefined variables: a variable the item does
not have raises :class:`~evalcore.errors.MissingVariableError` naming the variable and the item, and
:func:`check_variables` finds it for a whole batch before any request is made. Attribute access to
private names (``{{ ''.__class__ }}``) is refused when the template is built and again by the sandbox
when it is rendered, as a :class:`~evalcore.errors.TemplateError`.

Every message is rendered within a :class:`~evalcore.judge.RenderBudget` (loop iterations, one
million characters, two seconds by default; see :mod:`evalcore.judge._budget`), in the editor's
preview and in every run alike. Every failure, a budget passed included, is a
:class:`~evalcore.errors.TemplateError` naming the template, the message (system or user) and the
item.

Besides the item's fields, three variables are always available (an item field of the same name wins):
``criterion`` (the template's criterion), ``rubric`` (its rubric text) and ``labels`` (the scale's
labels joined by ``", "``). A field whose value is ``None`` or NaN renders as an empty string; a field
that is absent is an error.

TOML template file
------------------

The ``evalcore judge run --template`` option and :func:`JudgeTemplate.load_toml` read this format::

    name = "fluency"
    criterion = "fluency"
    scale = [1, 2, 3, 4, 5]          # or ["pass", "fail"], or ["A", "B", "TIE"] for pairwise
    system = "You are a careful evaluator of written English."
    user = '''
    Rate the fluency of the response on a scale of {{ labels }}.

    Response:
    {{ response }}

    Reply as JSON: {"reason": "<one sentence>", "score": <label>}
    '''

    [model]
    temperature = 0.0

Optional top-level keys: ``kind`` (``"pointwise"`` or ``"pairwise"``; inferred as pairwise when the
scale is A/B/TIE), ``description``, ``rubric``, ``scale_kind`` (``"ordinal"``, ``"nominal"``,
``"binary"``, ``"pairwise"``; by default numbers are ordinal, pass/fail is binary, A/B/TIE is pairwise
and other words are nominal) and ``scale_name``.

``[output]``: ``parser`` (``"auto"`` (default): JSON first, then text patterns; ``"json"``; ``"text"``),
``label_field`` (the JSON key holding the label; default ``"score"`` for numeric scales, ``"choice"``
for pairwise, ``"label"`` otherwise), ``reason_field`` (default ``"reason"``), ``structured`` (ask the
endpoint for a JSON schema through ``response_format``; default false) and ``aggregate``
(``"majority"`` or ``"mean"``: how ``n > 1`` samples become one label).

``[model]``: ``model`` (empty means the model of the run), ``temperature`` (0.0), ``max_tokens``
(512; 0 means no limit), ``seed`` (none), ``n`` (1; samples per item), ``logprobs`` (false) and ``top_logprobs`` (5,
used only with ``logprobs``).

Unknown keys are an error, so that a misspelt setting is not silently ignored.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeAlias

import jinja2
import jinja2.meta
import jinja2.nodes
import tomli_w

from evalcore.errors import ConfigError, DataError, MissingVariableError, TemplateError
from evalcore.judge._budget import (
    DEFAULT_BUDGET,
    LOOP_GUARD,
    BudgetedEnvironment,
    BudgetExceeded,
    RenderBudget,
    budgeted_chunks,
    guard_loops,
    metered,
)
from evalcore.labels import Scale, format_label, parse_scale
from evalcore.limits import MAX_JSON_DEPTH, value_depth

__all__ = [
    "BUILTIN_VARIABLES",
    "JudgeItem",
    "JudgeTemplate",
    "Kind",
    "ModelSettings",
    "OutputSpec",
    "check_item_ids",
    "check_variables",
    "diff_templates",
    "plain_fields",
    "render",
    "template_variables",
]

Kind: TypeAlias = Literal["pointwise", "pairwise"]
ParserName: TypeAlias = Literal["json", "text", "auto"]
AggregateName: TypeAlias = Literal["majority", "mean"]

#: Variables every template may use without the item having them.
BUILTIN_VARIABLES = frozenset({"criterion", "rubric", "labels"})

_ENV = BudgetedEnvironment(
    undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True
)
_UNDEFINED_NAME = re.compile(r"'([^']+)' is undefined")
_NO_ATTRIBUTE = re.compile(r"has no attribute '([^']+)'")


@dataclass(frozen=True)
class JudgeItem:
    """One item to judge: a stable id and the fields templates read."""

    item_id: str
    fields: Mapping[str, Any]

    def __post_init__(self) -> None:
        if not isinstance(self.item_id, str):
            object.__setattr__(self, "item_id", str(self.item_id))


def plain_fields(row: Mapping[Any, Any]) -> dict[str, Any]:
    """An item's fields from a table row: text keys, and ``None`` for a missing cell (NaN, pandas'
    NA and NaT), so a template sees "no value" the same way whatever the file format.

    >>> plain_fields({"a": float("nan"), 1: "x"})
    {'a': None, '1': 'x'}
    """
    fields: dict[str, Any] = {}
    for key, value in row.items():
        missing = (isinstance(value, float) and math.isnan(value)) or type(value).__name__ in (
            "NAType",
            "NaTType",
        )
        fields[str(key)] = None if missing else value
    return fields


def check_item_ids(items: Sequence[JudgeItem]) -> None:
    """Refuse a run whose items repeat an id (results are kept per item id).

    >>> check_item_ids([JudgeItem("a", {}), JudgeItem("a", {})])
    Traceback (most recent call last):
    ...
    evalcore.errors.ConfigError: item id 'a' appears twice; item ids must be unique
    """
    seen: set[str] = set()
    for item in items:
        if item.item_id in seen:
            raise ConfigError(f"item id {item.item_id!r} appears twice; item ids must be unique")
        seen.add(item.item_id)


@dataclass(frozen=True)
class ModelSettings:
    """How a template's requests are sent. ``model=""`` means the model given to the run."""

    model: str = ""
    temperature: float = 0.0
    max_tokens: int | None = 512
    seed: int | None = None
    n: int = 1
    logprobs: bool = False
    top_logprobs: int = 5

    def __post_init__(self) -> None:
        whole = {"n": self.n, "top_logprobs": self.top_logprobs, "max_tokens": self.max_tokens}
        whole["seed"] = self.seed
        for name, value in whole.items():
            if (value is not None or name in ("n", "top_logprobs")) and (
                not isinstance(value, int) or isinstance(value, bool)
            ):
                raise TemplateError(f"model setting {name} must be a whole number")
        if not isinstance(self.model, str):
            raise TemplateError("model setting model must be text (a model name)")
        if not isinstance(self.logprobs, bool):
            raise TemplateError("model setting logprobs must be true or false")
        if self.n < 1:
            raise TemplateError(f"model setting n must be at least 1, not {self.n}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise TemplateError(f"model setting max_tokens must be positive, not {self.max_tokens}")
        if not 0 <= self.top_logprobs <= 20:
            raise TemplateError("model setting top_logprobs must be between 0 and 20")
        if not (isinstance(self.temperature, int | float) and math.isfinite(self.temperature)):
            raise TemplateError(
                f"model setting temperature must be a number, not {self.temperature!r}"
            )

    def request_params(self) -> dict[str, Any]:
        """The request body fields these settings send (defaults the API shares are left out).

        >>> ModelSettings(max_tokens=None, seed=3).request_params()
        {'temperature': 0.0, 'seed': 3}
        """
        params: dict[str, Any] = {"temperature": self.temperature}
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        if self.seed is not None:
            params["seed"] = self.seed
        if self.n != 1:
            params["n"] = self.n
        if self.logprobs:
            params["logprobs"] = True
            if self.top_logprobs:
                params["top_logprobs"] = self.top_logprobs
        return params


@dataclass(frozen=True)
class OutputSpec:
    """How a judge's reply is read. An empty ``label_field`` takes the scale's default."""

    parser: ParserName = "auto"
    label_field: str = ""
    reason_field: str = "reason"
    structured: bool = False
    aggregate: AggregateName = "majority"

    def __post_init__(self) -> None:
        for name in ("label_field", "reason_field"):
            if not isinstance(getattr(self, name), str):
                raise TemplateError(f"output setting {name} must be text")
        if not isinstance(self.structured, bool):
            raise TemplateError("output setting structured must be true or false")
        if self.parser not in ("json", "text", "auto"):
            raise TemplateError(f"output parser must be json, text or auto, not {self.parser!r}")
        if self.aggregate not in ("majority", "mean"):
            raise TemplateError(
                f"output aggregate must be majority or mean, not {self.aggregate!r}"
            )


def default_label_field(scale: Scale) -> str:
    """``"score"`` for numbers, ``"choice"`` for pairwise scales, ``"label"`` for other words."""
    if scale.kind == "pairwise":
        return "choice"
    return "score" if scale.is_numeric else "label"


@dataclass(frozen=True)
class JudgeTemplate:
    """An immutable judge template version.

    >>> t = JudgeTemplate("fluency", "fluency", Scale.likert(1, 5), "Be strict.", "Rate: {{ response }}")
    >>> t.kind, t.label_field, sorted(template_variables(t))
    ('pointwise', 'score', ['response'])
    >>> render(t, {"response": "Hello."}, item_id="1")[1]
    {'role': 'user', 'content': 'Rate: Hello.'}
    """

    name: str
    criterion: str
    scale: Scale
    system: str
    user: str
    kind: Kind = "pointwise"
    output: OutputSpec = OutputSpec()
    model: ModelSettings = ModelSettings()
    description: str = ""
    rubric: str = ""
    _compiled: tuple[jinja2.Template | str | None, jinja2.Template | str] = field(
        init=False, repr=False, compare=False, hash=False
    )
    _variables: frozenset[str] = field(init=False, repr=False, compare=False, hash=False)
    _builtins: dict[str, Any] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise TemplateError("a judge template needs a name")
        if not self.user.strip():
            raise TemplateError(f"template {self.name!r} has an empty user prompt")
        if self.scale.kind == "pairwise" and self.kind != "pairwise":
            object.__setattr__(self, "kind", "pairwise")
        if self.kind not in ("pointwise", "pairwise"):
            raise TemplateError(f"template kind must be pointwise or pairwise, not {self.kind!r}")
        if self.kind == "pairwise" and self.scale.kind != "pairwise":
            raise TemplateError(
                f"template {self.name!r} is pairwise but its scale {self.scale.display_labels} "
                "is not A/B/TIE"
            )
        variables: set[str] = set()
        compiled: list[jinja2.Template | str | None] = []
        for part, source in (("system", self.system), ("user", self.user)):
            if not source.strip():
                compiled.append(None)
                continue
            try:  # every walk of the tree recurses: a deep one is a TemplateError
                tree = _parse_source(self.name, part, source)
                if _tree_depth(tree) > MAX_TEMPLATE_DEPTH:
                    raise TemplateError(
                        f"template {self.name!r}, {part} prompt: nested more than "
                        f"{MAX_TEMPLATE_DEPTH} levels deep (blocks, filters, attributes and "
                        "operators together)",
                        source=self.name,
                    )
                used = jinja2.meta.find_undeclared_variables(tree)
                program = _compile(self.name, part, guard_loops(tree))
            except RecursionError:
                raise TemplateError(
                    f"template {self.name!r}, {part} prompt: nested too deeply to read",
                    source=self.name,
                ) from None
            variables |= used
            if not used:  # a prompt without variables is rendered once, here
                compiled.append(_render_part(self.name, part, program, {}, None, DEFAULT_BUDGET))
                continue
            compiled.append(program)
        object.__setattr__(self, "_compiled", (compiled[0], compiled[1]))
        object.__setattr__(self, "_variables", frozenset(variables))
        object.__setattr__(self, "_builtins", _builtin_context(self))

    @property
    def label_field(self) -> str:
        """The JSON key holding the label: ``output.label_field``, else the scale's default."""
        return self.output.label_field or default_label_field(self.scale)

    # --- identity --------------------------------------------------------------------------------

    def content_dict(self) -> dict[str, Any]:
        """Every field as canonical, JSON-ready data (the input of :attr:`content_hash`)."""
        return {
            "name": self.name,
            "criterion": self.criterion,
            "kind": self.kind,
            "scale": self.scale.to_dict(),
            "system": self.system,
            "user": self.user,
            "output": _dataclass_dict(self.output),
            "model": _dataclass_dict(self.model),
            "description": self.description,
            "rubric": self.rubric,
        }

    @property
    def content_hash(self) -> str:
        """sha256 (hex) of the canonical JSON of :meth:`content_dict`: the version identity."""
        cached = self.__dict__.get("_hash")
        if cached is None:
            canonical = json.dumps(
                self.content_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
            )
            cached = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
            object.__setattr__(self, "_hash", cached)
        return str(cached)

    @property
    def version(self) -> str:
        """The first 12 hex digits of :attr:`content_hash`, for people."""
        return self.content_hash[:12]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "template") -> JudgeTemplate:
        """Inverse of :meth:`content_dict` (missing optional keys take their defaults)."""
        try:
            scale_data = data["scale"]
            scale = (
                Scale.from_dict(dict(scale_data))
                if isinstance(scale_data, Mapping)
                else _scale_from_list(scale_data, None, None)
            )
            return cls(
                name=str(data["name"]),
                criterion=str(data.get("criterion") or data["name"]),
                scale=scale,
                system=str(data.get("system", "")),
                user=str(data["user"]),
                kind=data.get("kind", "pointwise"),
                output=_build(OutputSpec, data.get("output") or {}, f"{source} [output]"),
                model=_build(ModelSettings, data.get("model") or {}, f"{source} [model]"),
                description=str(data.get("description", "")),
                rubric=str(data.get("rubric", "")),
            )
        except KeyError as exc:
            raise TemplateError(f"{source} has no {exc.args[0]!r}", source=source) from None
        except ValueError as exc:  # a bad scale
            raise TemplateError(f"{source}: {exc}", source=source) from None

    # --- TOML ------------------------------------------------------------------------------------

    @classmethod
    def load_toml(cls, path_or_text: str | Path) -> JudgeTemplate:
        """Read a template from a TOML file (a :class:`~pathlib.Path` or a path string) or TOML text."""
        source = "template"
        if isinstance(path_or_text, Path) or ("\n" not in path_or_text and "=" not in path_or_text):
            path = Path(path_or_text)
            source = str(path)
            try:
                text = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                raise TemplateError(f"template file {path} does not exist", source=source) from None
            except (OSError, ValueError) as exc:  # UnicodeDecodeError; a NUL in the name
                raise TemplateError(
                    f"cannot read template file {path}: {exc}", source=source
                ) from None
        else:
            text = str(path_or_text)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise TemplateError(f"{source} is not valid TOML: {exc}", source=source) from None
        except RecursionError:
            data = None
        if data is None or value_depth(data) > MAX_JSON_DEPTH:
            raise TemplateError(
                f"{source} nests arrays and tables deeper than {MAX_JSON_DEPTH} levels",
                source=source,
            )
        unknown = set(data) - _TOML_KEYS
        if unknown:
            raise TemplateError(
                f"{source} has unknown key(s) {', '.join(sorted(unknown))} "
                f"(known: {', '.join(sorted(_TOML_KEYS))})",
                source=source,
            )
        for key in ("name", "scale", "user"):
            if key not in data:
                raise TemplateError(f"{source} has no {key!r}", source=source)
        try:
            scale = _scale_from_list(data["scale"], data.get("scale_kind"), data.get("scale_name"))
        except (ValueError, TypeError) as exc:
            raise TemplateError(f"{source}: bad scale: {exc}", source=source) from None
        body = {k: v for k, v in data.items() if k not in ("scale", "scale_kind", "scale_name")}
        body["scale"] = scale.to_dict()
        return cls.from_dict(body, source=source)

    def to_toml(self) -> str:
        """The TOML form read by :meth:`load_toml` (round-trips to an equal template)."""
        data: dict[str, Any] = {"name": self.name, "criterion": self.criterion}
        if self.kind != "pointwise" or self.scale.kind == "pairwise":
            data["kind"] = self.kind
        scale_dict = self.scale.to_dict()
        data["scale"] = scale_dict["labels"]
        inferred = _scale_from_list(scale_dict["labels"], None, None)
        if inferred.kind != self.scale.kind:
            data["scale_kind"] = self.scale.kind
        if _scale_from_list(scale_dict["labels"], self.scale.kind, None).name != self.scale.name:
            data["scale_name"] = self.scale.name
        for key in ("description", "rubric"):
            if getattr(self, key):
                data[key] = getattr(self, key)
        data["system"] = self.system
        data["user"] = self.user
        data["output"] = _dataclass_dict(self.output)
        model = _dataclass_dict(self.model)
        if model["max_tokens"] is None:
            model["max_tokens"] = 0  # TOML has no null: 0 means "no limit"
        data["model"] = {k: v for k, v in model.items() if v is not None}
        return tomli_w.dumps(data, multiline_strings=True)


_TOML_KEYS = frozenset(
    {
        "name",
        "criterion",
        "kind",
        "scale",
        "scale_kind",
        "scale_name",
        "system",
        "user",
        "description",
        "rubric",
        "output",
        "model",
    }
)


def _dataclass_dict(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


def _build(cls: Any, data: Mapping[str, Any], source: str) -> Any:
    if not isinstance(data, Mapping):
        raise TemplateError(f"{source} should be a table of settings", source=source)
    allowed = {f.name for f in fields(cls)}
    unknown = {str(key) for key in data} - allowed
    if unknown:
        raise TemplateError(
            f"{source} has unknown key(s) {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(allowed))})",
            source=source,
        )
    values = dict(data)
    if cls is ModelSettings and values.get("max_tokens") == 0:
        values["max_tokens"] = None
    try:
        return cls(**values)
    except TypeError as exc:
        raise TemplateError(f"{source}: {exc}", source=source) from None


def _scale_from_list(labels: Any, kind: str | None, name: str | None) -> Scale:
    """A template's ``scale = [...]`` with its optional ``scale_kind`` and ``scale_name``, read by
    the one scale parser (:func:`evalcore.labels.parse_scale`)."""
    if isinstance(labels, str) or not isinstance(labels, Iterable):
        raise TemplateError(f"scale must be a list of labels, not {labels!r}")
    if kind is not None and kind not in ("ordinal", "nominal", "binary", "pairwise"):
        raise TemplateError(
            f"scale_kind must be ordinal, nominal, binary or pairwise, not {str(kind)[:40]!r}"
        )
    if name is not None and not isinstance(name, str):
        raise TemplateError("scale_name must be text")
    try:
        return parse_scale(labels, kind=kind, name=name)  # type: ignore[arg-type]
    except DataError as exc:
        raise ValueError(str(exc)) from None


# --- compiling and rendering ----------------------------------------------------------------------


#: The deepest a prompt's syntax tree may be. Jinja's analysis and code generation take time that
#: grows with the cube of the nesting (a chain of 500 ``.upper`` took over two minutes of
#: processor time to be refused by Python's compiler); real prompts are a few levels deep (the
#: built-in templates: 5 at most).
MAX_TEMPLATE_DEPTH = 64


def _tree_depth(tree: jinja2.nodes.Node) -> int:
    """How deep ``tree`` nests, walked without recursion."""
    deepest = 0
    stack: list[tuple[jinja2.nodes.Node, int]] = [(tree, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in node.iter_child_nodes())
    return deepest


def _parse_source(name: str, part: str, source: str) -> jinja2.nodes.Template:
    try:
        tree = _ENV.parse(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(
            f"template {name!r}, {part} prompt, line {exc.lineno}: {exc.message}", source=name
        ) from None
    except RecursionError:
        raise TemplateError(
            f"template {name!r}, {part} prompt: nested too deeply to read", source=name
        ) from None
    for reserved in tree.find_all(jinja2.nodes.Name):
        if reserved.name == LOOP_GUARD:
            raise TemplateError(
                f"template {name!r}, {part} prompt, line {reserved.lineno}: the name "
                f"{LOOP_GUARD!r} is reserved",
                source=name,
            )
    for node in tree.find_all((jinja2.nodes.Getattr, jinja2.nodes.Getitem)):
        attr = getattr(node, "attr", None)
        if attr is None and isinstance(node, jinja2.nodes.Getitem):
            arg = node.arg
            attr = arg.value if isinstance(arg, jinja2.nodes.Const) else None
        if isinstance(attr, str) and attr.startswith("_"):
            raise TemplateError(
                f"template {name!r}, {part} prompt, line {node.lineno}: access to the private "
                f"attribute {attr!r} is not allowed",
                source=name,
            )
    return tree


def template_variables(template: JudgeTemplate) -> set[str]:
    """The variables the template reads (built-in variables included when used)."""
    return set(template._variables)


def _is_na(value: object) -> bool:
    return type(value).__name__ in ("NAType", "NaTType")


def _builtin_context(template: JudgeTemplate) -> dict[str, Any]:
    return {
        "criterion": template.criterion,
        "rubric": template.rubric,
        "labels": ", ".join(format_label(x) for x in template.scale.labels),
    }


def _context(template: JudgeTemplate, item: Mapping[str, Any]) -> dict[str, Any]:
    context = dict(template._builtins)
    context.update(item)
    for key, value in item.items():
        if value is None or (isinstance(value, float) and math.isnan(value)) or _is_na(value):
            context[key] = ""
    return context


def render(
    template: JudgeTemplate,
    item: Mapping[str, Any],
    *,
    item_id: str | None = None,
    budget: RenderBudget = DEFAULT_BUDGET,
) -> list[dict[str, str]]:
    """The chat messages for one item: a system message (when the template has one) and a user one.

    Each message is rendered within ``budget`` (see :class:`~evalcore.judge.RenderBudget`); the
    editor's preview and every run call this same function. Raises
    :class:`~evalcore.errors.MissingVariableError` naming the variable and ``item_id`` when the
    item lacks a field, and :class:`~evalcore.errors.TemplateError` naming the template, the
    message and the item for any other failure (a sandbox refusal, a budget passed, an error in an
    expression such as ``1/0``).
    """
    context = _context(template, item)
    messages: list[dict[str, str]] = []
    system, user = template._compiled
    for role, compiled in (("system", system), ("user", user)):
        if compiled is None:
            continue
        if isinstance(compiled, str):
            messages.append({"role": role, "content": compiled})
            continue
        content = _render_part(template.name, role, compiled, context, item_id, budget)
        messages.append({"role": role, "content": content})
    return messages


def _compile(name: str, part: str, tree: jinja2.nodes.Template) -> jinja2.Template:
    try:
        return _ENV.from_string(tree)
    except RecursionError:
        raise TemplateError(
            f"template {name!r}, {part} prompt: nested too deeply to compile", source=name
        ) from None
    except SyntaxError as exc:  # Python's own limits on what Jinja makes of it: nested blocks
        raise TemplateError(
            f"template {name!r}, {part} prompt: blocks nested too deeply to compile ({exc.msg})",
            source=name,
        ) from None


def _render_part(
    name: str,
    part: str,
    program: jinja2.Template,
    context: Mapping[str, Any],
    item_id: str | None,
    budget: RenderBudget,
) -> str:
    """One message of a template, rendered within ``budget``; every failure a TemplateError."""
    where = f"template {name!r}, {part} message" + ("" if item_id is None else f", item {item_id}")
    try:
        with metered(budget):
            return budgeted_chunks(program.generate(context), budget)
    except jinja2.UndefinedError as exc:
        raise _missing(name, part, str(exc.message or exc), item_id) from None
    except jinja2.exceptions.SecurityError as exc:
        raise TemplateError(f"{where}: unsafe operation refused: {exc}", item_id=item_id) from None
    except BudgetExceeded as exc:
        raise TemplateError(
            f"{where}: stopped, over the render budget: {exc}", item_id=item_id, source=name
        ) from None
    except RecursionError:
        raise TemplateError(f"{where}: recursion too deep", item_id=item_id) from None
    except MemoryError:
        raise TemplateError(f"{where}: ran out of memory", item_id=item_id) from None
    except Exception as exc:  # a filter failing on a value, 1/0, a type error in an expression
        raise TemplateError(
            f"{where} failed: {type(exc).__name__}: {exc}", item_id=item_id, source=name
        ) from None


def _missing(name: str, part: str, message: str, item_id: str | None) -> TemplateError:
    if "unsafe" in message:
        return TemplateError(
            f"template {name!r}, {part} message, item {item_id}: unsafe operation refused: "
            f"{message}",
            item_id=item_id,
        )
    match = _UNDEFINED_NAME.search(message) or _NO_ATTRIBUTE.search(message)
    variable = match.group(1) if match else message
    return MissingVariableError(
        f"template {name!r} uses {{{{ {variable} }}}} but item {item_id} has no field {variable!r}",
        variable=variable,
        item_id=item_id,
    )


def check_variables(template: JudgeTemplate, items: Iterable[JudgeItem]) -> None:
    """Raise :class:`~evalcore.errors.MissingVariableError` for the first item lacking a variable.

    Only the template's top-level variables are checked here (fast, for any number of items); the
    runner renders every item before its first request, which catches nested look-ups too.
    """
    needed = template._variables - BUILTIN_VARIABLES
    if not needed:
        return
    ordered = sorted(needed)
    for item in items:
        fields_ = item.fields
        for variable in ordered:
            if variable not in fields_:
                have = ", ".join(sorted(map(str, fields_))) or "none"
                raise MissingVariableError(
                    f"template {template.name!r} uses {{{{ {variable} }}}} but item {item.item_id} "
                    f"has no field {variable!r} (its fields: {have})",
                    variable=variable,
                    item_id=item.item_id,
                )


def _diff_lines(template: JudgeTemplate) -> list[str]:
    lines = [
        f"name = {template.name}",
        f"criterion = {template.criterion}",
        f"kind = {template.kind}",
        f"scale = {', '.join(template.scale.display_labels)} ({template.scale.kind})",
    ]
    if template.rubric:
        lines += ["[rubric]", *template.rubric.splitlines()]
    lines += ["[system]", *template.system.splitlines()]
    lines += ["[user]", *template.user.splitlines()]
    lines.append("[output]")
    lines += [f"{k} = {v!r}" for k, v in _dataclass_dict(template.output).items()]
    lines.append("[model]")
    lines += [f"{k} = {v!r}" for k, v in _dataclass_dict(template.model).items()]
    return [line + "\n" for line in lines]


def diff_templates(a: JudgeTemplate, b: JudgeTemplate) -> str:
    """A unified diff of two template versions (prompts, scale, output and model settings).

    Empty when the two have the same content.
    """
    return "".join(
        difflib.unified_diff(
            _diff_lines(a),
            _diff_lines(b),
            fromfile=f"{a.name}@{a.version}",
            tofile=f"{b.name}@{b.version}",
        )
    )
