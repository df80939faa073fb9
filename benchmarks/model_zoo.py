"""Run every .tflite / .onnx of a folder through edgenn as a new user would, one table row a
model: inspect, run on ref and on cortex-m4 against TFLite Micro (or onnxruntime), validate and
bench on cortex-m4.

    .venv/bin/python benchmarks/model_zoo.py zoo/            # the committed corpus (make zoo)
    .venv/bin/python benchmarks/model_zoo.py ~/my-models --json my.json

Every stage of every model runs in its own process with a time limit (``--timeout`` seconds a
model, shared by its stages), so a crash, a hang or an out-of-memory in one stage is recorded
and the next one runs. A failure is recorded as its first error line, never a traceback.

Comparisons use seeded random inputs of the file's declared input shapes and types (integers
over the whole range, floats standard normal); a ``<model>.inputs.json`` beside a model may fix
an input's shape (``{"input": {"shape": [1, 512]}}``, for dynamic dimensions) or value
(``{"sr": {"value": 16000}}``). Integer outputs: the number of values that differ from the
oracle (bit-exact = 0). Float outputs: the largest difference relative to the largest oracle
magnitude of that output (target 1e-5). A model with state (TFLite variable tensors or resource
variables) is compared over 20 consecutive invocations without reset, where edgenn's
``Executable.run`` takes ``stateful=True``; otherwise its run stages say that state is not
supported.

Writes benchmarks/results/model_zoo.json (``--json``); docs/models.md shows its table
(``tools/results_doc.py`` renders it from the JSON).
"""

from __future__ import annotations

import argparse
import datetime as dt
import inspect
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_JSON = ROOT / "benchmarks" / "results" / "model_zoo.json"
CORE = "cortex-m4"
STAGES = ("inspect", "ref", CORE, "validate", "bench")
SAMPLES = 4  # stateless models: independent random inputs per comparison
INVOCATIONS = 20  # stateful models: consecutive invocations without reset
FLOAT_TOLERANCE = 1e-5
ERROR_CHARS = 300  # a first error line longer than this is cut (a table cell, not a log)


# ------------------------------------------------------------------ facts about the file
def tflite_facts(data: bytes) -> dict[str, Any]:
    """What the file declares, read with TFLite Micro's own schema reader (not edgenn's
    frontend, which may be the thing that fails): tensor types, operators, state."""
    from tflite_micro import runtime

    schema = runtime.schema_fb
    model = schema.Model.GetRootAs(data, 0)
    type_names = {v: k for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
    op_names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    ops = set()
    for i in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(i)
        # why max: files of schema < 3 keep the code in the deprecated int8 field
        ops.add(op_names.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()), "CUSTOM"))
    types, variables = set(), 0
    for s in range(model.SubgraphsLength()):
        sub = model.Subgraphs(s)
        for t in range(sub.TensorsLength()):
            tensor = sub.Tensors(t)
            types.add(type_names.get(tensor.Type(), str(tensor.Type())))
            variables += bool(tensor.IsVariable())
    stateful = variables > 0 or "VAR_HANDLE" in ops
    return {"tensor_types": sorted(types), "operators": sorted(ops),
            "subgraphs": model.SubgraphsLength(), "stateful": stateful}


def onnx_facts(data: bytes) -> dict[str, Any]:
    import onnx

    model = onnx.load_from_string(data)
    names = {v: k for k, v in onnx.TensorProto.DataType.items()}
    types = {names.get(t.data_type, str(t.data_type)) for t in model.graph.initializer}
    types |= {names.get(v.type.tensor_type.elem_type, "?") for v in model.graph.input}
    # why: an ONNX graph has no hidden state; a recurrent model takes its state as inputs
    return {"tensor_types": sorted(types),
            "operators": sorted({n.op_type for n in model.graph.node}),
            "opset": max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                         default=None), "stateful": False}


def file_facts(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    facts = tflite_facts(data) if path.suffix == ".tflite" else onnx_facts(data)
    return {"format": path.suffix[1:], "bytes": len(data), **facts}


# ------------------------------------------------------------------ the oracle and inputs
class Oracle:
    """TFLite Micro (for .tflite; LiteRT for a file TFLite Micro cannot load, such as float16
    weights) or onnxruntime (for .onnx): declared inputs and one invocation at a time, so state
    is kept or reset as the comparison asks."""

    def __init__(self, path: Path, hints: dict[str, Any]) -> None:
        self.path, self.hints = path, hints
        data = path.read_bytes()
        if path.suffix == ".tflite":
            n_in, self.n_outputs = _tflite_io(data)
            try:
                self._interp = _tflm_interpreter(data)
                self.name = "tflite-micro"
                dets = [self._interp.get_input_details(i) for i in range(n_in)]
            except RuntimeError as err:
                self._lite = _litert_interpreter(data, err)
                self.name = "litert"
                dets = self._lite.get_input_details()
            self.inputs = [(str(d.get("name", f"input{i}")), tuple(int(v) for v in d["shape"]),
                            np.dtype(d["dtype"])) for i, d in enumerate(dets)]
        else:
            import onnxruntime as ort

            opts = ort.SessionOptions()
            opts.log_severity_level = 3  # why: its initializer warnings are not our findings
            self._sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
            self.name = "onnxruntime"
            self.inputs = [(i.name, tuple(d if isinstance(d, int) else 1 for d in i.shape),
                            np.dtype(_ORT_TYPES[i.type])) for i in self._sess.get_inputs()]
        self.inputs = [(name, tuple(hints.get(name, {}).get("shape", shape)), dtype)
                       for name, shape, dtype in self.inputs]

    def reset(self) -> None:
        if hasattr(self, "_interp"):
            self._interp.reset()
        elif hasattr(self, "_lite"):
            self._lite.reset_all_variables()

    def invoke(self, xs: list[np.ndarray]) -> list[np.ndarray]:
        if hasattr(self, "_interp"):
            for i, x in enumerate(xs):
                self._interp.set_input(np.ascontiguousarray(x), i)
            self._interp.invoke()
            return [np.array(self._interp.get_output(j)) for j in range(self.n_outputs)]
        if hasattr(self, "_lite"):
            for det, x in zip(self._lite.get_input_details(), xs, strict=True):
                self._lite.set_tensor(det["index"], np.ascontiguousarray(x))
            self._lite.invoke()
            return [np.array(self._lite.get_tensor(d["index"]))
                    for d in self._lite.get_output_details()]
        feed = {name: x for (name, _, _), x in zip(self.inputs, xs, strict=True)}
        return [np.asarray(y) for y in self._sess.run(None, feed)]


def _litert_interpreter(data: bytes, tflm_error: Exception) -> Any:
    from edgenn.errors import EdgennError
    from edgenn.oracles.litert import litert_interpreter

    try:
        return litert_interpreter(data)
    except EdgennError as err:
        raise RuntimeError(f"{tflm_error}; {err}") from None


_ORT_TYPES = {"tensor(float)": "float32", "tensor(float16)": "float16",
              "tensor(double)": "float64", "tensor(int8)": "int8", "tensor(uint8)": "uint8",
              "tensor(int16)": "int16", "tensor(int32)": "int32", "tensor(int64)": "int64",
              "tensor(bool)": "bool"}


def _tflite_io(data: bytes) -> tuple[int, int]:
    from tflite_micro import runtime

    sub = runtime.schema_fb.Model.GetRootAs(data, 0).Subgraphs(0)
    return sub.InputsLength(), sub.OutputsLength()


def _tflm_interpreter(data: bytes) -> Any:
    """TFLite Micro's interpreter, its arena sized from the model (``edgenn.oracles.tflm``)."""
    from edgenn.errors import EdgennError
    from edgenn.oracles.tflm import tflm_interpreter

    try:
        return tflm_interpreter(data)
    except EdgennError as err:
        raise RuntimeError(str(err)) from None


def make_inputs(oracle: Oracle, n: int, seed: int = 1) -> list[np.ndarray]:
    """One array per input: ``n`` invocations stacked on a leading axis of the declared shape
    (a declared leading 1 is that axis, as edgenn's API takes batches)."""
    rng = np.random.default_rng(seed)
    out = []
    for name, shape, dtype in oracle.inputs:
        full = (n, *shape[1:]) if shape[:1] == (1,) else (n, *shape)
        value = oracle.hints.get(name, {}).get("value")
        if value is not None:
            out.append(np.full(full, value, dtype))
        elif dtype.kind in "iu" and dtype.itemsize <= 2:
            info = np.iinfo(dtype)
            out.append(rng.integers(info.min, int(info.max) + 1, size=full, dtype=dtype))
        elif dtype.kind in "iub":
            out.append(rng.integers(0, 2, size=full).astype(dtype))
        else:
            out.append(rng.standard_normal(full).astype(dtype))
    return out


def oracle_outputs(oracle: Oracle, xs: list[np.ndarray], stateful: bool) -> list[np.ndarray]:
    """The oracle on each invocation (row) in turn: from its initial state every time, or
    (stateful) carrying state from one to the next as TFLite Micro does until reset."""
    rows = []
    oracle.reset()
    for k in range(len(xs[0])):
        if not stateful:
            oracle.reset()
        rows.append(oracle.invoke([np.asarray(x[k]).reshape(shape)
                                   for x, (_, shape, _) in zip(xs, oracle.inputs, strict=True)]))
    return [np.stack([r[j] for r in rows]) for j in range(len(rows[0]))]


# ------------------------------------------------------------------ comparisons
def compare(got: list[np.ndarray], want: list[np.ndarray]) -> dict[str, Any]:
    """Integer outputs: values that differ; float outputs: the largest difference relative
    to the output's largest oracle magnitude."""
    if len(got) != len(want):
        raise ValueError(f"edgenn gives {len(got)} outputs, the oracle {len(want)}")
    mismatches, values, rel, is_float = 0, 0, 0.0, False
    for j, (g, w) in enumerate(zip(got, want, strict=True)):
        g = np.asarray(g)
        if g.size != w.size:
            raise ValueError(f"output {j}: edgenn gives shape {list(g.shape)}, "
                             f"the oracle {list(w.shape)}")
        g = g.reshape(w.shape)
        values += w.size
        if w.dtype.kind == "f" or g.dtype.kind == "f":
            is_float = True
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            scale = float(np.max(np.abs(w64))) if w64.size else 0.0
            diff = float(np.max(np.abs(g64 - w64))) if w64.size else 0.0
            if not np.all(np.isfinite(g64) == np.isfinite(w64)):
                diff = float("inf")
            rel = max(rel, diff / scale if scale > 0 else diff)
        else:
            mismatches += int(np.count_nonzero(g.astype(np.int64) != w.astype(np.int64)))
    result: dict[str, Any] = {"values": values}
    if is_float:
        result["max_rel_error"] = rel
        result["ok"] = rel <= FLOAT_TOLERANCE and mismatches == 0
    else:
        result["ok"] = mismatches == 0
    result["mismatches"] = mismatches
    return result


def float64_arbiter(oracle: Oracle, xs: list[np.ndarray], got: list[np.ndarray],
                    want: list[np.ndarray], stateful: bool) -> dict[str, Any]:
    """When edgenn and onnxruntime differ past the tolerance on a float output: both against
    a float64 evaluation of the same graph (edgenn.oracles.onnx_float64). onnxruntime's CPU
    kernels approximate (its Sigmoid's absolute error is near 1e-7, a large relative error on
    a small probability); the verdict is then edgenn's distance from the exact evaluation."""
    import onnx

    from edgenn.oracles.onnx_float64 import Float64Evaluator

    if stateful:  # why: state carried between rows is the oracle's own; no arbiter for it
        return {}
    exact = Float64Evaluator(onnx.load(str(oracle.path)))
    rows = [exact.run({name: np.asarray(x[k]).reshape(shape)
                       for x, (name, shape, _) in zip(xs, oracle.inputs, strict=True)})
            for k in range(len(xs[0]))]
    truth = [np.stack([r[j] for r in rows]).reshape(w.shape) for j, w in enumerate(want)]
    ours, theirs = compare(got, truth), compare(want, truth)
    return {"float64": {"edgenn_rel": ours["max_rel_error"],
                        "oracle_rel": theirs["max_rel_error"]},
            "ok": bool(ours["ok"])}


def run_stage(path: Path, target: str, part: dict[str, int] | None = None) -> dict[str, Any]:
    """Compile for ``target`` with edgenn's Python API and compare with the oracle.
    ``part``: the device's ``ram_kb`` / ``flash_kb`` instead of the core's reference part."""
    from edgenn.api import compile_model, load_model

    hints = load_hints(path)
    graph = load_model(path, **load_options(hints))
    exe = compile_model(graph, target, **(part or {}))  # edgenn first: its error is the finding
    try:
        stateful = bool(file_facts(path)["stateful"])
        oracle = Oracle(path, hints)
    except Exception as err:  # noqa: BLE001
        raise ZooError(f"the oracle cannot load the model: {_one_line(err)}") from None
    takes_state = "stateful" in inspect.signature(exe.run).parameters
    if stateful and not takes_state:
        raise ZooError("stateful not supported: Executable.run has no stateful= "
                       "(the model keeps state across invocations)")
    n = INVOCATIONS if stateful else SAMPLES
    xs = xs_all = make_inputs(oracle, n)
    want = oracle_outputs(oracle, xs, stateful)
    # why: an input fixed by value is a constant of edgenn's graph, not one of its inputs
    xs = [x for (name, _, _), x in zip(oracle.inputs, xs, strict=True)
          if "value" not in hints.get(name, {})]
    if stateful and hasattr(exe, "reset_state"):
        exe.reset_state()
    got = exe.run(*xs, stateful=True) if stateful else exe.run(*xs)
    result = {"oracle": oracle.name, "invocations": n, "stateful": stateful,
              **compare(list(got), want)}
    if not result["ok"] and "max_rel_error" in result and oracle.name == "onnxruntime":
        result.update(float64_arbiter(oracle, xs_all, list(got), want, stateful))
    if target != "ref":
        result.update({f"{k}_bytes": v for k, v in exe.sizes().items()})
    return result


FIT_FLAG = re.compile(r"use --(ram|flash)-kb (\d+)")


def larger_part(error: str) -> dict[str, int]:
    """The device sizes a does-not-fit error asks for ({} for any other error): the stage is
    run again on that part, so the table shows whether the flags the error names work."""
    return {f"{kind}_kb": int(kb) for kind, kb in FIT_FLAG.findall(error)}


class ZooError(Exception):
    """A comparison that cannot be made, said in one line (not an edgenn error)."""


def load_hints(path: Path) -> dict[str, Any]:
    hint = path.with_name(path.stem + ".inputs.json")
    return dict(json.loads(hint.read_text())) if hint.is_file() else {}


def load_options(hints: dict[str, Any]) -> dict[str, Any]:
    """``load_model`` keywords from the hints: fixed shapes and values of inputs."""
    shapes = {n: tuple(h["shape"]) for n, h in hints.items() if "shape" in h}
    values = {n: h["value"] for n, h in hints.items() if "value" in h}
    return {"input_shapes": shapes or None, "input_values": values or None}


def hint_flags(hints: dict[str, Any]) -> list[str]:
    """The same as CLI flags (``--input-shape NAME=D0,D1,...``, ``--input-value NAME=V``)."""
    flags: list[str] = []
    for name, h in hints.items():
        if "shape" in h:
            flags += ["--input-shape", f"{name}={','.join(str(d) for d in h['shape'])}"]
        if "value" in h:
            flags += ["--input-value", f"{name}={h['value']}"]
    return flags


# ------------------------------------------------------------------ stages as processes
def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "edgenn.cli.main", *args]


def first_error_line(stderr: str, stdout: str = "") -> str:
    """The line that says what went wrong: the CLI's ``error:`` line, else the last line of a
    traceback (its exception), else the first line written."""
    lines = [ln.strip() for ln in (stderr + "\n" + stdout).splitlines() if ln.strip()]
    for ln in lines:
        if "error:" in ln:
            return ln[ln.index("error:") + len("error:"):].strip()[:ERROR_CHARS]
    if any(ln.startswith("Traceback") for ln in lines):
        return ("traceback: " + lines[-1])[:ERROR_CHARS]
    return (lines[0] if lines else "no output")[:ERROR_CHARS]


def cli_flags() -> dict[str, set[str]]:
    """The flags each command takes today (``--stateful`` arrives with state support)."""
    out = {}
    for cmd in ("validate", "bench"):
        proc = subprocess.run(cli(cmd, "--help"), capture_output=True, text=True, cwd=ROOT,
                              env=_env(), timeout=120)
        out[cmd] = {w.strip("[],") for w in proc.stdout.split() if w.startswith(("--", "[--"))}
    return out


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("COLUMNS", "200")
    return env


def stage_command(stage: str, path: Path, stateful: bool, flags: dict[str, set[str]],
                  workdir: Path, part: dict[str, int] | None = None) -> list[str]:
    model = str(path)
    fixes = hint_flags(load_hints(path))
    if stage == "inspect":
        return cli("inspect", model, *fixes, "--target", CORE, "--json", "-")
    if stage in ("ref", CORE):
        sizes = [f"--{k.replace('_', '-')}={v:g}" for k, v in (part or {}).items()]
        return [sys.executable, str(Path(__file__).resolve()), "--stage", stage, model, *sizes]
    extra = ["--stateful"] if stateful and "--stateful" in flags.get(stage, set()) else []
    if stage == "validate":
        return cli("validate", model, *fixes, "--target", CORE, "--random", str(SAMPLES),
                   "--json", str(workdir / "validate.json"), *extra)
    return cli("bench", model, *fixes, "--target", CORE, "--json", str(workdir / "bench.json"),
               *extra)


def summarize(stage: str, proc: subprocess.CompletedProcess[str], workdir: Path) -> dict[str, Any]:
    """A stage's record from its process: ok, or the first error line."""
    if stage == "validate" and (workdir / "validate.json").is_file():
        return _validate_record(proc, _read_json(workdir / "validate.json"))
    if proc.returncode != 0:
        record = {"ok": False, "error": first_error_line(proc.stderr, proc.stdout),
                  "exit": proc.returncode}
        # why from the whole output: the recorded line is cut, and the flags may be past the cut
        part = larger_part(proc.stderr)
        return {**record, "fit_part": part} if part else record
    if stage in ("ref", CORE):
        line = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "{}"
        return dict(json.loads(line))
    if stage == "inspect":
        doc = json.loads(proc.stdout or "{}")
        return {"ok": True, "layers": len(doc.get("layers", doc.get("nodes", [])) or [])}
    if stage == "validate":
        return {"ok": False, "error": "validate wrote no report"}
    doc = _read_json(workdir / "bench.json")
    return {"ok": True, **_bench_figures(doc)}


def _validate_record(proc: subprocess.CompletedProcess[str],
                     doc: dict[str, Any]) -> dict[str, Any]:
    """PASS only when every comparison asked for ran and passed: an oracle that could not run
    (``not_compared``) is a failure of the stage, with its reason as the error line."""
    ran = bool(doc.get("comparisons"))
    if "verdict" in doc:  # a report that gives its verdict lists what did not run in not_run
        skipped = dict(doc.get("not_run") or {})
        passed = str(doc["verdict"]).lower() == "pass" and not skipped
    else:  # an older report: every oracle that did not run is in not_compared
        skipped = dict(doc.get("not_compared") or {})
        passed = bool(doc.get("passed")) and not skipped
    passed = passed and ran and proc.returncode == 0
    record: dict[str, Any] = {"ok": passed, "verdict": "PASS" if passed else "FAIL",
                              "not_compared": skipped, "report": _small(doc)}
    if not passed:
        lines = [ln.strip() for ln in proc.stdout.splitlines()
                 if ln.strip().startswith(("FAIL", "INCOMPLETE"))]
        reasons = [f"{k} not compared: {v}" for k, v in skipped.items()]
        record["error"] = (lines[0] if lines else "; ".join(reasons) or
                           first_error_line(proc.stderr, proc.stdout))[:ERROR_CHARS]
    return record


def _read_json(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text())) if path.is_file() else {}


def _small(doc: dict[str, Any]) -> dict[str, Any]:
    """The scalar fields of a report (its per-sample lists stay out of the zoo's JSON)."""
    return {k: v for k, v in doc.items() if k != "model"
            and (isinstance(v, (str, int, float, bool)) or v is None)}


def _bench_figures(doc: dict[str, Any]) -> dict[str, Any]:
    """Cycles and memory from an ``edgenn.bench/1`` report, wherever its version keeps them."""
    found: dict[str, Any] = {}

    def walk(d: Any) -> None:
        if isinstance(d, dict):
            for k, v in d.items():
                if k in ("total_cycles", "cycles", "arena_bytes", "flash_bytes",
                         "stack_bytes") and isinstance(v, (int, float)) and k not in found:
                    found[k] = v
                elif isinstance(v, dict):
                    walk(v)

    walk(doc)
    if "total_cycles" in found:
        found["cycles"] = found.pop("total_cycles")
    return found


def run_model(path: Path, root: Path, timeout: float, flags: dict[str, set[str]],
              stages: tuple[str, ...], tmp: Path) -> dict[str, Any]:
    row: dict[str, Any] = {"model": str(path.relative_to(root)), "stages": {}}
    try:
        row.update(file_facts(path))
    except Exception as err:  # noqa: BLE001  (a file the schema readers refuse is a result)
        row.update({"format": path.suffix[1:], "bytes": path.stat().st_size,
                    "stateful": False, "facts_error": _one_line(err)})
    deadline = time.monotonic() + timeout

    def run_one(stage: str, part: dict[str, int] | None = None) -> dict[str, Any]:
        left = deadline - time.monotonic()
        if left <= 0:
            return {"ok": False, "error": f"not run: the model's {timeout:.0f} s "
                    "were used by the stages before"}
        workdir = tmp / f"{len(os.listdir(tmp))}"
        workdir.mkdir()
        cmd = stage_command(stage, path, bool(row.get("stateful")), flags, workdir, part)
        start = time.monotonic()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, env=_env(),
                                  timeout=left)
            record = summarize(stage, proc, workdir)
        except subprocess.TimeoutExpired:
            record = {"ok": False, "error": f"timeout: the model's {timeout:.0f} s ran out "
                      f"({left:.0f} s were left for this stage)"}
        except (ValueError, OSError) as err:  # unreadable output of a stage that exited 0
            record = {"ok": False, "error": f"unreadable stage output: {_one_line(err)}"}
        if "error" in record:  # why: the file's name as the table shows it, not this machine's path
            record["error"] = record["error"].replace(str(path), row["model"])
        record["seconds"] = round(time.monotonic() - start, 2)
        return record

    for stage in stages:
        record = run_one(stage)
        part = dict(record.get("fit_part") or {}) if stage == CORE else {}
        if part:  # the part the error names: does the model run there, and exactly?
            record["larger_part"] = {"part": part, **run_one(stage, part)}
        row["stages"][stage] = record
    return row


def _one_line(err: BaseException, limit: int | None = ERROR_CHARS) -> str:
    text = str(err).strip().splitlines()
    msg = text[0] if text else ""
    from edgenn.errors import EdgennError

    name = "" if isinstance(err, (EdgennError, ZooError)) else f"{type(err).__name__}: "
    return (name + msg)[:limit]


def find_models(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.suffix in (".tflite", ".onnx") and p.is_file())


def run_zoo(folder: Path, timeout: float, stages: tuple[str, ...] = STAGES,
            advance: Callable[[str], None] | None = None) -> dict[str, Any]:
    import tempfile

    from edgenn.version import edgenn_version

    folder = folder.resolve()  # why: every stage runs in its own scratch directory
    paths = find_models(folder)
    flags = cli_flags()
    rows = []
    with tempfile.TemporaryDirectory(prefix="edgenn-zoo-") as tmp:
        for path in paths:
            if advance:
                advance(str(path.relative_to(folder)))
            rows.append(run_model(path, folder, timeout, flags, stages, Path(tmp)))
    return {"benchmark": "model_zoo", "date": dt.date.today().isoformat(),
            "edgenn_version": edgenn_version(), "core": CORE, "stages": list(stages),
            "timeout_s_per_model": timeout, "samples": SAMPLES,
            "stateful_invocations": INVOCATIONS, "float_tolerance": FLOAT_TOLERANCE,
            "model_dir": _shown(folder), "models": rows}


def _shown(folder: Path) -> str:
    try:
        return str(folder.resolve().relative_to(ROOT))
    except ValueError:
        return str(folder)


# ------------------------------------------------------------------ reporting
def kind(m: dict[str, Any]) -> str:
    types = set(m.get("tensor_types", []))
    parts = []
    if "FLOAT16" in types:
        parts.append("float16")
    for t in ("INT16", "INT8", "UINT8", "FLOAT32", "FLOAT"):
        if t in types:
            parts.append({"FLOAT": "float32"}.get(t, t.lower()))
    if m.get("stateful"):
        parts.append("stateful")
    return " ".join(dict.fromkeys(parts)) or "-"


def cell(stage: str, r: dict[str, Any] | None) -> str:
    """A stage's cell: what it measured, or FAIL (its error is listed under the table)."""
    if r is None:
        return "-"
    if not r.get("ok") and "error" in r:
        bigger = r.get("larger_part")
        if bigger and bigger.get("ok"):  # why: the error's own flags, shown to work
            flags = " ".join(f"--{k.replace('_', '-')} {v:g}" for k, v in bigger["part"].items())
            return f"FAIL; {cell(stage, bigger)} with {flags}"
        return "FAIL"
    if stage in ("ref", CORE):
        if "float64" in r:  # why: the two oracles disagree; the exact evaluation decides
            f = r["float64"]
            return (f"{'ok' if r['ok'] else 'differs'} rel {f['edgenn_rel']:.1e} vs float64 "
                    f"({r['oracle']} {f['oracle_rel']:.1e})")
        if "max_rel_error" in r:
            return f"{'ok' if r['ok'] else 'differs'} rel {r['max_rel_error']:.1e}"
        return f"{'exact' if r['ok'] else 'differs'} {r['mismatches']}/{r['values']}"
    if stage == "bench":
        arena = f", {r['arena_bytes'] / 1024:,.1f} KiB arena" if "arena_bytes" in r else ""
        return f"{r['cycles']:,} cyc{arena}" if "cycles" in r else "ok"
    if stage == "validate":
        return str(r.get("verdict", "ok"))
    return f"ok {r['seconds']:.0f}s"


def failures(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(model, stages, first error line), the stages of a model that fail alike on one line."""
    out = []
    for m in doc["models"]:
        by_error: dict[str, list[str]] = {}
        for stage, r in m["stages"].items():
            if "error" in r:
                by_error.setdefault(r["error"], []).append(stage)
        out += [(m["model"], ", ".join(stages), error) for error, stages in by_error.items()]
    return out


def print_table(doc: dict[str, Any]) -> None:
    from edgenn.cli.console import console, table

    rows = [[m["model"], kind(m), f"{m['bytes'] / 1024:,.0f}",
             *(cell(s, m["stages"].get(s)) for s in doc["stages"])] for m in doc["models"]]
    console.print(table(f"Model zoo: {doc['model_dir']} on ref and {doc['core']} ({doc['date']})",
                        ["model", "kind", "KiB", *doc["stages"]], rows, right_align_from=2))
    for model, stage, error in failures(doc):
        console.print(f"{model} [{stage}]: {error}", markup=False, highlight=False,
                      soft_wrap=True)
    ok = sum(all(r.get("ok") for r in m["stages"].values()) for m in doc["models"])
    console.print(f"{ok} of {len(doc['models'])} models pass every stage")


def stage_main(stage: str, model: Path, part: dict[str, int]) -> int:
    """One comparison stage in this process; prints one JSON line (the parent reads it) or
    the first error line on stderr with exit status 1."""
    try:
        result = run_stage(model, stage, part)
    except BaseException as err:  # noqa: BLE001  (any failure is this stage's one-line result)
        # why whole: the parent cuts the line it records, after reading any fit flags in it
        print(f"error: {_one_line(err, None)}", file=sys.stderr)
        return 1
    print(json.dumps({**result, "ok": bool(result["ok"])}))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="searched recursively for .tflite and .onnx")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds a model (all stages)")
    ap.add_argument("--stages", default=",".join(STAGES),
                    help=f"comma-separated subset of {','.join(STAGES)}")
    ap.add_argument("--stage", choices=("ref", CORE), help=argparse.SUPPRESS)  # one worker
    ap.add_argument("--ram-kb", type=int, help=argparse.SUPPRESS)  # the worker's part
    ap.add_argument("--flash-kb", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.stage:
        part = {k: v for k, v in (("ram_kb", args.ram_kb), ("flash_kb", args.flash_kb))
                if v is not None}
        return stage_main(args.stage, args.folder, part)
    stages = tuple(s for s in args.stages.split(",") if s)
    unknown = sorted(set(stages) - set(STAGES))
    if unknown:
        print(f"error: unknown stages {','.join(unknown)} (known: {','.join(STAGES)})",
              file=sys.stderr)
        return 2
    if not args.folder.is_dir():
        print(f"error: {args.folder}: not a folder", file=sys.stderr)
        return 2
    if not find_models(args.folder):
        print(f"error: {args.folder}: no .tflite or .onnx files", file=sys.stderr)
        return 2
    from edgenn.cli.console import progress

    total = len(find_models(args.folder))
    with progress("model zoo", total) as advance:
        seen = []

        def step(name: str) -> None:
            if seen:
                advance(1)
            seen.append(name)

        doc = run_zoo(args.folder, args.timeout, stages, step)
        advance(1)
    from edgenn.utils import atomic_write_bytes

    atomic_write_bytes(args.json, (json.dumps(doc, indent=1) + "\n").encode())
    print_table(doc)
    from edgenn.cli.console import console

    console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
