"""TFLite converters, one module per group of operators; importing this fills the table."""

import importlib
import pkgutil

# why dynamic: a new operator group is a new module, without editing a list
for _mod in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_mod.name}")
