"""``python -m oltr.cli``: the same as the ``oltr`` command."""

from __future__ import annotations

from oltr.cli import main

main()
