"""`webmix env serve` end to end: the real command in a subprocess on a free port, driven over HTTP with httpx.

Two sessions at once on two tasks (a datagen task `webmix tasks` makes, a human-style task): the reward is 1 for a
correct action sequence and 0 for a wrong one; a third open past --max-sessions is refused as busy, or waits for a
slot when it asks to (and gets a browser the pool kept); every error is
one JSON line with its kind, whether a retry helps and the fitting HTTP status (an unknown session or task, a
malformed action, a body that does not validate, a 10 MB body, an unknown route); an index not on the page and a
navigation off the site are the observation's error, not a crash. A second server with --session-ttl 3: a
session whose browser is killed fails retryably and the next session gets a new browser; a client that stops
calling has its session reclaimed (saved) within the TTL with no Chromium and no temporary folder left; a MiniWeb
server killed mid-session ends that session with a retryable error and is started again by the next open; Ctrl-C
stops the server, saving the session still open, with nothing left running. An occupied port is refused in one line."""
import base64, json, os, signal, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil
import pytest

from procs import kill_browser, orphans
from webmix.world.servers import free_ports, port_free

START = 240           # seconds a server may take to serve (the task index, MiniWeb, a warm browser)
HUMAN = "download-locker-file"                     # mail: open Files from the menu, download contract-03.pdf, say when
HUMAN_RIGHT = [{"click": {"control_id": "home-menu", "value": "/sites/mail/files"}},
               {"click": {"control_id": "attachments-files", "value": "3"}},
               {"done": {"text": "contract-03.pdf was uploaded on 2026-11-12.", "success": True}}]
HUMAN_WRONG = [{"click": {"control_id": "home-menu", "value": "/sites/mail/files"}},
               {"done": {"text": "contract-03.pdf was uploaded on 2026-10-01.", "success": True}}]


def serve(out, *args):
    "Start `webmix env serve` on a free port -> (process, its URL); it serves once /health says ok."
    port = free_ports(1)[0]
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from webmix.cli import main; sys.exit(main())", "env", "serve",
                             "--port", str(port), "--out", str(out), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    url, end = f"http://127.0.0.1:{port}", time.monotonic() + START
    while time.monotonic() < end:
        if proc.poll() is not None: pytest.fail(f"webmix env serve exited: {proc.stderr.read()[-2000:]}")
        try:
            if httpx.get(url + "/health", timeout=2).json().get("status") == "ok": return proc, url
        except httpx.HTTPError: pass
        time.sleep(0.5)
    stop(proc)
    pytest.fail(f"webmix env serve did not serve within {START} s")


def stop(proc, timeout=60) -> int:
    "Ctrl-C the server -> its exit status."
    if proc.poll() is None: proc.send_signal(signal.SIGINT)
    try: return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL); proc.wait()
        pytest.fail("webmix env serve did not stop within a minute of Ctrl-C")


def error_of(r, status, kind, retryable=False) -> str:
    "The message of an error reply, checked: the status, one JSON line {error_kind, retryable, message}."
    assert r.status_code == status, (r.status_code, r.text[:300])
    body = r.json()
    assert set(body) == {"error_kind", "retryable", "message"}, body
    assert (body["error_kind"], body["retryable"]) == (kind, retryable), body
    assert "\n" not in r.text and "Traceback" not in r.text and len(r.text) < 1200, r.text
    return body["message"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    out = tmp_path_factory.mktemp("env-serve") / "run"
    proc, url = serve(out, "--max-sessions", "2")
    with httpx.Client(base_url=url, timeout=180) as c:
        yield c, out, proc
    assert stop(proc) == 0
    assert orphans(out) == []


def play(c, sid, actions) -> dict:
    "Step the actions in turn -> the last step's reply."
    seen = None
    for a in actions:
        r = c.post(f"/sessions/{sid}/step", json={"action": a})
        assert r.status_code == 200, (r.text[:500], seen)
        o = r.json()["observation"]
        assert not r.json()["info"].get("not_taken"), (o["error"], seen)
        seen = (o["url"], o["error"], o["last_result"], [(e["control_id"], e["value"]) for e in o["elements"]][:30])
    return r.json()


def test_two_sessions_rewards_busy_and_pool(server):
    c, out, _ = server
    tasks = c.get("/tasks", params={"split": "test"}).json()["tasks"]
    dg = next(t for t in tasks if t["kind"] == "datagen" and "open_menu_item" in t["task_id"])
    assert any(t["task_id"] == HUMAN and t["kind"] == "human" for t in tasks)
    from webmix.env.session import find_task
    task = find_task(dg["task_id"])

    a = c.post("/sessions", json={"task_id": dg["task_id"]}).json()
    b = c.post("/seed_session", json={"task_id": HUMAN, "screenshots": False}).json()
    assert a["session_id"] != b["session_id"]
    assert base64.b64decode(a["observation"]["screenshot"])[:4] == b"\x89PNG"        # screenshots on by default
    assert b["observation"]["screenshot"] is None and "/sites/mail" in b["observation"]["url"]
    assert c.get("/health").json()["sessions_open"] == 2
    error_of(c.post("/sessions", json={"task_id": HUMAN}), 503, "busy", retryable=True)
    waiting = ThreadPoolExecutor(1).submit(c.post, "/sessions", json={"task_id": HUMAN, "wait": 300})   # gets a slot later

    right = play(c, a["session_id"], [{"click": {"control_id": task.control["control_id"], "value": task.option["value"]}},
                                      {"done": {"text": "Opened it.", "success": True}}])
    assert (right["reward"], right["done"], right["info"]["ended_by"], right["info"]["passed"]) == (1.0, True, "done", True)
    wrong = play(c, b["session_id"], HUMAN_WRONG)
    assert (wrong["reward"], wrong["done"], wrong["info"]["passed"]) == (0.0, True, False)
    v = c.post("/verify", json={"session_id": a["session_id"]}).json()
    assert (v["reward"], v["passed"]) == (1.0, True) and v["evidence"]["requests"] > 0
    error_of(c.post(f"/sessions/{a['session_id']}/step", json={"action": {"done": {"text": "again"}}}), 409, "ended")
    for s in (a, b):
        closed = c.delete(f"/sessions/{s['session_id']}").json()
        assert Path(closed["episode"]).parent == out and (Path(closed["episode"]) / "episode.json").is_file()

    again = waiting.result(timeout=300).json()           # opened once a session closed, on a browser the pool kept
    done = play(c, again["session_id"], HUMAN_RIGHT)
    assert (done["reward"], done["info"]["passed"]) == (1.0, True), done["info"]
    assert c.post("/close", json={"session_id": again["session_id"]}).json()["closed"]
    m = c.get("/metrics").json()
    assert (m["opened"], m["closed"], m["sessions_open"]) == (3, 3, 0) and m["browsers_made"] == 2, m
    lines = [json.loads(l) for l in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(l["ok"] for l in lines) == [False, True, True]


def test_errors_are_one_json_line(server):
    c, out, _ = server
    assert "is not open" in error_of(c.post("/sessions/nope/step", json={"action": {"done": {}}}), 404, "unknown_session")
    error_of(c.post("/step", json={"session_id": "nope", "action": {"done": {}}}), 404, "unknown_session")
    error_of(c.delete("/sessions/nope"), 404, "unknown_session")
    assert "no task" in error_of(c.post("/sessions", json={"task_id": "no-such-task"}), 404, "unknown_task")
    error_of(c.post("/sessions", json={"task_id": HUMAN, "task": {}}), 400, "bad_request")
    error_of(c.post("/sessions", content=b"{not json", headers={"content-type": "application/json"}), 400, "bad_request")
    error_of(c.get("/tasks", params={"split": "everything"}), 400, "bad_request")
    error_of(c.get("/no/such/route"), 404, "bad_request")
    big = error_of(c.post("/sessions", content=b"x" * (10 << 20), headers={"content-type": "application/json"}), 413, "bad_request")
    assert "over the limit" in big

    sid = c.post("/sessions", json={"task_id": HUMAN}).json()["session_id"]
    step = lambda action: c.post(f"/sessions/{sid}/step", json={"action": action})
    error_of(step("not json"), 400, "bad_action")
    error_of(step({"click": {"index": 1}, "done": {}}), 400, "bad_action")
    assert "clack" in error_of(step({"clack": {}}), 400, "bad_action")
    gone = step({"click": {"control_id": "no-such-control"}}).json()      # an element not on the page: not taken
    assert "no-such-control" in gone["observation"]["error"] and gone["info"]["not_taken"], gone["info"]
    error_of(c.post(f"/sessions/{sid}/step", json={}), 400, "bad_request")
    for url in ("http://example.com", "data:text/html,<b>hi</b>"):
        r = step({"navigate": {"url": url}})
        assert r.status_code == 200 and "Refused" in (r.json()["observation"]["error"] or ""), r.text[:400]
        assert "/sites/mail" in r.json()["observation"]["url"]
    obs = step({"click": {"index": 99999}}).json()["observation"]
    assert c.delete(f"/sessions/{sid}").status_code == 200
    assert "99999" in (obs["error"] or "") + (obs["last_result"] or ""), obs

    m = c.get("/metrics").json()
    assert {"unknown_session", "unknown_task", "bad_action", "bad_request"} <= set(m["errors"]), m["errors"]
    assert m["step_latency_s"]["p50"] is not None and m["reset_latency_s"]["p95"] is not None
    paths = c.get("/openapi.json").json()["paths"]
    assert {"/sessions", "/sessions/{session_id}/step", "/sessions/{session_id}/verify", "/sessions/{session_id}", "/tasks",
            "/health", "/metrics", "/seed_session", "/step", "/verify", "/close"} <= set(paths)


def test_a_websocket_holds_one_session_and_its_disconnect_closes_it(server):
    "The same session over /ws: open, steps, verify, close in messages; errors are replies; a dropped socket closes its session."
    from websockets.sync.client import connect
    c, out, _ = server
    url = str(c.base_url).replace("http://", "ws://").rstrip("/") + "/ws"
    ask = lambda ws, msg: (ws.send(msg if isinstance(msg, str) else json.dumps(msg)), json.loads(ws.recv()))[1]
    results = out / "results.jsonl"
    lines_before = len(results.read_text().splitlines()) if results.exists() else 0
    with connect(url, max_size=None) as ws:
        assert ask(ws, "{not json")["error_kind"] == "bad_request"
        assert "send open first" in ask(ws, {"op": "step", "action": {"done": {}}})["message"]
        assert ask(ws, {"op": "fly"})["error_kind"] == "bad_request"
        opened = ask(ws, {"op": "open", "task_id": HUMAN})
        assert "/sites/mail" in opened["observation"]["url"] and base64.b64decode(opened["observation"]["screenshot"])[:4] == b"\x89PNG"
        assert "close it first" in ask(ws, {"op": "open", "task_id": HUMAN})["message"]
        assert ask(ws, {"op": "step", "action": {"clack": {}}})["error_kind"] == "bad_action"
        for a in HUMAN_RIGHT: last = ask(ws, {"op": "step", "action": a})
        assert (last["reward"], last["done"], last["info"]["passed"]) == (1.0, True, True), last["info"]
        assert ask(ws, {"op": "verify"})["reward"] == 1.0
        assert ask(ws, {"op": "close"})["closed"]
        ask(ws, {"op": "open", "task_id": HUMAN})                # a second session on the socket, dropped with it
        assert c.get("/health").json()["sessions_open"] == 1
    end = time.monotonic() + 30
    while c.get("/health").json()["sessions_open"] and time.monotonic() < end: time.sleep(0.2)
    assert c.get("/health").json()["sessions_open"] == 0
    # a session leaves the host's count first, then its episode is saved: the second line comes a moment later
    end = time.monotonic() + 60
    while len(results.read_text().splitlines()) < lines_before + 2 and time.monotonic() < end: time.sleep(0.2)
    assert len(results.read_text().splitlines()) == lines_before + 2       # both episodes saved


def test_occupied_port_is_one_line(server):
    c, _, _ = server
    port = int(str(c.base_url).rsplit(":", 1)[1].strip("/"))
    p = subprocess.run(["webmix", "env", "serve", "--port", str(port)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and f"127.0.0.1:{port}" in p.stderr and "--port" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


def test_crash_and_ttl_reclaim_leave_nothing(tmp_path):
    out = tmp_path / "run"
    proc, url = serve(out, "--session-ttl", "3", "--max-sessions", "1", "--no-screenshots")
    try:
        with httpx.Client(base_url=url, timeout=180) as c:
            miniweb = int(c.get("/health").json()["miniweb"].rsplit(":", 1)[1])
            sid = c.post("/sessions", json={"task_id": HUMAN}).json()["session_id"]
            assert kill_browser(out) is not None
            error_of(c.post(f"/sessions/{sid}/step", json={"action": {"click": {"control_id": "home-menu",
                                                                         "value": "/sites/mail/files"}}}), 503, "browser", True)
            error_of(c.post(f"/sessions/{sid}/verify"), 404, "unknown_session")

            sid = c.post("/sessions", json={"task_id": HUMAN, "wait": 10}).json()["session_id"]     # a new browser
            play(c, sid, HUMAN_RIGHT[:1])
            t0 = time.monotonic()
            while c.get("/health").json()["sessions_open"] and time.monotonic() - t0 < 60: time.sleep(0.2)
            gone = time.monotonic() - t0
            assert 2.5 <= gone <= 3 + 10, gone                # the TTL, the reaper's round and the close
            assert "reclaimed" in error_of(c.post(f"/sessions/{sid}/verify"), 404, "unknown_session")
            m = c.get("/metrics").json()
            assert (m["reclaimed"], m["failed"], m["browsers_made"], m["errors"]["browser"]) == (1, 1, 2, 1), m
            assert orphans(out) == []                          # the reclaimed session's browser, and the idle ones
            left = lambda: sorted(p.name for p in out.iterdir() if p.name.startswith("_") and any(p.iterdir()))
            end = time.monotonic() + 10                        # the browser's folder goes once it is killed
            while left() and time.monotonic() < end: time.sleep(0.2)
            assert left() == [], [str(p) for p in out.rglob("*")][:20]
            line = json.loads((out / "results.jsonl").read_text().splitlines()[-1])
            assert line["ended_by"] == "closed" and (out / line["task_id"] / "episode.json").is_file()
            # MiniWeb dies mid-session: that session's next call is a retryable miniweb error that ends it (saved,
            # masked), the health says degraded, and the next open starts MiniWeb again on its port
            sid = c.post("/sessions", json={"task_id": HUMAN, "wait": 10}).json()["session_id"]
            mw = next(p for p in psutil.Process(proc.pid).children(recursive=True) if f"serve({miniweb}," in " ".join(p.cmdline()))
            mw.kill()
            end = time.monotonic() + 10                    # a zombie until the server reaps it
            while mw.is_running() and mw.status() != psutil.STATUS_ZOMBIE and time.monotonic() < end: time.sleep(0.1)
            error_of(c.post(f"/sessions/{sid}/verify"), 503, "miniweb", True)
            assert c.get("/health").json()["status"] == "degraded"
            open_at_stop = c.post("/sessions", json={"task_id": HUMAN, "wait": 10}).json()["observation"]   # left open for Ctrl-C
            assert c.get("/health").json()["status"] == "ok" and c.get("/metrics").json()["miniweb_restarts"] == 1
    finally:
        assert stop(proc) == 0
    assert orphans(out) == [] and port_free(int(url.rsplit(":", 1)[1])) and port_free(miniweb)
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("_")) == []
    lines = [json.loads(l) for l in (out / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 3 and lines[-1]["ended_by"] == "closed" and "/sites/mail" in open_at_stop["url"]   # saved at Ctrl-C
    assert lines[1]["masked"] and "no grade inputs" in lines[1]["cause"], lines[1]      # the session MiniWeb's death ended
