"""A tuning worker process for the resume and two-worker tests (synthetic measurements).

    python tests/tune_worker.py DB_URL STUDY_KEY BUDGET STRATEGY DELAY_S LOG [SEED]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tune_standin import FINGERPRINT, SyntheticMeasurer, fake_space  # noqa: E402

from edgenn.tune.database import TuningDatabase  # noqa: E402
from edgenn.tune.strategies import make_strategy  # noqa: E402
from edgenn.tune.tuner import LayerTuner  # noqa: E402


def main(argv: list[str]) -> int:
    url, key, budget, strategy, delay, log = argv[:6]
    seed = int(argv[6]) if len(argv) > 6 else 0
    db = TuningDatabase(url, grace_s=30.0)
    study = db.study(key, FINGERPRINT)
    space = fake_space()
    measurer = SyntheticMeasurer(space, float(delay), Path(log))
    result = LayerTuner(db, study, make_strategy(strategy, space, seed=seed), measurer,
                        budget=int(budget), heartbeat_s=1.0).run()
    print(f"measured {result.measured} finished {result.finished} stopped {result.stopped}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
