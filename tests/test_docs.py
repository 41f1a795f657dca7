"""The documentation site (mkdocs.yml over docs/): ``mkdocs build --strict`` builds it, so every link
between its pages and to a heading of one resolves; every page of docs/ is in its nav; and the
README's links (the README is not a page of the site) name files of the checkout."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from helpers import ROOT

PAGES = (".md", ".ipynb")  # what the site renders as pages (notebooks through mkdocs-jupyter)


def site_config():
    """mkdocs.yml as mkdocs reads it (its nav, and exclude_docs as the patterns mkdocs matches)."""
    from mkdocs.config import load_config

    return load_config(str(ROOT / "mkdocs.yml"))


def nav_files(nav) -> list[str]:
    """The files the nav names, in its order (sections opened)."""
    files = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        files += nav_files(value) if isinstance(value, list) else [value]
    return files


def test_every_page_is_in_the_nav():
    """Each Markdown page and notebook of docs/ that the site does not exclude (exclude_docs) is in
    the nav once, and each file the nav names is in docs/."""
    config = site_config()
    docs = ROOT / config.docs_dir
    pages = {
        path.relative_to(docs).as_posix()
        for path in docs.rglob("*")
        if path.suffix in PAGES and not config.exclude_docs.match_file(path.relative_to(docs).as_posix())
    }
    nav = nav_files(config.nav)
    assert not pages - set(nav), f"pages of docs/ that are not in mkdocs.yml's nav: {sorted(pages - set(nav))}"
    assert not set(nav) - pages, f"mkdocs.yml's nav names what docs/ lacks: {sorted(set(nav) - pages)}"
    assert len(nav) == len(set(nav)), f"mkdocs.yml's nav names a page twice: {nav}"


def test_readme_links_name_files_of_the_checkout():
    """Each relative link and image of README.md (docs/..., on GitHub) names a file or folder here."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = [t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"\w+:", t)]
    assert targets
    missing = [target for target in targets if target and not (ROOT / target).exists()]
    assert not missing, f"README.md links to what the checkout lacks: {missing}"


def test_the_site_builds_strictly(tmp_path):
    """``mkdocs build --strict`` into a temporary folder succeeds (a warning, such as a link to a
    missing page or heading, fails it) and writes the home page and every page of the nav."""
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml")]
        + ["--site-dir", str(site)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=600,
    )
    assert done.returncode == 0, f"mkdocs build --strict: exit status {done.returncode}\n{done.stderr[-5000:]}"
    written = [
        page
        for page in nav_files(site_config().nav)
        if not (site / re.sub(r"(^|/)(index|README)$", r"\1", page.rsplit(".", 1)[0]) / "index.html").is_file()
    ]
    assert (site / "index.html").is_file() and not written, f"no HTML page written for {written}"
