"""webmix.formats: the JSON Schemas of webmix's files against what the code really writes: every task generated for
every site, the task.json, trajectory.json and results.jsonl of a tiny datagen run in Chromium, and each runner's
typed result line (its pydantic model) against the hand-written schema of its results.jsonl."""
import copy, importlib, json

import jsonschema
import pytest

from webmix import formats as F
from webmix.config import SCHEMAS_DIR
from webmix.world.servers import free_ports

try: from webmix.data.tasks import all_tasks                  # the task makers' module
except ImportError: from webmix.data.datagen import all_tasks  # before datagen was split

MINE = ("task", "trajectory", "result_datagen", "result_plan_data")
ENGINE = ["task_id", "ok", "cause", "duration_s", "worker", "t", "pid", "host"]


@pytest.fixture(scope="module")
def tasks():
    return all_tasks()


# the schemas themselves

def test_every_schema_file_is_a_kind_and_valid():
    assert {p.stem for p in SCHEMAS_DIR.glob("*.json")} == set(F.KINDS)   # a new schema needs its line in KINDS
    for name in F.KINDS:
        s = F.schema(name)
        jsonschema.Draft202012Validator.check_schema(s)
        assert s["$id"] == f"webmix/{name}.json" and s.get("title") and s.get("description"), name


def _properties(node, path=""):
    "(path, property schema) of every property declared anywhere in a schema."
    if isinstance(node, dict):
        for k, v in (node.get("properties") or {}).items():
            if isinstance(v, dict): yield f"{path}/{k}", v
        for k, v in node.items(): yield from _properties(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node): yield from _properties(v, f"{path}/{i}")


def test_my_schemas_document_every_property():
    for name in MINE:
        s = F.schema(name)
        assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert s.get("additionalProperties", True) is not False, name       # later versions may add fields
        for path, p in _properties(s):
            if "/if/" in path or "/then/" in path: continue                   # conditions restate, they do not declare
            if "$ref" in p: p = {**F.schema(name)["$defs"][p["$ref"].split("/")[-1]], **p}
            assert p.get("title") and p.get("description"), f"{name}{path}"


def test_result_schemas_share_the_engine_fragment():
    engines = [F.schema(n)["$defs"]["engine"] for n in F.KINDS if n.startswith("result_")]
    assert len(engines) >= 2 and all(e == engines[0] for e in engines)
    assert engines[0]["required"] == ENGINE
    for n in F.KINDS:
        if n.startswith("result_"): assert {"$ref": "#/$defs/engine"} in F.schema(n)["allOf"], n


def test_the_episode_schema_is_generated_from_its_records():
    from webmix.episode_layout import episode_schema
    assert F.schema("episode") == episode_schema()


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="no schema 'nope'"): F.schema("nope")


# tasks: every one the makers generate

def test_every_generated_task_validates(tasks):
    assert len(tasks) > 500 and len({t["site"] for t in tasks}) > 5
    bad = [p for t in tasks for p in F.problems("task", t, t["task_id"])]
    assert bad == [], bad[:10]
    for t in tasks: assert t["task_id"].startswith(f"{t['site']}-{t['macro']}-")


def test_the_task_schema_catches_broken_tasks(tasks):
    mid = next(t for t in tasks if t["start"]["kind"] == "mid_chain")
    fresh = next(t for t in tasks if t["check"]["kind"] == "answer")
    cases = {
        "start: 'prefix' is a required property": lambda t: t["start"].pop("prefix"),
        "start/url: 'http://x/sites/a' does not match '^/sites/'": lambda t: t["start"].update(url="http://x/sites/a"),
        "check/kind: 'maybe' is not one of": lambda t: t["check"].update(kind="maybe"),
        "(top): 'verifier' is a required property": lambda t: t.pop("verifier"),
        "option: [] is not of type 'object'": lambda t: t.update(option=[]),
        "control/role: 3 is not of type 'string', 'null'": lambda t: t["control"].update(role=3),
    }
    for want, breaks in cases.items():
        t = copy.deepcopy(mid)
        breaks(t)
        assert any(p.startswith("task.json: " + want) for p in F.problems("task", t, "task.json")), want
    t = copy.deepcopy(fresh)
    t["check"].pop("value")
    assert F.problems("task", t) == ["check: 'value' is a required property"]
    with pytest.raises(ValueError, match="not a valid task .*'value' is a required property"): F.check("task", t)
    assert F.check("task", fresh) is fresh


# results lines: the engine's fields, strictly

def test_result_lines_need_the_engine_fields_and_a_cause():
    line = {"task_id": "shop-log_out-0123456789", "site": "shop", "macro": "log_out", "family": "Navigation",
            "ok": True, "cause": None, "duration_s": 3.2, "worker": 0, "t": 1.7e9, "pid": 12, "host": "h"}
    assert F.problems("result_datagen", line) == []
    assert F.problems("result_datagen", {**line, "worker": "ray-1"}) == []
    assert F.problems("result_datagen", {**line, "ok": False}) == ["cause: None is not of type 'string'"]
    assert [p[:10] for p in F.problems("result_datagen", {**line, "ok": False, "cause": ""})] == ["cause: '' "]
    assert F.problems("result_datagen", {k: v for k, v in line.items() if k != "host"}, "w") == [
        "w: (top): 'host' is a required property"]
    chain = {"task_id": "plan-shop-0123456789", "site": "shop", "parts": ["shop-a-0123456789", "shop-b-0123456789"],
             "via": [None, "home"], "ok": True, "cause": None, "turns": 4, "steps": 3, "instruction_by": "merged",
             "detail": "a | b", "duration_s": 40.0, "timing": {"browser": 2.0, "planner": 5.5}, "worker": 1,
             "t": 1.7e9, "pid": 12, "host": "h"}
    assert F.problems("result_plan_data", chain) == []
    old = {k: v for k, v in chain.items() if k not in ("cause", "worker", "t", "pid", "host")}   # today's line
    assert len(F.problems("result_plan_data", {**old, "ok": False, "error": "x"})) == 5
    assert F.problems("result_plan_data", {**chain, "via": ["page", "home"]}) == ["via/0: 'page' is not of type 'null'"]


# results lines: each runner's model (the line it makes) against its hand-written schema

LINE_MODELS = {"result_datagen": ("webmix.data.datagen", "DatagenLine"), "result_plan_data": ("webmix.data.plan_data", "ChainLine"),
               "result_online": ("webmix.eval.online", "OnlineLine"), "result_evaluate": ("webmix.eval.evaluate", "EvalLine")}
BOUNDS = ("pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
          "minItems", "maxItems")
JSON_TYPES = {type(None): "null", bool: "boolean", int: "integer", float: "number", str: "string"}


def line_model(kind):
    module, name = LINE_MODELS[kind]
    return getattr(importlib.import_module(module), name)


def _shape(p) -> dict:
    """What a property's schema allows, in one form for a pydantic model's schema and a hand-written one: its JSON
    types, the values its enum or const allows (None: any value of those types), its bounds, and the same of its
    items (an array's) and of its values (an object's)."""
    types, values, bounds, items, more = set(), set(), set(), None, None
    for b in p.get("anyOf") or p.get("oneOf") or [p]:
        t = b.get("type")
        declared = set(t if isinstance(t, list) else [t]) if t else set()
        if "enum" in b or "const" in b:
            vals = b["enum"] if "enum" in b else [b["const"]]
            types |= declared or {JSON_TYPES[type(v)] for v in vals}
            if values is not None: values |= {json.dumps(v) for v in vals}
        else:
            types |= declared
            if declared == {"null"}:
                if values is not None: values.add("null")
            else: values = None                         # a branch that takes any value of its types
        bounds |= {(k, json.dumps(b[k])) for k in BOUNDS if k in b}
        if isinstance(b.get("items"), dict): items = _shape(b["items"])
        if isinstance(b.get("additionalProperties"), dict): more = _shape(b["additionalProperties"])
    return {"types": sorted(types), "values": sorted(values) if values is not None else None, "bounds": sorted(bounds),
            "items": items, "values of": more}


def disagreements(model, schema) -> list:
    """Where a runner's line model and its line's JSON Schema differ ([] when they agree): the model's fields plus the
    engine's ($defs/engine) are the schema's properties plus the engine's; a field one requires the other requires
    (or the engine does); a property both declare allows the same types, values and bounds in both; an engine field
    the model declares allows no type the engine's does not."""
    engine = schema["$defs"]["engine"]
    theirs, eng, mine = schema["properties"], engine["properties"], model.model_json_schema()["properties"]
    fields = set(model.model_fields)
    required = {k for k, f in model.model_fields.items() if f.is_required()}
    out = [f"{k}: in the model, not in the schema" for k in sorted(fields - set(theirs) - set(eng))]
    out += [f"{k}: in the schema, not in the model" for k in sorted(set(theirs) - fields - set(eng))]
    out += [f"{k}: required by the schema, not by the model"
            for k in sorted(set(schema.get("required", [])) - required - set(engine["required"]))]
    out += [f"{k}: required by the model, not by the schema"
            for k in sorted(required - set(schema.get("required", [])) - set(engine["required"]))]
    for k in sorted(fields):
        got = _shape(mine[k])
        if k in theirs and got != (want := _shape(theirs[k])): out.append(f"{k}: the model allows {got}, the schema {want}")
        elif k not in theirs and k in eng and not set(got["types"]) <= set(_shape(eng[k])["types"]):
            out.append(f"{k}: the model allows {got['types']}, the engine {_shape(eng[k])['types']}")
    return out


@pytest.mark.parametrize("kind", sorted(LINE_MODELS))
def test_each_runners_line_model_agrees_with_its_schema(kind):
    model = line_model(kind)
    assert disagreements(model, F.schema(kind)) == []
    assert model.model_config.get("extra") == "forbid" and model.__doc__
    assert [k for k, f in model.model_fields.items() if not f.description] == []
    assert model.model_json_schema()["title"] == F.schema(kind)["title"]


def test_a_field_added_to_the_model_or_the_schema_alone_is_a_disagreement():
    from pydantic import Field, create_model
    online = F.schema("result_online")
    model = line_model("result_online")
    wider = create_model("Wider", __base__=model, note=(str, Field(None, description="A new field.")))
    assert disagreements(wider, online) == ["note: in the model, not in the schema"]
    s = copy.deepcopy(online)
    s["properties"]["note"] = {"title": "Note", "description": "A new field.", "type": "string"}
    s["properties"]["status"]["enum"].append("skipped")
    s["properties"]["steps"]["minimum"] = 1
    s["required"].append("bench")
    got = disagreements(model, s)
    assert [g.split(":")[0] for g in got] == ["note", "bench", "status", "steps"], got
    assert "required by the schema" in got[1] and "'\"skipped\"'" in got[2] and "minimum" in got[3]
    s = copy.deepcopy(F.schema("result_datagen"))
    s["properties"]["start_kind"]["enum"] = ["fresh"]                      # an enum narrowed on one side
    s["properties"]["answer"]["type"] = "string"                           # null no longer allowed
    assert [g.split(":")[0] for g in disagreements(line_model("result_datagen"), s)] == ["answer", "start_kind"]
    s = copy.deepcopy(F.schema("result_plan_data"))
    s["properties"]["via"]["items"]["enum"] = [None, "page"]               # inside an array's items
    s["properties"]["timing"]["additionalProperties"]["type"] = "integer"  # inside an object's values
    assert [g.split(":")[0] for g in disagreements(line_model("result_plan_data"), s)] == ["timing", "via"]


def test_check_jsonl_skips_a_torn_last_line(tmp_path):
    line = {"task_id": "shop-log_out-0123456789", "site": "shop", "macro": "log_out", "family": "Navigation",
            "ok": True, "cause": None, "duration_s": 3.2, "worker": 0, "t": 1.7e9, "pid": 12, "host": "h"}
    p = tmp_path / "results.jsonl"
    p.write_text(json.dumps(line) + "\n\n" + json.dumps({**line, "ok": False}) + "\n" + '{"task_id": "sho')
    assert F.check_jsonl("result_datagen", p) == ["results.jsonl line 3: cause: None is not of type 'string'"]
    p.write_text(json.dumps(line) + "\nnot json\n")
    assert F.check_jsonl("result_datagen", p)[0].startswith("results.jsonl line 2: not JSON: ")
    assert F.check_jsonl("result_datagen", tmp_path / "missing.jsonl")[0].startswith("missing.jsonl: ")
    p.write_text(json.dumps({**line, "detail": "a\u2028b\x85c"}, ensure_ascii=False) + "\n")   # as append_jsonl writes
    assert F.check_jsonl("result_datagen", p) == []


# a real datagen run: two shop tasks (a slider drag with its drop target; a mid-chain question with its answer)

@pytest.fixture(scope="module")
def run(tasks, tmp_path_factory):
    from webmix.data.datagen import run_datagen
    shop = [t for t in tasks if t["site"] == "shop"]
    pick = [next(t for t in shop if t["macro"] == "filter_by_slider"),
            next(t for t in shop if t["macro"] == "report_information" and t["start"]["kind"] == "mid_chain")]
    out = tmp_path_factory.mktemp("formats") / "run"
    run_datagen(out, tasks=pick, ports=free_ports(1), workers=1, progress=False)
    return out, pick


def test_a_real_runs_tasks_and_trajectories_validate(run):
    out, pick = run
    dirs = sorted(d for kind in ("accepted", "rejected") for d in (out / kind).glob("*") if d.is_dir())
    assert sorted(d.name for d in dirs) == sorted(t["task_id"] for t in pick)
    trajs = []
    for d in dirs:
        assert F.problems("task", json.loads((d / "task.json").read_text()), f"{d.name}/task.json") == []
        traj = json.loads((d / "trajectory.json").read_text())
        assert F.problems("trajectory", traj, f"{d.name}/trajectory.json") == []
        trajs.append(traj)
    steps = [s for tr in trajs for s in tr["steps"]]
    assert any("event" in s for s in steps) and any("to" in s for s in steps)      # the optional step fields were seen
    assert any(tr["history_macro"] for tr in trajs)


def test_a_real_runs_result_lines_and_manifest_validate(run):
    out, pick = run
    assert F.check_jsonl("result_datagen", out / "results.jsonl") == []
    assert F.problems("manifest", json.loads((out / "manifest.json").read_text())) == []
    lines = [json.loads(l) for l in (out / "results.jsonl").read_text().splitlines()]
    assert len(lines) == len(pick)
    model = line_model("result_datagen")
    for line in lines:                              # the runner's part of each line is its model, dumped as it was made
        mine = {k: v for k, v in line.items() if k in model.model_fields}
        assert model(**mine).model_dump(exclude_unset=True) == mine
        assert set(line) - set(mine) <= set(F.schema("result_datagen")["$defs"]["engine"]["properties"])
