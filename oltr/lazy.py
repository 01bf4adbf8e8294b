"""Lazy exports of a package (PEP 562): a submodule is imported when one of its names is used.

A package's ``__init__`` lists its public names in ``__all__``, imports them under
``if TYPE_CHECKING:`` (for type checkers and IDEs) and hands the same table to
:func:`lazy_exports`; ``import oltr.metrics`` then costs only the package's own
module, and ``oltr.metrics.ndcg`` (or ``from oltr.metrics import ndcg``) imports
:mod:`oltr.metrics.ranking` on first use. ``tests/test_imports.py`` checks that
the table, the ``TYPE_CHECKING`` imports and ``__all__`` agree.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, table: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Module ``__getattr__`` and ``__dir__`` for ``package`` exporting ``table``'s names.

    ``table`` maps a module (absolute, or relative to ``package`` with a leading
    dot) to the names it exports. A name is imported once, on first access, and
    then stored in the package like an eagerly imported one.

    >>> getattr_, dir_ = lazy_exports("oltr", {"oltr.errors": ["InputError"]})
    >>> getattr_("InputError").__name__
    'InputError'
    >>> getattr_("nothing")
    Traceback (most recent call last):
    ...
    AttributeError: module 'oltr' has no attribute 'nothing'
    """
    where: dict[str, str] = {}
    for module, names in table.items():
        for name in names:
            if name in where:
                raise ValueError(f"{package}: {name!r} is exported by {where[name]} and {module}")
            where[name] = module

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__
