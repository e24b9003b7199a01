"""One rate-limited HTTP session for everything that talks to arXiv.

arXiv asks for at most one request every 3 seconds from one client, across its API, OAI-PMH and
e-print services. :class:`RateLimiter` enforces that process-wide (one shared instance, guarded by a
lock), :class:`HarvestSession` adds bounded retries:

* HTTP 429 / 5xx: wait what ``Retry-After`` says (seconds or an HTTP date), otherwise exponential
  backoff; never more than ``max_retries`` extra attempts,
* connection resets, timeouts and bodies cut short: the same backoff,
* a body that fails to parse (``parse`` raises :class:`RetryableResponse` or an XML parse error):
  the same backoff -- a truncated page is fetched again rather than taken as the end.

The interval defaults to 3 s; ``SURGE_HARVEST_MIN_INTERVAL`` (seconds) or :func:`configure_rate`
changes it (tests use 0.01 s).
"""

from __future__ import annotations

import email.utils
import logging
import os
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, Optional, TypeVar

import requests

log = logging.getLogger(__name__)

DEFAULT_MIN_INTERVAL = 3.0
USER_AGENT = "surge-datasets-harvest/0.1 (+https://huggingface.co/surge)"
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
T = TypeVar("T")


class RateLimiter:
    """At most one request start every ``min_interval`` seconds (thread-safe)."""

    def __init__(self, min_interval: float = DEFAULT_MIN_INTERVAL, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.min_interval = float(min_interval)
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._next = 0.0

    def wait(self) -> float:
        """Block until the next request may start; returns the seconds waited."""
        with self._lock:
            now = self._clock()
            delay = max(0.0, self._next - now)
            if delay:
                self._sleep(delay)
            self._next = max(now, self._next) + self.min_interval
            return delay

    def hold(self, seconds: float) -> None:
        """Push the next allowed start ``seconds`` into the future (a server asked us to back off)."""
        with self._lock:
            self._next = max(self._next, self._clock() + seconds)


_PROCESS_LIMITER = RateLimiter(float(os.environ.get("SURGE_HARVEST_MIN_INTERVAL", DEFAULT_MIN_INTERVAL)))


def process_limiter() -> RateLimiter:
    """The limiter every session shares unless given its own."""
    return _PROCESS_LIMITER


def configure_rate(min_interval: float) -> None:
    """Set the process-wide interval between requests (seconds)."""
    _PROCESS_LIMITER.min_interval = float(min_interval)


class HarvestHTTPError(RuntimeError):
    """A request failed for good (retries used up, or a status that is not retried)."""

    def __init__(self, url: str, status: Optional[int], attempts: int, reason: str):
        self.url, self.status, self.attempts, self.reason = url, status, attempts, reason
        super().__init__(f"{url}: {reason} (status {status}, after {attempts} attempt(s))")


class RetryableResponse(Exception):
    """Raised by a ``parse`` callback when a 200 body is unusable (truncated, empty by mistake)."""


def parse_retry_after(value: Optional[str], now: Optional[datetime] = None) -> Optional[float]:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date; None if absent/invalid."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    return max(0.0, (when - now).total_seconds())


@dataclass
class RequestStats:
    requests: int = 0
    retries: int = 0
    waited_retry_after: float = 0.0
    statuses: dict[int, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)


class HarvestSession:
    """``requests.Session`` behind the process rate limit, with bounded, Retry-After-aware retries."""

    def __init__(self, *, limiter: Optional[RateLimiter] = None, max_retries: int = 5, backoff: float = 2.0,
                 max_backoff: float = 120.0, max_retry_after: float = 600.0, timeout: float = 60.0,
                 sleep: Callable[[float], None] = time.sleep, user_agent: str = USER_AGENT):
        self.limiter = limiter or process_limiter()
        self.max_retries, self.backoff, self.max_backoff = max_retries, backoff, max_backoff
        self.max_retry_after, self.timeout = max_retry_after, timeout
        self._sleep = sleep
        self.session = requests.Session()
        self.session.headers["User-Agent"] = user_agent
        self.stats = RequestStats()

    @property
    def min_interval(self) -> float:
        return self.limiter.min_interval

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> "HarvestSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _backoff(self, attempt: int) -> float:
        return min(self.max_backoff, self.backoff * (2 ** attempt))

    def fetch(self, url: str, params: Optional[Mapping[str, Any]] = None, *,
              parse: Optional[Callable[[requests.Response], T]] = None,
              accept: frozenset[int] | set[int] = frozenset({200})) -> T | requests.Response:
        """GET ``url`` and return ``parse(response)`` (or the response).

        Statuses in ``accept`` are handed to ``parse``; 429/5xx and connection problems are retried;
        any other status raises :class:`HarvestHTTPError` -- unless it is in ``accept``.
        """
        last_reason, last_status = "", None
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.stats.retries += 1
            self.limiter.wait()
            self.stats.requests += 1
            try:
                resp = self.session.get(url, params=params, timeout=self.timeout)
                body = resp.content  # read it all now: a reset mid-body raises here
            except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError,
                    requests.exceptions.ContentDecodingError) as exc:
                last_reason, last_status = f"{type(exc).__name__}: {exc}", None
                self.stats.errors[type(exc).__name__] = self.stats.errors.get(type(exc).__name__, 0) + 1
                delay = self._backoff(attempt)
                log.warning("%s: %s; retrying in %.1fs", url, last_reason, delay)
                self._sleep(delay)
                continue
            status = resp.status_code
            self.stats.statuses[status] = self.stats.statuses.get(status, 0) + 1
            if status in RETRY_STATUSES and status not in accept:
                last_reason, last_status = f"HTTP {status}", status
                wait = parse_retry_after(resp.headers.get("Retry-After"))
                if wait is not None:
                    wait = min(wait, self.max_retry_after)
                    self.stats.waited_retry_after += wait
                    self.limiter.hold(wait)  # everyone else in the process waits too
                    delay = 0.0
                else:
                    delay = self._backoff(attempt)
                log.warning("%s: HTTP %s; retrying (Retry-After %s)", url, status, resp.headers.get("Retry-After"))
                if delay:
                    self._sleep(delay)
                continue
            if status not in accept:
                raise HarvestHTTPError(resp.url or url, status, attempt + 1, f"HTTP {status}: {body[:200]!r}")
            if parse is None:
                return resp
            try:
                return parse(resp)
            except (RetryableResponse, ET.ParseError) as exc:
                last_reason, last_status = f"unusable body: {exc}", status
                self.stats.errors["unusable body"] = self.stats.errors.get("unusable body", 0) + 1
                delay = self._backoff(attempt)
                log.warning("%s: %s; retrying in %.1fs", url, last_reason, delay)
                self._sleep(delay)
                continue
        raise HarvestHTTPError(url, last_status, self.max_retries + 1, last_reason or "retries used up")


def build_session(min_interval: Optional[float] = None, **kwargs: Any) -> HarvestSession:
    """A session on the process limiter; ``min_interval`` (seconds) reconfigures that limiter."""
    if min_interval is not None:
        configure_rate(min_interval)
    if min_interval is not None and min_interval < 1.0:
        kwargs.setdefault("backoff", max(min_interval, 0.01))
    return HarvestSession(**kwargs)
