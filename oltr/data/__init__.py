"""Learning-to-rank data.

The LETOR/SVMlight reader and writer, its cache, data sets, query streams and
synthetic data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oltr.lazy import lazy_exports

if TYPE_CHECKING:
    from oltr.data.cache import cache_root
    from oltr.data.dataset import LetorDataset, normalize_per_query, summarize
    from oltr.data.letor import load_letor, write_letor
    from oltr.data.stream import QueryStream
    from oltr.data.svmlight import MAX_GRADE, PARSER_VERSION, LetorFormatError
    from oltr.data.synthetic import (
        GRADE_RATIO,
        NONLINEARITY,
        QUERY_SPREAD,
        SyntheticLetor,
        synthetic_letor,
    )
    from oltr.data.tokenizer import MAX_DENSE_BYTES, MAX_FEATURE_INDEX
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "oltr.data.cache": ["cache_root"],
            "oltr.data.dataset": ["LetorDataset", "normalize_per_query", "summarize"],
            "oltr.data.letor": ["load_letor", "write_letor"],
            "oltr.data.stream": ["QueryStream"],
            "oltr.data.svmlight": ["MAX_GRADE", "PARSER_VERSION", "LetorFormatError"],
            "oltr.data.synthetic": [
                "GRADE_RATIO",
                "NONLINEARITY",
                "QUERY_SPREAD",
                "SyntheticLetor",
                "synthetic_letor",
            ],
            "oltr.data.tokenizer": ["MAX_DENSE_BYTES", "MAX_FEATURE_INDEX"],
        },
    )

__all__ = [
    "GRADE_RATIO",
    "MAX_DENSE_BYTES",
    "MAX_FEATURE_INDEX",
    "MAX_GRADE",
    "NONLINEARITY",
    "PARSER_VERSION",
    "QUERY_SPREAD",
    "LetorDataset",
    "LetorFormatError",
    "QueryStream",
    "SyntheticLetor",
    "cache_root",
    "load_letor",
    "normalize_per_query",
    "summarize",
    "synthetic_letor",
    "write_letor",
]
