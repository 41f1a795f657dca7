"""``attnseq serve RUN_DIR``: a page where a person types a sentence and sees the model's output
and its attention. Standard library HTTP server; the page draws the heatmap itself."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ..errors import UserError

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>attnseq</title>
<style>
 body { font: 15px system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
 input[type=text] { width: 70%; font-size: 16px; padding: .4em; }
 button { font-size: 16px; padding: .4em 1em; }
 #output { font: 20px monospace; margin: 1em 0; }
 table.heat { border-collapse: collapse; font: 12px monospace; }
 table.heat td { width: 1.6em; height: 1.6em; text-align: center; }
 table.heat th { font-weight: normal; padding: 0 .3em; }
 .muted { color: #777; }
</style></head><body>
<h1>attnseq</h1>
<p class="muted">Model: <span id="model"></span></p>
<form id="form"><input id="text" type="text" autofocus placeholder="Type a sentence, e.g. september 27, 1994">
<label> beam <input id="beam_size" type="number" min="1" max="16" value="1" style="width:3em"></label>
<button>Translate</button></form>
<div id="output"></div>
<div id="heat"></div>
<script>
const esc = s => s.replace(/[&<>]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;"}[c]));
const show = t => t === " " ? "\\u2423" : esc(t);
fetch("info").then(r => r.json()).then(i => { document.getElementById("model").textContent = i.model; });
async function translate() {
  const text = document.getElementById("text").value;
  const beam_size = parseInt(document.getElementById("beam_size").value || "1");
  const r = await fetch("translate", {method: "POST", headers: {"Content-Type": "application/json"},
                                      body: JSON.stringify({text, beam_size})});
  const res = await r.json();
  if (res.error) { document.getElementById("output").textContent = res.error; return; }
  document.getElementById("output").textContent = res.output;
  const a = res.attention;
  if (!a) { document.getElementById("heat").innerHTML = "<p class=muted>(this model has no attention)</p>"; return; }
  const rows = res.output_tokens.concat(["</s>"]).slice(0, a.length);
  let html = "<table class=heat><tr><th></th>" + res.source_tokens.map(t => "<th>" + show(t) + "</th>").join("") + "</tr>";
  a.forEach((row, i) => {
    html += "<tr><th>" + show(rows[i] || "") + "</th>" + row.map(w => {
      const v = Math.round(255 * (1 - w));
      return `<td title="${w.toFixed(3)}" style="background:rgb(${v},${v},255)"></td>`;
    }).join("") + "</tr>";
  });
  document.getElementById("heat").innerHTML = html + "</table>";
}
document.getElementById("form").addEventListener("submit", e => { e.preventDefault(); translate(); });
const given = new URLSearchParams(location.search).get("text");  // links like /?text=3/4/21
if (given) { document.getElementById("text").value = given; translate(); }
</script></body></html>
"""


def make_handler(translator, name: str, lock: threading.Lock):
    """A request handler class serving the page and the JSON endpoints for ``translator``."""

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, payload: dict) -> None:
            self._send(status, json.dumps(payload).encode("utf-8"), "application/json")

        def do_GET(self):  # noqa: N802 (http.server's naming)
            if self.path.split("?")[0] in ("/", "/index.html"):
                self._send(200, PAGE.encode("utf-8"), "text/html; charset=utf-8")
            elif self.path == "/info":
                self._json(200, {"model": name})
            else:
                self._json(404, {"error": "not found"})

        def do_POST(self):  # noqa: N802
            if self.path != "/translate":
                return self._json(404, {"error": "not found"})
            try:
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(min(length, 100_000)) or b"{}")
                text = str(request.get("text", ""))[:2000]
                beam = max(1, min(int(request.get("beam_size", 1)), 16))
            except (ValueError, TypeError):
                return self._json(400, {"error": "expected JSON {\"text\": ..., \"beam_size\": n}"})
            if not text.strip():
                return self._json(400, {"error": "empty input"})
            try:
                with lock:  # one decode at a time: torch modules are not re-entrant
                    result = translator.search([text], keep_attention=True, beam_size=beam)[0]
            except UserError as err:
                return self._json(400, {"error": str(err)})
            attention = result.attention[0]
            self._json(200, {
                "output": result.outputs[0],
                "score": result.scores[0],
                "source_tokens": result.source_tokens,
                "output_tokens": result.output_tokens[0],
                "attention": None if attention is None else attention.round(4).tolist(),
            })

        def log_message(self, format, *args):  # quiet: no line per request
            pass

    return Handler


def make_server(translator, name: str, host: str = "127.0.0.1", port: int = 8000) -> ThreadingHTTPServer:
    """An HTTP server (not yet serving) for ``translator``; port 0 picks a free port."""
    return ThreadingHTTPServer((host, port), make_handler(translator, name, threading.Lock()))
