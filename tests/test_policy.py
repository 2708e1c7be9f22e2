"""webmix.policy end to end: the scripted stand-in (simulator) for a served model, behind its OpenAI-compatible
server, answering a real browser-use Agent (harness.make_llm, browser-use's ChatOpenAI) in offline Chromium on
MiniWeb. Human-style tasks of five sites (a login, a cross-site task, a drawn signature, an upload, filters and an
answer) pass their verifiers; with premature=1.0 the same tasks end early and fail; an instruction the policy has
no solution for gets the generic episode, which ends with done. Every reply the server gave conforms to the
structured-output schema its request carried."""
import asyncio, json, shutil, tempfile
from pathlib import Path

import jsonschema
import pytest

from webmix import harness as H          # before browser_use: harness imports it with webmix's import-time settings
from webmix import checks
from webmix.policy import serve_policy

TASKS = ["travel/move-hotel-stay-a-week",             # needs_login: sign in when the edit form asks
         "mail/book-viewing-for-contact",             # cross-site: the portal, a goto, a create form with selects
         "realestate/sign-offer-letter",              # draw on the signature pad, then an answer
         "learning/cheapest-beginner-programming-code",   # a dropdown filter, a ticked box, an answer
         "recipes/upload-dish-photo"]                 # needs_login and an upload from available_file_paths
UPLOAD = b"%PDF-1.4\n% a small file a person picked from their disk\n"


@pytest.fixture(autouse=True)
def no_judge(monkeypatch):
    "Grading here is the regex, exact and precise tiers only."
    for k in ("WEBMIX_JUDGE_MODEL", "WEBMIX_JUDGE_URL"): monkeypatch.delenv(k, raising=False)


async def settled_record(bs, base, tries=40):
    "The recorder stream once the page script's last beacons have arrived."
    last = None
    for _ in range(tries):
        rec = (await H.admin_get(bs, base, "/_admin/record"))["entries"]
        if rec == last: return rec
        last = rec
        await asyncio.sleep(0.1)
    return last


async def episode(base, llm_url, task, files=(), max_steps=H.MAX_STEPS):
    "A fresh session (logged out when the task needs a login), its start page, one Agent run -> (history, trajectory)."
    async with H.browser() as bs:
        await H.new_miniweb_session(bs, base, {"logout": 1} if task["needs_login"] else None)
        start = base + task["starting_url"]
        await H.goto(bs, start)
        agent = H.Agent(task=H.instruction(task["instruction"], start), llm=H.make_llm("qwen35-4b", llm_url),
                        browser_session=bs, tools=H.make_tools(), available_file_paths=list(files), **H.AGENT_KWARGS)
        try: hist = await agent.run(max_steps=max_steps)
        finally: shutil.rmtree(getattr(agent, "agent_directory", "") or "/nonexistent", ignore_errors=True)
        record = await settled_record(bs, base)
        log = (await H.admin_get(bs, base, "/_admin/log"))["entries"]
    return hist, checks.merge_server_log(record, log)


def load(key):
    d = Path(__file__).resolve().parents[1] / "data" / "annotations" / key
    return [json.loads((d / f"{n}.json").read_text()) for n in ("task", "verifier", "script")]


def actions(hist):
    return [next(iter(a.model_dump(exclude_none=True))) for h in hist.history for a in (h.model_output.action if h.model_output else [])]


def conforms(server):
    "Every reply the policy gives to the server's recorded requests fits the schema the request asked for."
    for req in server.requests:
        schema = ((req.get("response_format") or {}).get("json_schema") or {}).get("schema")
        if schema: jsonschema.validate(server.policy.respond(req), schema)


def test_policy_solves_human_tasks_end_to_end(base):
    async def run():
        out = {"ok": {}, "early": {}}
        with tempfile.TemporaryDirectory() as tmp:
            files = []
            for key in TASKS:
                for s in load(key)[2]["steps"]:
                    if s["do"] == "upload":
                        (Path(tmp) / s["value"]).write_bytes(UPLOAD)
                        files.append(str(Path(tmp) / s["value"]))
            for kind, faults in (("ok", None), ("early", {"premature": 1.0})):
                with serve_policy(port=0, faults=faults) as llm:
                    for key in TASKS:
                        task, verifier, script = load(key)
                        hist, traj = await episode(base, llm.base_url, task, files)
                        out[kind][key] = (hist, checks.verify_task(verifier, traj, hist.final_result() or "", task["instruction"]))
                    conforms(llm)
                    assert not llm.policy.errors, llm.policy.errors
            with serve_policy(port=0) as llm:
                unknown = {"instruction": "Find me a cheap flight to the moon and book it.", "starting_url": "/sites/travel/flights",
                           "needs_login": False}
                out["generic"] = (await episode(base, llm.base_url, unknown, max_steps=6))[0]
                conforms(llm)
        return out

    out = asyncio.run(run())
    for key in TASKS:
        hist, report = out["ok"][key]
        assert report["passed"], f"{key}: {report['summary']}"
        assert hist.is_done() and hist.is_successful(), key
        n_macros = len(load(key)[0]["macros"])
        assert actions(hist).count("macro_done") == n_macros - 1, (key, actions(hist))
    for key in TASKS:
        hist, report = out["early"][key]
        assert not report["passed"], f"{key} passed with premature=1.0: {report['summary']}"
        acts = actions(hist)
        assert acts[-1] == "done" and "macro_done" not in acts, (key, acts)
        assert len(hist.history) < len(out["ok"][key][0].history), key          # it ended early
    hist = out["generic"]
    assert actions(hist)[-3:] == ["scroll", "click", "done"] and hist.is_done(), actions(hist)   # after browser-use's own navigate
    assert hist.final_result().startswith("The page shows:"), hist.final_result()
