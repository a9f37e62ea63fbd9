"""A content-addressed cache of chat completions on disk: request → response, written once.

The key of a request is the SHA-256 of its canonical JSON (sorted keys): the model, the messages
and every sampling parameter sent (temperature, max_tokens, seed, …) — not the endpoint's URL,
so a colleague with the cache folder replays a run against no server at all. Each entry is one
file ``<key[:2]>/<key>.json`` holding the request and the response (text, finish reason, token
usage, the model the server named); it is created once (temporary file, then a hard link, so
concurrent writers never tear it) and the **first** response stored for a key is the one every
later reader gets — two processes racing on one prompt still act on the same answer.

>>> import tempfile
>>> cache = ResponseCache(tempfile.mkdtemp())
>>> request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
>>> key = request_key(request)
>>> cache.get(key, request) is None
True
>>> cache.put(key, request, {"content": "a", "finish_reason": "stop",
...                          "prompt_tokens": 3, "completion_tokens": 1, "model": "m"})["content"]
'a'
>>> cache.put(key, request, {"content": "b", "finish_reason": "stop",
...                          "prompt_tokens": 3, "completion_tokens": 1, "model": "m"})["content"]
'a'
>>> cache.get(key, request)["content"]
'a'
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from condvln.errors import FormatError
from condvln.io import dumps_json, read_json

FORMAT = "condvln-llm-cache"
VERSION = 1

_RESPONSE_FIELDS = {
    "content": str,
    "finish_reason": (str, type(None)),
    "prompt_tokens": int,
    "completion_tokens": int,
    "model": (str, type(None)),
}
"""Fields of a stored response and their types."""


def request_key(request: Mapping[str, Any]) -> str:
    """The cache key of a request: SHA-256 (hex) of its canonical JSON."""
    return hashlib.sha256(dumps_json(dict(request))).hexdigest()


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/condvln/llm`` (``~/.cache/condvln/llm`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "condvln" / "llm"


class ResponseCache:
    """Chat completions stored by request key under ``folder``.

    Args:
        folder: The cache folder (created on the first write).
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    def path(self, key: str) -> Path:
        """The file of ``key``."""
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str, request: Mapping[str, Any]) -> dict[str, Any] | None:
        """The stored response of ``request``, or ``None`` when there is none.

        Raises:
            FormatError: The entry is unreadable, malformed or stores another request.
        """
        path = self.path(key)
        if not path.exists():
            return None
        entry = read_json(path)
        ok = isinstance(entry, dict) and entry.get("format") == FORMAT
        if not ok or entry.get("request") != orjson.loads(dumps_json(dict(request))):
            raise FormatError(
                "not the cached response of this request (delete the file to fetch it again)",
                file=str(path),
            )
        response = entry.get("response")
        for name, kind in _RESPONSE_FIELDS.items():
            if not isinstance(response, dict) or not isinstance(response.get(name), kind):
                raise FormatError("malformed cached response", file=str(path), field=name)
        return {name: response[name] for name in _RESPONSE_FIELDS}

    def put(self, key: str, request: Mapping[str, Any], response: Mapping[str, Any]) -> dict:
        """Store ``response`` unless ``key`` is stored already; the stored response either way."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {
            "format": FORMAT,
            "version": VERSION,
            "request": dict(request),
            "response": {name: response[name] for name in _RESPONSE_FIELDS},
        }
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:8]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(dumps_json(entry, indent=True))
            os.link(tmp, path)
        except FileExistsError:
            stored = self.get(key, request)
            assert stored is not None
            return stored
        finally:
            Path(tmp).unlink(missing_ok=True)
        return dict(entry["response"])
