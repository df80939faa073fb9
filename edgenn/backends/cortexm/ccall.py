"""The typed C call of a layer (``KernelCall.call``): a symbol and typed arguments.

A kernel never writes C text for its call: it says *what* each argument is, and the generator
resolves what only it knows (arena offsets, the layer's C prefix, the arrays' C names) when it
renders the statement. The argument kinds are exactly what the kernels pass:

* ``Buf("in", k)`` / ``Buf("out", k)`` (``IN0``, ``OUT0``): tensor ``k`` of the node in the
  arena, a typed pointer the planner places (``((int8_t *)(edgenn_arena + 1024))``);
* ``SCRATCH``: the layer's scratch area, ``((void *)0)`` when it has none;
* ``Array("w")``: one of the layer's ``CArray`` constants by local name (C name ``l3_w``);
* ``Local("bias")``: a symbol the layer's generated ``code`` defines as ``@P@_bias``;
* ``Int(v)`` (plain Python ints are wrapped), ``Int(v, unsigned=True)`` (``5u``),
  ``Float(v)`` (a C ``float`` literal), ``Float(v, double=True)``, ``NULL``;
* ``Cast("int16_t *", a)``, ``AddressOf(a)``, ``Offset(a, n)`` (``(a + n)``) around another
  argument.

The symbol is a library function's name (``edgenn_fc_s8``), or ``Generated(fn, kernel)``: the
function ``@P@_<fn>`` the kernel generated for this layer (or a function shared by the layers
whose generated code is identical), whose name is the generator's ``kernel``. A call's
``name`` (the symbol, or the generator's name) is the kernel's one name everywhere: the
comment in model.c, manifest.json, ``inspect`` and ``bench``. A layer that runs
several statements (a copy then an in-place rescale, a concat's copies) has a tuple of calls;
its name is the first call's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from edgenn.backends.c_literals import c_double, c_float

# what an argument renders against: the arena pointers (in0, out0, scratch), the arrays'
# C names by local name and the layer's prefix ("prefix")
Env = Mapping[str, str]


def _lookup(env: Env, key: str, what: str) -> str:
    try:
        return env[key]
    except KeyError:
        raise ValueError(f"{what}: the layer has no {key!r} to pass") from None


@dataclass(frozen=True)
class Buf:
    """Input or output ``index`` of the node: a tensor the planner puts in the arena."""

    role: Literal["in", "out"]
    index: int

    def render(self, env: Env) -> str:
        return _lookup(env, f"{self.role}{self.index}", "tensor argument")


@dataclass(frozen=True)
class Scratch:
    """The layer's scratch area (``KernelCall.scratch_bytes``; NULL when 0)."""

    def render(self, env: Env) -> str:
        return _lookup(env, "scratch", "scratch argument")


@dataclass(frozen=True)
class Array:
    """A constant array of the layer (``KernelCall.arrays``) by its local name."""

    name: str

    def render(self, env: Env) -> str:
        return _lookup(env, self.name, "array argument")


@dataclass(frozen=True)
class Local:
    """A symbol of the layer's generated code (``@P@_<name>`` in ``KernelCall.code``)."""

    name: str

    def render(self, env: Env) -> str:
        return f"{_lookup(env, 'prefix', 'local symbol')}_{self.name}"


def integer(v: int | float) -> int:
    """``v`` as a Python int: an integer (numpy's too) or an integral float, else an error."""
    if isinstance(v, (str, bytes)) or int(v) != v:
        raise ValueError(f"C integer argument: {v!r} is not an integer")
    return int(v)


@dataclass(frozen=True)
class Int:
    """An integer constant (decimal; ``unsigned``: with the ``u`` suffix). A float of an
    integral value is taken (the records type a clamp bound ``int | float``, int for the
    integer kernels); any other value is an error, never truncated."""

    value: int
    unsigned: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", integer(self.value))

    def render(self, env: Env) -> str:
        return f"{self.value}u" if self.unsigned else str(self.value)


@dataclass(frozen=True)
class Float:
    """A floating-point constant: the nearest C ``float`` (``double``: a ``double``)."""

    value: float
    double: bool = False

    def render(self, env: Env) -> str:
        return c_double(self.value) if self.double else c_float(self.value)


@dataclass(frozen=True)
class Null:
    """``NULL``: an optional pointer argument left out (a float layer without a bias)."""

    def render(self, env: Env) -> str:
        return "NULL"


@dataclass(frozen=True)
class Cast:
    """``(ctype)arg``: the pointer type a kernel's prototype wants."""

    ctype: str
    arg: Arg

    def render(self, env: Env) -> str:
        return f"({self.ctype}){self.arg.render(env)}"


@dataclass(frozen=True)
class AddressOf:
    """``&arg`` (a parameter block the generated code defines)."""

    arg: Arg

    def render(self, env: Env) -> str:
        return f"&{self.arg.render(env)}"


@dataclass(frozen=True)
class Offset:
    """``(arg + elements)``: a pointer ``elements`` past ``arg`` (in its pointee type)."""

    arg: Arg
    elements: int

    def render(self, env: Env) -> str:
        return f"({self.arg.render(env)} + {int(self.elements)})"


Arg = Buf | Scratch | Array | Local | Int | Float | Null | Cast | AddressOf | Offset

IN0 = Buf("in", 0)
OUT0 = Buf("out", 0)
SCRATCH = Scratch()
NULL = Null()


@dataclass(frozen=True)
class Generated:
    """A function a kernel generated: ``@P@_<fn>`` of the layer, or (``per_layer`` False)
    ``fn`` itself, a function shared by the layers whose generated code is the same (named
    by a hash of it, defined once behind an include guard); ``kernel``: the generator's
    name."""

    fn: str
    kernel: str
    per_layer: bool = True


@dataclass(frozen=True)
class CCall:
    """One C statement ``symbol(args...);``."""

    symbol: str | Generated
    args: tuple[Arg, ...] = ()

    @property
    def name(self) -> str:
        """The kernel's name: the library symbol, or the generator of a generated function."""
        return self.symbol.kernel if isinstance(self.symbol, Generated) else self.symbol

    def render(self, env: Env) -> str:
        sym = self.symbol
        if isinstance(sym, Generated):
            fn = Local(sym.fn).render(env) if sym.per_layer else sym.fn
        else:
            fn = sym
        return f"{fn}({', '.join(a.render(env) for a in self.args)});"


# a layer's call: one statement, or several run in order
Calls = CCall | tuple[CCall, ...]


def c_call(symbol: str | Generated, *args: Arg | int | float) -> CCall:
    """``CCall`` with plain numbers wrapped as ``Int`` (numpy integers too; a float must be
    integral: a C float argument is an explicit ``Float``)."""
    return CCall(symbol, tuple(a if isinstance(a, Arg) else Int(integer(a)) for a in args))


def generated(fn: str, kernel: str, *args: Arg | int | float) -> CCall:
    """The call of ``@P@_<fn>``, a function ``kernel`` generated for the layer."""
    return c_call(Generated(fn, kernel), *args)


def statements(call: Calls) -> tuple[CCall, ...]:
    """The statements of a layer's call, in order."""
    return (call,) if isinstance(call, CCall) else call


def call_name(call: Calls) -> str:
    """The kernel's name of a layer's call (its first statement's; '' for none)."""
    calls = statements(call)
    return calls[0].name if calls else ""


def render_calls(call: Calls, env: Env, separator: str = "\n    ") -> str:
    """The C text of a layer's call, statements on separate lines of the invoke body."""
    return separator.join(c.render(env) for c in statements(call))
