"""Profile-based search of kernels and thread schedules, and the tuning database.

Split as TVM MetaSchedule splits it (docs/tuning.md):

- :mod:`~edgenn.tune.workload`: the workload key a record is about;
- :mod:`~edgenn.tune.space`: one layer's points (algorithm x micro-kernel x clusters x
  threads x shares);
- :mod:`~edgenn.tune.strategy` with :mod:`~edgenn.tune.grid`,
  :mod:`~edgenn.tune.random_search`, :mod:`~edgenn.tune.tpe`: one ask/tell contract, the
  strategies found by name in :mod:`~edgenn.tune.strategies`;
- :mod:`~edgenn.tune.measure`: warm-up, repeats, median, optional cache flush;
- :mod:`~edgenn.tune.database` and :mod:`~edgenn.tune.claims`: optuna RDB storage
  (SQLite, PostgreSQL), append-only, claims so that workers never measure a point twice;
- :mod:`~edgenn.tune.tuner` (one layer) and :mod:`~edgenn.tune.session` (a model);
- :mod:`~edgenn.tune.target`: the host backend seen by the tuner.
"""
