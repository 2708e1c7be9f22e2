"""One fault matrix for the runners that run units: `evaluate`, `online` and taskgen's judge (datagen and plan-data
have theirs in tests/test_datagen.py and tests/test_plan_data.py).

Faults (columns): (a) the unit's Chromium killed mid-unit, (b) the MiniWeb server it works on killed mid-unit,
(c) the model server answering HTTP 500, (d) answering malformed JSON (d1: a reply whose content is not the JSON
the request asks for; d2: an HTTP body that is not JSON at all), (e) hanging past the unit's timeout, (f) going
away (its port closed mid-request, back after the unit's line), (g) SIGKILL of the runner process, then a rerun.

One run per runner, real processes on loopback only (Chromium, MiniWeb, the openai client against a scripted
server): every task meets a different fault, chosen by the model handler from the request's text (the task's
instruction, or the judge's EPISODE line); control tasks, one after each kind of fault, show the run recovered.
Each cell checks: one failed line with its cause (or a retry that succeeds), the run finishes the other units,
no line lost, no key twice, and no live process on the run's folders afterwards.

(g) for evaluate is tests/test_evaluate.py::test_killed_run_resumes_proposed_rows_timeouts_and_cancellation (and
tests/test_orphans.py for the runner killed alone); for the judge it is
tests/test_taskgen.py::test_sigkill_during_judge_then_rerun_judges_no_episode_twice. Online's is folded in here.
(a) and (b) do not apply to the judge (no browser, no MiniWeb).

A model server that fails is not the agent's failure: evaluate masks such an episode (masked: true, counted apart,
the only kind --retry-failed runs again), online calls it an error; a model whose replies are not valid steps failed
on its own, and the line names why (a 4xx from the model server is the agent's too: tests/test_evaluate.py)."""
import json, os, re, shutil, signal, subprocess, threading, time
from pathlib import Path

import psutil
import pytest
from flask import Response, request

from procs import kill_browser, orphans
from webmix.eval import evaluate as E
from webmix.eval import online as O
from webmix.eval.options import OnlineOptions
from webmix.eval import taskjudge as T
from webmix.eval.stand_ins import model_spec
from webmix.agents.llm import ScriptedServer
from webmix.world.servers import Servers, free_ports, port_free
from webmix.eval.policy_play import ScriptedPolicy
from webmix.eval.policy_prompt import request_text, section
from webmix.runs import done_keys, latest, read_results, run_units
from webmix.data.tasks import make_tasks

from test_datagen import _lines

EVAL_TIMEOUT = 15.0          # evaluate's --timeout: a control episode's agent takes 2-4 s, the hung one is cut here
ONLINE_TIMEOUT = 12.0        # online's --timeout
JUDGE_TIMEOUT = 2.0          # seconds one judge request may take
WAIT = 120                   # the longest any helper waits for something to happen


# ── a model server that can fail ──────────────────────────────────────────────────────────────

class Malformed(str):
    "A reply sent as the message's content as it is: not the JSON the request asks for (ScriptedServer would refuse it)."


class FaultServer(ScriptedServer):
    "webmix's scripted server, able to send a reply that is not JSON, an HTTP body that is not JSON, and to go away."
    def __init__(self, replies, raw=None, **kw):
        super().__init__(replies, **kw)
        self.raw = raw                     # body -> the HTTP body to send instead of a completion (None: answer it)
        inner = self.app.view_functions["completions"]

        def completions():
            body = request.get_json(silent=True)
            raw = self.raw(body) if self.raw is not None and isinstance(body, dict) else None
            if raw is None: return inner()
            self._record(body)
            return Response(raw, status=200, mimetype="application/json")
        self.app.view_functions["completions"] = completions

    def _answer(self, adapter, req):
        reply = adapter(req)
        if not isinstance(reply, Malformed): return super()._answer(lambda _: reply, req)
        msg = {"role": "assistant", "content": str(reply)}
        return msg, {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}

    def go_away(self):
        "Close the port and every open connection at once, as a crashed server does (from a handler too: its request is cut)."
        from waitress import wasyncore
        server, thread, self._server = self._server, self._thread, None
        if server is None: return
        server.task_dispatcher.shutdown(cancel_pending=True, timeout=0)
        server.trigger.pull_trigger(lambda: wasyncore.close_all(server._map))
        thread.join(10)

    def stop(self):
        self.closed = True                   # for good: back_when starts it no more
        super().stop()

    def back_when(self, done, what):
        "Start again on the same port once `done()` holds (a restarted server), in a thread; at most WAIT s."
        self.closed = False
        def wait():
            end = time.monotonic() + WAIT
            while time.monotonic() < end and not done() and not self.closed: time.sleep(0.05)
            if self.closed: return
            self.start()
            what.append(("back", round(time.time(), 2)))
        threading.Thread(target=wait, daemon=True, name="model-server-back").start()


def garbage(_body) -> bytes:
    "An HTTP body cut mid-way: not JSON."
    return b'{"id": "chatcmpl-cut", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assis'


MALFORMED = '{"evaluation_previous_goal": "Start.", "memory": "", "action": [{"click": {"ind'


# ── processes (the others in procs.py) ───────────────────────────────────────────────────────

def kill_miniweb(port) -> int | None:
    "SIGKILL the MiniWeb server serving `port` (its command line is `... serve(<port>, ...)`); -> its pid."
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(f"serve({port}," in a for a in p.info["cmdline"] or ()):
                p.kill(); return p.pid
        except psutil.Error: pass
    return None


def show(head, by_case, asked) -> None:
    "Print what each case's line says (pytest -s shows it): the matrix's cells as they came out."
    print(f"\n{head}")
    for case, lines in by_case.items():
        for l in lines:
            print(f"  {case:9} ok={l['ok']!s:5} {l.get('status') or '':8} requests={asked.get(case, 0):<2} "
                  f"{l['duration_s']:5.1f}s cause={str(l['cause'])[:110]}")


def until(check, seconds=WAIT, step=0.1):
    "Poll `check()` until it is true or `seconds` pass; its last value."
    end = time.monotonic() + seconds
    while not (got := check()) and time.monotonic() < end: time.sleep(step)
    return got


def agent_case(body, cases) -> str | None:
    "The case of the task whose instruction a browser-use request's <user_request> starts with (None: not an agent step)."
    text = request_text(body)
    if text is None: return None
    asked = " ".join(section(text, "user_request").split())
    return next((c for ins, c in cases.items() if asked.startswith(ins)), None)


def distinct_tasks(n) -> list:
    "`n` quick shop tasks (one click, then done) none of whose instructions starts another's."
    picked = []
    for t in make_tasks("shop"):
        if t["macro"] not in ("open_menu_item", "navigate_home"): continue
        ins = " ".join(t["instruction"].split())
        others = [" ".join(p["instruction"].split()) for p in picked]
        if any(ins.startswith(o) or o.startswith(ins) for o in others): continue
        picked.append(t)
    assert len(picked) >= n, len(picked)
    return picked[:n]


class Cases:
    "What the model handler did, by case: its requests, its kills (with pids), the server's outage."
    def __init__(self):
        self.requests, self.events, self.lock = {}, [], threading.Lock()
        self.release = threading.Event()           # frees a hung handler

    def seen(self, case) -> int:
        "Count one request of `case`; -> how many it has made, this one included."
        with self.lock:
            self.requests[case] = self.requests.get(case, 0) + 1
            return self.requests[case]

    def note(self, *event):
        with self.lock: self.events.append(event)

    def did(self, what) -> list: return [e for e in self.events if e[0] == what]


def cut_body(body, case_of, cases):
    "The garbage case's HTTP body (None for every other request)."
    if agent_case(body, case_of) != "garbage": return None
    cases.seen("garbage")
    return garbage(body)


def act_out(case, n, cases, srv, kill_chromium, kill_site, policy_reply, body, hang_s):
    "The model's answer to request `n` of `case`, the case's fault acted first (shared by evaluate and online)."
    if case == "chromium" and n == 1: cases.note("chromium", kill_chromium())
    if case == "miniweb" and n == 1: cases.note("miniweb", kill_site())
    if case == "http500": raise RuntimeError("scripted fault: HTTP 500")
    if case == "malformed": return Malformed(MALFORMED)
    if case == "hang":
        cases.note("hang", n)
        cases.release.wait(hang_s)
    if case == "goaway" and n == 1:
        cases.release.set()                       # the hung handler first: nothing of the old server stays behind
        cases.note("goaway", round(time.time(), 2))
        srv.go_away()
        raise RuntimeError("gone")                # never sent: the connection is closed
    return policy_reply(body)


# ── evaluate ─────────────────────────────────────────────────────────────────────────────────

EVAL_CASES = ["control1", "chromium", "miniweb", "control2", "http500", "malformed", "garbage", "hang", "goaway", "control3"]


@pytest.fixture(scope="module")
def evaluate_run(tmp_path_factory):
    "One `evaluate` run, one worker, ten datagen tasks of the shop in this order, each meeting its case's fault."
    out = (tmp_path_factory.mktemp("faults") / "evaluate").resolve()
    tasks = distinct_tasks(len(EVAL_CASES))
    case_of = {" ".join(t["instruction"].split()): c for t, c in zip(tasks, EVAL_CASES)}
    key_of = {c: t["task_id"] for t, c in zip(tasks, EVAL_CASES)}
    policy, cases, port = ScriptedPolicy(datagen=tasks, seed=1), Cases(), free_ports(1)[0]

    def model(body):
        case = agent_case(body, case_of)
        if case is None: return policy.respond(body)
        n = cases.seen(case)
        return act_out(case, n, cases, srv, lambda: kill_browser(out / "_tmp"), lambda: kill_miniweb(port),
                       policy.respond, body, EVAL_TIMEOUT + 30)

    srv = FaultServer({"base": model}, raw=lambda body: cut_body(body, case_of, cases), threads=8).start()
    srv.back_when(lambda: key_of["goaway"] in done_keys(out), cases.events)
    t0 = time.time()
    try:
        E.run_evaluate(tasks, out, vllm=srv.base_url, base_name="base", timeout=EVAL_TIMEOUT, workers=1, ports=[port],
                       progress=False)
    finally:
        cases.release.set()
        srv.stop()
    seconds = time.time() - t0
    lines = _lines(out)
    return {"out": out, "lines": lines, "by_case": {c: [l for l in lines if l["task_id"] == key_of[c]] for c in EVAL_CASES},
            "keys": key_of, "cases": cases, "port": port, "seconds": seconds, "orphans": orphans(out),
            "port_free": until(lambda: port_free(port), 10)}


# (cause pattern, ok, masked): a model server that failed, a browser or MiniWeb server that died, is not the agent's
# failure: its episode is masked (counted apart, --retry-failed runs it again); a model whose replies are not valid
# steps, or that ran past the timeout, failed on its own (ok false, the reason named)
SERVER = re.compile(r"^model server failed: ")
EVAL_CELLS = {
    "chromium": (re.compile(r"browser|cdp|chromium", re.I), False, True),
    "miniweb": (re.compile(r"^no grade inputs: .*(refused|connect)", re.I), None, True),
    "http500": (re.compile(r"^model server failed: .*\b500\b"), None, True),
    "malformed": (re.compile(r"^not graded a success: the model's replies were not valid steps \(ValidationError"), False, False),
    "garbage": (re.compile(r"^model server failed: .*(json|decode|pars)", re.I), None, True),
    "hang": (re.compile(rf"^timeout after {EVAL_TIMEOUT:g}s$"), False, False),
    "goaway": (re.compile(r"^model server failed: .*connect", re.I), None, True),
}


@pytest.mark.timeout(400)
@pytest.mark.parametrize("case", list(EVAL_CELLS))
def test_evaluate_fault_fails_its_one_unit_with_its_cause(evaluate_run, case):
    cause_re, ok, masked = EVAL_CELLS[case]
    (line,) = evaluate_run["by_case"][case]                       # exactly one line
    assert line["ok"] is ok and line["cause"] and bool(line.get("masked")) is masked, line
    assert bool(line.get("model_error")) == bool(SERVER.search(line["cause"])), line
    if case in ("chromium", "miniweb"): assert evaluate_run["cases"].did(case)[0][1], f"no {case} process was found to kill"
    assert cause_re.search(line["cause"]), (case, line["cause"], line.get("detail"))


@pytest.mark.timeout(400)
def test_evaluate_run_finishes_every_unit_and_leaves_nothing_running(evaluate_run):
    r, lines = evaluate_run, evaluate_run["lines"]
    assert sorted(l["task_id"] for l in lines) == sorted(r["keys"].values())          # none lost, none twice
    assert len(latest(read_results(r["out"]))) == len(lines) == len(EVAL_CASES)
    assert all(l["cause"] for l in lines if not l["ok"])
    table = E.success_table(E.load_results(r["out"]))          # the three the model server failed, Chromium and MiniWeb killed
    assert table.loc["masked", "base"] == "5" and table.loc["ungraded", "base"] == "0" and table.loc["episodes", "base"] == "10"
    assert table.loc["all", "base"] == "3/5", table                 # the controls pass; the malformed and hung ones fail
    for c in ("control1", "control2", "control3"):                                     # after each kind of fault
        assert r["by_case"][c][0]["ok"], r["by_case"][c]
    assert r["cases"].did("back"), "the model server never came back"
    asked = r["cases"].requests
    assert all(asked.get(c, 0) >= 1 for c in ("http500", "malformed", "garbage", "hang")) and asked.get("goaway") == 1, asked
    assert r["orphans"] == [] and r["port_free"], (r["orphans"], r["port"])
    assert not (r["out"] / "_tmp").exists()
    show(f"evaluate: {len(lines)} units in {r['seconds']:.0f} s", r["by_case"], asked)


def test_a_failed_units_trace_is_its_own_exception(tmp_path):
    "The trace of a unit that raised is its own exception's, without the engine's \"no running event loop\" before it."
    async def boom(unit, worker): raise ValueError("the unit's own failure")
    run = run_units([{"task_id": "boom"}], boom, tmp_path / "run", runner="faults", miniweb=False, progress=False)
    (line,) = run.results
    assert line["cause"] == "ValueError: the unit's own failure" and "ValueError: the unit's own failure" in line["trace"]
    assert "no running event loop" not in line["trace"], line["trace"]


# ── online ───────────────────────────────────────────────────────────────────────────────────

ONLINE_CASES = ["control1", "chromium", "miniweb", "control2", "http500", "malformed", "garbage", "hang", "goaway",
                "control3", "sigkill"]
PAGES = ["/sites/shop/products", "/sites/shop/orders", "/sites/forum/threads", "/sites/shop/receipts", "/sites/kanban",
         "/sites/forum/members", "/sites/shop", "/sites/forum", "/sites/shop/orders/new", "/sites/shop/products/3",
         "/sites/forum/threads/1"]


VICTIM = 2                                  # the task on a MiniWeb server of its own, the `miniweb` case


def cases_in_run_order(websites) -> list:
    """The case of each task on `websites` such that `webmix online` (its default --seed shuffles, then alternates
    between websites) meets them in ONLINE_CASES' order, the `miniweb` case on the VICTIM's own server."""
    shape = lambda i, w: O.online_task({"task_id": str(i), "confirmed_task": "-", "website": w, "level": "easy"})
    order = [int(t.task_id) for t in O.by_turns([shape(i, w) for i, w in enumerate(websites)], OnlineOptions().seed)]
    rest = iter(c for c in ONLINE_CASES if c != "miniweb")
    case = {i: "miniweb" if i == VICTIM else next(rest) for i in order}
    assert case[order[-1]] == "sigkill", order
    return [case[i] for i in range(len(websites))]


@pytest.fixture(scope="module")
def online_run(tmp_path_factory):
    """`webmix online` as a process of its own, one worker, eleven tasks on MiniWeb sites this test serves (the
    `miniweb` one on a server of its own, killed mid-episode); SIGKILLed at the last task's first request, then rerun."""
    root = tmp_path_factory.mktemp("faults-online").resolve()
    out = root / "online"
    policy, cases, proc = ScriptedPolicy(seed=1), Cases(), {}
    case_of = {f"Look around this page and say what it shows (case {c}).": c for c in ONLINE_CASES}

    def model(body):
        case = agent_case(body, case_of)
        if case is None: return policy.respond(body)
        n = cases.seen(case)
        if case == "sigkill" and n == 1 and "run" in proc:
            os.kill(proc["run"].pid, signal.SIGKILL)                 # the runner alone, as `kill -9 PID` does
            cases.note("sigkill", proc["run"].pid)
        return act_out(case, n, cases, srv, lambda: kill_browser(O.staging_root(out)), lambda: kill_miniweb(victim.ports[0]),
                       policy.respond, body, ONLINE_TIMEOUT + 30)

    with Servers(ports=free_ports(1)) as site, Servers(ports=free_ports(1)) as victim:
        websites = [(victim if i == VICTIM else site).bases[0] + PAGES[i] for i in range(len(ONLINE_CASES))]
        tasks = [{"task_id": f"{i:02d}-{c}", "confirmed_task": f"Look around this page and say what it shows (case {c}).",
                  "website": w, "level": "easy"} for i, (c, w) in enumerate(zip(cases_in_run_order(websites), websites))]
        (root / "tasks.json").write_text(json.dumps(tasks, indent=1))
        key_of = {t["task_id"].split("-", 1)[1]: t["task_id"] for t in tasks}
        srv = FaultServer({"base": model}, raw=lambda body: cut_body(body, case_of, cases), threads=8).start()
        srv.back_when(lambda: key_of["goaway"] in done_keys(out), cases.events)
        cmd = ["webmix", "online", "--tasks", str(root / "tasks.json"), "--arm", "base", "--model", "base", "--vllm", srv.base_url,
               "--pace-dir", str(root / "pace"), "--out", str(out), "--workers", "1", "--timeout", f"{ONLINE_TIMEOUT:g}"]
        t0 = time.time()
        try:
            first = proc["run"] = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                                   start_new_session=True)
            _, err1 = first.communicate(timeout=300)
            after_kill = {"lines": _lines(out), "orphans": orphans(out, O.staging_root(out), O.failed_root(out)),
                          "stale": sorted(p.name for p in O.staging_root(out).glob("*"))}
            proc.clear()
            again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        finally:
            cases.release.set()
            if "run" in proc and proc["run"].poll() is None: os.killpg(proc["run"].pid, signal.SIGKILL); proc["run"].wait()
            srv.stop()
    lines = _lines(out)
    return {"out": out, "lines": lines, "keys": key_of, "cases": cases, "first_rc": first.returncode, "err1": err1,
            "again": again, "after_kill": after_kill, "seconds": time.time() - t0,
            "by_case": {c: [l for l in lines if l["task_id"] == key_of[c]] for c in ONLINE_CASES},
            "orphans": orphans(out, O.staging_root(out), O.failed_root(out))}


# (cause pattern, status): a model server that failed, or a website that went down, is an error, not an episode for
# WebJudge to score; a model whose replies are not valid steps stopped on its own (its episode stands, the reason named)
ONLINE_CELLS = {
    "chromium": (re.compile(r"browser|cdp|chromium", re.I), "error"),
    "miniweb": (re.compile(r"^website unreachable: .*refused", re.I), "error"),
    "http500": (re.compile(r"^model server failed: .*\b500\b"), "error"),
    "malformed": (re.compile(r"^the model's replies were not valid steps \(ValidationError"), "stopped"),
    "garbage": (re.compile(r"^model server failed: .*(json|decode|pars)", re.I), "error"),
    "hang": (re.compile(rf"^timeout after {ONLINE_TIMEOUT:g}s$"), "timeout"),
    "goaway": (re.compile(r"^model server failed: .*connect", re.I), "error"),
}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("case", list(ONLINE_CELLS))
def test_online_fault_fails_its_one_episode_with_its_cause(online_run, case):
    cause_re, status = ONLINE_CELLS[case]
    (line,) = online_run["by_case"][case]
    if case in ("chromium", "miniweb"): assert online_run["cases"].did(case)[0][1], f"no {case} process was found to kill"
    said = (case, line["status"], line["cause"], line["error"], line.get("actions"), line.get("answer"))
    assert line["status"] == status and line["ok"] is (status == "stopped"), said
    assert cause_re.search(line["error"] or ""), said
    assert line["cause"] == (None if status == "stopped" else line["error"]), said
    result = json.loads((online_run["out"].parent / line["folder"] / "result.json").read_text())
    assert result["status"] == line["status"] and result["error"] == line["error"]


@pytest.mark.timeout(600)
def test_online_run_killed_and_rerun_finishes_every_episode_once_and_leaves_nothing_running(online_run):
    r, out = online_run, online_run["out"]
    # the SIGKILL: the runner died at the last task, every earlier episode has its line, nothing of it runs on
    assert r["cases"].did("sigkill") and r["first_rc"] == -signal.SIGKILL, r["err1"][-2000:]
    before = r["after_kill"]
    assert sorted(l["task_id"] for l in before["lines"]) == sorted(k for c, k in r["keys"].items() if c != "sigkill")
    assert before["orphans"] == [], before["orphans"]
    assert before["stale"], "the killed run's staging folder should be left for the rerun to clear"
    # the rerun: the one episode left, once; no line lost, no key twice
    assert r["again"].returncode == 0, r["again"].stderr[-2000:]
    said = r["again"].stdout
    assert "1 episodes this run" in said and f"{len(ONLINE_CASES) - 1} already done" in said, said
    assert sorted(l["task_id"] for l in r["lines"]) == sorted(r["keys"].values())
    assert len(latest(read_results(out))) == len(r["lines"]) == len(ONLINE_CASES)
    assert all(l["cause"] for l in r["lines"] if not l["ok"])
    for c in ("control1", "control2", "control3", "sigkill"):
        (line,) = r["by_case"][c]
        assert line["ok"] and line["status"] == "done" and line["actions"] >= 1, line
    assert r["cases"].did("back"), "the model server never came back"
    # every episode has its folder, in out/ or beside it in out.failed/; nothing staged is left
    for l in r["lines"]: assert (out.parent / l["folder"] / "result.json").exists(), l
    assert not O.staging_root(out).exists()
    asked = r["cases"].requests
    assert all(asked.get(c, 0) >= 1 for c in ("http500", "malformed", "garbage", "hang")) and asked.get("goaway") == 1, asked
    assert r["orphans"] == [], r["orphans"]
    show(f"online: {len(r['lines'])} episodes in {r['seconds']:.0f} s, SIGKILL and rerun included", r["by_case"], asked)


# ── taskgen's judge ──────────────────────────────────────────────────────────────────────────

JUDGE_CASES = ["control1", "http500", "malformed", "garbage", "hang", "goaway", "control2"]


def ran_to_the_end(run) -> list:
    "The keys of `run`'s episodes the judge asks its model about (those not cut off), in the run's order."
    lines, inputs = T._line_and_inputs(run)
    return [k for k, *_ in T.run_episodes(run) if T.cut_off(lines.get(k), inputs(k)) is None]


def copy_episode(run, key, new):
    "One more episode in `run`: `key`'s folder and result line under the name `new`."
    shutil.copytree(run / key, run / new)
    line = latest(read_results(run))[key]
    with open(run / "results.jsonl", "a") as f: f.write(json.dumps({**line, "task_id": new}) + "\n")


@pytest.fixture(scope="module")
def judge_run(evaluate_run, tmp_path_factory):
    """`taskgen judge` (one worker, three tries an episode) on a copy of the evaluate run's episodes, each meeting its
    case's fault on every try (the server gone from the goaway episode's first request until its error line), then
    judged again with the server healthy."""
    rdir = tmp_path_factory.mktemp("faults-judge") / "run"
    shutil.copytree(evaluate_run["out"], rdir, ignore=shutil.ignore_patterns("_tmp"))
    asks = ran_to_the_end(rdir)                   # a cut-off episode is judged NOT SUCCESS without a request
    for i in range(len(JUDGE_CASES) - len(asks)): copy_episode(rdir, asks[i % len(asks)], f"{asks[i % len(asks)]}~copy{i}")
    keys = [k for k, *_ in T.run_episodes(rdir)]
    asks = ran_to_the_end(rdir)
    assert len(asks) >= len(JUDGE_CASES), (keys, asks)
    case_of = {k: "control" for k in keys} | dict(zip(asks, JUDGE_CASES))
    jdir = T.judge_dir(rdir)
    judge, cases, asked, faulty = T.ScriptedJudge(seed=4), Cases(), [], threading.Event()
    faulty.set()

    def model(body):
        key = T.episode_of(T.user_text(body))
        asked.append(key)
        case = case_of.get(key) if faulty.is_set() else "control"
        n = cases.seen(case)
        if case == "http500": raise RuntimeError("scripted fault: HTTP 500")
        if case == "malformed": return Malformed('{"parts": [], "verdict": "SUCC')
        if case == "hang": cases.release.wait(JUDGE_TIMEOUT * 5)
        if case == "goaway" and n == 1:
            cases.note("goaway", round(time.time(), 2))
            srv.go_away()
            raise RuntimeError("gone")
        return judge(body)

    def raw(body):
        key = T.episode_of(T.user_text(body))
        return garbage(body) if faulty.is_set() and case_of.get(key) == "garbage" else None

    srv = FaultServer(model, raw=raw, threads=8).start()
    goaway = next(k for k, c in case_of.items() if c == "goaway")
    srv.back_when(lambda: (jdir / "errors.jsonl").exists() and goaway in (jdir / "errors.jsonl").read_text(), cases.events)
    spec = model_spec("scripted-judge", srv.base_url, timeout=JUDGE_TIMEOUT)
    try:
        first = T.judge_run(rdir, spec, workers=1, retries=3, progress=False, say=lambda *_: None)
        errors = read_results(jdir / "errors.jsonl")
        verdicts = {f.stem: json.loads(f.read_text()) for f in jdir.glob("*.json") if not f.name.startswith("_")}
        until(lambda: cases.did("back"), 10)
        cases.release.set()
        faulty.clear()
        n_before = len(asked)
        second = T.judge_run(rdir, spec, workers=1, retries=3, progress=False, say=lambda *_: None)
    finally:
        cases.release.set()
        srv.stop()
    return {"keys": keys, "asks": asks, "case_of": case_of, "first": first, "second": second, "errors": errors, "verdicts": verdicts,
            "asked_again": asked[n_before:], "cases": cases, "jdir": jdir}


JUDGE_CELLS = {"http500": r"InternalServerError: Error code: 500", "malformed": r"JSONDecodeError",
               "garbage": r"JSONDecodeError|APIResponseValidationError|decode", "hang": r"Timeout",
               "goaway": r"APIConnectionError|Connection"}


@pytest.mark.timeout(400)
@pytest.mark.parametrize("case", list(JUDGE_CELLS))
def test_judge_fault_is_one_error_line_with_every_tries_cause(judge_run, case):
    r = judge_run
    (key,) = [k for k, c in r["case_of"].items() if c == case]
    (err,) = [e for e in r["errors"] if e["task_id"] == key]            # one line, no verdict
    assert key not in r["verdicts"], r["verdicts"].get(key)
    assert err["error"].startswith("NoVerdict: try 1: ") and "try 3: " in err["error"], err
    tries = err["error"].split("; try ")
    assert len(tries) == 3 and all(re.search(JUDGE_CELLS[case], t) for t in tries), err["error"]


@pytest.mark.timeout(400)
def test_judge_run_finishes_every_episode_and_a_rerun_judges_only_the_failed_ones_once(judge_run):
    r = judge_run
    failed = {k for k, c in r["case_of"].items() if c in JUDGE_CELLS}
    # the faulty run: each episode one outcome, a verdict or an error line, never both, never two
    assert sorted(e["task_id"] for e in r["errors"]) == sorted(failed)
    assert set(r["verdicts"]) == set(r["keys"]) - failed
    assert r["first"]["errors"] == len(failed) and r["first"]["judged"] == len(r["keys"]) - len(failed)
    assert all(v["task_id"] == k and (v["tries"] >= 1 if k in r["asks"] else v["cut_off"] and v["verdict"] == "NOT SUCCESS")
               for k, v in r["verdicts"].items())
    assert r["cases"].did("back"), "the judge's server never came back"
    # the episode after the outage is judged (on its first try, or a retry once the server is back)
    after = r["asks"][r["asks"].index(next(k for k, c in r["case_of"].items() if c == "goaway")) + 1]
    assert after in r["verdicts"], after
    # the rerun: every failed episode asked once, the judged ones not at all; every episode now has its verdict
    assert sorted(r["asked_again"]) == sorted(failed), r["asked_again"]
    s = r["second"]
    assert s["errors"] == 0 and s["judged"] == len(r["keys"]) and s["judged_now"] == len(failed), s
    assert sorted(f.stem for f in r["jdir"].glob("*.json") if not f.name.startswith("_")) == sorted(r["keys"])
    for k in set(r["keys"]) - failed:             # a verdict once given is kept as it was
        assert json.loads((r["jdir"] / f"{k}.json").read_text()) == r["verdicts"][k]
    print("\njudge:")
    for k in r["keys"]:
        got = r["verdicts"].get(k)
        said = (f"cut off, not asked: {got['cut_off']}" if got.get("cut_off") else f"verdict after {got['tries']} tries") if got else next(e["error"] for e in r["errors"] if e["task_id"] == k)
        print(f"  {r['case_of'][k]:9} {str(said)[:230]}")
