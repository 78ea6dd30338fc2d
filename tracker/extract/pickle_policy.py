"""The policy table for the globals a pickle imports: safe, dangerous or unknown.

Layer 1 (stage 3, extract), pure data, in the style of ``advisories/rules.py``: one table,
read top to bottom, the first matching rule wins (``fnmatch`` over ``module.name``).
"Safe" is what torch.save writes for tensors and state dicts (the rebuild helpers, the
storage classes, dtypes, OrderedDict) plus numpy's array reconstruction; "dangerous" is
what runs commands, code or I/O when called by the unpickler; everything else is unknown
and named, never silently trusted.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

SAFE, DANGEROUS, UNKNOWN = "safe", "dangerous", "unknown"


@dataclass(frozen=True, slots=True)
class ImportRule:
    pattern: str
    verdict: str
    description: str

    def matches(self, qualname: str) -> bool:
        return fnmatchcase(qualname, self.pattern)


_TORCH_DTYPES = (
    "float", "double", "half", "bfloat16", "float16", "float32", "float64", "uint8", "int8",
    "int16", "int32", "int64", "bool", "complex64", "complex128", "float8_e4m3fn",
    "float8_e5m2", "qint8", "quint8", "qint32", "long", "int", "short", "uint16", "uint32",
    "uint64", "cfloat", "cdouble",
)  # fmt: skip
_RUNS = "calling it runs commands, code or I/O"

# fmt: off
IMPORT_RULES: tuple[ImportRule, ...] = (
    # -- safe: what torch.save / numpy write for tensors and containers --------------------
    ImportRule("torch._utils._rebuild_*", SAFE, "torch's tensor / parameter rebuild helpers"),
    ImportRule("torch._tensor._rebuild_from_type_v2", SAFE, "torch tensor subclass rebuild"),
    ImportRule("torch.*Storage", SAFE, "torch storage classes (FloatStorage, UntypedStorage, ...)"),
    ImportRule("torch.storage.*Storage", SAFE, "torch storage classes"),
    ImportRule("torch.serialization._get_layout", SAFE, "tensor layout lookup"),
    ImportRule("torch.device", SAFE, "a device name"),
    ImportRule("torch.Size", SAFE, "a shape"),
    ImportRule("torch.strided", SAFE, "a tensor layout"),
    *(ImportRule(f"torch.{d}", SAFE, "a torch dtype") for d in _TORCH_DTYPES),
    ImportRule("collections.OrderedDict", SAFE, "the state dict container"),
    ImportRule("builtins.set", SAFE, "a set"),
    ImportRule("builtins.frozenset", SAFE, "a frozenset"),
    ImportRule("builtins.slice", SAFE, "a slice"),
    ImportRule("builtins.complex", SAFE, "a complex number"),
    ImportRule("builtins.bytearray", SAFE, "a bytearray"),
    ImportRule("__builtin__.set", SAFE, "a set (Python 2 name)"),
    ImportRule("_codecs.encode", SAFE, "bytes written by protocol-2 pickles"),
    ImportRule("numpy.core.multiarray._reconstruct", SAFE, "numpy array reconstruction"),
    ImportRule("numpy._core.multiarray._reconstruct", SAFE, "numpy array reconstruction"),
    ImportRule("numpy.core.multiarray.scalar", SAFE, "a numpy scalar"),
    ImportRule("numpy._core.multiarray.scalar", SAFE, "a numpy scalar"),
    ImportRule("numpy.ndarray", SAFE, "a numpy array"),
    ImportRule("numpy.dtype", SAFE, "a numpy dtype"),
    # -- dangerous: the unpickler calls these ---------------------------------------------
    ImportRule("os.*", DANGEROUS, f"os: {_RUNS}"),
    ImportRule("posix.*", DANGEROUS, f"posix (os on Unix): {_RUNS}"),
    ImportRule("nt.*", DANGEROUS, f"nt (os on Windows): {_RUNS}"),
    ImportRule("subprocess.*", DANGEROUS, f"subprocess: {_RUNS}"),
    ImportRule("pty.*", DANGEROUS, f"pty: {_RUNS}"),
    ImportRule("commands.*", DANGEROUS, f"commands: {_RUNS}"),
    ImportRule("runpy.*", DANGEROUS, f"runpy: {_RUNS}"),
    ImportRule("webbrowser.*", DANGEROUS, "webbrowser: opens URLs"),
    ImportRule("socket.*", DANGEROUS, "socket: network access"),
    ImportRule("shutil.*", DANGEROUS, "shutil: file system changes"),
    ImportRule("sys.*", DANGEROUS, "sys: interpreter internals"),
    ImportRule("importlib.*", DANGEROUS, "importlib: imports arbitrary modules"),
    ImportRule("pickle.*", DANGEROUS, "pickle: a nested unpickler"),
    ImportRule("_pickle.*", DANGEROUS, "pickle: a nested unpickler"),
    ImportRule("marshal.*", DANGEROUS, "marshal: loads code objects"),
    ImportRule("types.*", DANGEROUS, "types: builds code and functions"),
    ImportRule("code.*", DANGEROUS, f"code: {_RUNS}"),
    ImportRule("ctypes.*", DANGEROUS, "ctypes: native calls"),
    ImportRule("asyncio.*", DANGEROUS, f"asyncio: {_RUNS}"),
    ImportRule("operator.attrgetter", DANGEROUS, "attrgetter: reaches any attribute"),
    ImportRule("operator.methodcaller", DANGEROUS, "methodcaller: calls any method"),
    ImportRule("torch.load", DANGEROUS, "torch.load: a nested unpickler"),
    ImportRule("torch.storage._load_from_bytes", DANGEROUS, "torch.load on embedded bytes"),
    ImportRule("torch.hub.*", DANGEROUS, "torch.hub: downloads and runs code"),
    ImportRule("numpy.load", DANGEROUS, "numpy.load: a nested unpickler"),
    ImportRule("requests.*", DANGEROUS, "requests: network access"),
    ImportRule("urllib.*", DANGEROUS, "urllib: network access"),
    ImportRule("http.*", DANGEROUS, "http: network access"),
    *(ImportRule(f"{m}.{n}", DANGEROUS, f"{n}: {_RUNS}")
      for m in ("builtins", "__builtin__")
      for n in ("exec", "eval", "compile", "getattr", "setattr", "delattr", "__import__",
                "open", "apply", "execfile", "input", "breakpoint", "globals", "vars")),
    ImportRule("<unresolved>.*", DANGEROUS,
               "a STACK_GLOBAL whose module or name is not a literal string: it hides what it imports"),
    # -- unknown: named, not trusted -----------------------------------------------------
    ImportRule("*", UNKNOWN, "not in the table: a class or function of some library"),
)
# fmt: on


def verdict(module: str, name: str) -> str:
    """``safe`` / ``dangerous`` / ``unknown`` for one imported global."""
    qualname = f"{module}.{name}"
    for rule in IMPORT_RULES:
        if rule.matches(qualname):
            return rule.verdict
    return UNKNOWN
