"""``attnseq serve``: the JSON API on FastAPI + uvicorn. Every malformed request gets a 4xx
answer naming the field (never a 5xx, a dropped connection or a hang); concurrent requests
are decoded together and answer exactly what sequential decoding does."""

from __future__ import annotations

import http.client
import json
import logging
import socket
import threading

import numpy as np
import pytest
from fastapi.testclient import TestClient
from helpers import LiveServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import attnseq
from attnseq.cli import main
from attnseq.errors import ConfigError
from attnseq.serve.app import allowed_hosts, create_app, decode_field, host_name, load_runs, run_names


@pytest.fixture(scope="module")
def runs(quick_runs):
    return quick_runs


@pytest.fixture(scope="module")
def client(runs):
    app = create_app(load_runs([runs["local_p"], runs["transformer"], runs["numpy"]]), max_chars=200)
    with TestClient(app) as c:
        yield c


def test_runs_describe_each_model(client):
    runs = client.get("/runs").json()
    assert [r["name"] for r in runs] == ["local_p", "transformer", "numpy"]
    by = {r["name"]: r for r in runs}
    assert by["transformer"]["arch"] == "transformer"
    assert "layers 2, heads 4" in by["transformer"]["description"]
    assert by["local_p"]["attention"] == "local_p" and "local_p (window 5) attention" in by["local_p"]["description"]
    assert by["numpy"]["engine"] == "numpy" and by["numpy"]["max_beam"] == 1


def test_translate_returns_the_nbest_list_with_every_view(client, runs):
    answer = client.post("/translate", json={"text": "abcde", "run": "transformer", "beam_size": 3}).json()
    assert answer["source_tokens"] == list("abcde")
    hyps = answer["hypotheses"]
    expected = attnseq.load(runs["transformer"]).search(["abcde"], beam_size=3, n_best=3)[0]
    assert [h["output"] for h in hyps] == expected.outputs  # n_best defaults to the whole beam
    assert [h["score"] for h in hyps] == pytest.approx(expected.scores, abs=1e-4)
    for h in hyps:
        rows = len(h["attention"])
        assert rows in (len(h["output_tokens"]), len(h["output_tokens"]) + 1)
        cross = np.array(h["cross_attention"])
        assert cross.shape == (2, 4, rows, 5)
        np.testing.assert_allclose(cross[-1].mean(0), h["attention"], atol=2e-4)
    assert np.array(answer["encoder_attention"]).shape == (2, 4, 5, 5)

    local = client.post("/translate", json={"text": "abcdef", "run": "local_p"}).json()["hypotheses"][0]
    assert local["window"]["width"] == 5 and len(local["window"]["bounds"]) == len(local["attention"])
    assert local["cross_attention"] is None

    plain = client.post("/translate", json={"text": "abc", "return_attention": False}).json()
    assert "attention" not in plain["hypotheses"][0] and "encoder_attention" not in plain


BAD = [  # (raw body, status, field, words in the message)
    (b"[1, 2]", 422, "body", "JSON object"),
    (b'{"text": null}', 422, "text", "expected a string, got null"),
    (b'{"text": "abc", "beam_size": 1e999}', 422, "beam_size", "expected a whole number"),
    (b'{"text": "abc", "beam_size": true}', 422, "beam_size", "expected a whole number (a JSON integer), got true"),
    (b'{"text": "abc", "beam_size": "3"}', 422, "beam_size", 'got "3"'),
    (b'{"text": "abc", "beam_size": 3.0}', 422, "beam_size", "got 3.0"),
    (b'{"text": "abc", "return_attention": 1}', 422, "return_attention", "expected true or false, got 1"),
    (b'{"text": 5}', 422, "text", "expected a string, got 5"),
    (b'{"text": "ab\\ud800c"}', 422, "text", "lone surrogate U+D800 at character 3"),
    (b'{"text": "abc", "beam_size": 0}', 422, "beam_size", "1 to 16"),
    (b'{"text": "abc", "beam_size": 99}', 422, "beam_size", "1 to 16"),
    (b'{"text": "abc", "beam_size": 2, "n_best": 3}', 422, "n_best", "must not exceed"),
    (b'{"text": "   "}', 422, "text", "empty"),
    (b'{"text": "' + b"a" * 201 + b'"}', 413, "text", "limit of 200"),
    (b'{"text": "abc", "run": "nope"}', 422, "run", "local_p, transformer, numpy"),
    (b'{"text": "abc", "beam": 3}', 422, "beam", "unknown field"),
    (b'{"text": ', 422, "body", "not valid JSON"),
    (b'{"text": "abc", "text": "def"}', 422, "text", "the key 'text' appears twice; give each field once"),
    (b'{"text": "abc", "beam_size": 1, "beam_size": 5}', 422, "beam_size", "appears twice"),
    (b'{"text": "abc", "run": "numpy", "beam_size": 3}', 422, "beam_size", "torch-only"),
    (b'{"text": "' + b"a" * 5000 + b'"}', 413, "text", "limit"),  # refused before it is parsed
]


@pytest.mark.parametrize("body, status, field, words", BAD, ids=[b[2] + "-" + b[3] for b in BAD])
def test_bad_requests_get_a_4xx_naming_the_field(client, body, status, field, words):
    r = client.post("/translate", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == status, r.text
    answer = r.json()
    assert answer["field"] == field and words in answer["error"], answer


# JSON values of every kind, and text a user may send: NUL, a lone surrogate, a decomposed accent
ODD_TEXT = ["abc", "\x00", "a\x00b", "\ud800", "ab\udfffc", "e\u0301", "   ", "", "\u200b", "z" * 250]
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 20),
    st.integers(),
    st.floats(),
    st.text(max_size=12),
    st.sampled_from(ODD_TEXT),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=6,
)
FIELDS = {
    "text": st.one_of(st.text(max_size=20), st.sampled_from(ODD_TEXT), json_values),
    "run": st.one_of(st.sampled_from(["local_p", "numpy", "transformer", "nope", "\ud800"]), json_values),
    "beam_size": st.one_of(st.none(), st.integers(-1, 18), json_values),
    "n_best": st.one_of(st.none(), st.integers(-1, 18), json_values),
    "return_attention": st.one_of(st.booleans(), json_values),
    "extra": json_values,
}
requests = st.fixed_dictionaries({}, optional=FIELDS).map(
    lambda body: json.dumps(body, ensure_ascii=True).encode()
)  # surrogates sent as \ud800 escapes
bodies = st.one_of(requests, requests, json_values.map(lambda v: json.dumps(v).encode()), st.binary(max_size=40))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bodies)
def test_any_body_gets_an_answer_or_a_4xx_naming_the_field_never_a_5xx(client, body):
    r = client.post("/translate", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code < 500 and "Traceback" not in r.text, (body, r.status_code, r.text)
    answer = r.json()
    if r.status_code == 200:
        assert set(answer) >= {"run", "source", "source_tokens", "unknown", "hypotheses"}
        assert answer["hypotheses"] and all(isinstance(h["output"], str) for h in answer["hypotheses"])
        assert all(isinstance(p, str) for p in answer["unknown"])
    else:
        assert 400 <= r.status_code < 500 and isinstance(answer["field"], str) and answer["field"], answer
        assert answer["error"].startswith(answer["field"] + ":"), answer


def test_control_characters_are_pieces_read_as_unknown_and_said(client):
    answer = client.post("/translate", json={"text": "ab\x00c", "run": "local_p"}).json()
    assert answer["source_tokens"] == ["a", "b", "\x00", "c"] and answer["unknown"] == ["\x00"]
    assert client.post("/translate", json={"text": "abc"}).json()["unknown"] == []


def test_a_decode_settings_error_names_the_field_its_key_names():
    """The field comes from the error's key, whatever its message says."""
    assert decode_field(ConfigError("must not exceed decode.beam_size", key="decode.n_best")) == "n_best"
    assert decode_field(ConfigError("decode.beam_size: too wide", key=None)) is None
    assert decode_field(ConfigError("train.lr: no", key="train.lr")) is None


def test_the_page_and_the_docs_are_served(client):
    page = client.get("/").text
    assert '<form id="form"' in page and "static/app.js" in page
    for asset in ("app.js", "panel.js", "heatmap.js", "style.css"):
        assert client.get(f"/static/{asset}").status_code == 200
    assert client.get("/docs").status_code == 200
    schema = client.get("/openapi.json").json()
    assert "/translate" in schema["paths"] and "TranslateRequest" in schema["components"]["schemas"]


def raw_request(port: int, head: bytes, body: bytes = b"") -> bytes:
    """The server's answer to bytes written as they are (the status line and headers)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head + body)
        s.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    return answer


def test_malformed_http_gets_4xx_never_a_hang(runs):
    app = create_app(load_runs([runs["local_p"]]), max_chars=100)
    with LiveServer(app) as server:
        for length in (b"-1", b"abc"):
            answer = raw_request(
                server.port,
                b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: "
                b"application/json\r\nContent-Length: " + length + b"\r\n\r\n",
                b'{"text": "a"}',
            )
            assert answer.startswith(b"HTTP/1.1 4"), answer[:100]
        # a body bigger than the limit, declared or sent in chunks, is refused with 413
        chunk = b'{"text": "' + b"a" * 2000 + b'"}'
        answer = raw_request(
            server.port,
            b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
            b"\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"%x\r\n" % (len(chunk) * 3) + chunk * 3 + b"\r\n0\r\n\r\n",
        )
        declared = raw_request(
            server.port,
            b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
            b"\r\nContent-Length: 100000000\r\n\r\n",
        )
        for reply in (answer, declared):  # the same JSON as any refusal, naming the field
            assert reply.startswith(b"HTTP/1.1 413"), reply[:100]
            body = json.loads(reply.partition(b"\r\n\r\n")[2])
            assert body["field"] == "text" and "over this server's limit of" in body["error"], body


@settings(max_examples=200, deadline=None)
@given(
    name=st.one_of(st.sampled_from(["localhost", "127.0.0.1", "::1", "evil.example", "LOCALHOST"]), st.text()),
    port=st.one_of(st.none(), st.integers(0, 65535)),
)
def test_a_host_header_is_answered_only_for_the_server_s_own_names(name, port):
    """allowed_hosts("127.0.0.1"): the loopback names, whatever their case and port; any other
    name (what a page of another site sends through DNS rebinding) is not one of them."""
    hosts = allowed_hosts("127.0.0.1")
    shown = f"[{name}]" if ":" in name else name
    header = (shown if port is None else f"{shown}:{port}").encode("utf-8", "surrogatepass")
    assert (host_name(header) in hosts) == (name.lower() in {"localhost", "127.0.0.1", "::1"})
    assert allowed_hosts("127.0.0.1", ["*"]) is None
    assert "my.example" in allowed_hosts("127.0.0.1", ["My.Example"])


def test_the_server_refuses_a_host_that_is_not_its_own_with_a_421_naming_the_header(runs, capsys):
    """DNS rebinding: a request naming another site's host gets a JSON 421 naming the Host field and
    the option that allows it; the server's own names are answered; serve --allowed-host adds one."""
    app = create_app(load_runs([runs["local_p"]]), hosts=allowed_hosts("127.0.0.1", ["box.example"]))
    body = json.dumps({"text": "abc"}).encode()
    with LiveServer(app) as server:

        def ask(host: str) -> tuple[int, dict]:
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
            try:
                connection.putrequest("POST", "/translate", skip_host=True)
                connection.putheader("Host", host)
                connection.putheader("Content-Type", "application/json")
                connection.putheader("Content-Length", str(len(body)))
                connection.endheaders(body)
                answer = connection.getresponse()
                return answer.status, json.loads(answer.read())
            finally:
                connection.close()

        for refused in ("evil.example", f"evil.example:{server.port}", "", "127.0.0.1.evil.example"):
            status, reply = ask(refused)
            assert status == 421 and reply["field"] == "Host" and "--allowed-host" in reply["error"], reply
        for own in (f"127.0.0.1:{server.port}", "localhost", "LOCALHOST:1", "[::1]:80", "box.example"):
            status, reply = ask(own)
            assert status == 200 and reply["hypotheses"], (own, reply)
    assert main(["serve", str(runs["local_p"]), "--allowed-host"]) == 2  # the option takes a name
    assert "--allowed-host: expected one argument" in capsys.readouterr().err


def test_an_answer_says_when_the_model_read_only_the_start_of_its_source(runs):
    """A source longer than decode.max_source_len is read in part: the Translation and the
    server's answer say so (``cut``), where they said nothing before."""
    from attnseq.serve.payload import translation_payload

    translator = attnseq.load(runs["local_p"], overrides=["decode.max_source_len=3"])
    long, short = translator.search(["abcdef", "abc"])
    assert long.cut and not short.cut and len(long.source_tokens) == 3
    assert translation_payload("run", translator, long, with_attention=False)["cut"] is True


def post(port: int, body: dict) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        connection.request("POST", "/translate", json.dumps(body), {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_concurrent_requests_answer_as_sequential_decoding(runs):
    """60 requests at once to two runs with two beam sizes: all answered, none 5xx, each
    exactly what decoding it alone gives."""
    paths = [runs["local_p"], runs["transformer"]]
    texts = ["abc", "fedcba", "aabbcc", "bad", "cafe", "dcbaef"]
    requests = [
        {
            "text": texts[i % len(texts)],
            "run": ["local_p", "transformer"][i % 2],
            "beam_size": 1 + 2 * (i % 3 == 0),
            "return_attention": i % 4 == 0,
        }
        for i in range(60)
    ]
    answers: list = [None] * len(requests)
    with LiveServer(create_app(load_runs(paths))) as server:
        start = threading.Barrier(len(requests))

        def send(i):
            start.wait()
            answers[i] = post(server.port, requests[i])

        threads = [threading.Thread(target=send, args=(i,)) for i in range(len(requests))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    models = {name: attnseq.load(path) for name, path in zip(["local_p", "transformer"], paths)}
    for request, (status, answer) in zip(requests, answers):
        assert status == 200, answer
        alone = models[request["run"]].search(
            [request["text"]], beam_size=request["beam_size"], n_best=request["beam_size"]
        )[0]
        assert [h["output"] for h in answer["hypotheses"]] == alone.outputs
        assert [h["score"] for h in answer["hypotheses"]] == pytest.approx(alone.scores, abs=1e-4)


def test_run_names_tell_folders_apart(runs):
    assert run_names(["runs/a/run", "runs/b/run"]) == ["a/run", "b/run"]
    assert run_names(["runs/demo", "x/tf"]) == ["demo", "tf"]
    loaded = load_runs([f"rnn={runs['local_p']}", str(runs["transformer"])])
    assert [r.name for r in loaded] == ["rnn", "transformer"] and loaded[0].path == str(runs["local_p"])


@pytest.mark.parametrize(
    "args, words",
    [
        (["--port", "99999"], ["--port", "0 to 65535", "99999"]),
        (["--host", "no.such.host.invalid"], ["--host", "no.such.host.invalid"]),
        (["--max-chars", "0"], ["--max-chars", "from 1"]),
    ],
)
def test_serve_arguments_are_one_line_errors(runs, args, words, capsys):
    assert main(["serve", str(runs["numpy"]), *args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and all(w in lines[0] for w in words), lines


def test_serve_refuses_a_folder_that_is_not_a_run(tmp_path, capsys):
    assert main(["serve", str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err


def test_a_fault_in_decoding_is_a_json_500_its_traceback_only_in_the_log_and_the_server_goes_on(
    runs, monkeypatch, caplog
):
    loaded = load_runs([runs["local_p"]])
    translator = loaded[0].translator
    search = translator.search

    def faulty(texts, **kw):
        if texts == ["boom"]:
            raise RuntimeError("secret detail /srv/private/path")
        return search(texts, **kw)

    monkeypatch.setattr(translator, "search", faulty)
    with TestClient(create_app(loaded), raise_server_exceptions=False) as c, caplog.at_level(logging.ERROR):
        r = c.post("/translate", json={"text": "boom"})
        assert r.status_code == 500 and r.json() == {
            "error": "internal error: the request could not be answered (the server's log says why)",
            "field": None,
        }
        assert "RuntimeError" not in r.text and "secret" not in r.text and "Traceback" not in r.text
        assert "secret detail /srv/private/path" in caplog.text and "RuntimeError" in caplog.text  # the log has it
        assert c.post("/translate", json={"text": "abc"}).status_code == 200


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    length=st.one_of(
        st.integers(0, 10**30).map(lambda n: str(n).encode()),
        st.binary(max_size=30),
        st.text("0123456789", max_size=40).map(str.encode),
        st.tuples(st.integers(0, 5000), st.integers(4000, 6000)).map(  # past int()'s 4,300 digits
            lambda z: b"0" * z[0] + b"7" * z[1]
        ),
        st.integers(4000, 6000).map(lambda n: b"0" * n + b"5"),
    )
)
def test_any_declared_length_gets_an_answer_never_a_5xx(client, length):
    """Whatever a request's Content-Length says (a number, digits past what int() reads, bytes
    that are no number), the application answers: a 413 in JSON naming the field when it is over
    the limit, else what the body itself gets; never a 5xx. Sent to the application itself, in
    front of the HTTP parser that refuses the worst of them on the wire."""
    import asyncio

    app, limit = client.app, client.app.state.served.limits.body_bytes
    body, answer = b'{"text": "abc"}', []

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        answer.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/translate",
        "raw_path": b"/translate",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"content-length", length)],
        "http_version": "1.1",
        "scheme": "http",
        "server": ("test", 80),
        "client": ("test", 1),
        "root_path": "",
        "app": app,
    }
    asyncio.run(app(scope, receive, send))
    status = answer[0]["status"]
    assert status < 500, (length[:40], answer)
    digits = length.lstrip(b"0")
    if length.isdigit() and (len(digits) > 18 or int(digits or b"0") > limit):
        reply = json.loads(b"".join(m.get("body", b"") for m in answer[1:]))
        assert status == 413 and reply["field"] == "text", reply
