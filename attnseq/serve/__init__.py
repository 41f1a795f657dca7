"""``attnseq serve``: the attention page and its JSON API (FastAPI on uvicorn), and the same
page written as one self-contained file (``attnseq plot attention --html``).

- ``payload.py``: what the page receives of a run and of a translation (JSON-ready dicts);
- ``schemas.py``: the API's request and response models (validation, OpenAPI at /docs);
- ``batcher.py``: one decoding thread per run that decodes concurrent requests together;
- ``app.py``: the FastAPI application over one or more loaded runs;
- ``server.py``: the listening socket and uvicorn;
- ``report.py``: the page with its data built in, for files;
- ``static/``: the page (HTML, CSS, JavaScript; no build step, nothing from the network).
"""
