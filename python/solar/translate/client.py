"""The model, over the OpenAI-compatible Chat Completions protocol (the `openai` client
library), so a hosted model and a local server (vLLM, llama.cpp's server, Ollama) are reached
alike. The API key is read from an environment variable and handed to the client only: it is
never logged, written or passed to the reference's subprocess.

Transient failures (HTTP 429, 5xx, a timeout, a refused connection) are retried here, not by
the library, so that each one is recorded in the provenance: a 429's Retry-After is honoured
(up to MAX_WAIT seconds); the others back off exponentially.
"""

from __future__ import annotations

import dataclasses
import email.utils
import os
import time
from typing import Any, Callable, Dict, List, Optional
from urllib.parse import urlparse

# Environment variables: the key (the first one set wins), the endpoint, the model.
KEY_ENVS = ("SOLAR_TRANSLATE_API_KEY", "OPENAI_API_KEY")
ENDPOINT_ENV = "SOLAR_TRANSLATE_ENDPOINT"
MODEL_ENV = "SOLAR_TRANSLATE_MODEL"
DEFAULT_ENDPOINT = "https://api.openai.com/v1"
MAX_WAIT = 60.0  # seconds: the longest Retry-After honoured


class EndpointError(Exception):
    """The endpoint gave no answer: a fatal HTTP status (400, 401, 404, ...) or transient
    failures beyond the retries. `events` are the requests' records."""

    def __init__(self, message: str, events: List[Dict[str, Any]]):
        super().__init__(message)
        self.events = events


@dataclasses.dataclass
class Reply:
    """One answer of the model."""

    text: Optional[str]
    finish_reason: Optional[str]
    usage: Optional[Dict[str, int]]  # prompt_tokens, completion_tokens, total_tokens
    model: Optional[str]  # as the server names it
    events: List[Dict[str, Any]]  # the failed requests before the answer (retries)
    seconds: float  # wall time, retries included


def api_key(env: Optional[str] = None):
    """(key, name of the variable it came from) or (None, None)."""
    for name in ([env] if env else list(KEY_ENVS)):
        value = os.environ.get(name)
        if value:
            return value, name
    return None, None


def endpoint_host(url: str) -> str:
    """host[:port] of an endpoint URL (what provenance records of it)."""
    parsed = urlparse(url)
    return parsed.netloc or url


def _retry_after(error) -> Optional[float]:
    """Seconds from a response's Retry-After (seconds or an HTTP date) or retry-after-ms."""
    headers = getattr(getattr(error, "response", None), "headers", None) or {}
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value)
        return None if when is None else max(0.0, when.timestamp() - time.time())


class ModelClient:
    """Chat completions from one model at one endpoint."""

    def __init__(self, model: str, endpoint: str, key_env: Optional[str] = None,
                 timeout: float = 300.0, retries: int = 4, backoff: float = 1.0,
                 temperature: Optional[float] = 0.0, max_tokens: Optional[int] = None,
                 sleep: Callable[[float], None] = time.sleep):
        import openai

        self.model, self.endpoint = model, endpoint
        key, self.key_env = api_key(key_env)
        self.retries, self.backoff, self.sleep = retries, backoff, sleep
        self.temperature, self.max_tokens = temperature, max_tokens
        self._openai = openai
        # A local server needs no key; the library insists on one, so it gets a placeholder.
        self._client = openai.OpenAI(api_key=key or "no-key", base_url=endpoint,
                                     timeout=timeout, max_retries=0)

    def complete(self, messages: List[Dict[str, str]]) -> Reply:
        """The model's answer to `messages`; EndpointError when there is none."""
        oa = self._openai
        events: List[Dict[str, Any]] = []
        start = time.monotonic()
        args: Dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            args["temperature"] = self.temperature
        if self.max_tokens is not None:
            args["max_tokens"] = self.max_tokens
        for k in range(self.retries + 1):
            try:
                r = self._client.chat.completions.create(**args)
            except oa.APIStatusError as e:
                transient = isinstance(e, (oa.RateLimitError, oa.InternalServerError)) or \
                    e.status_code in (408, 409) or e.status_code >= 500
                event = {"error": f"HTTP {e.status_code}", "message": _short(e)}
                if not transient:
                    events.append(event)
                    raise EndpointError(f"{self.endpoint}: HTTP {e.status_code}: {_short(e)}",
                                        events) from None
                after = _retry_after(e) if isinstance(e, oa.RateLimitError) else None
                if after is not None:
                    event["retry_after_s"] = after
                self._wait(k, after, event, events)
                continue
            except oa.APITimeoutError:
                self._wait(k, None, {"error": "timeout"}, events)
                continue
            except oa.APIConnectionError as e:
                self._wait(k, None, {"error": "connection", "message": _short(e)}, events)
                continue
            choice = r.choices[0] if r.choices else None
            usage = None
            if r.usage is not None:
                usage = {k2: int(getattr(r.usage, k2, 0) or 0)
                         for k2 in ("prompt_tokens", "completion_tokens", "total_tokens")}
            return Reply(choice.message.content if choice else None,
                         choice.finish_reason if choice else None, usage,
                         getattr(r, "model", None), events, time.monotonic() - start)
        raise EndpointError(f"{self.endpoint}: no answer after {self.retries + 1} requests "
                            f"({', '.join(e['error'] for e in events)})", events)

    def _wait(self, k: int, after: Optional[float], event: Dict[str, Any],
              events: List[Dict[str, Any]]) -> None:
        events.append(event)
        if k >= self.retries:
            return
        wait = min(MAX_WAIT, after if after is not None else self.backoff * 2 ** k)
        event["waited_s"] = round(wait, 3)
        self.sleep(wait)


def _short(e: Exception) -> str:
    text = str(e).replace("\n", " ")
    return text if len(text) <= 200 else text[:197] + "..."
