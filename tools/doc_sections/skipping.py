"""docs/skipping.md's "Cost of skip support on the plain path", from benchmarks/skip_overhead.py."""

from __future__ import annotations

from typing import Any

from doc_sections.common import Section, n, table

STAGE_NAMES = {"inspect-m4": "`inspect --target cortex-m4`", "inspect": "`inspect`",
               "compile": "`compile --target cortex-m4`", "bench": "`bench --target cortex-m4`"}


def _yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def overhead(doc: dict[str, Any]) -> str:
    rows = []
    for m in doc["models"]:
        for stage, s in m["stages"].items():
            inspect = s.get("inspect_met")
            target = stage in doc["ratio_stages"]
            rows.append([f"`{m['model']}`", m["blocks"], STAGE_NAMES.get(stage, stage),
                         f"{s['shipped']['command_s']:.3f}", f"{s['without']['command_s']:.3f}",
                         f"{s['ratio']:.2f}" + ("" if target else " (info)"),
                         f"{s['paired_ratio']:.2f}", f"{s['cpu_ratio']:.2f}",
                         f"{s['shipped']['plans']} / {s['without']['plans']}",
                         _yes(s["ratio_met"]) if target else "-",
                         "-" if inspect is None else
                         f"{s['shipped']['process_s']:.2f} s, {_yes(inspect)}"])
    firmware = [m for m in doc["models"] if "firmware" in m]
    same = [m for m in firmware if m["firmware"]["identical"]]
    builds = "; ".join(f"`{m['model']}` {n(m['firmware']['total_cycles'])} cycles, arena "
                       f"{n(m['firmware']['arena_bytes'])} B, flash "
                       f"{n(m['firmware']['flash_bytes'])} B" for m in firmware)
    stages = " and ".join(f"`{st}`" for st in doc["ratio_stages"])
    cpu = ("on CPU time they are all within it" if doc["cpu_ratio_met"] else
           "**on CPU time too**")
    verdict = (f"{stages} of every model take at most {doc['target_ratio']:.2f}x the wall "
               "time without skip support" if doc["ratio_met"] else
               f"**{stages} exceed {doc['target_ratio']:.2f}x the wall time without skip "
               f"support for some model** (table), {cpu}")
    inspect = (f"`inspect` of every model with more than {doc['many_blocks']} blocks takes "
               f"under {doc['inspect_target_s']:g} s" if doc["inspect_met"] else
               f"**`inspect` of a model with more than {doc['many_blocks']} blocks takes "
               f"{doc['inspect_target_s']:g} s or more**")
    fw = (f"The default {doc['core']} build is the same firmware in (a) and (b) for all "
          f"{len(firmware)} models (every generated file and the ELF by sha256, cycles, "
          f"arena, flash, kernel per layer): {builds}."
          if len(same) == len(firmware) else
          "**The default build differs between (a) and (b)**: "
          + "; ".join(f"`{m['model']}`: {', '.join(m['firmware']['differences'][:3])}"
                      for m in firmware if not m["firmware"]["identical"]) + ".")
    return "\n".join([
        f"Run of {doc['date']} (edgenn {doc['edgenn_version']}, {doc['core']}, minimum of "
        f"{doc['runs']} runs a stage, each in a fresh process with the trial cache off, (a) "
        f"and (b) alternating; a {doc['cpus']}-CPU host shared with other work, load average "
        f"{doc['load_before'][0]:.1f} before and {doc['load_after'][0]:.1f} after): "
        f"{verdict}; {inspect}; {SKIP_OVERHEAD.source}.", "",
        *table(["model", "blocks", "stage", "(a) s", "(b) s", "(a)/(b)", "paired",
                "CPU (a)/(b)", "arena plans (a) / (b)",
                f"(a)/(b) <= {doc['target_ratio']:.2f}",
                f"inspect < {doc['inspect_target_s']:g} s"], rows, left=3), "",
        fw])


SKIP_OVERHEAD = Section("skip-overhead", "skip_overhead", overhead)
SECTIONS = (SKIP_OVERHEAD,)
