"""Reference kernels, one module per group; importing this package registers every layer
with ``@register``."""

import importlib
import pkgutil

# why dynamic: a new operator group is a new module, without editing a list
for _mod in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_mod.name}")
