"""Render an untrusted chat template in a sandbox bounded in time, memory and output.

Layer 1 (stage 4, diff), pure. Jinja's ``ImmutableSandboxedEnvironment`` (what transformers
uses) stops attribute escapes but not a template that loops 10^10 times or doubles a string
60 times. Here every loop iteration and macro call is charged against a fuel budget (in
proportion to the size of its body), every call, filter, test, attribute lookup and
intercepted operator costs fuel too, comparisons, slices and hashed keys pay for the size
of their operands, values built by the template are size-checked before
they are built where that is possible (``*``, ``**``, ``+``, ``%``, width arguments,
``replace``, container literals) and after otherwise, and the output is capped. Any breach,
like any template error, ends the render with an error string (the bounds themselves live
in :mod:`tracker.diff.bounds`); ``probes.render_probes`` never raises.

Access to an unsafe attribute raises here (Jinja's default is an empty undefined), so a
probing template is refused rather than rendered as if nothing happened. ``strftime_now``
returns a fixed date: the diff must not depend on the clock.
"""

from __future__ import annotations

import functools
import itertools
import json
import operator
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from jinja2 import nodes, pass_environment
from jinja2.exceptions import SecurityError, TemplateError
from jinja2.ext import Extension, loopcontrols
from jinja2.filters import make_attrgetter
from jinja2.parser import Parser
from jinja2.runtime import Context, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment, safe_range
from jinja2.utils import Cycler, Joiner, Namespace

from tracker.diff.bounds import (
    FUEL,
    MAX_INT_BITS,
    MAX_OUTPUT,
    MAX_TEMPLATE_CHARS,
    MAX_VALUE,
    Budget,
    RenderLimit,
    charge,
    check_binop,
    check_filter,
    check_format,
    check_ints,
    measure,
)

FIXED_NOW = datetime(2024, 7, 26, 12, 0, tzinfo=UTC)
_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "gt": operator.gt,
    "gteq": operator.ge,
    "lt": operator.lt,
    "lteq": operator.le,
    "in": lambda a, b: a in b,
    "notin": lambda a, b: a not in b,
}


def _tojson(
    value: Any, indent: int | None = None, separators: Any = None, sort_keys: bool = False
) -> str:
    """transformers' tojson: real JSON (no HTML escaping), unicode kept."""
    return json.dumps(
        value, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys
    )


@pass_environment
def _join(environment: Any, value: Any, d: Any = "", attribute: Any = None) -> str:
    """Jinja's join, with the result's size known before it is built (value may be a generator)."""
    sep = str(d)
    items = list(itertools.islice(value, MAX_VALUE + 1))
    if len(items) > MAX_VALUE:
        raise RenderLimit("join of too many items")
    if attribute is not None:
        get = make_attrgetter(environment, attribute)
        items = [get(x) for x in items]
    parts = []
    for x in items:
        if not isinstance(x, str):
            measure(x, environment.budget)
        parts.append(str(x))
    if sum(map(len, parts)) + max(len(parts) - 1, 0) * len(sep) > MAX_VALUE:
        raise RenderLimit("join result is too large")
    return sep.join(parts)


def _raise_exception(message: Any) -> None:
    raise TemplateError(str(message)[:500])


def _strftime_now(fmt: Any) -> str:
    if not isinstance(fmt, str) or len(fmt) > 100:
        raise RenderLimit("strftime_now format is not a short string")
    return FIXED_NOW.strftime(fmt)


class _GenerationTag(Extension):
    """transformers' ``{% generation %}...{% endgeneration %}``: renders its body as is."""

    tags = {"generation"}

    def parse(self, parser: Parser) -> list[nodes.Node]:
        next(parser.stream)
        return list(parser.parse_statements(("name:endgeneration",), drop_needle=True))


_CHARGED = frozenset({"For", "Macro", "CallBlock"})  # blocks whose body pays on every run


class _Instrument:
    """Charge loops and macros per run; route concatenation and literals through checks.

    One post-order walk (Jinja's ``NodeTransformer`` and a ``find_all`` per block body cost
    3 ms of a 16 kB template's compile): each node's children are transformed first, and the
    walk returns the node's static weight, counted over the tree as parsed (1 a node, plus
    ``len // 64`` for literal text). A block's body costs ``1 + weight // 8`` a run. New
    nodes get the block's line number and the environment (the parser set it on the rest).
    Dispatch is by node class name, as ``NodeTransformer``'s ``visit_<Name>`` was.
    """

    def __init__(self, environment: Any) -> None:
        self.environment = environment

    def _new(self, node: nodes.Node, lineno: int) -> Any:
        node.lineno = lineno
        node.environment = self.environment
        return node

    def _call(self, name: str, args: list[nodes.Expr], like: nodes.Node) -> nodes.Call:
        lineno = like.lineno
        ref = self._new(nodes.Name(name, "load"), lineno)
        return self._new(nodes.Call(ref, args, [], None, None), lineno)  # type: ignore[no-any-return]

    def visit(self, node: nodes.Node) -> tuple[nodes.Node, int]:
        """``node`` transformed (its children first) and its weight as parsed."""
        weight = 1 + len(node.data) // 64 if isinstance(node, nodes.TemplateData) else 1
        body = 0
        for field in node.fields:
            try:
                value = getattr(node, field)
            except AttributeError:
                continue
            if isinstance(value, list):
                items = []
                part = 0
                for item in value:
                    if isinstance(item, nodes.Node):
                        item, w = self.visit(item)
                        part += w
                    items.append(item)
                value[:] = items
                weight += part
                if field == "body":
                    body = part
            elif isinstance(value, nodes.Node):
                new, w = self.visit(value)
                setattr(node, field, new)
                weight += w
        kind = type(node).__name__
        if kind in _CHARGED:
            tick = self._call("__hw_tick", [self._new(nodes.Const(1 + body // 8), node.lineno)], node)
            node.body.insert(0, self._new(nodes.Output([tick]), node.lineno))  # type: ignore[attr-defined]
            return node, weight
        if kind == "Concat":
            return self._call("__hw_concat", list(node.nodes), node), weight  # type: ignore[attr-defined]
        if kind == "List":
            return self._call("__hw_list", list(node.items), node), weight  # type: ignore[attr-defined]
        if kind == "Tuple":
            if node.ctx != "load":  # type: ignore[attr-defined]
                return node, weight
            return self._call("__hw_tuple", list(node.items), node), weight  # type: ignore[attr-defined]
        if kind == "Dict":
            flat: list[nodes.Expr] = []
            for pair in node.items:  # type: ignore[attr-defined]
                flat.extend((pair.key, pair.value))
            return self._call("__hw_dict", flat, node), weight
        if kind == "Getitem":
            # Jinja slices bypass ``getitem``; a slice copies, so it is routed through a charge
            arg = node.arg  # type: ignore[attr-defined]
            if not isinstance(arg, nodes.Slice) or node.ctx != "load":  # type: ignore[attr-defined]
                return node, weight
            bounds = [
                b if b is not None else self._new(nodes.Const(None), node.lineno)
                for b in (arg.start, arg.stop, arg.step)
            ]
            return self._call("__hw_slice", [node.node, *bounds], node), weight  # type: ignore[attr-defined]
        if kind == "Compare":
            # ``a == b``, ``x in y``: cost grows with the operands, so they are measured
            args: list[nodes.Expr] = [node.expr]  # type: ignore[attr-defined]
            for operand in node.ops:  # type: ignore[attr-defined]
                args.extend((self._new(nodes.Const(operand.op), node.lineno), operand.expr))
            return self._call("__hw_compare", args, node), weight
        return node, weight


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """An ImmutableSandboxedEnvironment whose every render step draws on one fuel budget."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, fuel: int = FUEL) -> None:
        super().__init__(
            trim_blocks=True,
            lstrip_blocks=True,
            autoescape=False,
            extensions=[loopcontrols, _GenerationTag],
            # no constant folding at compile time: ~15% of a template's compile (a 16 kB one:
            # 48 -> 41 ms with its renders, benchmarks/new_revision.py), and every expression
            # is then evaluated at render time, under the fuel budget, as before or stricter
            optimized=False,
        )
        self.budget = Budget(fuel)
        self.finalize = self._finalize
        self.filters["tojson"] = _tojson
        self.filters["join"] = _join
        self.filters.pop("random", None)  # not deterministic
        self.filters = {k: self._wrap(k, f) for k, f in self.filters.items()}
        self.tests = {k: self._wrap(k, f) for k, f in self.tests.items()}  # type: ignore[arg-type]
        self.globals = {
            "range": safe_range,
            "dict": dict,
            "namespace": Namespace,
            "cycler": Cycler,
            "joiner": Joiner,
            "raise_exception": _raise_exception,
            "strftime_now": _strftime_now,
            "__hw_tick": self._tick,
            "__hw_concat": self._concat,
            "__hw_list": self._list,
            "__hw_tuple": self._tuple,
            "__hw_dict": self._dict,
            "__hw_compare": self._compare,
            "__hw_slice": self._slice,
        }

    # -- accounting -------------------------------------------------------------------
    def _check_value(self, value: Any) -> Any:
        if isinstance(value, (str, bytes, list, tuple, dict, set)):
            if len(value) > MAX_VALUE:
                raise RenderLimit(f"a value of {len(value)} items, over {MAX_VALUE}")
            if isinstance(value, (str, bytes)):
                self.budget.spend(len(value) // 256)
        elif isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
            raise RenderLimit("an integer of over 4096 bits")
        return value

    def _finalize(self, value: Any) -> Any:
        if not isinstance(value, (str, int, float, bool, type(None), Undefined)):
            measure(value, self.budget)
        return self._check_value(value)

    def _tick(self, cost: int) -> str:
        self.budget.spend(cost)
        return ""

    def _concat(self, *parts: Any) -> str:
        for p in parts:
            if not isinstance(p, str):
                measure(p, self.budget)
        if sum(len(p) for p in parts if isinstance(p, str)) > MAX_VALUE:
            raise RenderLimit("concatenation is too large")
        return str(self._check_value("".join(str(p) for p in parts)))

    def _list(self, *items: Any) -> list[Any]:
        measure(items, self.budget)
        return list(items)

    def _tuple(self, *items: Any) -> tuple[Any, ...]:
        measure(items, self.budget)
        return items

    def _dict(self, *flat: Any) -> dict[Any, Any]:
        measure(flat, self.budget)
        return dict(zip(flat[::2], flat[1::2], strict=True))

    def _slice(self, obj: Any, start: Any, stop: Any, step: Any) -> Any:
        value = obj[slice(start, stop, step)]
        if isinstance(value, (str, bytes, list, tuple)):
            self.budget.spend(len(value) // 64)
        return value

    def _compare(self, first: Any, *chain: Any) -> bool:
        """A comparison chain, evaluated as Python does, after paying for its operands."""
        for value in (first, *chain[1::2]):
            if not isinstance(value, (int, float, bool, type(None), Undefined)):
                measure(value, self.budget)
        left = first
        for op, right in zip(chain[::2], chain[1::2], strict=True):
            if not _COMPARE[op](left, right):
                return False
            left = right
        return True

    def _wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def bounded(*args: Any, **kwargs: Any) -> Any:
            self.budget.spend(1)
            for a in (*args, *kwargs.values()):
                charge(a, self.budget)  # by size: `s|wordcount` over 240 kB in a loop ran 800 s
            check_filter(name, args, kwargs)
            result = fn(*args, **kwargs)
            charge(result, self.budget)
            return self._check_value(result)

        return bounded

    # -- sandbox hooks ----------------------------------------------------------------
    def unsafe_undefined(self, obj: Any, attribute: str) -> Undefined:
        raise SecurityError(f"access to {attribute!r} of a {type(obj).__name__!r} is refused")

    def getattr(self, obj: Any, attribute: str) -> Any:
        self.budget.spend(1)
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        self.budget.spend(1)
        if isinstance(argument, (tuple, list, dict, Namespace)):
            measure(argument, self.budget)  # hashing a key walks it
        return super().getitem(obj, argument)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is not None:
            check_format(value.__self__)
            inner = wrapped

            def checked(*args: Any, **kwargs: Any) -> str:
                if ":{" in value.__self__:
                    check_ints(args)
                    check_ints(list(kwargs.values()))
                return str(self._check_value(inner(*args, **kwargs)))

            return checked
        return None

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        self.budget.spend(1)
        check_binop(operator, left, right)
        return self._check_value(super().call_binop(context, operator, left, right))

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        __self.budget.spend(1)
        for a in (*args, *kwargs.values()):
            charge(a, __self.budget)
        owner = getattr(__obj, "__self__", None)
        charge(owner, __self.budget)  # `s.split()`, `s.find(x)`: the receiver's size is the work
        if isinstance(owner, str):
            method = getattr(__obj, "__name__", "")
            if method in ("center", "ljust", "rjust", "zfill"):
                check_ints(args)
            elif method == "expandtabs":
                tab = args[0] if args else kwargs.get("tabsize", 8)
                if isinstance(tab, int) and len(owner) * max(tab, 1) > MAX_VALUE:
                    raise RenderLimit("expandtabs result is too large")
            elif method == "replace" and len(args) >= 2:
                old, new = args[0], args[1]
                if isinstance(old, str) and isinstance(new, str):
                    n = len(owner) + 1 if not old else len(owner) // len(old)
                    if len(owner) + n * len(new) > MAX_VALUE:
                        raise RenderLimit("replace result is too large")
            elif method == "join" and len(args) == 1:
                return __self._check_value(_join(__self, args[0], owner))
        result = super().call(__context, __obj, *args, **kwargs)
        if not isinstance(result, Iterator):  # a generator is charged as the template consumes it
            charge(result, __self.budget)
        return __self._check_value(result)

    # -- entry point ------------------------------------------------------------------
    def compile_bounded(self, source: str) -> Any:
        """Parse, instrument and compile ``source`` (TemplateError / RenderLimit on failure)."""
        if len(source) > MAX_TEMPLATE_CHARS:
            raise RenderLimit(f"template of {len(source)} characters, over {MAX_TEMPLATE_CHARS}")
        tree = self.parse(source)
        _Instrument(self).visit(tree)  # the root, a Template, is transformed in place
        return self.from_string(tree)


def render_stream(template: Any, context: Mapping[str, Any], budget: Budget) -> str:
    """Consume the render generator chunk by chunk, stopping at the output cap."""
    out: list[str] = []
    size = 0
    chunks: Iterator[str] = template.generate(**context)
    for chunk in chunks:
        size += len(chunk)
        budget.spend(len(chunk) // 256)
        if size > MAX_OUTPUT:
            raise RenderLimit(f"rendered output is over {MAX_OUTPUT} characters")
        out.append(chunk)
    return "".join(out)


def describe_error(e: BaseException) -> str:
    """A one-line, bounded description of why a template failed."""
    if isinstance(e, SecurityError):
        kind = "refused by the sandbox"
    elif isinstance(e, RenderLimit):
        kind = "stopped"
    elif isinstance(e, TemplateError):
        kind = "template error"
    elif isinstance(e, RecursionError):
        return "stopped: recursion too deep"
    elif isinstance(e, MemoryError):
        return "stopped: out of memory"
    else:
        kind = f"render error ({type(e).__name__})"
    msg = " ".join(str(e).split())
    return f"{kind}: {msg[:300]}"
