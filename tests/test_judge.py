"""LLM judges: an OpenAI-compatible loopback server that misbehaves, the 5-try bound, the cache, the local model."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from surge_datasets.models import ModelUnavailable
from surge_datasets.models.judge import (
    MAX_TRIES, JudgeCache, OpenAICompatibleJudge, load_judge, parse_retry_after, parse_score_lenient,
    parse_score_strict,
)


class ScriptedServer:
    """OpenAI-compatible chat server on 127.0.0.1; each request takes the next scripted behaviour.

    Behaviours: ("ok", text), ("429", retry_after), ("500",), ("sleep", seconds), ("not-json",),
    ("401",). When the script is empty it answers ("ok", default).
    """

    def __init__(self, default: str = "3"):
        self.script: deque = deque()
        self.default = default
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, code: int, body: bytes, headers: dict | None = None):
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self):
                if self.path.endswith("/models"):
                    self._send(200, json.dumps({"object": "list", "data": [
                        {"id": "loopback-judge", "object": "model", "created": 0, "owned_by": "test"}]}).encode())
                else:
                    self._send(404, b"{}")

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.requests.append(body)
                    step = server.script.popleft() if server.script else ("ok", server.default)
                kind = step[0]
                if kind == "429":
                    self._send(429, json.dumps({"error": {"message": "slow down", "type": "rate_limit"}}).encode(),
                               {"Retry-After": str(step[1])})
                elif kind == "500":
                    self._send(500, json.dumps({"error": {"message": "boom"}}).encode())
                elif kind == "401":
                    self._send(401, json.dumps({"error": {"message": "bad key"}}).encode())
                elif kind == "sleep":
                    time.sleep(step[1])
                    self._send(200, _completion("5"))
                elif kind == "not-json":
                    self._send(200, b"<html>this is not json")
                else:
                    self._send(200, _completion(step[1]))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _completion(text: str) -> bytes:
    return json.dumps({
        "id": "cmpl-1", "object": "chat.completion", "created": 0, "model": "loopback-judge",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }).encode()


@pytest.fixture
def server():
    s = ScriptedServer()
    yield s
    s.close()


def make_judge(server, tmp_path, **kwargs) -> OpenAICompatibleJudge:
    kwargs.setdefault("timeout", 0.5)
    kwargs.setdefault("backoff", 0.01)
    return OpenAICompatibleJudge("loopback-judge", server.base_url, cache=tmp_path / "judge.sqlite", **kwargs)


def test_survives_429_500_timeout_and_malformed_answers(server, tmp_path):
    server.script.extend([("429", "0.3"), ("500",), ("sleep", 1.5), ("not-json",), ("ok", "I would say four"),
                          ("ok", "4")])
    judge = make_judge(server, tmp_path)
    start = time.monotonic()
    assert judge.score("rate this") == 4
    assert time.monotonic() - start >= 0.3          # Retry-After honoured
    # the 429 does not use up a try; 500, timeout, non-JSON body and the malformed answer use 4 of 5
    assert len(server.requests) == 6
    assert judge.stats.rate_limited == 1 and judge.stats.errors == 3 and judge.stats.unparseable == 1
    assert judge.stats.failures == 0
    body = server.requests[-1]
    assert body["messages"][0] == {"role": "system", "content": "You are a helpful assistant"}
    assert body["messages"][1]["content"] == "rate this" and body["max_tokens"] == 100


def test_five_tries_then_recorded_failure(server, tmp_path):
    server.default = "The structure is good."
    judge = make_judge(server, tmp_path)
    assert judge.score("rate this") is None
    assert len(server.requests) == MAX_TRIES == 5
    assert judge.stats.failures == 1
    (failure,) = judge.failures
    assert failure.tries == 5 and all("not a score" in r for r in failure.reasons)
    with sqlite3.connect(tmp_path / "judge.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM failures").fetchone()[0] == 1
        assert db.execute("SELECT COUNT(*) FROM answers").fetchone()[0] == 0
    # errors only: still bounded
    server.script.extend([("500",)] * 10)
    assert make_judge(server, tmp_path).score("another") is None
    assert len(server.requests) == 10


def test_cache_makes_a_rerun_free(server, tmp_path):
    prompts = [f"prompt {i}" for i in range(6)]
    first = make_judge(server, tmp_path, workers=3)
    assert first.score_many(prompts) == [3] * 6
    assert len(server.requests) == 6 and first.stats.cache_hit_rate == 0.0
    again = make_judge(server, tmp_path)
    assert again.score_many(prompts) == [3] * 6
    assert len(server.requests) == 6                  # no new call
    assert again.stats.cache_hits == 6 and again.stats.cache_hit_rate == 1.0
    assert len(JudgeCache(tmp_path / "judge.sqlite")) == 6
    # another system prompt or other generation parameters are another key
    make_judge(server, tmp_path, max_tokens=5).score("prompt 0")
    assert len(server.requests) == 7


def test_cached_answer_that_does_not_parse_in_strict_mode_is_asked_again(server, tmp_path):
    server.script.append(("ok", "Score: 2"))
    lenient = make_judge(server, tmp_path)
    assert lenient.score("p", parse=parse_score_lenient) == 2
    strict = make_judge(server, tmp_path)
    assert strict.score("p") == 3 and len(server.requests) == 2


def test_rate_limit_waits_are_bounded(server, tmp_path):
    server.script.extend([("429", "0")] * 20)
    judge = make_judge(server, tmp_path, max_rate_limit_waits=2)
    assert judge.score("p") is None
    assert len(server.requests) == 2 + MAX_TRIES


def test_auth_error_stops_at_once(server, tmp_path):
    server.script.append(("401",))
    with pytest.raises(ModelUnavailable, match="loopback-judge"):
        make_judge(server, tmp_path).score("p")
    assert len(server.requests) == 1


def test_load_judge_from_settings(server, tmp_path, monkeypatch):
    for var in ("SURGE_JUDGE_BASE_URL", "SURGE_JUDGE_MODEL", "SURGE_JUDGE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ModelUnavailable, match="--judge-base-url"):
        load_judge(cache=False)
    judge = load_judge(base_url=server.base_url, cache=tmp_path / "c.sqlite")   # model asked from /models
    assert judge.name == "loopback-judge" and judge.score("p") == 3
    monkeypatch.setenv("SURGE_JUDGE_BASE_URL", server.base_url)
    monkeypatch.setenv("SURGE_JUDGE_MODEL", "named-model")
    assert load_judge(cache=False).name == "named-model"
    assert load_judge(cache=False).describe()["base_url"] == server.base_url


@pytest.mark.parametrize("text, strict, lenient", [
    ("4", 4, 4), ("4\n", 4, 4), (" 4", None, 4), ("4.", None, 4), ("**5**", None, 5), ("Score: 3", None, 3),
    ("3/5", None, 3), ("2 out of 5", None, 2), ("6", None, None), ("4.5", None, None), ("", None, None),
    (None, None, None), ("I rate it 1 because of 2 issues", None, None), ("The answer is 0", None, 0),
])
def test_score_parsers(text, strict, lenient):
    assert parse_score_strict(text) == strict
    assert parse_score_lenient(text) == lenient


def test_retry_after_forms():
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0   # in the past
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


@pytest.mark.slow
def test_local_smollm2_judge_gives_a_score_or_a_recorded_failure(tmp_path):
    start = time.monotonic()
    judge = load_judge(local="smollm2", cache=tmp_path / "local.sqlite", max_tries=2)
    assert "SmolLM2" in judge.name
    score = judge.score("Rate the fluency of this sentence from 0 to 5. Answer with one digit only.\n\n"
                        "The cat sat on the mat.", parse=parse_score_lenient)
    assert score in {0, 1, 2, 3, 4, 5} or (score is None and len(judge.failures) == 1)
    assert judge.stats.requests <= 2
    assert time.monotonic() - start < 180   # ~35 s on 2 idle cores; loose bound for loaded machines
