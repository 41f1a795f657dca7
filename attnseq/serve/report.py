"""The attention page as one self-contained file: the page's own CSS and JavaScript and the
data of every input, for sharing without a server (``attnseq plot attention --html``)."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

STATIC = Path(__file__).parent / "static"
SCRIPTS = ("heatmap.js", "imagestrip.js", "spectrogram.js", "panel.js", "report.js")


def inline_json(value: Any) -> str:
    """JSON that is safe inside a <script> element: every "<" (only ever inside a string) as
    \\u003c, so no "</script>" or "<!--" in the data can end or bend the element."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False).replace("<", "\\u003c")


def report_html(run: dict[str, Any], items: Sequence[dict[str, Any]], title: str) -> str:
    """The page: ``run`` as GET /runs describes it, ``items`` as POST /translate answers."""
    style = (STATIC / "style.css").read_text(encoding="utf-8")
    scripts = "\n".join(f"<script>\n{(STATIC / name).read_text(encoding='utf-8')}\n</script>" for name in SCRIPTS)
    data = inline_json({"run": run, "items": list(items)})
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<link rel="icon" href="data:,">
<style>
{style}
</style>
</head>
<body>
<header class="top">
  <h1>{html.escape(title)}</h1>
  <p class="muted">{html.escape(run.get("description", ""))}: {len(items)} inputs, written by attnseq plot attention --html</p>
</header>
<main id="panels"></main>
<script type="application/json" id="attnseq-data">{data}</script>
{scripts}
</body>
</html>
"""
