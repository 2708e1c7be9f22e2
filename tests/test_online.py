"""webmix.eval.online end to end: benchmark task files in both published formats whose websites are MiniWeb sites on
loopback, `webmix online` against the scripted stand-in policy server (real openai client, browser-use, Chromium
and MiniWeb), episodes read back by a loader written from the benchmark's published layout; a timed-out episode and
the planner agent against scripted servers; the Pacer across two real processes."""
import asyncio, base64, json, re, subprocess, sys, threading, time
from pathlib import Path

import pytest

from webmix import formats as F
from webmix.eval import online as O
from webmix.cli import main as webmix_main
from webmix.eval.evaluate import TaskFileError


# ---- a loader written from the benchmark's published description, not from webmix.eval.online

WEBJUDGE_KEYS = {"task_id", "task", "final_result_response", "action_history", "thoughts"}


def load_published(folder: Path) -> dict:
    "{task_id: (result.json, screenshots in order)} of a folder of task folders, as WebJudge reads them."
    out = {}
    for d in sorted(p for p in folder.iterdir() if p.is_dir()):
        result = json.loads((d / "result.json").read_text())
        shots = sorted((d / "trajectory").iterdir(), key=lambda p: int(re.findall(r"\d+", p.name)[0]))
        out[d.name] = (result, shots)
    return out


def pixels(png):
    from PIL import Image
    import io
    return Image.open(io.BytesIO(png) if isinstance(png, bytes) else png).convert("RGB")


def differing(a, b) -> float:
    "Share of pixels that differ between two same-size screenshots."
    from PIL import ImageChops
    diff = ImageChops.difference(pixels(a), pixels(b)).convert("L").point(lambda v: 255 if v > 8 else 0)
    return diff.histogram()[255] / (diff.width * diff.height)


def cli(*args) -> str:
    "Run `webmix` in this process; -> the one-line message of a refusal (SystemExit)."
    with pytest.raises(SystemExit) as e: webmix_main(list(args))
    return str(e.value)


# ---- task files

def voyager_lines(n, web):
    sites = ["Allrecipes", "Amazon", "Apple", "ArXiv", "GitHub", "Google Flights", "Google Map", "Google Search",
             "Huggingface", "Wolfram Alpha", "Cambridge Dictionary", "Coursera", "ESPN", "BBC News", "Booking"]
    per = -(-n // len(sites))
    rows = [{"web_name": s, "id": f"{s}--{i}", "ques": f"Question {i} about {s}: what is listed first?", "web": web}
            for s in sites for i in range(per)][:n]
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def test_task_files_load_in_both_formats_and_refuse_bad_ones(tmp_path):
    (tmp_path / "WebVoyager_data.jsonl").write_text(voyager_lines(643, "https://www.example.org/"))
    r = subprocess.run([sys.executable, "-c", "from webmix.eval.online import load_tasks; "
                        "print(len(load_tasks('WebVoyager_data.jsonl', 'webvoyager')))"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "643", r.stderr[-2000:]
    t = O.load_tasks(tmp_path / "WebVoyager_data.jsonl", "webvoyager")[20]
    assert (t["task_id"], t["confirmed_task"], t["website"], t["level"]) == (t["id"], t["ques"], t["web"], t["web_name"])

    om2w = [{"task_id": "a1", "confirmed_task": "Find a lamp.", "website": "https://shop.example/", "reference_length": 3, "level": "easy"},
            {"task_id": "b2", "confirmed_task": "Find a desk.", "website": "https://shop.example/", "reference_length": 5, "level": "hard"}]
    f = tmp_path / "om2w.json"
    f.write_text(json.dumps(om2w, indent=1))
    tasks = O.load_tasks(f, "om2w")
    assert [x["task_id"] for x in tasks] == ["a1", "b2"] and tasks[1]["reference_length"] == 5 and tasks[1]["level"] == "hard"

    def refusal(text, bench):
        p = tmp_path / ("bad.json" if bench == "om2w" else "bad.jsonl")
        p.write_text(text)
        with pytest.raises(TaskFileError) as e: O.load_tasks(p, bench)
        return str(e.value)
    no_site = json.dumps(om2w[:1] + [{**om2w[1], "website": ""}], indent=1)
    line = [i for i, l in enumerate(no_site.split("\n"), 1) if l == " {"][1]    # where the second task starts
    assert refusal(no_site, "om2w") == f"{tmp_path / 'bad.json'}, line {line}: the task has no website"
    assert "line 2: the task has no web" in refusal(voyager_lines(1, "https://a.example/") + '{"web_name": "A", "id": "A--1", "ques": "q"}\n', "webvoyager")
    assert "line 2: not JSON" in refusal(voyager_lines(1, "https://a.example/") + "{oops\n", "webvoyager")
    assert "line 1: web 'ftp://a.example/' is not an http(s) address" in refusal(voyager_lines(1, "ftp://a.example/"), "webvoyager")
    assert "task_id '../up' cannot name a folder" in refusal(json.dumps([{**om2w[0], "task_id": "../up"}]), "om2w")
    assert "is a JSON list of tasks" in refusal(json.dumps(om2w[0]), "om2w")
    assert "no such task file" in str(pytest.raises(TaskFileError, O.load_tasks, tmp_path / "none.json").value)


# ---- pacing across two real processes

PACED = """
import asyncio, json, sys, time
from webmix.eval.online import Pacer
start_at, pace_dir, out = float(sys.argv[1]), sys.argv[2], sys.argv[3]
async def worker(rows):
    pacer = Pacer(pace_dir, cooldown=0.4, poll=0.02)          # a Pacer of its own, as every episode has
    for site in ["a.example", "b.example", "a.example", "b.example"]:
        async with pacer.hold(site):
            t0 = time.time(); await asyncio.sleep(0.25); rows.append([site, t0, time.time()])
async def main():
    time.sleep(max(0.0, start_at - time.time()))             # both processes start together, after their imports
    rows = []
    await asyncio.gather(worker(rows), worker(rows))          # two workers in each process too
    json.dump(rows, open(out, "w"))
asyncio.run(main())
"""


def test_two_processes_never_share_a_website_and_keep_its_cooldown(tmp_path):
    start = time.time() + 10                                  # after both processes have imported webmix
    procs = [subprocess.Popen([sys.executable, "-c", PACED, str(start), str(tmp_path / "pace"), str(tmp_path / f"p{i}.json")])
             for i in range(2)]
    for p in procs: assert p.wait(timeout=120) == 0
    eps = [(site, t0, t1, i) for i in range(2) for site, t0, t1 in json.loads((tmp_path / f"p{i}.json").read_text())]
    assert len(eps) == 16
    for site in ("a.example", "b.example"):
        mine = sorted(e for e in eps if e[0] == site)
        assert {e[3] for e in mine} == {0, 1}                    # both processes ran episodes on it
        for (_, _, end, _), (_, nxt, _, _) in zip(mine, mine[1:]):
            assert nxt >= end + 0.4 - 0.05, (site, end, nxt)    # one at a time, and the cooldown between them


# ---- `webmix online` end to end against the scripted stand-in

def test_online_cli_writes_the_webjudge_layout_resumes_and_keeps_hints_out(tmp_path, base):
    from webmix.agents import harness as H
    from webmix.agents import session as HS
    from webmix.eval.policy import serve_policy
    site = base + "/sites"
    hints = {"shop-1": "PRIVILEGED-HINT-7 the lamp costs 42", "forum-1": "PRIVILEGED-HINT-9 thread one"}
    om2w = [{"task_id": "shop-1", "confirmed_task": "Find the cheapest product in the shop.", "website": f"{site}/shop/products",
             "reference_length": 4, "level": "easy", "hint": hints["shop-1"]},
            {"task_id": "forum-1", "confirmed_task": "What is the newest thread about?", "website": f"{site}/forum/threads",
             "reference_length": 6, "level": "medium", "hint": hints["forum-1"]}]
    voyager = [{"web_name": "Shop", "id": "Shop--0", "ques": "How many orders are there?", "web": f"{site}/shop/orders"},
               {"web_name": "Forum", "id": "Forum--0", "ques": "Who are the forum's members?", "web": f"{site}/forum/members"}]
    (tmp_path / "om2w.json").write_text(json.dumps(om2w, indent=1))
    (tmp_path / "wv.jsonl").write_text("".join(json.dumps(v) + "\n" for v in voyager))
    pace = str(tmp_path / "pace")
    with serve_policy(port=0, seed=1) as srv:
        common = ["--arm", "base", "--model", "base", "--vllm", srv.base_url, "--pace-dir", pace]
        runs = {"om2w": (tmp_path / "o1", ["--bench", "om2w", "--tasks", str(tmp_path / "om2w.json"), "--hint-field", "hint",
                                           "--record-rows", "--workers", "2"]),
                "webvoyager": (tmp_path / "o2", ["--bench", "webvoyager", "--tasks", str(tmp_path / "wv.jsonl"), "--workers", "1"])}
        for bench, (out, args) in runs.items():
            r = subprocess.run(["webmix", "online", *args, *common, "--out", str(out)], capture_output=True, text=True, timeout=600)
            assert r.returncode == 0, r.stderr[-3000:]
            assert "2 episodes this run" in r.stdout and re.search(r"done\s+all", r.stdout), r.stdout   # the status table
        sent = json.dumps(srv.requests)
        # a rerun skips the finished episodes (no browser starts)
        out, args = runs["webvoyager"]
        r = subprocess.run(["webmix", "online", *args, *common, "--out", str(out)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0 and "0 episodes this run" in r.stdout and "2 already done" in r.stdout, r.stdout + r.stderr[-2000:]
        # one-line refusals, before any browser
        assert "does not serve nope" in cli("online", "--tasks", str(tmp_path / "wv.jsonl"), "--bench", "webvoyager", "--arm", "base",
                                            "--model", "nope", "--vllm", srv.base_url, "--out", str(tmp_path / "x"))
    assert "no OpenAI-compatible server answers at http://127.0.0.1:9/v1" in cli(
        "online", "--tasks", str(tmp_path / "wv.jsonl"), "--bench", "webvoyager", "--arm", "base", "--vllm", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "x"))
    assert "line 2: not one JSON list (Extra data) (one JSON value a line is WebVoyager's format" in cli(     # read as Online-Mind2Web's
        "online", "--tasks", str(tmp_path / "wv.jsonl"), "--bench", "om2w", "--arm", "base", "--out", str(tmp_path / "x"))
    assert "options of --arm base" in cli("online", "--tasks", str(tmp_path / "wv.jsonl"), "--arm", "agent", "--record-rows", "--out", str(tmp_path / "x"))

    assert all(h in sent for h in hints.values())                   # the hint reached the model while it acted
    async def fresh(paths):
        "Screenshots of these pages in a new browser."
        shots = {}
        async with H.browser(None) as bs:
            for p in paths:
                await HS.goto(bs, base + p)
                png = await bs.take_screenshot()
                shots[p] = base64.b64decode(png) if isinstance(png, str) else png
        return shots
    homes = asyncio.run(fresh(["/sites/shop", "/sites/forum"]))
    for bench, (out, _) in runs.items():
        lines = [json.loads(l) for l in (out / "results.jsonl").read_text().splitlines()]
        assert len(lines) == 2 and all(l["ok"] and l["status"] == "done" and l["bench"] == bench for l in lines)
        assert [p for l in lines for p in F.problems("result_online", l)] == []
        # the out folder holds task folders and plain files only; no staging or failed folder beside it
        assert {p.name for p in out.iterdir() if p.is_dir()} == {l["task_id"] for l in lines}
        assert {p.name for p in out.iterdir() if p.is_file() and not p.name.startswith(".")} == {"results.jsonl", "manifest.json"}
        assert not O.staging_root(out).exists() and not O.failed_root(out).exists()
        # one website at a time: every task is on this one MiniWeb server (the om2w run has two workers)
        spans = sorted((l["started"], l["ended"]) for l in lines)
        assert spans[1][0] >= spans[0][1], spans
        episodes = load_published(out)
        for tid, (result, shots) in episodes.items():
            assert WEBJUDGE_KEYS <= set(result) and result["task_id"] == tid and result["status"] == "done"
            assert F.problems("online_result", result) == []
            # episode.json beside WebJudge's files: the one episode layout, its steps naming trajectory/'s screenshots
            rec = json.loads((out / tid / "episode.json").read_text())
            assert (rec["layout"], rec["runner"]) == ("agent", "online") and F.problems("episode", rec) == []
            assert len(rec["steps"]) == 3 and [s["action"] for s in rec["steps"]] == ["scroll", "click", "done"], rec["steps"]
            assert [s["screenshot"] for s in rec["steps"]] == [f"trajectory/{i}_full_screenshot.png" for i in range(3)]
            assert rec["final_screenshot"] == "trajectory/3_full_screenshot.png" and rec["answer"] == result["final_result_response"]
            task = next(t for t in om2w + voyager if tid in (t.get("task_id"), t.get("id")))
            assert result["task"] == task.get("confirmed_task", task.get("ques"))
            # the scripted stand-in's generic episode: scroll, open the first link (the site's name, to its home)
            home = "/sites/" + ("shop" if "shop" in tid.lower() else "forum")
            assert result["action_history"][0] == "SCROLL DOWN", result
            assert re.fullmatch(rf'<a href="{home}"> \S.* -> CLICK', result["action_history"][1]), result
            assert len(result["action_history"]) == 2 and result["final_result_response"].startswith("The page shows:")
            assert len(result["thoughts"]) == 3 and not set(result["thoughts"]) & set(result["action_history"])
            # one screenshot per step in step order, then the final page: the home page the click opened
            assert [s.name for s in shots] == [f"{i}_full_screenshot.png" for i in range(4)]
            assert differing(shots[0], shots[-1]) > 0.01                          # the start page is not the final one
            assert differing(shots[-1], homes[home]) < 0.01, tid
    # hints: in no row, no result.json, no saved history; the rows are the episode's steps
    for tid, hint in hints.items():
        ep = runs["om2w"][0] / tid
        rows = (ep / "rows" / "rows.jsonl").read_text()
        assert [json.loads(l)["op"] for l in rows.splitlines()] == ["scroll", "click", "done"]
        assert (ep / "rows" / "step_0.png").exists()
        for f in [ep / "result.json", ep / "episode.json", ep / "rows" / "rows.jsonl", ep / "rows" / "episode.json", *ep.glob("history_*.json")]:
            assert "PRIVILEGED-HINT" not in f.read_text(), f
        assert om2w[0 if tid == "shop-1" else 1]["confirmed_task"] in rows
    assert not any(json.loads(l)["hint_left"] for l in (runs["om2w"][0] / "results.jsonl").read_text().splitlines())


# ---- a timed-out episode, and the planner agent, against scripted servers

def test_a_timed_out_episode_keeps_its_steps_and_the_planner_agent_merges_its_turns(tmp_path, base):
    from webmix.agents.llm import ScriptedServer
    from webmix.eval.policy_play import ScriptedPolicy
    from webmix.eval.policy_prompt import agent_reply, history_marks, request_text
    policy, release = ScriptedPolicy(seed=1), threading.Event()

    def slow(body):
        "The stand-in, stuck on the episode's second step (one step of its in the history) until the test ends."
        if history_marks(request_text(body) or ""): release.wait(120)
        return policy.respond(body)

    def planner(body):
        "A scripted planner: one delegation, then done."
        text = request_text(body)
        if text is None: return policy.respond(body)
        if not any(v == "plan" for v, _, _ in history_marks(text)):
            return agent_reply(body, "delegate", {"family": "Navigation", "instruction": "Open the first link on the page."},
                               "Starting.", "Delegating the step.", "Delegate opening the link.", "plan 1")
        return agent_reply(body, "done", {"text": "The shop's home page is open.", "success": True},
                           "The specialist opened it.", "All done.", "Report the result.", "plan 2")

    tasks = [{"task_id": "slow-1", "confirmed_task": "Look at the products.", "website": f"{base}/sites/shop/products", "level": "easy"}]
    with ScriptedServer({"base": slow, "planner": planner, "rest": policy.respond}) as srv:
        try:
            run = O.run_online(tasks, tmp_path / "slow", model="base", vllm=srv.base_url, timeout=30, workers=1,
                               pace_dir=tmp_path / "pace", progress=False)
        finally: release.set()
        agent = O.run_online(tasks, tmp_path / "agent", arm="agent", agent_version="v7", model="base", planner_name="planner",
                             adapters=["rest"], fallback=None, vllm=srv.base_url, workers=1, pace_dir=tmp_path / "pace", progress=False)
    (line,) = run.results
    assert line["status"] == "timeout" and not line["ok"] and line["cause"] == "timeout after 30s"
    (result, shots), = load_published(tmp_path / "slow").values()
    assert result["status"] == "timeout" and result["error"] == "timeout after 30s" and result["final_result_response"] == ""
    assert result["action_history"] == ["SCROLL DOWN"] and len(shots) == 2 == line["screenshots"]   # the step taken, then the page it left
    assert (tmp_path / "slow" / "slow-1" / "history_0.json").exists()

    (line,) = agent.results
    assert line["ok"] and line["status"] == "done" and line["answer"] == "The shop's home page is open."
    (result, shots), = load_published(tmp_path / "agent").values()
    # the specialist's actions, not the planner's delegate; the planner's turns first and last, by start time
    assert result["action_history"][0] == "SCROLL DOWN" and result["action_history"][1].endswith(" -> CLICK")
    assert not any("DELEGATE" in a for a in result["action_history"])
    assert result["thoughts"][0] == "Delegate opening the link." and result["thoughts"][-1] == "Report the result."
    assert len(shots) == len(result["thoughts"]) + 1                                # every step's screenshot, then the final page
    ep = tmp_path / "agent" / "slow-1"
    assert (ep / "planner_history.json").exists() and (ep / "history_0.json").exists()
    assert json.loads((ep / "subtasks.json").read_text())["trace"][0]["model"] == "rest"


# ---- hints that JSON escapes, and dict hints, against a model that echoes them

def strings_of(x):
    "Every string in decoded JSON `x`, a string that holds a JSON list or object decoded too (a model's reply)."
    if isinstance(x, dict): x = list(x.values())
    if isinstance(x, list):
        for v in x: yield from strings_of(v)
    elif isinstance(x, str):
        yield x
        if x.lstrip()[:1] in ("{", "["):
            try: yield from strings_of(json.loads(x))
            except ValueError: pass


def test_hints_that_json_escapes_and_dict_hints_and_their_echoes_leave_no_trace(tmp_path, base):
    from webmix.agents.llm import ScriptedServer
    from webmix.eval.policy_prompt import agent_reply, history_marks, request_text
    hints = {"esc-1": 'PRIV-1 line one\nsays "use the lamp" at C:\\shop\\lamp',
             "dict-1": {"answer": 'PRIV-2 the "Desk lamp"', "steps": ["open C:\\list", "line\nbreak"]}}
    tasks = [{"task_id": "esc-1", "confirmed_task": "Find the cheapest lamp.", "website": f"{base}/sites/shop/products",
              "level": "easy", "hint": hints["esc-1"]},
             {"task_id": "dict-1", "confirmed_task": "Find a desk lamp.", "website": f"{base}/sites/shop/products",
              "level": "easy", "hint": hints["dict-1"]}]
    shown = {t["task_id"]: O.hint_text(t["hint"]) for t in tasks}        # as the prompt carries it
    assert shown["dict-1"] == json.dumps(hints["dict-1"], ensure_ascii=False)
    replies = []

    def echo(body):
        "A model that repeats the hint in its memory and next goal, then in its answer's text."
        text = request_text(body) or ""
        tid = next(t["task_id"] for t in tasks if t["confirmed_task"] in text)
        h = shown[tid]
        if not history_marks(text):
            r = agent_reply(body, "scroll", {"down": True}, "Start.", f"Noted: {h}", f"Follow {h}", "echo 1")
        else:
            r = agent_reply(body, "done", {"text": f"Answer: {h}", "success": True}, "Read it.", f"Still {h}", "Finish.", "echo 2")
        replies.append((tid, body, r))
        return r

    with ScriptedServer({"base": echo}) as srv:
        run = O.run_online(tasks, tmp_path / "out", model="base", vllm=srv.base_url, hint_field="hint", record_rows=True,
                           workers=1, timeout=120, pace_dir=tmp_path / "pace", progress=False)
    assert all(l["ok"] and l["rows"] == 2 for l in run.results), run.results
    assert not any(l["hint_left"] for l in run.results)
    for tid, h in shown.items():
        sent = [(b, r) for t, b, r in replies if t == tid]
        # the hint reached the model, and the model echoed it in its later prompt (its memory in the history)
        assert any(h in s for b, _ in sent for s in strings_of(b["messages"]))
        assert any(f"Noted: {h}" in s for s in strings_of(sent[1][0]["messages"]))
        # what the online runner's detector says of the rows as they were sent: the hint is there
        task = O.online_task(next(t for t in tasks if t["task_id"] == tid))
        assert O.hint_in([{"messages": b["messages"], "target": json.dumps(r)} for b, r in sent], task, task.hint)
        ep = tmp_path / "out" / tid
        rows = [json.loads(l) for l in (ep / "rows" / "rows.jsonl").read_text().splitlines()]
        assert [r["op"] for r in rows] == ["scroll", "done"]
        records = [rows, json.loads((ep / "rows" / "episode.json").read_text()), json.loads((ep / "history_0.json").read_text()),
                   json.loads((ep / "result.json").read_text())["thoughts"]]
        for rec in records:
            assert not [s for s in strings_of(rec) if h in s or "PRIV-" in s], (tid, rec)
        # the task stays, and so does what the model said around the hint
        assert any(task.confirmed_task in s for s in strings_of(rows[0]["messages"]))
        assert json.loads(rows[0]["target"])["memory"].startswith("Noted: ")
        assert json.loads(rows[1]["target"])["action"][0]["done"]["text"] == "Answer: "
        assert any("Noted: " in s for s in strings_of(rows[1]["messages"]))


# ---- resume: every option that decides results is checked

def test_a_resume_with_other_deciding_options_is_refused_naming_them(tmp_path):
    from webmix import runs
    from webmix.agents.llm import ScriptedServer
    out, kw = tmp_path / "out", dict(model="base", vllm="http://127.0.0.1:9/v1", pace_dir=tmp_path / "pace", progress=False)
    O.run_online([], out, **kw)                                          # the manifest of the first session
    settings = json.loads((out / "manifest.json").read_text())["settings"]
    assert {"planner_turns", "timeout", "record_rows", "hint_field", "max_steps"} <= set(settings)
    assert not {"vllm", "pace_dir", "pace_cooldown"} & set(settings)
    for change, named in [({"planner_turns": 4}, "planner_turns None -> 4"), ({"timeout": 60}, "timeout 1800.0 -> 60.0"),
                          ({"record_rows": True}, "record_rows False -> True"), ({"arm": "agent"}, "arm 'base' -> 'agent'")]:
        with pytest.raises(runs.ManifestMismatch) as e: O.run_online([], out, **{**kw, **change})
        assert named in str(e.value), str(e.value)
    # what does not decide results: another server address, pacing, workers
    O.run_online([], out, **{**kw, "vllm": "http://127.0.0.1:10/v1", "pace_cooldown": 5.0}, workers=2)
    O.run_online([], out, **kw, timeout=60, force=True)                  # forced: the difference is recorded
    m = json.loads((out / "manifest.json").read_text())
    assert len(m["sessions"]) == 3 and m["sessions"][-1]["forced"] == ["timeout 1800.0 -> 60.0"]
    # the command says it in one line, before any browser
    (tmp_path / "t.json").write_text(json.dumps([{"task_id": "a", "confirmed_task": "Look.", "website": "http://127.0.0.1:9/"}]))
    with ScriptedServer({"base": lambda body: {}}) as srv:
        msg = cli("online", "--tasks", str(tmp_path / "t.json"), "--arm", "base", "--model", "base", "--vllm", srv.base_url,
                  "--pace-dir", str(tmp_path / "pace"), "--out", str(out), "--planner-turns", "3")
    assert msg.startswith("webmix online: ") and "planner_turns None -> 3" in msg and "--force" in msg, msg


# ---- the published task files, WebVoyager's dates moved past today

def test_the_published_task_files_are_the_default_and_webvoyagers_dates_move_past_today(tmp_path):
    from datetime import date
    from webmix.eval import bench_files as B
    from webmix.eval.options import OnlineOptions, OnlineTasks, online_tasks
    om2w = O.load_tasks(B.bench_file("om2w"), "om2w")
    voyager = O.load_tasks(B.bench_file("webvoyager"), "webvoyager")
    assert len(om2w) == 300 and len(voyager) == 643 and len({t.level for t in voyager}) == 15
    assert {"easy", "medium", "hard"} == {t.level for t in om2w}
    # without --tasks: the published file, its dates moved past today, said in the note the manifest records
    note = {}
    tasks = online_tasks(OnlineTasks(), OnlineOptions(bench="webvoyager"), note)
    assert len(tasks) == 643 and note["published"] and note["sha256"] and note["dates_moved"]["past"] == date.today().isoformat()
    moved = note["dates_moved"]["years"]
    assert len(moved) > 50 and {k.split("--")[0] for k in moved} == {"Booking", "Google Flights"}
    by_id = {t.task_id: t for t in tasks}
    for tid in moved:
        for _, _, y, mds in B.written_dates(by_id[tid].confirmed_task):
            for k, md in enumerate(mds):       # a range's start in the year before its end (December to January)
                start_year = y - (k == 0 and len(mds) > 1 and mds[0] > mds[-1])
                assert date(start_year, *md) > date.today(), (tid, by_id[tid].confirmed_task)
        assert by_id[tid]["ques"] == by_id[tid].confirmed_task
    original = {t.task_id: t.confirmed_task for t in voyager}
    assert {t for t in by_id if by_id[t].confirmed_task != original[t]} == set(moved)
    assert by_id["ArXiv--14"].confirmed_task == original["ArXiv--14"]        # a question about the past keeps its date
    # dates: the same years for every date of a task; a leap day to a leap year; a range across the new year
    assert B.move_dates("from February 28 to March 2, 2024, for two", date(2026, 12, 7)) == ("from February 28 to March 2, 2027, for two", 3)
    assert B.move_dates("from February 22 to February 29, 2024.", date(2026, 12, 7))[0].endswith("2028.")
    assert B.move_dates("leaving on December 25, 2023, and returning on January 5, 2024", date(2026, 12, 26))[0] == \
        "leaving on December 25, 2027, and returning on January 5, 2028"
    assert B.move_dates("for 20/12/2023 - 21/12/2023.", date(2026, 12, 7))[0] == "for 20/12/2026 - 21/12/2026."
    assert B.move_dates("deals for December 25-26.", date(2026, 12, 7)) == ("deals for December 25-26.", 0)
    # a data folder without the file: one line naming where it goes
    import os
    os.environ["WEBMIX_DATA"] = str(tmp_path)
    try: msg = cli("online", "--bench", "om2w", "--arm", "base", "--out", str(tmp_path / "x"))
    finally: del os.environ["WEBMIX_DATA"]
    assert msg.startswith("webmix online: no published om2w task file at ") and "Online_Mind2Web.json" in msg and "--tasks" in msg, msg


# ---- the action space, the seed

def test_online_offers_javascript_only_with_allow_js_and_records_it_and_the_seed_orders_the_tasks(tmp_path):
    assert "evaluate" not in O.agent_actions() and "evaluate" in O.agent_actions(True)
    kw = dict(model="base", vllm="http://127.0.0.1:9/v1", pace_dir=tmp_path / "pace", progress=False)
    O.run_online([], tmp_path / "a", **kw)
    O.run_online([], tmp_path / "b", allow_js=True, seed=3, **kw)
    a, b = (json.loads((tmp_path / d / "manifest.json").read_text())["settings"] for d in "ab")
    assert a["allow_js"] is False and "evaluate" not in a["actions"] and a["seed"] == 0
    assert b["allow_js"] is True and "evaluate" in b["actions"] and b["seed"] == 3
    from webmix import runs
    with pytest.raises(runs.ManifestMismatch) as e: O.run_online([], tmp_path / "a", allow_js=True, **kw)
    assert "allow_js False -> True" in str(e.value)
    tasks = [O.online_task({"task_id": f"{s}{i}", "confirmed_task": "Look.", "website": f"http://{s}.example/"})
             for s in "abc" for i in range(4)]
    orders = {seed: [t.task_id for t in O.by_turns(tasks, seed)] for seed in (0, 1, 2)}
    assert orders[0] == [t.task_id for t in O.by_turns(tasks, 0)] and len({tuple(o) for o in orders.values()}) == 3
    for order in orders.values():                    # shuffled, still alternating between websites
        assert all(x[0] != y[0] for x, y in zip(order[:9], order[1:9])), order
    assert [t.task_id for t in O.by_turns(tasks)][:3] == ["a0", "b0", "c0"]


# ---- hint_left measured on its own

def test_hint_left_finds_the_hint_however_a_row_encodes_it():
    task = O.online_task({"task_id": "t", "confirmed_task": "Find the cheapest lamp.", "website": "http://shop.example/"})
    hint = 'PRIVILEGED: the "Desk lamp" costs $42 & ships free'
    clean = [{"messages": [{"role": "user", "content": [{"type": "text", "text": "Find the cheapest lamp."}]}],
              "target": json.dumps({"memory": "Looking at the list.", "action": [{"scroll": {"down": True}}]})}]
    assert O.leaked_hint(clean, task, hint) is None
    leaks = {"html": "it said the &quot;Desk lamp&quot; costs $42 &amp; ships",
             "url": "NAVIGATE -> /search?q=the%20%22Desk%20lamp%22%20costs%20%2442",
             "json": json.dumps({"memory": json.dumps({"note": 'the "DESK LAMP" costs $42'})}),
             "space": 'the   "desk\n lamp"   costs',
             "escaped": 'noted: the \\"Desk lamp\\" costs'}
    for how, text in leaks.items():
        for where in ("message", "target"):
            row = ({"messages": [{"role": "assistant", "content": text}], "target": "{}"} if where == "message"
                   else {"messages": [], "target": text})
            assert O.leaked_hint(clean + [row], task, hint), (how, where)
    # what the stripping's own check missed: the hint HTML-escaped or URL-encoded
    assert not O.hint_in([{"target": leaks["html"]}], task, hint) and not O.hint_in([{"target": leaks["url"]}], task, hint)
    # a run of the hint that is also the task's own text is not a leak
    assert O.leaked_hint([{"messages": [], "target": "Find the cheapest lamp."}], task, "Find the cheapest lamp. It is $4.") is None


# ---- every episode kept in the run folder: the agent's failures scored, the infrastructure's masked

def refusing_server(status, message):
    "A model server answering every chat request with `status` and an OpenAI-style error `message` -> (base_url, stop)."
    from flask import Flask, jsonify
    from werkzeug.serving import make_server
    app = Flask("refusing")

    @app.get("/v1/models")
    def models(): return jsonify(object="list", data=[{"id": "base", "object": "model", "created": 0, "owned_by": "test"}])

    @app.post("/v1/chat/completions")
    def chat(): return jsonify(error={"message": message, "type": "invalid_request_error", "param": "messages",
                                      "code": "context_length_exceeded" if status == 400 else None}), status
    srv = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{srv.server_port}/v1", srv.shutdown


def test_every_episode_stays_in_the_run_folder_a_4xx_is_the_agents_and_infrastructure_is_masked(tmp_path, base):
    from webmix.world.servers import free_ports
    shop = [{"task_id": "shop-1", "confirmed_task": "Look at the products.", "website": f"{base}/sites/shop/products", "level": "easy"}]
    down = [{"task_id": "down-1", "confirmed_task": "Look at the page.", "website": f"http://127.0.0.1:{free_ports(1)[0]}/", "level": "easy"}]
    kw = dict(model="base", workers=1, timeout=120, pace_dir=tmp_path / "pace", progress=False)
    url, stop = refusing_server(400, "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens.")
    try: refused = O.run_online(shop, tmp_path / "refused", vllm=url, **kw)
    finally: stop()
    url, stop = refusing_server(503, "The server is overloaded.")
    try: broken = O.run_online(shop + down, tmp_path / "broken", vllm=url, **kw)
    finally: stop()
    (line,) = refused.results
    assert line["status"] == "stopped" and line["ok"] and not line.get("masked"), line
    assert "refused the agent's request" in line["error"] and "400" in line["error"], line
    by_id = {l["task_id"]: l for l in broken.results}
    for tid, why in [("shop-1", "model server failed"), ("down-1", "website")]:
        l = by_id[tid]
        assert l["status"] == "error" and not l["ok"] and l["masked"] is True and why in l["error"], l
    assert broken.summary()["masked"] == 2 and broken.summary()["failed"] == 0
    for out, n in [(tmp_path / "refused", 1), (tmp_path / "broken", 2)]:
        assert not O.failed_root(out).exists()
        episodes = load_published(out)                        # every task, as WebJudge reads the folder
        assert len(episodes) == n
        for tid, (result, shots) in episodes.items():
            line = next(l for l in (refused.results + broken.results) if l["task_id"] == tid and out.name in l["folder"])
            assert result["status"] == line["status"] and result["error"] == line["error"] and F.problems("online_result", result) == []
            assert result["masked"] is bool(line.get("masked"))
    table = O.status_table(O.load_results(tmp_path / "broken"))
    assert table["masked"].iloc[-1] == 2 and "error" not in table.columns     # the totals row: both masked
