"""The docs site: `bash scripts/docs.sh` builds _site/ from the notebooks, and, served over HTTP and opened in Chromium,
every page loads with no console error and no request leaving the site; search finds the checks page; every API card
shows its signature; no code block or output is clipped; every site's picture is on the sites page; the views page's
EpisodeViewer steps without a kernel and the dashboard's figures are drawn."""
import functools, http.server, re, shutil, subprocess, threading
from pathlib import Path

import pytest

from webmix.world.servers import free_ports

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

# An element inside the page's text whose content is wider than it and that neither scrolls nor lets it show: clipped.
CLIPPED_JS = """() => [...document.querySelectorAll('article *')].filter(e => {
    const ox = getComputedStyle(e).overflowX;
    return e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0 && !['auto', 'scroll', 'visible'].includes(ox);
}).map(e => e.tagName + '.' + e.className + ': ' + (e.textContent || '').slice(0, 60))"""

# Each card: its heading, then the signature's code block (nbdev's show_doc), naming the card's last name part.
CARDS_JS = """() => [...document.querySelectorAll('.wm-card')].map(h => {
    const sig = h.nextElementSibling, name = h.id.split('.').pop();
    const code = sig && sig.querySelector('code') ? sig.querySelector('code').textContent : '';
    return {id: h.id, ok: /\\b(def|class)\\s/.test(code) && code.includes(name) && code.includes('(')};
})"""


@pytest.fixture(scope="module")
def site():
    "_site/ as scripts/docs.sh builds it, served on loopback."
    p = subprocess.run(["bash", "scripts/docs.sh"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    out = ROOT / "_site"
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    handler.log_message = lambda *a: None
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", free_ports(1)[0]), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield {"dir": out, "base": f"http://127.0.0.1:{srv.server_address[1]}"}
    srv.shutdown()


def notebook_pages() -> list:
    "The page each notebook becomes: its path under nbs/, .html for .ipynb."
    return sorted(p.relative_to(ROOT / "nbs").with_suffix(".html").as_posix() for p in (ROOT / "nbs").rglob("*.ipynb")
                  if not any(s.startswith(".") for s in p.parts))


def test_the_site_searches_shows_cards_clips_nothing_and_its_viewers_step(site):
    from playwright.sync_api import sync_playwright
    from webmix.world.sites import load_sites
    pages = notebook_pages() + ["sites.html", "api.html"]
    missing = [p for p in pages if not (site["dir"] / p).is_file()]
    assert not missing, missing
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors, outside = [], []
        page.on("console", lambda m: errors.append(f"{page.url}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))
        page.route("**/*", lambda r: (r.continue_() if r.request.url.startswith((site["base"], "data:", "blob:"))
                                      else (outside.append(r.request.url), r.abort())))
        cards, clipped = [], []
        for name in pages:
            page.goto(f"{site['base']}/{name}", wait_until="load")
            assert page.locator("nav.md-nav--primary a").count() >= 60, name          # the whole sidebar on every page
            cards += [dict(c, page=name) for c in page.evaluate(CARDS_JS)]
            clipped += [f"{name}: {c}" for c in page.evaluate(CLIPPED_JS)]
        assert not errors, errors[:5]
        assert not outside, outside[:5]
        assert not clipped, clipped[:10]
        assert len(cards) > 300 and not [c for c in cards if not c["ok"]], [c for c in cards if not c["ok"]][:5]
        assert any(c["id"] == "webmix.views.episode_viewer.EpisodeViewer" for c in cards)
        # search, in the browser: "gate" finds the checks page
        page.goto(f"{site['base']}/index.html", wait_until="load")
        page.locator("label.md-search__icon, .md-search__input").first.click()
        page.locator("input.md-search__input").fill("gate")
        page.wait_for_selector(".md-search-result__item", timeout=30_000)
        hits = page.eval_on_selector_all(".md-search-result__link", "es => es.map(e => e.getAttribute('href'))")
        assert any("world/03_checks.html" in h for h in hits), hits[:10]
        # every site's picture, loaded, on the sites page
        page.goto(f"{site['base']}/sites.html", wait_until="load")
        for n in load_sites():
            img = page.locator(f"figure#site-{n} img")
            img.scroll_into_view_if_needed()
            assert img.evaluate("i => i.complete && i.naturalWidth > 100"), n
        # the views page: a live EpisodeViewer without a kernel, and figures drawn by the site's own plotly.js
        page.goto(f"{site['base']}/views/02_episode_viewer.html", wait_until="load")
        viewer = page.locator(".wm-episode").first
        assert viewer.locator("img").first.get_attribute("src").startswith("data:image/jpeg")
        label, action = viewer.locator(".wm-label"), viewer.locator(".wm-action")
        n = int(re.search(r"of (\d+)", label.inner_text()).group(1))
        assert n >= 2 and label.inner_text() == f"step 1 of {n}"
        first_action, first_src = action.inner_text(), viewer.locator(".wm-before img").get_attribute("src")
        viewer.locator("input[type=range]").focus()
        page.keyboard.press("ArrowRight")                      # the slider moves one step
        assert label.inner_text() == f"step 2 of {n}"
        assert action.inner_text() != first_action or viewer.locator(".wm-before img").get_attribute("src") != first_src
        viewer.locator(".wm-next").click()
        assert label.inner_text() == f"step {min(3, n)} of {n}"
        page.goto(f"{site['base']}/views/05_dashboard.html", wait_until="load")
        assert page.locator(".wm-plotly .main-svg").count() >= 1
        assert not errors, errors
        browser.close()


def test_the_command_reference_is_the_live_help():
    "The docs' Commands page (nbs/92_commands.ipynb, as saved) is every command's --help as the command line prints it."
    import json, os, sys
    from webmix.cli import command_helps
    cell = json.loads((ROOT / "nbs" / "92_commands.ipynb").read_text())["cells"][-1]
    shown = "".join(cell["outputs"][0]["data"]["text/markdown"])
    # as a user's shell has it: the tests' own WEBMIX_BACKEND (local, for their patches) would change one default
    env = {k: v for k, v in os.environ.items() if k != "WEBMIX_BACKEND"}
    live = subprocess.run([sys.executable, "-c", "from webmix.cli import command_reference; print(command_reference(), end='')"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT).stdout
    assert shown == live, "nbs/92_commands.ipynb is not the live --help of every command: run it again"
    assert len(command_helps()) >= 20 and all(f"## `{name}`" in shown for name in command_helps())
