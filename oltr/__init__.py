"""oltr: online learning to rank from restricted feedback.

Implements the systems of Chaudhuri & Tewari (2015, 2016), Ailon (2014) and
Yue & Joachims (2009): rankers that learn from top-k relevance, discrete choices
or dueling comparisons while being judged on the whole list.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("oltr")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
