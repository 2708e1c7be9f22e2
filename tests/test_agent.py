"""webmix.agents.agent end to end: a scripted planner delegating to scripted specialists on a live MiniWeb shop, in real
Chromium through real browser-use Agents (only the models are scripts). `base` is conftest.py's live server."""
import asyncio

from webmix.agents import harness as H
from webmix.agents import session as HS
from webmix.agents import agent as A
from webmix.world.catalog import FAMILIES

PRODUCTS = "/sites/shop/products"
BOOKS = {"delegate": {"family": "Discrete selection", "instruction": "filter products by category Books"}}
KITCHEN = {"delegate": {"family": "Discrete selection", "instruction": "filter products by category Kitchen"}}
DONE = {"done": {"text": "The list shows the Kitchen products.", "success": True}}


def select_script(bs, option):
    "Select `option` in the category dropdown (found by its control id in the live selector map), macro_done, done."
    replies = iter([
        lambda: {"select_dropdown": {"index": A.index_of(bs, "products-filter-category", "select"), "text": option}},
        lambda: {"macro_done": {}},
        lambda: {"done": {"text": f"Filtered the products by category {option}.", "success": True}}])
    return lambda messages, fmt: {"memory": f"Filtering by {option}.", "action": [next(replies)()]}


def broken_script(messages, fmt):
    raise RuntimeError("model server unreachable")


class ShopTeam(A.Team):
    "Specialists whose models are scripts: the option is the instruction's last word; 'broken' fails every call."
    def specialist_llm(self, family, instruction, model):
        if instruction.endswith("broken"): return H.ScriptedChat(broken_script, model)
        return H.ScriptedChat(select_script(self.bs, instruction.rsplit(" ", 1)[-1]), model)


def planner_script(turns, seen):
    def respond(messages, fmt):
        seen.append(messages)
        return {"memory": f"Turn {len(seen)}.", "action": [turns[len(seen) - 1]]}
    return H.ScriptedChat(respond, "planner")


def text_of(messages) -> str:
    return "\n".join(getattr(p, "text", "") for m in messages
                     for p in (m.content if isinstance(m.content, list) else [m]) if isinstance(getattr(p, "text", None), str))


async def episode(base, turns, budget=5, sub_cap=4, version="v6"):
    seen, box, task = [], {}, {"start": {"url": PRODUCTS}, "control": {}}
    async with H.browser(base, task) as bs:
        team = ShopTeam(lambda f: "select-adapter", "", "filter", budget=budget, sub_cap=sub_cap, version=version)
        out = await A.run_planner_agent(bs, "Show me the books, then the kitchen products.", HS.start_url(base, task),
                                        None, "", "planner", version=version, llm=planner_script(turns, seen),
                                        team=team, expose=box)
        log, _, _ = await HS.backend_state(bs, base)
        return out, log, seen, box


def categories(log):
    return [e["query"].get("category") for e in log if e["path"] == PRODUCTS]


def test_two_delegations_on_one_session(base):
    (hist, trace, ph), log, seen, box = asyncio.run(episode(base, [BOOKS, KITCHEN, DONE]))
    # both filters reached the server, from one browser session kept alive across three Agents
    assert categories(log) == [None, "Books", "Kitchen"]
    assert [{k: t[k] for k in ("family", "subtask", "steps", "model")} for t in trace] == [
        {"family": "Discrete selection", "subtask": "filter products by category Books", "steps": 3, "model": "select-adapter"},
        {"family": "Discrete selection", "subtask": "filter products by category Kitchen", "steps": 2, "model": "select-adapter"}]
    r1, r2 = (t["report"].splitlines() for t in trace)
    assert r1[0] == "Discrete selection specialist finished in 3 steps."
    assert r1[1] == 'Actions: select "Books" in <select name=category> "Category"; mark the step done.'
    assert r1[2] == "Final message: Filtered the products by category Books."
    assert trace[0]["answer"] == "Filtered the products by category Books."
    assert r1[3].startswith(f"Page now: Products · Lumen Market at {base}{PRODUCTS}?")
    assert r1[4].startswith("URL query: category=Books")
    assert r1[5] == "Specialist steps left: 2 of 5."
    # the budget counts down: the second delegation gets min(sub_cap 4, 2 left) = 2 steps; at its last step
    # browser-use offers only done, so its macro_done fails and it stops unfinished
    assert r2[0] == "Discrete selection specialist stopped after 2 steps without finishing (its cap for this step was 2)."
    assert r2[1] == 'Actions: select "Kitchen" in <select name=category> "Category".'
    assert r2[2] == "Final message: (none)" and trace[1]["answer"] is None
    assert r2[-1] == "Specialist steps left: 0 of 5."
    # the planner's own history: two delegations, then done; its answer is the episode's
    acts = [a.model_dump(exclude_none=True) for h in ph.history for a in h.model_output.action]
    assert [next(iter(a)) for a in acts] == ["delegate", "delegate", "done"]
    assert [a["delegate"] for a in acts[:2]] == [BOOKS["delegate"], KITCHEN["delegate"]]
    assert hist.final_result() == "The list shows the Kitchen products."
    assert len(hist.hists) == 2 and hist.history == hist.hists[0].history + hist.hists[1].history
    assert box["team"].hists == hist.hists and box["planner"].history is ph and box["team"].current is None
    # what the planner saw: its version's prompt, and every earlier report in its history
    assert "You are the PLANNER" in text_of(seen[0]) and "Specialist families:" in text_of(seen[0])
    assert trace[0]["report"].splitlines()[0] in text_of(seen[1])
    last = text_of(seen[2])
    assert "Specialist steps left: 2 of 5." in last and "Specialist steps left: 0 of 5." in last


def test_no_steps_left_is_not_run(base):
    (hist, trace, ph), log, _, _ = asyncio.run(episode(base, [BOOKS, KITCHEN, DONE], budget=3))
    assert [t["steps"] for t in trace] == [3, 0]
    assert trace[1]["report"].startswith("Discrete selection specialist was not run: no specialist steps are left.")
    assert trace[1]["report"].endswith("Specialist steps left: 0 of 3.")
    assert categories(log) == [None, "Books"] and len(hist.hists) == 1


def test_failing_specialist_is_a_report(base):
    broken = {"delegate": {"family": "Text entry", "instruction": "search for broken"}}
    (hist, trace, ph), log, _, _ = asyncio.run(episode(base, [broken, BOOKS, DONE], budget=12, sub_cap=6, version="v1"))
    first = trace[0]["report"].splitlines()
    assert first[0].startswith("Text entry specialist stopped after") and first[0].endswith(
        "without finishing, after repeated failures (last: model server unreachable).")
    assert first[1] == "Actions: none."
    assert trace[0]["steps"] > 0 and first[-1] == f"Specialist steps left: {12 - trace[0]['steps']} of 12."
    # the planner went on: the next delegation ran with what was left
    assert trace[1]["steps"] == 3 and categories(log) == [None, "Books"]
    assert hist.final_result() == DONE["done"]["text"]


def test_planner_actions_and_versions():
    team = A.Team(lambda f: "m", "http://127.0.0.1:9/v1", "task")
    assert set(A.planner_tools(team, "v6").registry.registry.actions) == {"delegate", "done"}
    assert set(A.planner_tools(team, "v1").registry.registry.actions) == {"delegate", "done"}
    assert set(A.planner_tools(team, "v7").registry.registry.actions) == {"delegate", "done", "scroll"}
    assert A.Delegate.model_json_schema()["properties"]["family"]["enum"] == list(FAMILIES)
    assert A.VERSIONS["v6"]["max_turns"] == 25 and A.DEFAULT_VERSION == "v6"
    assert set(A.FAMILY_HINTS) == set(FAMILIES)
    llm = team.specialist_llm("Navigation", "open the orders page", "rest")
    assert llm.model == "rest" and str(llm.base_url).startswith("http://127.0.0.1:9/v1")
