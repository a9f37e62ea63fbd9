"""Chat completions from any OpenAI-compatible endpoint, robust and replayable.

:class:`ChatClient` sends Chat Completions requests with the official ``openai`` client (its own
retries switched off) and adds:

* a timeout per request (seconds, connect and read);
* retries with exponential backoff (``tenacity``) on 408 / 409 / 429, 5xx, timeouts and
  connection errors — ``backoff × 2^(attempt − 1)`` seconds, at most ``max_backoff``, or the
  server's ``Retry-After`` when that is longer (still capped); other errors are not retried;
* bounded concurrency: :meth:`ChatClient.complete_many` sends at most ``max_concurrency``
  requests at a time and returns the replies in order;
* the content-addressed :class:`~condvln.agents.llm_cache.ResponseCache`: ``readwrite`` (read,
  else call and store), ``readonly`` (never call: a miss is an :class:`LLMCallError` naming the
  key) or ``off``;
* the API key only from the environment (``api_key_env``, default ``OPENAI_API_KEY``; local
  servers need none).

A request that still fails raises :class:`LLMCallError` (one line: endpoint, status, message).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from condvln.agents.llm_cache import ResponseCache, request_key
from condvln.errors import CondVLNError, ConfigError

CacheMode = Literal["readwrite", "readonly", "off"]

RETRY_STATUSES = (408, 409, 429)
"""HTTP statuses retried besides 5xx (those the ``openai`` client itself would retry)."""

NO_KEY = "no-key"
"""The key sent when the environment holds none (local servers ignore it)."""

Messages = Sequence[Mapping[str, str]]


class LLMCallError(CondVLNError):
    """A chat completion that could not be obtained (after retries, or not in a read-only cache)."""


@dataclass(frozen=True, slots=True)
class Reply:
    """A chat completion.

    Attributes:
        content: The answer text (empty when the server sent none).
        finish_reason: ``"stop"``, ``"length"`` (cut at ``max_tokens``), … or ``None``.
        prompt_tokens: Prompt tokens the server counted (0 when it reports no usage).
        completion_tokens: Completion tokens the server counted (0 when it reports none).
    """

    content: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class Endpoint:
    """Where and how to ask.

    Attributes:
        base_url: The server's OpenAI-compatible base URL (``http://127.0.0.1:8000/v1``).
        model: The model name sent with every request.
        params: Sampling parameters sent with every request (part of the cache key).
        timeout: Seconds per request.
        retries: Retries after the first attempt.
        backoff: Seconds before the first retry (doubling each time).
        max_backoff: Longest wait between attempts (seconds).
        max_concurrency: Requests in flight at most.
        api_key_env: Environment variable holding the API key.
    """

    base_url: str
    model: str
    params: Mapping[str, Any]
    timeout: float = 60.0
    retries: int = 4
    backoff: float = 1.0
    max_backoff: float = 30.0
    max_concurrency: int = 4
    api_key_env: str = "OPENAI_API_KEY"


def _transient(exc: BaseException) -> bool:
    """Whether a failed request is worth retrying."""
    import openai

    if isinstance(exc, openai.APIConnectionError):  # timeouts included
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in RETRY_STATUSES or exc.status_code >= 500
    return False


def _retry_after(exc: BaseException | None) -> float:
    """The ``Retry-After`` seconds of a failed response, 0 when absent or not a number."""
    response = getattr(exc, "response", None)
    value = None if response is None else response.headers.get("retry-after")
    try:
        return max(float(value), 0.0) if value is not None else 0.0
    except ValueError:
        return 0.0


def _describe(endpoint: Endpoint, exc: BaseException, attempts: int) -> str:
    import openai

    if isinstance(exc, openai.APIStatusError):
        what = f"HTTP {exc.status_code}: {exc.message}"
    elif isinstance(exc, openai.APITimeoutError):
        what = f"no answer within the timeout of {endpoint.timeout:g} s"
    else:
        what = f"{type(exc).__name__}: {exc}"
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    return " ".join(f"{endpoint.base_url} ({endpoint.model}){tries}: {what}".split())


class ChatClient:
    """Chat completions with timeouts, retries, bounded concurrency and the response cache.

    Args:
        endpoint: The server and the request settings.
        cache: The response cache (``None``: no cache).
        mode: ``"readwrite"``, ``"readonly"`` or ``"off"``.
    """

    def __init__(
        self, endpoint: Endpoint, cache: ResponseCache | None, mode: CacheMode = "readwrite"
    ) -> None:
        if mode != "off" and cache is None:
            raise ConfigError(f"cache={mode} needs a cache folder")
        self.endpoint = endpoint
        self.cache = None if mode == "off" else cache
        self.readonly = mode == "readonly"
        self._lock = threading.Lock()
        self._client: Any = None
        self._pool: ThreadPoolExecutor | None = None

    def request(self, messages: Messages) -> dict[str, Any]:
        """The request body for ``messages`` (model, messages, sampling parameters)."""
        body = {"model": self.endpoint.model, "messages": [dict(m) for m in messages]}
        return body | {k: v for k, v in self.endpoint.params.items() if v is not None}

    def complete(self, messages: Messages) -> Reply:
        """The reply to ``messages``: from the cache, else from the endpoint (then stored).

        Raises:
            LLMCallError: A read-only cache without the entry, or a request that failed.
        """
        request = self.request(messages)
        key = request_key(request)
        if self.cache is not None:
            stored = self.cache.get(key, request)
            if stored is not None:
                return _reply(stored)
        if self.readonly:
            folder = self.cache.folder if self.cache is not None else None
            raise LLMCallError(
                f"cache=readonly: no cached response for key {key} in {folder} "
                f"(model {self.endpoint.model!r}); run with cache=readwrite to fetch it"
            )
        response = self._fetch(request)
        if self.cache is not None:
            response = self.cache.put(key, request, response)
        return _reply(response)

    def complete_many(self, batch: Sequence[Messages]) -> list[Reply]:
        """Replies to several requests, at most ``max_concurrency`` in flight, in order."""
        if len(batch) <= 1 or self.endpoint.max_concurrency <= 1:
            return [self.complete(messages) for messages in batch]
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    self.endpoint.max_concurrency, thread_name_prefix="condvln-llm"
                )
        return list(self._pool.map(self.complete, batch))

    def _openai(self) -> Any:
        with self._lock:
            if self._client is None:
                import openai

                key = os.environ.get(self.endpoint.api_key_env) or NO_KEY
                self._client = openai.OpenAI(
                    base_url=self.endpoint.base_url,
                    api_key=key,
                    timeout=self.endpoint.timeout,
                    max_retries=0,
                )
            return self._client

    def _wait(self, state: Any) -> float:
        """Seconds before the next attempt: exponential, or ``Retry-After`` if longer; capped."""
        exc = state.outcome.exception() if state.outcome is not None else None
        backoff = self.endpoint.backoff * 2 ** (state.attempt_number - 1)
        return min(max(backoff, _retry_after(exc)), self.endpoint.max_backoff)

    def _fetch(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """One completion from the endpoint, retried on transient failures."""
        import tenacity

        client = self._openai()
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(_transient),
            stop=tenacity.stop_after_attempt(self.endpoint.retries + 1),
            wait=self._wait,
            reraise=True,
        )
        try:
            completion = retrying(client.chat.completions.create, **request)
        except Exception as exc:
            attempts = retrying.statistics.get("attempt_number", 1)
            raise LLMCallError(_describe(self.endpoint, exc, attempts)) from None
        return _response(completion)


def _response(completion: Any) -> dict[str, Any]:
    """The stored fields of a ``ChatCompletion`` (lenient: missing parts become empty)."""
    choices = getattr(completion, "choices", None) or []
    message = getattr(choices[0], "message", None) if choices else None
    content = getattr(message, "content", None)
    usage = getattr(completion, "usage", None)
    reason = getattr(choices[0], "finish_reason", None) if choices else None
    model = getattr(completion, "model", None)
    return {
        "content": content if isinstance(content, str) else "",
        "finish_reason": reason if isinstance(reason, str) else None,
        "prompt_tokens": _count(getattr(usage, "prompt_tokens", None)),
        "completion_tokens": _count(getattr(usage, "completion_tokens", None)),
        "model": model if isinstance(model, str) else None,
    }


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _reply(response: Mapping[str, Any]) -> Reply:
    return Reply(
        content=response["content"],
        finish_reason=response["finish_reason"],
        prompt_tokens=response["prompt_tokens"],
        completion_tokens=response["completion_tokens"],
    )
