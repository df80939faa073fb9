"""Generate the Cortex-M C projects of many models, or compare two such trees byte for byte.

A refactoring of the code generation that must not change its output is checked by running
this twice, once from each checkout (the current directory's ``edgenn`` is the one imported):

    cd /work/main && python /path/to/tools/compare_generated.py generate /tmp/gen_main
    cd /work/wt/x && python tools/compare_generated.py generate /tmp/gen_x
    python tools/compare_generated.py compare /tmp/gen_main /tmp/gen_x

``generate`` writes, per model (and per case of the single-operator conformance suite) and
configuration (core; fuse none or all with a ring
variant; fast or compact generated code), the project ``generate()`` writes (no build, no
emulation), or ``error.txt`` with the one-line error when the model does not build there
(both checkouts must then fail alike). ``compare`` prints the number of compared files and
every file that differs or exists on one side only; exit 1 when anything differs. With
``--ignore-kernel-names`` the layers' kernel names (the ``[name]`` ending the comment above
each call in model.c, ``"kernel"`` in manifest.json) are compared apart: each renaming is
counted (old -> new) and a file that differs in nothing else counts as equal.
"""

from __future__ import annotations

import argparse
import filecmp
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))  # why: the checkout run from is the one compared

ROOT = Path(__file__).resolve().parents[1]
MLPERF = Path("/work/shared/models/mlperf_tiny")
RING_VARIANTS = ("ring_modulo", "ring_hoisted", "ring_hoisted_pair")


def _models() -> list[Path]:
    """The MLPerf Tiny models, every .tflite fixture of the tests, the zoo's small models."""
    found = sorted(MLPERF.glob("*.tflite"))
    found += sorted((ROOT / "tests" / "fixtures").rglob("*.tflite"))
    found += sorted(p for p in (ROOT / "zoo").rglob("*.tflite") if p.stat().st_size < 2_000_000)
    return found


def _configs(name: str) -> Iterator[tuple[str, str, str, bool]]:
    """(core, fuse, variant, compact) of one model: the DSP core in every fusion mode and
    both code sizes, and the portable kernels of a core without DSP."""
    yield "cortex-m4", "none", "", False
    yield "cortex-m4", "none", "", True
    yield "cortex-m0plus", "none", "", False
    for variant in RING_VARIANTS:
        yield "cortex-m4", "all", variant, False


def _generate_one(graph: object, core_name: str, fuse: str, variant: str, compact: bool,
                  out: Path) -> None:
    from edgenn.backends.cortexm.codegen.project import generate
    from edgenn.backends.cortexm.targets import get_core
    from edgenn.fusion import fuse_for_target

    g = graph
    if fuse != "none":
        g = fuse_for_target(graph, core_name, fuse, variant).graph  # type: ignore[arg-type]
    layers = frozenset(range(len(g.nodes))) if compact else frozenset()  # type: ignore[attr-defined]
    generate(g, get_core(core_name), out, compact_layers=layers)  # type: ignore[arg-type]


def _fusion_graphs() -> list[tuple[str, object]]:
    """The synthetic conv chains of the fusion tests (tests/fusion_graphs.py)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fusion_graphs import ConvSpec, conv_chain_graph  # type: ignore[import-not-found]

    return [
        ("chain3x3", conv_chain_graph(20, 20, 8, [ConvSpec(16, 3, 3), ConvSpec(16, 3, 3)])),
        ("chain_dw", conv_chain_graph(16, 16, 8, [ConvSpec(8, 3, 3, depthwise=True,
                                                           pads=(1, 1, 1, 1)),
                                                  ConvSpec(16, 1, 1)])),
        ("chain_stride", conv_chain_graph(24, 24, 4, [ConvSpec(8, 3, 3, stride=(2, 2)),
                                                      ConvSpec(8, 3, 3, pads=(1, 1, 1, 1)),
                                                      ConvSpec(12, 1, 1)], seed=3)),
    ]


def _conformance(out: Path) -> list[tuple[str, object]]:
    """Every single-operator case of the conformance suite (tests/conformance), one model each:
    the kernels no whole model reaches."""
    import tempfile

    sys.path.append(str(ROOT))  # after the checkout run from: its edgenn stays the one
    from edgenn.api import load_model
    from tests.conformance.cases import by_op  # type: ignore[import-not-found]
    from tests.conformance.spec import model_bytes  # type: ignore[import-not-found]

    found: list[tuple[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for cases in by_op().values():
            for case in cases:
                name = "conformance_" + "".join(ch if ch.isalnum() else "_" for ch in case.id)
                path = Path(tmp) / "case.tflite"
                path.write_bytes(model_bytes([case]))
                try:
                    found.append((name, load_model(path)))
                except Exception as e:  # noqa: BLE001
                    (out / name).mkdir(parents=True, exist_ok=True)
                    (out / name / "error.txt").write_text(f"{type(e).__name__}: {e}\n")
    return found


def generate_all(out: Path) -> int:
    from edgenn.api import load_model

    cases: list[tuple[str, object]] = []
    for path in _models():
        try:
            cases.append((f"{path.parent.name}_{path.stem}", load_model(path)))
        except Exception as e:  # noqa: BLE001 - an import error is compared like any other
            d = out / f"{path.parent.name}_{path.stem}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "error.txt").write_text(f"{type(e).__name__}: {e}\n")
    cases += _fusion_graphs()
    single = _conformance(out)
    for name, graph in cases + single:
        one_op = name.startswith("conformance_")
        for core, fuse, variant, compact in _configs(name):
            if one_op and fuse != "none":  # a single operator: no chain to fuse
                continue
            tag = f"{core}_{fuse}{'_' + variant if variant else ''}{'_compact' if compact else ''}"
            d = out / name / tag
            d.mkdir(parents=True, exist_ok=True)
            try:
                _generate_one(graph, core, fuse, variant, compact, d)
            except Exception as e:  # noqa: BLE001
                (d / "error.txt").write_text(f"{type(e).__name__}: {e}\n")
        print(name, flush=True)
    return 0


# the kernel name at the end of a layer's comment in model.c (names may hold brackets:
# edgenn_fused_chain_s8_dsp[ring_hoisted_pair]), and manifest.json's
_NAMES = (re.compile(r"^(    +/\* layer \d+: .* )\[(.*)\]( \*/)$"),
          re.compile(r'^(.*"kernel": ")([^"]*)(".*)$'))


def _split_names(text: str) -> tuple[list[str], list[str]]:
    """The lines with every kernel name blanked, and the names in order."""
    lines, names = [], []
    for line in text.splitlines():
        for pattern in _NAMES:
            m = pattern.match(line)
            if m:
                names.append(m.group(2))
                line = m.group(1) + m.group(3)
                break
        lines.append(line)
    return lines, names


def _same_but_names(pa: Path, pb: Path, renamed: Counter[tuple[str, str]]) -> bool:
    try:
        la, na = _split_names(pa.read_text())
        lb, nb = _split_names(pb.read_text())
    except UnicodeDecodeError:
        return False
    if la != lb or len(na) != len(nb):
        return False
    renamed.update((x, y) for x, y in zip(na, nb, strict=True) if x != y)
    return True


def compare(a: Path, b: Path, ignore_names: bool = False) -> int:
    fa = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    fb = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    differ = sorted(p for p in fa & fb if not filecmp.cmp(a / p, b / p, shallow=False))
    renamed: Counter[tuple[str, str]] = Counter()
    if ignore_names:
        only_names = [p for p in differ if _same_but_names(a / p, b / p, renamed)]
        for (old, new), n in sorted(renamed.items()):
            print(f"renamed {old} -> {new}: {n} times")
        print(f"{len(only_names)} files differ in kernel names only")
        differ = [p for p in differ if p not in only_names]
    only = sorted(fa ^ fb)
    errors = sum(1 for p in fa & fb if p.name == "error.txt")
    for p in differ:
        print(f"differs: {p}")
    for p in only:
        print(f"only in {'first' if p in fa else 'second'}: {p}")
    print(f"{len(fa & fb)} files compared ({errors} error.txt among them), {len(differ)} "
          f"differ, {len(only)} on one side only")
    return 1 if differ or only else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("generate").add_argument("out", type=Path)
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("a", type=Path)
    cmp_.add_argument("b", type=Path)
    cmp_.add_argument("--ignore-kernel-names", action="store_true")
    ns = ap.parse_args(argv)
    if ns.command == "generate":
        return generate_all(ns.out)
    return compare(ns.a, ns.b, ns.ignore_kernel_names)


if __name__ == "__main__":
    raise SystemExit(main())
