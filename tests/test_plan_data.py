"""webmix.data.replay and webmix.data.plan_data end to end: kept trajectories replayed as the planner's specialists on a live
MiniWeb, in real Chromium through real browser-use Agents (only the models are scripts): kept chains' rows validate,
tampered replays fail their gate, a run killed with SIGKILL resumes without running a chain twice."""
import asyncio, copy, json, os, shutil, signal, subprocess, sys, threading, time
from pathlib import Path

import psutil
import pytest

from webmix.agents import harness as H
from webmix.agents import agent as PA
from webmix.data import plan_data as P
from webmix.data import replay as R
from webmix.data.chains import chain_key, chain_specs, follow, record
from webmix.config import append_jsonl
from webmix.world.servers import Servers, free_ports
from webmix.runs import Worker
from row_layout import REFERENCE, planner_layout
from webmix.data.pool import kept, pool_items
from webmix.data.wording import text_faults

# ── kept trajectories ────────────────────────────────────────────────────────
# datagen's kept trajectories when it runs here; a few hand-made ones (the same format) as well, so the replay's
# own cases (a home trip, a clipboard write, a question) are always there.

def _facts():
    "A product's name and price, and the shop's SKU prefix, as the seeded shop shows them."
    import re
    from webmix.config import admin_headers
    from webmix.world.sessions import COOKIE
    from webmix.world.miniweb import create_app
    c = create_app().test_client()
    c.set_cookie(COOKIE, c.get("/_admin/session-flags", headers=admin_headers()).get_json()["session"])
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", c.get("/sites/shop/products/3").get_data(as_text=True)))
    name = re.search(r"› Products › (.+?) \1", text).group(1)
    return name, re.search(r"Price (\$[\d,.]+)", text).group(1)


def _el(tag, cid, value=None, part=None, text=""):
    return {"tag": tag, "control_id": cid, "value": value, "part": part, "text": text}


def _step(action, params, element, before, after, memory):
    b = "http://127.0.0.1:8318"
    return {"action": action, "params": params, "element": element, "url_before": b + before, "url_after": b + after,
            "memory": memory, "duration": 0.3}


def _end(url, text="Done.", memory="Finished."):
    return [_step("macro_done", {}, None, url, url, "The step is finished."),
            _step("done", {"text": text, "success": True}, None, url, url, memory)]


def _kept(run, tid, macro, family, instruction, start, steps, check, scope=(), answer=None, control="", role=""):
    d = Path(run) / "accepted" / tid
    d.mkdir(parents=True, exist_ok=True)
    task = {"task_id": tid, "site": "shop", "macro": macro, "family": family, "instruction": instruction,
            "start": {"kind": "fresh", "url": start, "keep": False, "prefix": None},
            "control": {"control_id": control, "role": role, "prep": {}}, "option": {}, "scope": list(scope),
            "check": check, "verifier": {}}
    traj = {"task_id": tid, "site": "shop", "macro": macro, "start_kind": "fresh", "history_macro": None,
            "answer": answer, "steps": steps}
    (d / "task.json").write_text(json.dumps(task, indent=1))
    (d / "trajectory.json").write_text(json.dumps(traj, indent=1))
    (d / "elements.json").write_text(json.dumps([s["element"] for s in steps]))
    append_jsonl(Path(run) / "results.jsonl", {"task_id": tid, "site": "shop", "macro": macro, "family": family, "ok": True})
    return tid, d


def hand_made(run):
    "Five kept trajectories on the shop: a filter, a copy, two menu trips from home, a question."
    name, price = _facts()
    p, h = "/sites/shop/products", "/sites/shop"
    return [
        _kept(run, "shop-hand-filter", "filter_by_dropdown", "Discrete selection",
              'Show only the products in the category "Books".', p,
              [_step("select_dropdown", {"index": 31, "text": "Books"}, _el("select", "products-filter-category"), p,
                     p + "?category=Books", "Selecting Books in the Category filter.")] + _end(p + "?category=Books"),
              {"kind": "request", "method": "GET", "path": p, "query": {"category": "Books"}, "final": True},
              ["products"], control="products-filter-category", role="filter"),
        _kept(run, "shop-hand-copy", "copy_to_clipboard", "Out-of-page I/O", "Copy the SKU of the second product in the list.", p,
              [_step("click", {"index": 48}, _el("button", "products-copy", "2", None, "Copy sku"), p, p,
                     "Copying the second product's SKU.")] + _end(p),
              {"kind": "clipboard", "text": "LM-", "contains": True, "control_id": "products-copy"}, ["products"],
              control="products-copy"),
        _kept(run, "shop-hand-menu", "open_menu_item", "Navigation", "Open the Orders page from the main menu.", h,
              [_step("click", {"index": 12}, _el("a", "home-menu", "/sites/shop/orders", None, "Orders"), h,
                     "/sites/shop/orders", "Opening Orders.")] + _end("/sites/shop/orders"),
              {"kind": "request", "method": "GET", "path": "/sites/shop/orders"}, [], control="home-menu"),
        _kept(run, "shop-hand-products", "open_menu_item", "Navigation", "Open the Products page from the main menu.", h,
              [_step("click", {"index": 11}, _el("a", "home-menu", p, None, "Products"), h, p, "Opening Products.")]
              + _end(p), {"kind": "request", "method": "GET", "path": p}, [], control="home-menu"),
        _kept(run, "shop-hand-price", "report_information", "Reasoning base", f"What is the price of {name}?", p,
              [_step("click", {"index": 9}, _el("a", "products-detail", "3", None, name), p, p + "/3", f"Opening {name}.")]
              + _end(p + "/3", f"{name} costs {price}.", f"The price is {price}."),
              {"kind": "answer", "match": "exact", "value": price}, ["products"], answer=price, control="products-detail"),
    ]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    "A runs folder with kept trajectories: datagen's on the shop and the hand-made ones."
    from webmix.data.datagen import run_datagen
    root = tmp_path_factory.mktemp("data") / "runs"
    hand_made(root / "hand")
    run_datagen(out=root / "dg", sites=["shop"], per_control=1, seed=0, workers=2, ports=free_ports(2), limit=24)
    return root


@pytest.fixture(scope="module")
def items(runs):
    return pool_items(None, runs=runs)


def _items(items, *ids):
    got = dict(items)
    return [(t, got[t]) for t in ids]


# ── replay ───────────────────────────────────────────────────────────────────

async def _replay(part, base):
    async with H.browser() as bs:
        return await R.replay_part(bs, base, part)


def test_replay_passes_the_gate_of_every_kept_part(runs):
    """Every kept trajectory (datagen's on the shop, a slider drag among them, and the hand-made ones) replays on another
    server and passes its own gate again; each element acted on is the recorded one, found by its descriptor."""
    failed = []
    with Servers(ports=free_ports(1)) as srv:
        base = srv.bases[0]
        for tid, d in sorted(kept(runs).items()):
            part = R.load_part(d, base)
            ok, detail, rp = asyncio.run(_replay(part, base))
            if not (ok and rp.finished): failed.append((tid, detail, rp.errors[-1:]))
            first = next((s for s in part["traj"]["steps"] if (s.get("element") or {}).get("control_id")), None)
            if ok and first and "index" in first["params"]:
                acted = next(e for e in rp.events if e["target"].get("control_id"))
                assert acted["target"]["control_id"] == first["element"]["control_id"], (tid, acted)
            assert rp.calls >= len(rp.plan) and len(rp.seen) == rp.calls
    assert not failed, failed


# ── planner rows ─────────────────────────────────────────────────────────────

def _planner_output_model():
    "The planner's reply model, as its Agent builds it (delegate and done)."
    from browser_use.agent.views import AgentOutput
    tools = PA.planner_tools(PA.Team(lambda f: "m", "", "task"))
    return AgentOutput.type_with_custom_actions(tools.registry.create_action_model())


def test_chains_build_valid_rows(tmp_path, items):
    out = tmp_path / "rows"
    specs = chain_specs(items, 8, seed=3)
    assert [chain_key(c) for c in specs] == [chain_key(c) for c in chain_specs(items, 8, seed=3)]   # same seed, same list
    df = P.run_plan_data(out=out, chains=8, seed=3, workers=2, ports=free_ports(2), items=items, progress=False)
    s = df.attrs["summary"]
    assert s["chains"] == len(specs) >= 4 and s["ok"] == s["chains"], s     # replays of kept parts: every chain keeps
    assert sorted(df["task_id"]) == sorted(chain_key(c) for c in specs) and df["ok"].all()     # a row a chain
    lines = [json.loads(l) for l in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in lines) == sorted(chain_key(c) for c in specs)
    model = _planner_output_model()
    for r in lines:
        if not r["ok"]:
            assert (out / "_failed" / r["task_id"] / "error.txt").exists()
            continue
        d = out / r["task_id"]
        assert P.validate_chain(d) == [], P.validate_chain(d)
        ep = json.loads((d / "episode.json").read_text())
        rows = [json.loads(l) for l in (d / "rows.jsonl").read_text().splitlines()]
        assert len(rows) == len(ep["turns"]) and not (d / "_spec").exists()
        for row in rows:
            target = model.model_validate_json(row["target"])                  # the planner's action, its format
            assert R.canonical(row["target"], model) == json.loads(row["target"])
            (name, params), = target.action[0].model_dump(exclude_none=True).items()
            turn = ep["turns"][row["step"]]
            assert name == turn["kind"] == row["op"]
            if name == "delegate": assert params == {"family": turn["family"], "instruction": turn["instruction"]}
            else: assert ep["answer"] is None or str(ep["answer"]) in params["text"]
            said = [ep["instruction"], target.memory, target.next_goal, params.get("instruction"), params.get("text")]
            assert [(x, text_faults(x)) for x in said if text_faults(x)] == [], row["step"]     # the text rows train on
            assert target.memory == P.template_memory(ep["turns"], row["step"])
            shots = _screenshots(row)
            assert shots == [f"step_{row['step']}.png"] and (d / shots[0]).stat().st_size > 1000
            assert planner_layout(row, d) == REFERENCE["planner"], row["step"]   # keys, messages, screenshot size as they were
        # a trip home is a Navigation delegation naming the site as its pages do
        homes = [t for t in ep["turns"] if t.get("home")]
        assert all(t["instruction"] == P.HOME_STEP.format(site="Lumen Market") and t["macro"] == "navigate_home" for t in homes)
        assert len(homes) <= ep["via"].count("home") and len(ep["turns"]) == len(ep["parts"]) + len(homes) + 1
    assert not (out / "_tmp").exists()
    again = P.run_plan_data(out=out, chains=8, seed=3, workers=2, ports=free_ports(2), items=items, progress=False).attrs["summary"]
    assert again["chains"] == 0                                                  # all there: nothing runs twice


def _screenshots(row) -> list:
    return [p["image_url"]["url"] for m in row["messages"] if isinstance(m["content"], list)
            for p in m["content"] if p["type"] == "image_url"]


def test_rows_keep_their_screenshot_when_browser_uses_times_out(monkeypatch, tmp_path, items):
    "On a busy machine browser-use's screenshot can time out: the planner's row then gets the page captured over CDP."
    monkeypatch.setenv("TIMEOUT_ScreenshotEvent", "0.0001")      # browser-use's own screenshot now always fails
    out = tmp_path / "rows"
    s = P.run_plan_data(out=out, chains=2, seed=3, workers=1, ports=free_ports(1), items=items, progress=False).attrs["summary"]
    kept = [d for d in out.iterdir() if (d / "episode.json").exists()]
    assert s["ok"] == len(kept) >= 1, s
    for d in kept:
        for row in map(json.loads, (d / "rows.jsonl").read_text().splitlines()):
            assert _screenshots(row) == [f"step_{row['step']}.png"], row["messages"][-1]
            assert (d / f"step_{row['step']}.png").read_bytes().startswith(b"\x89PNG")
        assert P.validate_chain(d) == []


def test_a_later_part_may_reload_the_list_an_earlier_part_filtered(tmp_path, items):
    """Each part's gate reads the session's requests up to the end of its own delegation: filtering the products,
    going home, then opening Products from the menu (an unfiltered reload) keeps the filter part's check."""
    (fid, fdir), (pid, pdir) = _items(items, "shop-hand-filter", "shop-hand-products")
    chain = [(record(fid, fdir), None), (record(pid, pdir), "home")]
    with Servers(ports=free_ports(1)) as srv:
        res = asyncio.run(P.run_chain(chain, Worker(0, srv.bases[0], tmp_path / "rows", tmp_path / "tmp")))
    assert res["ok"], res
    ep = json.loads((tmp_path / "rows" / chain_key(chain) / "episode.json").read_text())
    assert [t.get("macro") for t in ep["turns"]] == ["filter_by_dropdown", "navigate_home", "open_menu_item", None]


# ── tampered replays fail their gate ─────────────────────────────────────────

def _tamper(src, dst, fn):
    shutil.copytree(src, dst)
    traj = json.loads((dst / "trajectory.json").read_text())
    fn(traj["steps"][0])
    (dst / "trajectory.json").write_text(json.dumps(traj))
    return dst.name, dst


def test_tampered_replays_fail_their_gate(tmp_path, items):
    (fid, fdir), (cid, cdir) = _items(items, "shop-hand-filter", "shop-hand-copy")
    run = tmp_path / "runs" / "tampered" / "accepted"
    wrong_el = _tamper(fdir, run / "shop-tampered-element", lambda s: s["element"].update(control_id="products-sort"))
    wrong_val = _tamper(fdir, run / "shop-tampered-value", lambda s: s["params"].update(text="Kitchen"))
    copy_rec = record(cid, cdir)
    out = tmp_path / "rows"
    with Servers(ports=free_ports(1)) as srv:
        for tid, d in (wrong_el, wrong_val):
            first = record(tid, d)
            chain = [(first, None), (copy_rec, follow(first, copy_rec))]
            assert chain[1][1] == "page"
            res = asyncio.run(P.run_chain(chain, Worker(0, srv.bases[0], out, tmp_path / "tmp")))
            assert not res["ok"] and res["cause"].startswith("check failed: part 1:"), res
            assert "category" in res["cause"]
            failed = out / "_failed" / chain_key(chain)
            assert (failed / "error.txt").read_text().strip() == res["cause"] and (failed / "episode.json").exists()
            assert not (out / chain_key(chain)).exists()
    assert "category='Kitchen', expected 'Books'" in (out / "_failed" / chain_key(
        [(record(*wrong_val), None), (copy_rec, "page")]) / "error.txt").read_text()


# ── two shards into one folder, one SIGKILLed mid-way, then resumed ─────────────

def _results(path):
    text = Path(path).read_text() if Path(path).exists() else ""
    assert text == "" or text.endswith("\n"), "a broken last line"
    return [json.loads(l) for l in text.splitlines()]


def _kill_tree(proc):
    "SIGKILL the run and every process it started (its servers and browsers), by pid."
    try: tree = [psutil.Process(proc.pid)] + psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess: tree = []
    for p in tree:
        try: p.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess: pass
    proc.wait()
    psutil.wait_procs(tree, timeout=10)
    for d in Path(os.environ.get("WEBMIX_SYSTEM_TMPDIR", "/tmp")).glob(f"webmix-{proc.pid}-*"):   # its exit handler never ran
        shutil.rmtree(d, ignore_errors=True)


def _shard(out, runs, k, **kw):
    cmd = ["webmix", "plan-data", "--out", str(out), "--runs", str(runs), "--chains", "6", "--seed", "5",
           "--workers", "1", "--ports", str(free_ports(1)[0]), "--shard", f"{k}/2"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kw)


def test_two_shards_share_a_folder_and_a_killed_one_resumes(tmp_path, runs):
    from webmix.formats import problems
    out = tmp_path / "rows"
    n = len(chain_specs(pool_items(None, runs=runs), 6, seed=5))
    assert n >= 3
    one, two = _shard(out, runs, 1), _shard(out, runs, 2)
    try:
        t_end = time.time() + 240
        while time.time() < t_end and len(_results(out / "results.jsonl")) < 1 and one.poll() is None:
            time.sleep(0.2)
    finally:
        _kill_tree(one)                                  # shard 1 dies with a chain in flight; shard 2 goes on
    assert two.wait(600) == 0, two.stderr.read()[-2000:]
    first = _results(out / "results.jsonl")
    assert 1 <= len(first) < n, f"{len(first)} of {n} chains before the kill"
    again = _shard(out, runs, 1)
    assert again.wait(600) == 0, again.stderr.read()[-2000:]
    lines = _results(out / "results.jsonl")
    ids = [r["task_id"] for r in lines]
    assert len(ids) == len(set(ids)) == n, (len(ids), len(set(ids)), n)
    assert [r["task_id"] for r in lines[:len(first)]] == [r["task_id"] for r in first]
    for k, r in enumerate(lines):
        assert (out / (r["task_id"] if r["ok"] else f"_failed/{r['task_id']}")).is_dir()
        assert problems("result_plan_data", r, f"line {k + 1}") == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert problems("manifest", manifest) == [] and sorted(s["shard"] for s in manifest["sessions"]) == ["1/2", "1/2", "2/2"]
    assert not (out / "_tmp").exists() or not list((out / "_tmp").iterdir())


# ── faults: each one failed line with its cause, the rest of the run goes on ───

class _Malformed:
    "A loopback server that answers every chat completion with a body that is not JSON."
    def __enter__(self):
        import http.server, threading
        class H_(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(200); self.send_header("Content-Type", "application/json"); self.end_headers()
                self.wfile.write(b'{"id": "x", "choices": [{"message": {"content": "unterminated')
            def log_message(self, *a): pass
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H_)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.srv.server_address[1]}/v1"
        return self

    def __exit__(self, *exc): self.srv.shutdown()


def test_memory_model_faults_and_a_cancelled_chain_are_failed_lines(tmp_path, items, monkeypatch):
    from webmix.agents.llm import ScriptedServer
    def error(req): raise RuntimeError("the model crashed")           # the scripted server answers HTTP 500
    released = threading.Event()
    def hang(req): released.wait(25)                                  # past the unit's timeout, until the test is done
    kw = dict(chains=2, seed=3, workers=1, items=items, progress=False)
    with ScriptedServer({"m": error}) as s500, _Malformed() as bad, ScriptedServer({"m": hang}) as slow:
        got = {}
        for name, url, extra in (("500", s500.base_url, {}), ("malformed", bad.base_url, {}),
                                 ("hang", slow.base_url, {"timeout": 12})):
            out = tmp_path / name
            P.run_plan_data(out=out, memory_model="m", memory_url=url, ports=free_ports(1), **kw, **extra)
            got[name] = _results(out / "results.jsonl")
        released.set()
    for name, lines in got.items():
        assert len(lines) == 2 and not any(r["ok"] for r in lines), (name, lines)    # the run went through both chains
    assert all("memory model failed: InternalServerError" in r["cause"] for r in got["500"]), got["500"]
    assert all("memory model failed" in r["cause"] for r in got["malformed"]), got["malformed"]
    assert all(r["cause"].startswith("timeout after 12s") for r in got["hang"]), got["hang"]

    # a CancelledError raised inside one chain fails that chain only
    specs = chain_specs(items, 2, seed=3)
    victim, only = chain_key(specs[0]), {str(r["dir"]) for r, _ in specs[0]} - {str(r["dir"]) for r, _ in specs[1]}
    assert only, "the two chains share every part"
    load = R.load_part
    def cancel_in_victim(d, base):
        if str(d) in only: raise asyncio.CancelledError()
        return load(d, base)
    monkeypatch.setattr(R, "load_part", cancel_in_victim)
    out = tmp_path / "cancelled"
    s = P.run_plan_data(out=out, ports=free_ports(1), **kw).attrs["summary"]
    lines = {r["task_id"]: r for r in _results(out / "results.jsonl")}
    assert lines[victim]["cause"] == "cancelled" and s["ok"] == 1 and len(lines) == 2, lines


@pytest.mark.timeout(600)
def test_plan_data_on_ray(tmp_path, items):
    pytest.importorskip("ray")
    out = tmp_path / "rows"
    s = P.run_plan_data(out=out, chains=2, seed=3, workers=2, items=items, backend="ray", progress=False).attrs["summary"]
    assert s["ok"] == s["chains"] == 2, s
    lines = _results(out / "results.jsonl")
    assert {r["pid"] for r in lines} != {os.getpid()} and all(P.validate_chain(out / r["task_id"]) == [] for r in lines)
