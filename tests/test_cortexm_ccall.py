"""The typed call of a Cortex-M kernel (``edgenn.backends.cortexm.ccall``): how each argument
kind renders, what is refused, that no kernel module builds C call text, and that a layer's
one name (inspect, manifest.json, ``bench``) is its call's."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest

from edgenn.backends.cortexm.ccall import (
    IN0,
    NULL,
    OUT0,
    SCRATCH,
    AddressOf,
    Array,
    Buf,
    Cast,
    CCall,
    Float,
    Generated,
    Int,
    Local,
    Offset,
    c_call,
    call_name,
    generated,
    render_calls,
    statements,
)
from edgenn.backends.cortexm.codegen.emit import layer_comment, render
from edgenn.backends.cortexm.kernel import CArray, KernelCall

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "edgenn" / "backends" / "cortexm" / "kernels"
ENV = {"in0": "((int8_t *)(A + 0))", "in1": "((int8_t *)(A + 64))",
       "out0": "((int8_t *)(A + 128))", "scratch": "((void *)(A + 256))", "w": "l3_w",
       "prefix": "l3"}


def test_every_argument_kind_renders_as_c() -> None:
    call = c_call("edgenn_x", IN0, Buf("in", 1), OUT0, SCRATCH, Array("w"), Local("bias"),
                  -7, Int(5, unsigned=True), Float(0.5), Float(0.1, double=True), NULL,
                  Cast("int16_t *", SCRATCH), AddressOf(Local("params")),
                  Offset(Cast("int8_t *", OUT0), 12))
    assert call.render(ENV) == (
        "edgenn_x(((int8_t *)(A + 0)), ((int8_t *)(A + 64)), ((int8_t *)(A + 128)), "
        "((void *)(A + 256)), l3_w, l3_bias, -7, 5u, 0.5f, 0.1, NULL, "
        "(int16_t *)((void *)(A + 256)), &l3_params, ((int8_t *)((int8_t *)(A + 128)) + 12));")
    assert call.name == "edgenn_x"


def test_generated_functions_are_named_by_their_generator() -> None:
    per_layer = generated("conv", "edgenn_conv_gen", IN0, OUT0)
    shared = CCall(Generated("pwc_run_v1", "edgenn_pw_gen", per_layer=False), (IN0,))
    assert per_layer.render(ENV) == "l3_conv(((int8_t *)(A + 0)), ((int8_t *)(A + 128)));"
    assert shared.render(ENV) == "pwc_run_v1(((int8_t *)(A + 0)));"
    assert (per_layer.name, shared.name) == ("edgenn_conv_gen", "edgenn_pw_gen")


def test_several_statements_run_in_order_named_by_the_first() -> None:
    calls = (c_call("edgenn_copy_blocks", IN0, OUT0, 1, 8, 8),
             c_call("edgenn_requant_s8", OUT0, OUT0, 8, 0, 1 << 30, -1, 0, -128, 127))
    text = render_calls(calls, ENV)
    assert text.split("\n    ") == [c.render(ENV) for c in calls]
    assert call_name(calls) == "edgenn_copy_blocks"
    assert KernelCall(calls).kernel_name == "edgenn_copy_blocks"


def test_numbers_are_never_truncated() -> None:
    assert c_call("f", np.int32(-3), 4.0).render(ENV) == "f(-3, 4);"
    with pytest.raises(ValueError, match="not an integer"):
        c_call("f", 0.5)
    with pytest.raises(ValueError, match="not an integer"):
        Int("{table}")  # type: ignore[arg-type]


def test_a_missing_placeholder_is_one_clear_error() -> None:
    kcall = KernelCall(c_call("edgenn_y", IN0, Buf("out", 1)))
    with pytest.raises(ValueError, match=r"kernel 'edgenn_y'.*no 'out1'"):
        render(kcall, "l0", {"in0": "a", "out0": "b", "scratch": "c"})


def test_kernel_call_refuses_c_text() -> None:
    with pytest.raises(TypeError, match="must be a CCall"):
        KernelCall("edgenn_fc_s8({in0}, {out0});")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a CCall"):
        KernelCall((c_call("f"), "g();"))  # type: ignore[arg-type]


def _string_call(node: ast.expr) -> bool:
    """True for C text: a string literal, an f-string, or a concatenation / join of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) or isinstance(
            node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        return _string_call(node.left) or _string_call(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in ("join", "format", "format_map")
    return False


def test_no_kernel_module_builds_its_call_as_text() -> None:
    """Every ``KernelCall(...)`` of the kernel modules passes a typed call (its first
    argument or ``call=``), and none renders one with ``format_map`` itself."""
    found = []
    for path in sorted(KERNELS.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Attribute) and node.func.attr == "format_map":
                found.append(f"{path.name}:{node.lineno}: format_map")
            if getattr(node.func, "id", None) != "KernelCall":
                continue
            args = node.args[:1] + [k.value for k in node.keywords if k.arg == "call"]
            assert args, f"{path.name}:{node.lineno}: KernelCall without a call"
            found += [f"{path.name}:{node.lineno}: C text" for a in args if _string_call(a)]
            found += [f"{path.name}:{node.lineno}: kernel_name=" for k in node.keywords
                      if k.arg == "kernel_name"]
    assert not found, found


FIXTURES = ROOT / "tests" / "fixtures"
MODELS = ["tflite/model_a_int8", "tflite/ops_int8", "tflite/ops_float", "tflite/conv2_float",
          "tflite/dwsep_int8", "operators/mbv3_int16", "operators/lstm_mnist_int8"]


@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m0plus"])
@pytest.mark.parametrize("model", MODELS)
def test_inspect_manifest_and_call_name_one_kernel(model: str, core: str,
                                                   tmp_path: Path) -> None:
    """Per layer, ``inspect``'s kernel, manifest.json's (what ``bench`` and ``compile`` print)
    and the name of the call in model.c are one name: the call's."""
    from edgenn.api import load_model
    from edgenn.backends.cortexm.codegen.project import generate
    from edgenn.backends.cortexm.selection import select_kernel
    from edgenn.backends.cortexm.targets import get_core
    from edgenn.inspection import target_kernels

    g = load_model(FIXTURES / f"{model}.tflite")
    c = get_core(core)
    calls = [select_kernel(n, g, c).prepare(n, g, c) for n in g.nodes]
    for kcall in calls:
        assert statements(kcall.call) and all(isinstance(s, CCall)
                                               for s in statements(kcall.call))
    names = [call_name(k.call) for k in calls]
    generate(g, c, tmp_path)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert [m["kernel"] for m in manifest["layers"]] == names
    assert target_kernels(g, core) == names
    model_c = (tmp_path / "model.c").read_text()
    for i in range(len(names)):  # the comment above each call names it (maybe shortened)
        assert layer_comment(g, calls, i) in model_c


def test_generated_arrays_keep_their_c_names() -> None:
    """A call's array argument and the array's declaration agree (``<prefix>_<name>``)."""
    kcall = KernelCall(c_call("edgenn_lut_s8", IN0, OUT0, 256, Array("table")),
                       arrays=(CArray("table", "int8_t", np.arange(-128, 128)),))
    decls, text = render(kcall, "l7", {"in0": "x", "out0": "y", "scratch": "z"})
    assert decls[0].startswith("static const int8_t l7_table[256]")
    assert text == "edgenn_lut_s8(x, y, 256, l7_table);"
