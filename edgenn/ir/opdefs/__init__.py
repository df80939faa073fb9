"""Operator definitions (schema and shape inference), one module per group of operators.

Every module here is imported on first use of the registry; a new group is a new module.
"""

import importlib
import pkgutil

# why dynamic: a new operator group is added without editing a list
for _mod in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_mod.name}")
