"""The bounds a rendered template lives within, and the checks that enforce them.

Layer 1 (stage 4, diff), pure. A fuel budget pays for every step the template takes; the
checks refuse, before the value is built where that can be known, anything that would
build a huge string, container or integer (repetition, powers, format widths, ``replace``,
``indent``, ``wordwrap``). Used by :mod:`tracker.diff.sandbox`.
"""

from __future__ import annotations

import re
from typing import Any

from jinja2.utils import Namespace

FUEL = 100_000  # real templates use about 1,000 for all four probes
MAX_OUTPUT = 64 * 1024  # characters of one rendered prompt
MAX_VALUE = 256 * 1024  # characters of a string / items of a container the template builds
MAX_NODES = 100_000  # items of a nested value, shared references counted each time
MAX_INT_BITS = 4096
MAX_WIDTH = 10_000  # a format width or precision
MAX_TEMPLATE_CHARS = 256 * 1024
MAX_INDENT = 16
_PRINTF = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d*)(?:\.(\*|\d*))?")
_BRACE_SPEC = re.compile(r"\{[^{}]*:([^{}]*)\}")
_DIGITS = re.compile(r"\d+")
_WIDTH_FILTERS = {"center": 1, "indent": 1, "batch": 1, "slice": 1}


class RenderLimit(Exception):
    """The template went over one of the sandbox's bounds."""


class Budget:
    """Fuel for one template's renders: every step spends some, none is left at zero."""

    def __init__(self, fuel: int) -> None:
        self.fuel = fuel

    def spend(self, n: int = 1) -> None:
        self.fuel -= n
        if self.fuel < 0:
            raise RenderLimit("template exceeded its step budget")


def measure(value: Any, budget: Budget) -> int:
    """Items in ``value``, walking containers (and namespaces) iteratively; charged as fuel."""
    count = 0
    stack = [value]
    while stack:
        item = stack.pop()
        count += 1
        if isinstance(item, (str, bytes)):
            count += len(item) // 64
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif isinstance(item, range):
            count += len(item)
        elif isinstance(item, Namespace):
            stack.extend(object.__getattribute__(item, "_Namespace__attrs").values())
        if count > MAX_NODES:
            raise RenderLimit(f"a value of over {MAX_NODES} items")
    budget.spend(count)
    return count


def charge(value: Any, budget: Budget) -> None:
    """Pay for an operand or a result by its size (numbers and None cost nothing more; a
    ``range`` is paid for per item as a loop or a filter walks it)."""
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset, Namespace)):
        measure(value, budget)


def check_format(fmt: str) -> None:
    """Refuse printf / str.format widths and precisions that would build huge strings."""
    for m in _PRINTF.finditer(fmt):
        for g in m.groups():
            if g and g != "*" and int(g) > MAX_WIDTH:
                raise RenderLimit(f"format width {g} is too large")
    for m in _BRACE_SPEC.finditer(fmt):
        for d in _DIGITS.findall(m.group(1)):
            if len(d) > 5 or int(d) > MAX_WIDTH:
                raise RenderLimit(f"format width {d} is too large")


def check_ints(args: tuple[Any, ...] | list[Any]) -> None:
    for a in args:
        if isinstance(a, int) and not isinstance(a, bool) and abs(a) > MAX_VALUE:
            raise RenderLimit(f"size argument {a} is too large")


def check_binop(op: str, left: Any, right: Any) -> None:
    sized = (str, bytes, list, tuple)
    if op == "*":
        if isinstance(left, sized) and isinstance(right, int):
            if len(left) * right > MAX_VALUE:
                raise RenderLimit("sequence repetition is too large")
        elif isinstance(right, sized) and isinstance(left, int):
            if len(right) * left > MAX_VALUE:
                raise RenderLimit("sequence repetition is too large")
        elif (
            isinstance(left, int)
            and isinstance(right, int)
            and left.bit_length() + right.bit_length() > MAX_INT_BITS
        ):
            raise RenderLimit("integer product is too large")
    elif op == "**":
        if (
            isinstance(left, int)
            and isinstance(right, int)
            and right > 0
            and abs(left) > 1
            and left.bit_length() * right > MAX_INT_BITS
        ):
            raise RenderLimit("integer power is too large")
    elif op == "+":
        if (
            isinstance(left, sized)
            and isinstance(right, sized)
            and len(left) + len(right) > MAX_VALUE
        ):
            raise RenderLimit("concatenation is too large")
    elif op == "%" and isinstance(left, str):
        check_format(left)
        if "*" in left:
            check_ints(list(right) if isinstance(right, tuple) else [right])


def check_filter(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Bounds for the built-in filters that can amplify their input."""
    strs = [a for a in args if isinstance(a, str)]
    if name in _WIDTH_FILTERS:
        check_ints(args)
        check_ints(list(kwargs.values()))
    if name == "indent" and strs:
        width = args[1] if len(args) > 1 else kwargs.get("width", 4)
        w = len(width) if isinstance(width, str) else width if isinstance(width, int) else 4
        if len(strs[0]) + (strs[0].count("\n") + 1) * max(w, 0) > MAX_VALUE:
            raise RenderLimit("indent result is too large")
    elif name == "wordwrap" and strs:
        ints = [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
        width = max(ints[0] if ints else kwargs.get("width", 79), 1)
        wrap = kwargs.get("wrapstring") or (strs[1] if len(strs) > 1 else "\n")
        if (len(strs[0]) // width + 1) * len(str(wrap)) > MAX_VALUE:
            raise RenderLimit("wordwrap result is too large")
    elif name == "replace" and len(strs) >= 3:
        s, old, new = strs[0], strs[1], strs[2]
        n = len(s) + 1 if not old else len(s) // len(old)
        if len(s) + n * len(new) > MAX_VALUE:
            raise RenderLimit("replace result is too large")
    elif name == "format" and strs:
        check_format(strs[0])
        if "*" in strs[0]:
            check_ints(args)
    elif name == "tojson":
        indent = args[1] if len(args) > 1 else kwargs.get("indent")
        if (isinstance(indent, str) and len(indent) > MAX_INDENT) or (
            isinstance(indent, int) and indent > MAX_INDENT
        ):
            raise RenderLimit("tojson indent is too large")
