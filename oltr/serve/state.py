"""Learner snapshots as plain JSON: arrays, generator states and nested objects, never pickle.

A snapshot records every attribute of a learner (recursively into the objects
it holds) so that restoring it into a learner freshly built from the same
definition gives an object that continues *bit for bit* like the original:

* numpy arrays keep their dtype, shape and bytes (base64 of the raw buffer);
* numpy Generators keep ``bit_generator.state`` (a JSON-able dict), restored
  into the fresh learner's generators in place, so objects that share a
  generator keep sharing it;
* floats keep their exact value (``float.hex``), including NaN and ±inf;
* numpy dtypes keep their type string (``dtype.str``);
* objects are restored into the fresh learner's object of the same class, or
  created with ``object.__new__`` for classes of this package only (nothing
  else is ever instantiated from a snapshot);
* functions and classes are references, checked against the fresh learner;
* scratch buffers are left out: the fields a class names in ``scratch_fields``
  hold nothing from one round to the next, so the restored object keeps the
  fresh learner's (empty) ones and sizes them again on first use.

Restoring never runs code named by the snapshot, so a snapshot is data: safe
to keep in the store and to read after an upgrade, which the recorded package
version makes visible.
"""

from __future__ import annotations

import base64
import importlib
import json
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["SnapshotError", "decode_state", "dumps_state", "encode_state", "loads_state"]

#: Classes a snapshot may create from scratch (their module starts with this).
_OWN_PACKAGE = "oltr."


class SnapshotError(ValueError):
    """A snapshot that cannot be taken or does not fit the learner it is restored into."""


def _qualname(obj: Any) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


def _slots(cls: type) -> list[str]:
    names: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else [s for s in slots if s != "__dict__"]
    return names


def _fields(obj: Any) -> dict[str, Any]:
    out = dict(vars(obj)) if hasattr(obj, "__dict__") else {}
    for name in _slots(type(obj)):
        if hasattr(obj, name):
            out[name] = getattr(obj, name)
    return out


def encode_state(value: Any, path: str = "learner") -> Any:
    """``value`` as JSON-able data (see the module docstring); ``path`` names it in errors.

    An object met twice (a generator shared by the learner and a helper it
    holds) is written once, with an ``id``, and referred to as ``{"same": id}``
    afterwards, so the restored objects share it too.
    """
    return _encode(value, path, {})


#: Kinds whose identity is kept (shared references stay shared after a restore).
_SHARED = (np.ndarray, np.random.Generator, list, dict)


def _encode(value: Any, path: str, memo: dict[int, int]) -> Any:
    keep = isinstance(value, _SHARED) or _is_object(value)
    if keep:
        if id(value) in memo:
            return {"same": memo[id(value)]}
        memo[id(value)] = len(memo)
        enc = _encode_new(value, path, memo)
        enc["id"] = memo[id(value)]
        return enc
    return _encode_new(value, path, memo)


def _is_object(value: Any) -> bool:
    return not isinstance(value, type) and type(value).__module__.startswith(_OWN_PACKAGE)


def _encode_new(value: Any, path: str, memo: dict[int, int]) -> Any:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | np.integer) and not isinstance(value, np.bool_):
        return (
            {"int": int(value), "dtype": np.dtype(type(value)).str}
            if isinstance(value, np.integer)
            else value
        )
    if isinstance(value, float | np.floating):
        return {"float": float(value).hex(), "dtype": np.dtype(type(value)).str}
    if isinstance(value, np.bool_):
        return {"bool_": bool(value)}
    if isinstance(value, np.ndarray):
        return _encode_array(value, path)
    if isinstance(value, np.random.Generator):
        return {"generator": value.bit_generator.state}
    if isinstance(value, np.dtype):
        return {"numpy_dtype": value.str}
    if isinstance(value, list | tuple):
        items = [_encode(v, f"{path}[{i}]", memo) for i, v in enumerate(value)]
        return {"list": items} if isinstance(value, list) else {"tuple": items}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            keys = [_encode(k, f"{path} key", memo) for k in value]
            vals = [_encode(v, f"{path}[{k!r}]", memo) for k, v in value.items()]
            return {"items": [keys, vals]}
        return {"dict": {k: _encode(v, f"{path}.{k}", memo) for k, v in value.items()}}
    if isinstance(value, type) or callable(value) and hasattr(value, "__qualname__"):
        return {"ref": _qualname(value)}
    cls = type(value)
    if not cls.__module__.startswith(_OWN_PACKAGE):
        raise SnapshotError(f"{path}: cannot snapshot a {cls.__module__}.{cls.__qualname__}")
    scratch = getattr(cls, "scratch_fields", ())
    fields = {
        k: _encode(v, f"{path}.{k}", memo) for k, v in _fields(value).items() if k not in scratch
    }
    return {"object": _qualname(cls), "fields": fields}


def _encode_array(arr: np.ndarray[Any, Any], path: str) -> dict[str, Any]:
    if arr.dtype.hasobject:
        raise SnapshotError(f"{path}: cannot snapshot an array of Python objects")
    data = base64.b64encode(np.ascontiguousarray(arr).tobytes()).decode("ascii")
    return {
        "array": data,
        "dtype": arr.dtype.str,
        "shape": list(arr.shape),
        "writeable": bool(arr.flags.writeable),
    }


def _decode_array(enc: dict[str, Any]) -> np.ndarray[Any, Any]:
    raw = base64.b64decode(enc["array"])
    arr = np.frombuffer(raw, dtype=np.dtype(enc["dtype"])).reshape(enc["shape"]).copy()
    arr.flags.writeable = bool(enc["writeable"])
    return arr


def _resolve(ref: str) -> Any:
    module, _, qual = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


class _Decoder:
    """Decodes one snapshot, remembering objects by ``id`` so shared ones stay shared."""

    def __init__(self) -> None:
        self.memo: dict[int, Any] = {}

    def __call__(self, enc: Any, current: Any, path: str) -> Any:
        if enc is None or isinstance(enc, bool | int | str):
            return enc
        if not isinstance(enc, dict) or len(enc) == 0:
            raise SnapshotError(f"{path}: malformed snapshot entry {enc!r:.80}")
        kind = next(iter(enc))
        if kind == "same":
            if enc["same"] not in self.memo:
                raise SnapshotError(f"{path}: reference to unknown object {enc['same']}")
            return self.memo[enc["same"]]
        if kind == "object":
            return self._object(enc, current, path)
        out = self._value(kind, enc, current, path)
        if "id" in enc:
            self.memo[enc["id"]] = out
        return out

    def _value(self, kind: str, enc: dict[str, Any], current: Any, path: str) -> Any:
        decoders: dict[str, Callable[[], Any]] = {
            "int": lambda: np.dtype(enc["dtype"]).type(enc["int"]),
            "float": lambda: np.dtype(enc["dtype"]).type(float.fromhex(enc["float"])),
            "bool_": lambda: np.bool_(enc["bool_"]),
            "array": lambda: _decode_array(enc),
            "generator": lambda: _decode_generator(enc["generator"], current),
            "numpy_dtype": lambda: np.dtype(enc["numpy_dtype"]),
            "list": lambda: self._seq(enc["list"], current, path),
            "tuple": lambda: tuple(self._seq(enc["tuple"], current, path)),
            "dict": lambda: self._dict(enc["dict"], current, path),
            "items": lambda: dict(
                zip(
                    (self(k, None, path) for k in enc["items"][0]),
                    (self(v, None, path) for v in enc["items"][1]),
                    strict=True,
                )
            ),
            "ref": lambda: _decode_ref(enc["ref"], current, path),
        }
        if kind not in decoders:
            raise SnapshotError(f"{path}: unknown snapshot entry kind {kind!r}")
        return decoders[kind]()

    def _object(self, enc: dict[str, Any], current: Any, path: str) -> Any:
        ref = enc["object"]
        if current is not None and _qualname(type(current)) == ref:
            target = current
        else:
            if not ref.startswith(_OWN_PACKAGE):
                raise SnapshotError(f"{path}: refusing to create a {ref} from a snapshot")
            target = object.__new__(_resolve(ref))
        if "id" in enc:  # before the fields: an object may refer to itself
            self.memo[enc["id"]] = target
        now = _fields(target)
        for name, field in enc["fields"].items():
            # object.__setattr__ also writes frozen dataclasses and slots.
            object.__setattr__(target, name, self(field, now.get(name), f"{path}.{name}"))
        return target

    def _seq(self, items: list[Any], current: Any, path: str) -> list[Any]:
        olds = list(current) if isinstance(current, list | tuple) else []
        olds += [None] * (len(items) - len(olds))
        return [self(v, olds[i], f"{path}[{i}]") for i, v in enumerate(items)]

    def _dict(self, items: dict[str, Any], current: Any, path: str) -> dict[str, Any]:
        olds = current if isinstance(current, dict) else {}
        return {k: self(v, olds.get(k), f"{path}.{k}") for k, v in items.items()}


def _decode_generator(state: dict[str, Any], current: Any) -> np.random.Generator:
    gen = current
    if not isinstance(gen, np.random.Generator):
        bit_gen = getattr(np.random, state["bit_generator"])()
        gen = np.random.Generator(bit_gen)
    gen.bit_generator.state = state
    return gen


def decode_state(enc: Any, current: Any = None, path: str = "learner") -> Any:
    """Inverse of :func:`encode_state`, writing into ``current`` where it holds the same kind."""
    return _Decoder()(enc, current, path)


def _decode_ref(ref: str, current: Any, path: str) -> Any:
    # A reference is kept from the fresh learner (same definition, same function);
    # it is only resolved when the fresh learner holds nothing there.
    if current is not None and (isinstance(current, type) or callable(current)):
        if _qualname(current) == ref:
            return current
    if not ref.startswith(_OWN_PACKAGE) and not ref.startswith("numpy"):
        raise SnapshotError(f"{path}: refusing to resolve {ref} from a snapshot")
    return _resolve(ref)


def dumps_state(learner: Any, version: str) -> str:
    """The JSON text of a learner's snapshot, tagged with the package ``version``."""
    return json.dumps(
        {"version": version, "class": _qualname(type(learner)), "state": encode_state(learner)},
        separators=(",", ":"),
    )


def loads_state(text: str, learner: Any) -> str:
    """Restore the snapshot ``text`` into ``learner`` (built from the same definition).

    Returns the package version that wrote the snapshot.
    """
    doc = json.loads(text)
    if doc.get("class") != _qualname(type(learner)):
        raise SnapshotError(
            f"snapshot is of a {doc.get('class')}, cannot restore it into a "
            f"{_qualname(type(learner))}"
        )
    decode_state(doc["state"], learner)
    return str(doc.get("version", "?"))
