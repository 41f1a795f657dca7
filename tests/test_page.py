"""The attention page as a person uses it, in a real headless Chromium (Debian's ``chromium``
driven by Playwright; no browser is downloaded): type a sentence, press Enter, read the
heatmaps, pick the second hypothesis of the beam, switch a Transformer head and the encoder's
self-attention, hover a cell, follow the permalink, download the SVG, see an error message."""

from __future__ import annotations

import json
import shutil
import urllib.request

import pytest
from helpers import LiveServer, train_quick, write_reverse_dir

from attnseq.serve.app import create_app, load_runs

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium() -> str:
    """Debian's Chromium, or a skip that says how to get it (.ci/run installs it)."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("no Chromium to drive: install Debian's package (apt-get install chromium); .ci/run does")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("Playwright for Python is not installed (pip install -e '.[dev]')")
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The page over a recurrent run and a Transformer trained a few hundred steps on the
    reversal task, and a NumPy-engine run (greedy only)."""
    browser = chromium()
    root = tmp_path_factory.mktemp("page")
    data = write_reverse_dir(root / "data")
    runs = [
        train_quick("rnn", data, root / "rnn", steps=300, extra=("train.batch_size=32", "train.epochs=50")),
        train_quick(
            "transformer",
            data,
            root / "transformer",
            steps=300,
            extra=(
                "train.lr=0.003",
                "train.schedule={name: noam, warmup_steps: 60}",
                "train.batch_size=32",
                "train.epochs=50",
            ),
        ),
        train_quick("numpy", data, root / "numpy"),
    ]
    with LiveServer(create_app(load_runs(runs))) as live:
        live.browser = browser
        yield live


@pytest.fixture(scope="module")
def page(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=server.browser, args=CHROMIUM_FLAGS)
        context = browser.new_context(viewport={"width": 1500, "height": 1000}, accept_downloads=True)
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.errors = errors
        yield page
        browser.close()


def api(server, **body) -> dict:
    request = urllib.request.Request(
        server.url + "translate", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    return json.loads(urllib.request.urlopen(request, timeout=60).read())


def heatmap(page, run: str):
    return page.locator(f'.panel[data-run="{run}"] svg.heatmap')


def svg_text(page, run: str) -> str:
    return heatmap(page, run).evaluate("svg => svg.outerHTML")


@pytest.mark.slow
def test_a_person_reads_the_attention_of_each_model(server, page, tmp_path):
    page.goto(server.url)
    page.wait_for_selector("body[data-ready=true]")
    page.fill("#text", "abcdef")
    page.fill("#beam", "3")
    page.press("#text", "Enter")
    page.wait_for_selector('.panel[data-run="transformer"] svg.heatmap')
    page.wait_for_selector('.panel[data-run="rnn"] svg.heatmap')
    page.screenshot(path=str(tmp_path / "submitted.png"), full_page=True)

    # each heatmap: one row per output token and the end step, one column per source token
    for run in ("rnn", "transformer"):
        expected = api(server, text="abcdef", run=run, beam_size=3)["hypotheses"]
        svg = heatmap(page, run)
        assert svg.get_attribute("data-cols") == "6"
        assert int(svg.get_attribute("data-rows")) == len(expected[0]["attention"])
        assert svg.locator("text.col-label").all_text_contents() == list("abcdef")
        rows = svg.locator("text.row-label").all_text_contents()
        assert rows == expected[0]["output_tokens"] + ["</s>"] * (len(rows) - len(expected[0]["output_tokens"]))
        assert svg.locator("rect.cell").count() == 6 * len(rows)
        outputs = page.locator(f'.panel[data-run="{run}"] button.hyp .out').all_text_contents()
        assert outputs == [h["output"] or "∅" for h in expected]
        assert page.locator(f'.panel[data-run="{run}"] output.text').inner_text() == (
            expected[0]["output"] or "∅ (empty)"
        )
    assert page.locator('.panel[data-run="rnn"] output.text').inner_text() == "fedcba"  # it learned the task

    # the second hypothesis of the beam: its own output and attention
    before = svg_text(page, "rnn")
    page.click('.panel[data-run="rnn"] button.hyp[data-index="1"]')
    assert page.locator('.panel[data-run="rnn"] button.hyp[data-index="1"]').get_attribute("aria-pressed") == "true"
    assert svg_text(page, "rnn") != before
    second = api(server, text="abcdef", run="rnn", beam_size=3)["hypotheses"][1]
    assert page.locator('.panel[data-run="rnn"] output.text').inner_text() == (second["output"] or "∅ (empty)")

    # a Transformer head, a layer, the encoder's self-attention
    transformer = page.locator('.panel[data-run="transformer"]')
    assert transformer.locator("select.head option").count() == 1 + 4  # the average and 4 heads
    assert transformer.locator("select.layer option").count() == 2
    average = svg_text(page, "transformer")
    transformer.locator("select.head").select_option("1")
    assert "head 2" in transformer.locator(".caption").inner_text()
    assert svg_text(page, "transformer") != average
    transformer.locator("select.layer").select_option("0")
    assert "layer 1" in transformer.locator(".caption").inner_text()
    page.screenshot(path=str(tmp_path / "heads.png"), full_page=True)
    transformer.locator("select.view").select_option("encoder")
    encoder = heatmap(page, "transformer")
    assert encoder.get_attribute("data-rows") == encoder.get_attribute("data-cols") == "6"
    transformer.locator("select.view").select_option("cross")

    # hovering a cell reads out both tokens and the weight
    heatmap(page, "rnn").locator('rect.cell[data-row="0"][data-col="5"]').hover()
    weight = float(heatmap(page, "rnn").locator('rect.cell[data-row="0"][data-col="5"]').get_attribute("data-weight"))
    hover = page.locator('.panel[data-run="rnn"] .hover').inner_text()
    assert "“f” (6)" in hover and f"{weight:.4f}" in hover

    # the NumPy run searches greedily only: its panel says so instead of failing silently
    assert "torch-only" in page.locator('.panel[data-run="numpy"] .error').inner_text()

    # the heatmap as an SVG file
    with page.expect_download() as download:
        page.click('.panel[data-run="rnn"] button.download-svg')
    saved = tmp_path / "attention.svg"
    download.value.save_as(saved)
    assert saved.read_text().startswith("<?xml") and "<svg" in saved.read_text()
    with page.expect_download() as download:
        page.click('.panel[data-run="rnn"] button.download-png')
    download.value.save_as(tmp_path / "attention.png")
    assert (tmp_path / "attention.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # the permalink reproduces the screen: the text, the beam, the hypothesis, the layer and head
    link = page.url
    assert "text=abcdef" in link and "beam=3" in link
    fresh = page.context.new_page()
    fresh.goto(link)
    fresh.wait_for_selector("body[data-ready=true]")
    assert fresh.input_value("#text") == "abcdef"
    assert fresh.locator('.panel[data-run="rnn"] button.hyp[data-index="1"]').get_attribute("aria-pressed") == "true"
    assert svg_text(fresh, "rnn") == svg_text(page, "rnn")
    assert "layer 1, head 2" in fresh.locator('.panel[data-run="transformer"] .caption').inner_text()
    fresh.close()

    # a bad request: the server's message is on the page
    page.fill("#text", "   ")
    page.press("#text", "Enter")
    page.wait_for_selector("#message:not([hidden])")
    assert "text: empty" in page.locator("#message").inner_text()
    assert page.errors == []


@pytest.mark.slow
def test_a_copying_model_shows_p_gen_beside_its_rows(page, quick_runs):
    runs = load_runs([quick_runs["copy"]])
    with LiveServer(create_app(runs)) as live:
        page.goto(live.url)
        page.wait_for_selector("body[data-ready=true]")
        page.fill("#text", "send the report to Zorblatt")
        page.press("#text", "Enter")
        page.wait_for_selector("svg.heatmap rect.p-gen-cell")
        expected = api(live, text="send the report to Zorblatt")["hypotheses"][0]
        cells = page.locator("svg.heatmap rect.p-gen-cell")
        assert cells.count() == len(expected["attention"]) == len(expected["p_gen"])
        assert [float(c.get_attribute("data-p-gen")) for c in cells.all()] == expected["p_gen"]
        assert page.locator(".panel p.cut").count() == 0
        runs[0].translator.config.decode.max_source_len = 2  # a longer source is read in part, and the page says so
        page.fill("#text", "send the report")
        page.press("#text", "Enter")
        page.wait_for_selector(".panel p.cut")
        assert "Only the start of this input was read" in page.locator(".panel p.cut").inner_text()
        assert api(live, text="send the report")["cut"] is True
    assert page.errors == []


@pytest.mark.slow
def test_the_api_docs_render_without_the_network(server, page):
    """/docs is FastAPI's Swagger UI with its scripts served by attnseq itself: every request
    the page makes goes to this server, and it lists the endpoints."""
    elsewhere = []
    page.on("request", lambda r: None if r.url.startswith(server.url) else elsewhere.append(r.url))
    page.goto(server.url + "docs")
    page.wait_for_selector("text=/translate", timeout=30000)
    assert page.locator(".opblock-summary-path").all_text_contents() == ["/runs", "/translate", "/translate/file"]
    assert elsewhere == []


@pytest.mark.slow
def test_an_image_upload_shows_a_strip_of_overlays(page, quick_runs, tmp_path):
    """Beside a text run, a run that reads images: the page offers a file field, the chosen image
    is decoded by the image run (the text run answers the typed text), and each output step is
    an overlay of the image, as many as the answer's attention rows; hovering one names its token."""
    from helpers import bar_image
    from PIL import Image

    path = tmp_path / "bars.png"
    Image.fromarray(bar_image(["B", "s", "B"])).save(path)
    with LiveServer(create_app(load_runs([quick_runs["image"], quick_runs["rnn"]]))) as live:
        page.goto(live.url)
        page.wait_for_selector("body[data-ready=true]")
        assert page.locator("#file").is_visible() and page.locator("#text").is_visible()
        page.fill("#text", "abc")
        page.set_input_files("#file", str(path))  # choosing the file translates
        page.wait_for_selector('.panel[data-run="image"] .strip[data-drawn=true]')
        request = urllib.request.Request(live.url + "translate/file?run=image", path.read_bytes(), method="POST")
        expected = json.loads(urllib.request.urlopen(request, timeout=60).read())
        assert expected["source_shape"]["kind"] == "image"
        overlays = page.locator('.panel[data-run="image"] canvas.overlay')
        assert overlays.count() == len(expected["hypotheses"][0]["attention"])
        assert page.locator('.panel[data-run="image"] .output .text').inner_text() == (
            expected["hypotheses"][0]["output"] or "∅ (empty)"
        )
        overlays.first.hover()
        hover = page.locator('.panel[data-run="image"] .hover').inner_text()
        assert "looks most at row" in hover and f"of the {expected['source_shape']['grid'][0]} ×" in hover
        assert page.locator('.panel[data-run="rnn"] svg.heatmap').count() == 1  # the text run read the text
    assert page.errors == []


@pytest.mark.slow
def test_an_audio_upload_plays_and_shows_the_spectrogram_with_the_attention_over_it(page, quick_runs, tmp_path):
    """Beside a text run, a run that reads audio: the page offers a file field for WAV files, the
    chosen WAV is decoded by the audio run, and its panel holds an audio player of the upload, the
    spectrogram the run read (the answer's) and one row of the attention over the frames per
    output step; hovering a row names its token and where it looks."""
    from helpers import tone_samples

    from attnseq.data.audio import wav_bytes

    path = tmp_path / "tones.wav"
    path.write_bytes(wav_bytes(tone_samples(["h", "l", "h"])))
    with LiveServer(create_app(load_runs([quick_runs["audio"], quick_runs["rnn"]]))) as live:
        page.goto(live.url)
        page.wait_for_selector("body[data-ready=true]")
        assert page.locator("#file").is_visible() and ".wav" in page.locator("#file").get_attribute("accept")
        page.fill("#text", "abc")
        page.set_input_files("#file", str(path))  # choosing the file translates
        panel = '.panel[data-run="audio"]'
        page.wait_for_selector(f"{panel} .speech[data-drawn=true]")
        request = urllib.request.Request(live.url + "translate/file?run=audio", path.read_bytes(), method="POST")
        expected = json.loads(urllib.request.urlopen(request, timeout=60).read())
        assert expected["source_shape"]["kind"] == "audio"
        assert len(expected["spectrogram"]) == expected["source_shape"]["size"][0]
        assert page.locator(f"{panel} audio").get_attribute("src").startswith("blob:")
        assert page.locator(f"{panel} audio").evaluate("a => a.controls")
        assert page.locator(f"{panel} canvas.spectrogram").count() == 1
        rows = len(expected["hypotheses"][0]["attention"])
        grid = page.locator(f"{panel} canvas.frames-attention")
        assert grid.evaluate("c => c.height") == 16 * rows
        assert page.locator(f"{panel} .output .text").inner_text() == (
            expected["hypotheses"][0]["output"] or "∅ (empty)"
        )
        grid.hover(position={"x": 5, "y": 3})
        hover = page.locator(f"{panel} .hover").inner_text()
        assert "looks most at listener step" in hover and f"of {expected['source_shape']['grid'][0]} (" in hover
        assert page.locator('.panel[data-run="rnn"] svg.heatmap').count() == 1  # the text run read the text
    assert page.errors == []
