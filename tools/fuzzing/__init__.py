"""Fuzzing ``edgenn`` with hostile model files (issue 16, "Hostile inputs").

Byte-level mutators (``byte_mutators``) damage any file; structure-aware ones keep the file
parseable and make its contents hostile (``onnx_mutators``, ``tflite_mutators``). A campaign
(``campaign.run_campaign``) runs each mutant through ``edgenn`` commands in worker processes
and counts how each ended (``outcome``): ok, a clean one-line error, or a finding (traceback,
extra stderr lines such as numpy warnings, hang, crash).

Why a seeded random mutator loop rather than hypothesis or atheris: the unit here is a whole
CLI command on a file (milliseconds to seconds, sometimes a firmware build), run in a worker
process with an outside time limit. hypothesis's shrinking and example database assume cheap
in-process calls and would re-run slow commands many times per failure; atheris needs an
instrumented interpreter and a libFuzzer main loop. A seeded loop makes mutant ``i`` of seed
``s`` reproducible on its own, splits across processes trivially and reports counts per
outcome class, which is what the issue's targets are stated in.
"""

from tools.fuzzing.byte_mutators import BYTE_MUTATORS
from tools.fuzzing.campaign import COMMANDS, Finding, Report, mutant, run_campaign
from tools.fuzzing.onnx_mutators import ONNX_MUTATORS
from tools.fuzzing.outcome import FINDINGS, Outcome, classify
from tools.fuzzing.tflite_mutators import TFLITE_MUTATORS

__all__ = ["BYTE_MUTATORS", "COMMANDS", "FINDINGS", "ONNX_MUTATORS", "TFLITE_MUTATORS",
           "Finding", "Outcome", "Report", "classify", "mutant", "run_campaign"]
