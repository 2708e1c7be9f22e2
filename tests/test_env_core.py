"""webmix.env's session core against `webmix evaluate`: the actions the scripted stand-in took in evaluated episodes,
replayed through EnvSession (elements named by control id where the site has one), earn the rewards evaluate graded
them; wrong, forged and off-site actions earn 0; the rollouts open in EpisodeViewer and --regrade grades them the
same; bad actions are one-line errors."""
import json
from pathlib import Path

import pytest

from webmix.data.tasks import split_tasks
from webmix.eval import evaluate as E
from webmix.eval.policy import serve_policy
from webmix.eval.regrade import regrade
from webmix.env.records import EnvError
from webmix.env.session import SyncEnvSession, find_task
from webmix.views.episodes import load_episode
from webmix.world.servers import Servers, free_ports

MACROS = ("filter_by_dropdown", "enter_text", "copy_to_clipboard", "report_information")
INDEXED = {"index": "", "from_index": "from_", "to_index": "to_"}


def by_control_id(name, params, element) -> dict:
    "An evaluated action as a client names it: the element by its control id (part, value) where it has one."
    a = (element or {}).get("attributes") or {}
    if name == "upload_file": params = {**params, "path": Path(params["path"]).name}     # a file at hand, by its name
    if not a.get("data-control-id") or not isinstance(params, dict) or "index" not in params: return {name: params}
    out = {k: v for k, v in params.items() if k != "index"}
    out.update(control_id=a["data-control-id"], **{k: a[f"data-{k}"] for k in ("part", "value") if a.get(f"data-{k}")})
    return {name: out}


def evaluated_actions(ep) -> list:
    "Every action of an evaluated episode, in order, as a client sends it (browser-use's own opening navigation left out)."
    hist = json.loads((ep / "history.json").read_text())["history"]
    out = []
    for item in hist:
        mo = item.get("model_output") or {}
        if (item.get("metadata") or {}).get("step_number") == 0: continue
        els = (item.get("state") or {}).get("interacted_element") or []
        done = len(item.get("result") or [])         # the actions browser-use performed (a page change skips the rest)
        for i, act in enumerate((mo.get("action") or [])[:done]):
            (name, params), = act.items()
            out.append(by_control_id(name, params, els[i] if i < len(els) else None))
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("env-core")
    pool = split_tasks("test")
    dg = [next(t for t in pool if t["macro"] == m) for m in MACROS]
    # pages that change on their own after a click (load more, pagination) make a replay's timing differ from the run's
    human = [t for t in E.human_tasks("test") if len(t.macros) <= 2
             and not {"load_more_rows", "paginate"} & {m.split("#")[0] for m in t.macros}][:2]
    tasks = [find_task(t["task_id"]) for t in dg] + human
    ev = root / "evaluate"
    with serve_policy(port=0, seed=1, datagen=dg) as srv:
        E.run_evaluate(tasks, ev, arm="base", vllm=srv.base_url, workers=1, progress=False)
    lines = {l["task_id"]: l for l in map(json.loads, (ev / "results.jsonl").read_text().splitlines())}
    out = root / "rollouts"
    got, errors = {}, []
    with Servers(ports=free_ports(1)) as mw:
        s = SyncEnvSession(mw.bases[0], out=out, screenshot=True, max_screenshot_bytes=4_000_000)
        for t in tasks:
            obs = s.reset(t.task_id)
            steps = []
            for a in evaluated_actions(ev / t.task_id):
                r = s.step(a)
                steps.append(r)
                if r.done: break
            ver = s.verify()
            got[t.task_id] = {"first": obs, "steps": steps, "verify": ver, "key": s.key, "folder": s.close()}
        # wrong: done at once with a wrong answer; forged: a data: page that fakes the site's controls, then done
        wrong = dg[-1]
        s.reset(wrong["task_id"])
        bad = s.step({"done": {"text": "It is 12345.", "success": True}})
        forged_task = dg[1]
        s.reset(forged_task["task_id"])
        forged = [s.step({"navigate": {"url": "data:text/html,<input data-control-id='x' value='y'>"}}),
                  s.step({"navigate": {"url": "http://127.0.0.1:9/sites/shop"}}),
                  s.step({"done": {"text": "Done.", "success": True}})]
        # typed: the page a menu task names, reached by clicking another item of the menu, then typing its address
        menu = next(t for t in pool if t["macro"] == "open_menu_item" and not t["option"].get("single"))
        first = s.reset(menu["task_id"])
        other = next(e for e in first.elements if e.control_id == menu["control"]["control_id"]
                     and e.value and e.value != menu["option"]["value"])
        s.step({"click": {"index": other.index}})
        s.step({"navigate": {"url": mw.bases[0] + menu["check"]["path"]}})
        typed = s.step({"done": {"text": "Done.", "success": True}})
        s.reset(dg[0]["task_id"])
        for act in ({"click": {"index": 999999}}, {"fly": {}}, {"click": {"control_id": "no-such-control"}}, "not json",
                    {"click": {"index": "twelve"}}, {"input": {"index": 1, "text": "x" * 200_000}}):
            try:
                r = s.step(act)
                errors.append(("observation", r.observation.error or r.observation.last_result))
            except EnvError as e: errors.append(("raised", e.to_dict()))
        s.close()
    return {"tasks": tasks, "lines": lines, "got": got, "out": out, "bad": bad, "forged": forged, "typed": typed, "errors": errors}


def test_replayed_actions_earn_what_evaluate_graded_and_regrade_agrees(run):
    graded = {k: bool(l["ok"]) for k, l in run["lines"].items()}
    assert any(graded.values()), graded                     # the stand-in passes some: rewards of 1 are compared too
    for t in run["tasks"]:
        g = run["got"][t.task_id]
        assert g["first"].url.startswith("http://127.0.0.1") and g["first"].elements and g["first"].instruction
        assert any(e.control_id for e in g["first"].elements) and g["first"].screenshot
        last = g["steps"][-1]
        reward = last.reward if last.done else g["verify"].reward
        assert reward == float(graded[t.task_id]), (t.task_id, run["lines"][t.task_id]["detail"], last.info, g["verify"])
        assert all(r.reward == 0 for r in g["steps"][:-1])
    r = regrade(run["tasks"], run["out"])
    assert r["changed"] == 0 and r["could_not"] == 0 and r["regraded"] == len(run["tasks"]) + 4, r     # and the 4 below
    assert r.get("ok", 0) == sum(graded.values()), r


def test_rollouts_open_in_the_viewer(run):
    from webmix.views.episode_viewer import EpisodeViewer
    for g in run["got"].values():
        ep = load_episode(g["folder"])
        assert ep.steps and ep.kind == "agent"
        v = EpisodeViewer(g["folder"])
        assert v.error is None and v.children[0].slider.max == len(ep.steps)
    lines = [json.loads(l) for l in (run["out"] / "results.jsonl").read_text().splitlines()]
    assert len(lines) == len(run["got"]) + 4 and all(l["arm"] == "env" for l in lines)


def test_wrong_forged_and_off_site_actions_earn_nothing(run):
    assert run["bad"].done and run["bad"].reward == 0.0 and run["bad"].info["ended_by"] == "done"
    nav_data, nav_port, done = run["forged"]
    assert "Refused" in (nav_data.observation.error or "") and "Refused" in (nav_port.observation.error or ""), \
        (nav_data.observation.error, nav_port.observation.error)
    assert done.done and done.reward == 0.0
    typed = run["typed"]
    assert typed.done and typed.reward == 0.0 and "href" in typed.info["detail"], typed.info


def test_bad_actions_are_one_line_errors(run):
    "An element not on the page is the agent's mistake (the observation says so); a malformed action is refused in one line."
    kinds = [(how, e if how == "observation" else e["error_kind"]) for how, e in run["errors"]]
    assert [how for how, _ in kinds] == ["observation", "raised", "observation", "raised", "raised", "observation"], kinds
    assert "999999" in kinds[0][1] and "no element with control id 'no-such-control'" in kinds[2][1], kinds
    assert [kinds[i][1] for i in (1, 3, 4)] == ["bad_action"] * 3 and "Refused" in kinds[5][1], kinds
    assert all("\n" not in str(e) for _, e in run["errors"])
