"""End to end: a real browser-use Agent on offline Chromium against a live MiniWeb server (conftest's `base`).

A scripted chat model drives every kind of action the harness offers across four sites (search, autosubmitting
select, copy button, clipboard read, a download, board drag, signature draw, file upload), then the backend's own records
are checked (the clicks' beacons included: none is left in flight for a settled click to wait on), and the run is shown to have contacted nothing but loopback (Python audit hook + Chromium net log).
A second test takes the served-model path: make_llm's ChatOpenAI against a scripted OpenAI-compatible server.
The rest hold the process rules: importing the harness changes nothing in the environment, `H.browser` leaves no
Chromium and no folder behind however its block ends, and the exit hook kills the browsers nobody closed.
The last runs units through the engine on one worker's kept browser: each unit finds it as a new browser would be
(no cookie, storage, IndexedDB, history, clipboard, tab, permission, download or MiniWeb session of the unit before),
and a unit that fails does not hand its browser on.
"""
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager

import psutil
import pytest
from flask import Flask, jsonify, request
from werkzeug.serving import make_server

from webmix import config
from webmix.agents import harness as H          # before browser_use: harness imports it with webmix's import-time settings
from webmix.agents import actions as HA
from webmix.agents import offline as HO
from webmix.agents import session as HS
from browser_use import Agent


def reply(name, params):
    return {"evaluation_previous_goal": "", "memory": "", "next_goal": name, "action": [{name: params}]}


async def centre(bs, js):
    "Centre of the element `js` (an expression) in 0-1000 viewport coordinates."
    x, y = await HS.evaluate(bs, f"(() => {{ const r = ({js}).getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()")
    return (await HA.to_normalized(bs, [(x, y)]))[0]


def miniweb_steps(bs, base, upload, seen):
    "The scripted episode: (action, params or an async function giving them at the step); `seen` keeps what it read."
    async def at(cid, part=None, **kw):
        i = await HA.element_index(bs, cid, part)
        assert i is not None, (cid, part)
        return {"index": i, **kw}

    async def drag_card():                    # the first card onto the middle of another column
        (x1, y1) = await centre(bs, "document.querySelector('.card.draggable')")
        (x2, y2) = await centre(bs, "[...document.querySelectorAll('.column')].find(k => !k.contains(document.querySelector('.card.draggable'))).querySelector('h2')")
        return {"x1": x1, "y1": y1, "x2": x2, "y2": y2 + 20}

    async def signature():
        (cx, cy) = await centre(bs, "document.querySelector('canvas.pad')")
        return {"points": [{"x": cx - 60, "y": cy}, {"x": cx - 20, "y": cy - 30}, {"x": cx + 20, "y": cy + 30}, {"x": cx + 60, "y": cy}]}

    async def search_word():                  # a word of the first listed title: the search keeps a result
        title = await HS.evaluate(bs, "document.querySelector('[data-control-id=products-detail]').textContent")
        seen["q"] = title.split()[-1]
        return await at("products-search", text=seen["q"])

    return [("select_dropdown", lambda: at("products-filter-category", text="Books")),
            ("input", search_word),
            ("click", lambda: at("products-search", "submit")),
            ("click", lambda: at("products-copy")),
            ("read_clipboard", {}),
            ("macro_done", {}),
            ("click", lambda: at("products-download")),
            ("navigate", {"url": base + "/sites/kanban/board"}),
            ("drag", drag_card),
            ("navigate", {"url": base + "/sites/calendar/house-rules"}),
            ("input", lambda: at("rules-signer", text="Alex Doe")),
            ("draw", signature),
            ("click", lambda: at("rules-pad", "submit")),
            ("navigate", {"url": base + "/sites/shop/receipts"}),
            ("upload_file", lambda: at("receipts-upload", path=str(upload))),
            ("click", lambda: at("receipts-upload", "submit")),
            ("done", {"text": "all done", "success": True})]


def test_scripted_agent_on_miniweb(base, tmp_path):
    upload = tmp_path / "receipt-lamp.txt"
    upload.write_text("one lamp, 40.00\n")
    net, seen = tmp_path / "net.json", {}

    async def run():
        task = {"start": {"url": "/sites/shop/products"}, "control": {"role": "target", "prep": {}}}
        async with H.browser(base, task, run_dir=tmp_path / "run", net_log=net) as bs:
            steps = miniweb_steps(bs, base, upload, seen)
            done = []

            async def respond(messages, response_format):
                name, params = steps[len(done)]
                params = await params() if callable(params) else params      # a failure here retries the step
                done.append(name)
                return reply(name, params)

            agent = Agent(task=H.instruction("Shop, plan, sign and file a receipt.", HS.start_url(base, task)),
                          llm=H.ScriptedChat(respond), browser_session=bs, tools=HA.make_tools(), max_failures=2,
                          available_file_paths=[str(upload)], **H.AGENT_KWARGS)
            hist = await agent.run(max_steps=len(steps) + 2, on_step_start=lambda a: HS.enable_clipboard(bs, a))
            await asyncio.sleep(0.5)                                     # the last page's beacons
            state = await HS.backend_state(bs, base)
            record = (await HS.admin_get(bs, base, "/_admin/record"))["entries"]
            seen["downloads"] = {H.Path(f).name: H.Path(f).read_text() for f in bs.downloaded_files}
            return hist, state, record, bs._webmix_dir, dict(bs._webmix_net.busy)

    with HO.loopback_only() as hits:
        hist, (log, changes, clip), record, folder, in_flight = asyncio.run(run())

    assert hist.is_successful() and hist.final_result() == "all done", hist.errors()
    assert not any(hist.errors()), hist.errors()
    names = [next(iter(h.model_output.action[0].model_dump(exclude_unset=True))) for h in hist.history[1:]]
    assert names[-1] == "done" and len(names) == 17, names
    # autosubmitting select, then search: the list page was asked for with both parameters
    assert any(e["path"] == "/sites/shop/products" and e["query"].get("q") == seen["q"] and e["query"].get("category") == "Books"
               for e in log), [e["query"] for e in log if e["path"] == "/sites/shop/products"]
    # copy button -> the page's clipboard stream, and the browser's clipboard holds the same text
    assert len(clip) == 1 and clip[0].startswith("LM-")
    assert f"Clipboard: {clip[0]}" in hist.history[5].result[0].extracted_content
    assert hist.history[6].result[0].extracted_content == "macro done"
    # drag: a kanban card changed column; draw: a signature saved; upload: the file's bytes arrived
    assert any(c["collection"] == "tasks" and c["op"] == "update" and "stage" in c["changed"] for c in changes), changes
    sig = next(c for c in changes if c["op"] == "create" and c["after"].get("signer") == "Alex Doe")
    assert sig["after"]["strokes"] == 1 and sig["after"]["points"] >= 4
    # the export link downloaded the list as CSV into the session's folder, and the agent was told of the file
    (name, csv), = seen["downloads"].items()
    assert name.endswith(".csv") and "," in csv.splitlines()[0] and len(csv.splitlines()) > 1, (name, csv[:200])
    assert any(e["path"].endswith("/export.csv") for e in log)
    assert any(name in (h.state_message or "") for h in hist.history[8:]), "no request named the downloaded file"
    rec = next(c for c in changes if c["op"] == "create" and c["after"].get("filename") == "receipt-lamp.txt")
    assert rec["after"]["size"] == upload.stat().st_size
    assert {"drag", "draw", "copy"} <= {e["type"] for e in record}
    # every request the settled clicks watched has ended, the beacons of pages that clicks navigated away included
    # (no loadingFinished ever comes for those), and each of those clicks is in the backend's record
    assert not in_flight, in_flight
    assert sum(e["type"] == "click" and (e["target"] or {}).get("part") == "submit" for e in record) >= 3, record
    # offline: nothing but loopback from Python or Chromium, and the profile is gone with the session
    assert not hits, hits
    assert HO.net_log_hosts(net) == {"127.0.0.1"}, HO.net_log_hosts(net)
    assert not folder.exists() and folder.parent == tmp_path / "run"


@contextmanager
def served(app):
    srv = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_port}"
    finally:
        srv.shutdown()


def test_agent_through_openai_compatible_server(base):
    "make_llm's ChatOpenAI as a vLLM adapter would be called: the schema it sends, the reply it parses."
    app, bodies = Flask("scripted-openai"), []

    @app.post("/v1/chat/completions")
    def chat():
        body = request.get_json()
        bodies.append(body)
        content = json.dumps(reply("done", {"text": "nothing to do", "success": True}))
        return jsonify(id="c", object="chat.completion", created=0, model=body["model"],
                       choices=[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
                       usage={"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120})

    async def run(url):
        task = {"start": {"url": "/sites/shop"}, "control": {"role": "target", "prep": {}}}
        async with H.browser(base, task) as bs:
            agent = Agent(task=H.instruction("Say hello.", HS.start_url(base, task)),
                          llm=H.make_llm("pooled", url + "/v1", max_tokens=512),
                          browser_session=bs, tools=HA.make_tools(), max_failures=2, **H.AGENT_KWARGS)
            return await agent.run(max_steps=3)

    with served(app) as url, HO.loopback_only() as hits:
        hist = asyncio.run(run(url))
    assert hist.is_successful() and hist.final_result() == "nothing to do" and not hits
    assert len(bodies) == 1                                      # no judge call, no compaction call
    body = bodies[0]
    assert body["model"] == "pooled" and body["temperature"] == 0.0 and body["max_completion_tokens"] == 512
    schema = json.dumps(body["response_format"]["json_schema"]["schema"])
    assert all(f'"{a}"' in schema for a in ("drag", "draw", "macro_done", "read_clipboard", "paste", "select_dropdown"))
    images = [p for m in body["messages"] if isinstance(m["content"], list) for p in m["content"] if p.get("type") == "image_url"]
    assert images, "use_vision: the screenshot goes to the model"


# ── the process rules ────────────────────────────────────────────────────────

def fresh_env(home):
    "This process's environment less what setup_env and the harness import set: a shell's, with HOME at `home`."
    set_by_webmix = {*config.OFFLINE_ENV, *config.PROCESS_SUBDIRS, "WEBMIX_SYSTEM_TMPDIR", *HO.BROWSER_USE_IMPORT_ENV}
    return {**{k: v for k, v in os.environ.items() if k not in set_by_webmix}, "HOME": str(home)}


def python(code, cwd, env, timeout=120):
    "Run `code` with `python -c` (which browser-use's .env loading treats as interactive: it reads the cwd's .env)."
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def running(pid) -> bool:
    "Whether the process runs (a zombie, killed and not yet reaped, does not)."
    try: return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess: return False


def processes_under(path) -> list:
    "Running descendants of this process whose command line names `path`."
    found = []
    for p in psutil.Process().children(recursive=True):
        try:
            if str(path) in " ".join(p.cmdline()) and running(p.pid): found.append(p)
        except psutil.Error: pass
    return found


IMPORT_PROBE = """
import json, logging, os, sys
before = dict(os.environ)
import webmix.agents.harness
after = dict(os.environ)
print(json.dumps({"changed": sorted(k for k in {*before, *after} if before.get(k) != after.get(k)),
                  "browser_use": "browser_use" in sys.modules, "root_handlers": len(logging.getLogger().handlers)}))
"""


def test_importing_harness_leaves_the_environment_alone(tmp_path):
    "import webmix.agents.harness: os.environ as before (a .env beside it stays unread), no log handlers, no folders but empty ones."
    (tmp_path / ".env").write_text("WEBMIX_DOTENV_PROBE=loaded\nVLLM_API_KEY=from-a-dotenv-file\n")
    home = tmp_path / "home"
    home.mkdir()
    got = json.loads(python(IMPORT_PROBE, tmp_path, fresh_env(home)).splitlines()[-1])
    assert got == {"changed": [], "browser_use": True, "root_handlers": 0}, got
    # browser-use's telemetry module makes its config folder at import (empty folders); no file is written there
    assert all(p.is_dir() for p in home.rglob("*")), list(home.rglob("*"))


LEFTOVER = """
import asyncio, json, sys
from webmix import config
from webmix.agents import harness as H
from webmix.agents import actions as HA
from webmix.agents import offline as HO
from webmix.agents import session as HS
folder = config.setup_env()
assert config.setup_env() == folder                         # once per process
bs = HS.make_session()
asyncio.new_event_loop().run_until_complete(bs.start())    # and never closed
print(json.dumps({"folder": str(folder), "session": str(bs._webmix_dir),
                  "pids": [p.pid for p in HS.browser_processes(bs._webmix_dir)]}), flush=True)
"""


def test_exit_kills_unclosed_browsers_and_removes_the_process_folder(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    # WEBMIX_TMP short: tmp_path is too deep for Chromium's socket (see config's table of variables)
    short_tmp = tempfile.mkdtemp(prefix="wm-", dir=os.environ["WEBMIX_SYSTEM_TMPDIR"])
    try:
        got = json.loads(python(LEFTOVER, tmp_path, {**fresh_env(home), "WEBMIX_TMP": short_tmp}).splitlines()[-1])
        assert got["pids"] and got["session"].startswith(got["folder"] + "/sessions/")
        assert got["folder"].startswith(short_tmp + "/webmix-")             # WEBMIX_TMP picked the place
        time.sleep(0.5)                                                      # the orphans' reaping
        assert not [p for p in got["pids"] if running(p)] and not os.path.exists(got["folder"]) and not os.listdir(short_tmp)
    finally:
        shutil.rmtree(short_tmp, ignore_errors=True)


def test_browser_closes_however_the_block_ends(tmp_path):
    "H.browser leaves no Chromium and no folder when its block raises, is cancelled (twice), or is cancelled while starting."
    inside = []

    async def raises():
        async with H.browser(run_dir=tmp_path / "raises") as bs:
            inside.append(HS.browser_processes(bs._webmix_dir))
            raise KeyError("the block failed")

    async def waits(entered):
        async with H.browser(run_dir=tmp_path / "cancelled") as bs:
            inside.append(HS.browser_processes(bs._webmix_dir))
            entered.set()
            await asyncio.sleep(600)

    async def launched(run_dir):
        "Until a Chromium runs on a profile under run_dir."
        while not processes_under(run_dir): await asyncio.sleep(0.01)

    async def main():
        with pytest.raises(KeyError):
            await raises()
        entered = asyncio.Event()
        task = asyncio.create_task(waits(entered))
        await entered.wait()
        task.cancel()                                               # as a wait_for timeout does
        await asyncio.sleep(0)
        task.cancel()                                               # and again, while the block closes
        with pytest.raises(asyncio.CancelledError):
            await task
        starting = asyncio.create_task(waits(asyncio.Event()))
        await asyncio.wait_for(launched(tmp_path / "cancelled"), 60)
        starting.cancel()                                           # Chromium launched, start() not finished
        with pytest.raises(asyncio.CancelledError):
            await starting

    asyncio.run(main())
    assert len(inside) == 2 and all(inside)                         # a browser ran in the two blocks that began
    assert not processes_under(tmp_path), processes_under(tmp_path)
    assert not list(tmp_path.glob("*/browser-*")), list(tmp_path.glob("*/browser-*"))


LEAVE_TRACES = """(async () => {
  localStorage.setItem('k', '1'); sessionStorage.setItem('k', '1'); document.cookie = 'k=1; path=/';
  await new Promise(ok => { const r = indexedDB.open('traces'); r.onupgradeneeded = () => r.result.createObjectStore('s'); r.onsuccess = ok; });
  await navigator.clipboard.writeText('left behind');
  return true;
})()"""
LOOK = """(async () => [document.cookie, localStorage.length, sessionStorage.length, history.length,
  (await indexedDB.databases()).map(d => d.name), await navigator.clipboard.readText(),
  (await navigator.permissions.query({name: 'geolocation'})).state])()"""
TRACES_TASK = {"start": {"url": "/sites/bank/transactions"}, "control": {"role": "target", "prep": {}}}


async def unit_on_kept_browser(unit, worker):
    "The engine's unit: 'leave' leaves every trace a unit can, 'look' reports what it sees, 'fail' fails mid-block."
    async with worker.browser(TRACES_TASK) as bs:
        chromium = HS.browser_processes(bs._webmix_dir)[0].pid
        sid = await HS.session_id(bs, worker.base)
        if unit["do"] == "leave":
            await HS.evaluate(bs, LEAVE_TRACES)
            await bs._cdp_client_root.send.Browser.grantPermissions(params={"permissions": ["geolocation", "clipboardReadWrite", "clipboardSanitizedWrite"]})
            await HS.evaluate(bs, "document.querySelector('[data-control-id=transactions-download]').click()")  # a download
            for _ in range(100):
                if bs.downloaded_files: break
                await asyncio.sleep(0.05)
            HS.ROUTER_NOTES[id(bs)] = "a note for the next step"
            await bs._cdp_client_root.send.Target.createTarget(params={"url": worker.base + "/sites/bank/"})  # a tab
            await asyncio.sleep(0.3)                                  # browser-use learns of it
        if unit["do"] == "fail": raise RuntimeError("the unit failed")
        log = [e["path"] for e in (await HS.admin_get(bs, worker.base, "/_admin/log"))["entries"]]
        return {"ok": True, "chromium": chromium, "sid": sid, "seen": await HS.evaluate(bs, LOOK), "tabs": len(await bs.get_tabs()),
                "downloads": [*bs.downloaded_files, *map(str, H.Path(bs.browser_profile.downloads_path).iterdir())],
                "note": id(bs) in HS.ROUTER_NOTES, "log": log}


def test_kept_browser_isolates_units(tmp_path):
    "Consecutive units on one worker share a Chromium, not a trace; a failed unit's browser is not handed on."
    from webmix import runs
    units = [{"task_id": f"{i}-{do}", "do": do} for i, do in enumerate(["leave", "look", "leave", "fail", "look"])]
    run = runs.run_units(units, unit_on_kept_browser, tmp_path / "run", runner="test", workers=1, progress=False)
    r = {x["task_id"]: x for x in run.results}
    assert all(x["ok"] for k, x in r.items() if "fail" not in k), [(x["task_id"], x["cause"]) for x in run.results]
    left, looked = r["0-leave"], r["1-look"]
    assert left["seen"][:3] == ["k=1", 1, 1] and left["seen"][4] == ["traces"] and left["seen"][5] == "left behind"
    assert left["seen"][6] == "granted" and left["tabs"] == 2 and left["note"]
    assert sorted(H.Path(f).name for f in left["downloads"]) == ["bank-transactions.csv"] * 2, left["downloads"]
    new_browser = r["4-look"]["seen"]                               # a new browser (the failed unit's was killed)
    assert new_browser[:6] == ["", 0, 0, 2, [], ""], new_browser   # history: about:blank, then the start page
    assert looked["chromium"] == left["chromium"], "the worker's browser was not kept"
    assert looked["seen"] == new_browser and looked["tabs"] == 1 and looked["downloads"] == [] and not looked["note"]
    assert looked["sid"] != left["sid"] and looked["log"] == ["/sites/bank/transactions"]
    assert not r["3-fail"]["ok"] and "the unit failed" in r["3-fail"]["cause"]
    assert r["4-look"]["chromium"] != left["chromium"]
    assert not HS.browser_processes(tmp_path)
