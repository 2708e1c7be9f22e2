"""The docs site: `bash scripts/docs.sh` builds _site/ from the notebooks, and every page, served over HTTP and opened
in Chromium, loads with no console error and no request leaving the site; the views page carries a live EpisodeViewer
whose slider changes the step shown."""
import functools, http.server, re, shutil, subprocess, threading
from pathlib import Path

import pytest

from webmix.world.servers import free_ports

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def site():
    "_site/ as scripts/docs.sh builds it, served on loopback."
    p = subprocess.run(["bash", "scripts/docs.sh"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    out = ROOT / "_site"
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    handler.log_message = lambda *a: None
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", free_ports(1)[0]), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield {"dir": out, "base": f"http://127.0.0.1:{srv.server_address[1]}"}
    srv.shutdown()


def test_every_page_loads_offline_and_the_episode_viewer_steps(site):
    from playwright.sync_api import sync_playwright
    pages = sorted(p.name for p in site["dir"].glob("*.html"))
    notebooks = sorted("-".join(p.relative_to(ROOT / "nbs").with_suffix("").parts)
                       for p in (ROOT / "nbs").rglob("*.ipynb") if p.stem != "index")
    assert "index.html" in pages and "api.html" in pages and all(f"{n}.html" in pages for n in notebooks), pages
    assert "webmix.views.episode_viewer" in (site["dir"] / "api.html").read_text()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors, outside = [], []
        page.on("console", lambda m: errors.append(f"{page.url}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))
        page.route("**/*", lambda r: (r.continue_() if r.request.url.startswith((site["base"], "data:", "blob:"))
                                      else (outside.append(r.request.url), r.abort())))
        for name in pages:
            page.goto(f"{site['base']}/{name}", wait_until="load")
            assert page.locator("nav.wm-nav a").count() >= len(notebooks)
        assert not errors, errors
        assert not outside, outside
        # the views page: a live EpisodeViewer without a kernel, and figures drawn by the site's own plotly.js
        page.goto(f"{site['base']}/views-02_episode_viewer.html", wait_until="load")
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
        page.goto(f"{site['base']}/views-05_dashboard.html", wait_until="load")
        assert page.locator(".wm-plotly .main-svg").count() >= 1
        assert not errors, errors
        browser.close()
