"""webmix.views on episodes the real runners wrote (datagen on the shop, one plan-data chain, one evaluation episode
against the scripted stand-in policy), a malformed folder, the SFT export, verdicts, dashboards, and the EpisodeViewer
live in JupyterLab, driven in Chromium."""
import base64, importlib.util, json, os, shutil, signal, subprocess, sys, time, urllib.request
from urllib.parse import urlsplit
from pathlib import Path

import pytest
from PIL import Image

from webmix.views.episodes import ViewError, find_episodes, load_episode, read_json
from webmix.views.episode_viewer import EpisodeViewer, _thumb, esc, prompt_html, side_by_side, thumbnail
from webmix.views.rows import (PAGE_ROWS, RowsInspector, counts_figure, export_sft, length_report, load_rows,
                               messages_from_hf)
from webmix.views.verdicts import VerdictInspector, confusion, load_verdicts
from webmix.views.dashboard import run_dashboard, run_results
from webmix.world.servers import free_ports
from webmix import formats, runs
from webmix.episode_layout import line_text

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def episodes(tmp_path_factory):
    "A few episodes of each kind the runners write today, made by the runners themselves."
    from webmix.data.datagen import run_datagen
    from webmix.data.tasks import all_tasks
    from webmix.data import plan_data as P
    from webmix.eval import evaluate as E
    from webmix.data.pool import pool_items
    from webmix.eval.policy import serve_policy
    root = tmp_path_factory.mktemp("views")
    pick = ("count_entries", "filter_by_dropdown", "open_menu_item", "navigate_home", "search_by_text")
    tasks = [t for t in all_tasks(["shop"], None, 1, 0) if t["macro"] in pick][:5]
    run_datagen(root / "runs" / "dg", tasks=tasks, workers=2, ports=tuple(free_ports(2)), progress=False)
    P.run_plan_data(out=root / "plan", chains=1, seed=3, workers=1, ports=free_ports(1),
                    items=pool_items(None, runs=root / "runs"), progress=False)
    human = [t for t in E.human_tasks("test") if t["task_id"] == "review-music-course"]
    with serve_policy(port=0, seed=1) as srv:
        E.run_evaluate(human, root / "eval", arm="oracle", vllm=srv.base_url, adapters=["drag", "io", "select", "rest"],
                       record_rows=True, workers=1, progress=False)
    return {"root": root, "dg": root / "runs" / "dg", "plan": root / "plan", "eval": root / "eval"}


def _dirs(run):
    return [e["path"] for e in find_episodes(run)]


def test_each_kind_of_episode_steps_with_screens_actions_and_verdicts(episodes):
    dg, plan, ev = episodes["dg"], episodes["plan"], episodes["eval"]
    # datagen: steps from trajectory.json, step_N.png before and step_N+1.png after, the gate's verdict
    kept = sorted((dg / "accepted").iterdir())
    assert kept, "datagen kept nothing"
    e = load_episode(kept[0])
    traj = json.loads((kept[0] / "trajectory.json").read_text())
    assert e.kind == "datagen" and len(e.steps) == len(traj["steps"]) and e.verdict["ok"] is True
    assert e.steps[0].before.name == "step_1.png" and (len(e.steps) == 1 or e.steps[0].after.name == "step_2.png")
    assert e.steps[0].memory == traj["steps"][0]["memory"]
    # ... and, as an agent's steps, the box of the element acted on and the backend's record cut into steps by time
    boxed = [(p, s) for p in kept for s in load_episode(p).steps if s.box]
    assert boxed and all(len(s.box) == 4 and s.box[2] > 0 and s.box[3] > 0 for _, s in boxed), "no datagen step with a box"
    assert any(s.backend.get("requests") for p in kept for s in load_episode(p).steps), "no datagen step with its requests"
    # every episode folder says its layout in an episode.json of the one schema (the viewers read that, no file names)
    for d, layout, runner in ((kept[0], "datagen", "datagen"), (next(p for p in _dirs(plan)), "rows", "plan-data"),
                              (next(p for p in _dirs(ev)), "agent", "evaluate")):
        rec = json.loads((d / "episode.json").read_text())
        assert (rec["layout"], rec["runner"]) == (layout, runner) and formats.problems("episode", rec) == []
    # a planner chain: one step per row, each with its screenshot, the reply as the raw target
    chain = next(p for p in _dirs(plan))
    c = load_episode(chain)
    rows = [json.loads(l) for l in (chain / "rows.jsonl").read_text().splitlines()]
    assert c.kind == "rows" and c.runner == "plan-data" and len(c.steps) == len(rows) and all(s.before and s.before.is_file() for s in c.steps)
    assert [s.reply for s in c.steps] == [r["target"] for r in rows] and c.verdict is not None
    assert formats.problems("chain_backend", json.loads((chain / "backend.json").read_text())) == []
    delegated = [s for s in c.steps if s.element and s.element.startswith("delegated")]
    assert delegated and all(s.backend.get("requests") for s in delegated), [s.backend for s in c.steps]   # each part's pages
    # an evaluation episode: the clicked element's box, the backend's requests split over the steps, models by step
    key = next(p for p in _dirs(ev))
    x = load_episode(key)
    line = runs.latest(runs.read_results(ev))[key.name]
    assert (x.kind, x.runner) == ("agent", "evaluate") and x.verdict["ok"] == line["ok"] and line_text(x.verdict["detail"]) == line["detail"]   # the grade whole
    assert any(s.box for s in x.steps), "no click with a box"
    assert any(s.backend.get("requests") for s in x.steps) and all(s.model for s in x.steps)
    g = json.loads((key / "grade_inputs.json").read_text())
    assert sum(len(s.backend.get("requests", [])) for s in x.steps) <= len(g["log"])
    # ... and the prompt each step's model was sent, its image the step's own screenshot, and the raw reply
    assert formats.check_jsonl("prompt", key / "prompts.jsonl") == []
    sent = [json.loads(l) for l in (key / "prompts.jsonl").read_text().splitlines()]
    assert len(sent) == sum(len(s.prompts) for s in x.steps) >= len(x.steps) - 1 and all(s.prompts for s in x.steps[:-1])
    assert all(s.reply == s.prompts[-1]["reply"] and not s.reply_note for s in x.steps if s.prompts)
    page = prompt_html(x.steps[0])
    assert "as the model saw it" in page and "the before screenshot" in page and "not among" not in page, page[:500]
    # the widget: the slider moves the step shown; the static form carries the screenshots and its own stepper
    for path, ep in ((kept[0], e), (chain, c), (key, x)):
        v = EpisodeViewer(path)
        sv = v.children[0]
        assert v.error is None and sv.slider.max == len(ep.steps) and "data:image/jpeg;base64," in sv.screens.value
        first = sv.details.value
        if len(ep.steps) > 1:
            sv.next.click()
            assert sv.slider.value == 2 and sv.details.value != first and esc(ep.steps[1].action) in sv.details.value
        html = v._repr_mimebundle_()["text/html"]
        assert "type='range'" in html and html.count("data:image/jpeg;base64,") >= 1
        # full size and 200%: the shown step's screenshot at the browser's own pixels (or twice them), scrolling
        with Image.open(ep.steps[sv.slider.value - 1].before) as im: w = im.width
        for zoom, want in (("full size", w), ("200%", 2 * w)):
            sv.zoom.value = zoom
            assert f"width:{want}px" in sv.screens.value and "overflow:auto" in sv.screens.value, zoom
        sv.zoom.value = "side by side"
        assert "width:100%" in sv.screens.value
    # a folder of episodes: a list with filters
    run = EpisodeViewer(dg)
    assert len(run.episodes) == len(list((dg / "accepted").iterdir())) + len(list((dg / "rejected").glob("*"))
                                                                              if (dg / "rejected").exists() else [])
    macro = run.episodes[0]["macro"]
    run.filters["macro"].value = macro
    assert run.pick.options and all(e["macro"] == macro for e in run.matching())
    assert run.episode is not None and run.episode.macro == macro


def test_online_layout_episodes(episodes):
    "The online layout (result.json + trajectory/<i>_full_screenshot.png), as webmix.eval.judge writes it from an evaluation run."
    J = pytest.importorskip("webmix.eval.judge")
    online = J.as_online(episodes["eval"])
    eps = find_episodes(online)
    assert eps and all(e["kind"] == "webjudge" for e in eps)
    e = load_episode(eps[0]["path"])
    r = json.loads((eps[0]["path"] / "result.json").read_text())
    assert len(e.steps) == len(r["action_history"]) and e.instruction == r["task"]
    assert e.steps[0].before.name == "0_full_screenshot.png" and e.steps[0].after.name == "1_full_screenshot.png"
    assert [s.action for s in e.steps] == r["action_history"] and e.verdict["answer"] == r["final_result_response"]
    v = EpisodeViewer(eps[0]["path"])
    assert v.error is None and "data:image/jpeg" in v.children[0].screens.value


def test_malformed_folders_and_paths_outside_the_run_say_one_line(episodes, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "episode.json").write_text('{"layout": "datagen", "steps": [')
    (tmp_path / "empty").mkdir()
    for path, words in ((bad, "episode.json: not valid JSON"), (tmp_path / "empty", "no episode folders"),
                        (tmp_path / "missing", "no such folder")):
        v = EpisodeViewer(path)
        assert v.error and words in v.error and "\n" not in v.error, v.error
        assert "wm-error" in v._repr_mimebundle_()["text/html"]
    with pytest.raises(ViewError) as ex:
        load_episode(bad)
    assert ex.value._render_traceback_() == [f"ViewError: {ex.value}"]      # IPython shows this line, no traceback
    # a row that names a file outside its folder, and a screenshot that is a symlink out of it
    chain = _dirs(episodes["plan"])[0]
    copy = tmp_path / "run" / chain.name
    shutil.copytree(chain, copy)
    lines = (copy / "rows.jsonl").read_text().replace('"url": "step_0.png"', '"url": "../../secret.png"')
    (copy / "rows.jsonl").write_text(lines)
    assert "outside the run folder" in EpisodeViewer(copy).error
    dg = sorted((episodes["dg"] / "accepted").iterdir())[0]
    sneaky = tmp_path / "run2" / dg.name
    shutil.copytree(dg, sneaky)
    (sneaky / "step_1.png").unlink()
    (sneaky / "step_1.png").symlink_to(dg / "step_1.png")
    assert "outside the run folder" in EpisodeViewer(sneaky).error
    assert "outside the run folder" in EpisodeViewer(dg, root=tmp_path).error
    with pytest.raises(ViewError, match="no rows.jsonl"):
        export_sft(tmp_path / "run2", tmp_path / "out")


def _png(size=(640, 450), color=(200, 220, 240)) -> bytes:
    from PIL import Image
    import io
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "PNG")
    return buf.getvalue()


def _one_line(msg, *names):
    assert "\n" not in msg and all(n in msg for n in names), msg
    return msg


def test_a_bad_screenshot_is_a_note_in_its_place_and_the_export_refuses_it(tmp_path):
    """A truncated screenshot and a text file under a .png name: thumbnail() raises a one-line ViewError naming the
    file; the live and static steppers and the rows inspector show the good screenshots and, in a bad one's place, a
    note naming it; export_sft (both formats) refuses it, naming it."""
    good = _png()
    d = tmp_path / "run" / "shop-open_detail-0001"
    d.mkdir(parents=True)
    (d / "step_1.png").write_bytes(good)
    (d / "step_2.png").write_bytes(good[: len(good) // 2])                     # truncated
    (d / "step_3.png").write_text("a text file, not an image")
    steps = [{"n": k, "action": "click", "params": {"index": k}, "memory": f"m{k}", "screenshot": f"step_{k}.png"} for k in (1, 2, 3)]
    (d / "episode.json").write_text(json.dumps({"layout": "datagen", "runner": "datagen", "task_id": d.name, "steps": steps}))
    assert thumbnail(d / "step_1.png").startswith("data:image/jpeg;base64,")
    for name, words in (("step_2.png", "a broken image"), ("step_3.png", "not an image file")):
        with pytest.raises(ViewError) as ex: thumbnail(d / name)
        _one_line(str(ex.value), str(d / name), words)
    v = EpisodeViewer(d)
    assert v.error is None, v.error
    sv = v.children[0]
    first = sv.screens.value                                                   # step 1: good before, truncated after
    assert first.count("data:image/jpeg;base64,") == 1 and esc(f"{d / 'step_2.png'}: a broken image") in first
    sv.go(2)                                                                   # step 2: truncated before, text after
    assert "data:image/jpeg" not in sv.screens.value and esc(f"{d / 'step_3.png'}: not an image file") in sv.screens.value
    static = v._repr_mimebundle_()["text/html"]
    assert static.count("data:image/jpeg;base64,") == 1 and "step_2.png: a broken image" in static
    assert "step_3.png: not an image file" in static and "s.before_note" in static
    # a row whose image is the truncated file: shown as a note; the export refuses it, in either format
    chain = tmp_path / "rows" / "plan-shop-0001"
    chain.mkdir(parents=True)
    (chain / "step_0.png").write_bytes(good[: len(good) // 2])
    (chain / "episode.json").write_text(json.dumps({"layout": "rows", "runner": "plan-data", "task_id": chain.name, "site": "shop"}))
    msg = {"role": "user", "content": [{"type": "text", "text": "the page"},
                                       {"type": "image_url", "image_url": {"url": "step_0.png"}}]}
    (chain / "rows.jsonl").write_text(json.dumps({"task_id": chain.name, "step": 0, "messages": [msg],
                                                  "target": '{"action": [{"done": {"text": "ok"}}]}'}) + "\n")
    ri = RowsInspector(chain)
    assert ri.error is None and esc(f"{chain / 'step_0.png'}: a broken image") in ri.view.value
    for fmt in ("openai", "hf"):
        if fmt == "hf": pytest.importorskip("datasets")
        with pytest.raises(ViewError) as ex: export_sft(chain, tmp_path / f"sft-{fmt}", format=fmt)
        _one_line(str(ex.value), str(chain / "step_0.png"), "a broken image")


def test_json_nested_too_deep_or_of_another_shape_is_one_line_naming_the_file(tmp_path):
    """JSON nested past the parser's limit (and past MAX_JSON_DEPTH, which the viewers' own code would recurse on), a
    top level of another type, an unreadable file, an episode of another shape: one-line ViewErrors naming the file,
    wherever a viewer reads it (episode files, rows.jsonl, results.jsonl, verdicts, grade_inputs.json)."""
    deep, deepish = "[" * 50_000 + "]" * 50_000, json.dumps({"steps": [{"step": 1, "params": json.loads("[" * 300 + "]" * 300)}]})
    d = tmp_path / "dg" / "shop-x"
    d.mkdir(parents=True)
    head = {"layout": "datagen", "runner": "datagen", "task_id": "shop-x"}
    (tmp_path / "x.png").write_bytes(_png())                                  # a file outside the episode's folder
    for text, words in ((deep, "nested more than 100 deep"), (deepish.replace('{"steps"', '{"layout": "datagen", "steps"'), "nested more than 100 deep"),
                        ("[]", "not a JSON object"), ('{"steps": [1, 2]}', "declares no episode layout"),
                        (json.dumps({**head, "steps": [1, 2]}), "steps/0: Input should be a valid dictionary"),
                        (json.dumps({**head, "steps": [{"n": 1, "action": "click", "screenshot": "../../x.png"}]}), "outside the run folder")):
        (d / "episode.json").write_text(text)
        with pytest.raises(ViewError) as ex: load_episode(d)
        _one_line(str(ex.value), "episode.json" if "outside" not in words else "x.png", words)
        _one_line(EpisodeViewer(d).error, words)
    (d / "episode.json").write_bytes(b"\xff\xfe\x00{")
    _one_line(EpisodeViewer(d).error, "episode.json: not a text file")
    (d / "episode.json").write_text(json.dumps({**head, "layout": "agent", "runner": "evaluate", "files": {"grade_inputs": "grade_inputs.json"}}))
    (d / "grade_inputs.json").write_text(deep)                                 # an agent's episode's backend record
    _one_line(EpisodeViewer(d).error, str(d / "grade_inputs.json"), "nested more than 100 deep")
    (d / "x.json").mkdir()                                                     # a folder under the name: not a file
    with pytest.raises(ViewError, match="x.json: cannot be read"): read_json(d / "x.json")
    # rows.jsonl, results.jsonl
    chain = tmp_path / "plan" / "c1"
    chain.mkdir(parents=True)
    (chain / "episode.json").write_text(json.dumps({"layout": "rows", "runner": "plan-data", "task_id": "c1"}))
    (chain / "rows.jsonl").write_text(json.dumps({"task_id": "c1", "messages": [], "target": "{}"}) + "\n" + deep + "\n")
    _one_line(RowsInspector(chain).error, str(chain / "rows.jsonl") + " line 2", "nested more than 100 deep")
    _one_line(EpisodeViewer(chain).error, "rows.jsonl line 2")
    run = tmp_path / "ev"
    run.mkdir()
    (run / "results.jsonl").write_text(json.dumps({"task_id": "e1", "ok": True, "detail": "saved"}) + "\n" + deep + "\n")
    for call in (find_episodes, run_results, load_verdicts):
        with pytest.raises(ViewError) as ex: call(run)
        _one_line(str(ex.value), str(run / "results.jsonl"), "nested more than 100 deep")
    # verdicts: a verdict file too deep; a grade_inputs.json too deep is a note beside the judge's reasons
    (run / "results.jsonl").write_text(json.dumps({"task_id": "e1", "ok": True, "detail": "saved"}) + "\n")
    (run / "judge").mkdir()
    (run / "judge" / "e1.json").write_text(deep)
    _one_line(VerdictInspector(run).error, str(run / "judge" / "e1.json"), "nested more than 100 deep")
    (run / "judge" / "e1.json").write_text(json.dumps({"task_id": "e1", "predicted_label": 0, "reasons": "no"}))
    (run / "e1").mkdir()
    (run / "e1" / "episode.json").write_text(json.dumps({"layout": "agent", "runner": "evaluate", "task_id": "e1",
                                                         "files": {"grade_inputs": "grade_inputs.json"}}))
    (run / "e1" / "grade_inputs.json").write_text(deep)
    vi = VerdictInspector(run)
    assert vi.error is None and esc(f"{run / 'e1' / 'grade_inputs.json'}: lists and objects nested") in vi.side.value
    vi.open_episode("e1")                                                      # the episode itself: one line
    _one_line(vi.episode.children[0].error, str(run / "e1" / "grade_inputs.json"), "nested more than 100 deep")


def _parts(content):
    return [{"type": "text", "text": content}] if not isinstance(content, list) else content


def test_rows_inspector_and_export_sft_round_trip(episodes, tmp_path):
    import datasets
    plan, ev = episodes["plan"], episodes["eval"]
    ri = RowsInspector(ev)
    src = [json.loads(l) for f in sorted(ev.rglob("rows.jsonl")) for l in f.read_text().splitlines()]
    assert ri.error is None and len(ri.df) == len(src) and set(ri.df["op"]) >= {"click", "done"}
    assert ri.index.value == 1 and f"row 1 of {len(src)}" in ri.view.value and "nan" not in ri.view.value   # rows from 1
    ri.filters["op"].value = "click"
    clicks = int((ri.df["op"] == "click").sum())
    assert len(ri.filtered()) == clicks and "<img src='data:image/jpeg" in ri.view.value and ri.index.max == clicks
    assert sum(sum(t.y) for t in ri.figure.data) == clicks                                # the chart follows the filters
    fig = counts_figure(ri.df)
    assert sum(sum(t.y) for t in fig.data) == len(src)
    for rows_dir in (plan, ev):
        originals = [(json.loads(l), f.parent) for f in sorted(rows_dir.rglob("rows.jsonl")) for l in f.read_text().splitlines()]
        # OpenAI chat JSONL: a plain reader gets the messages back, images beside it with the same bytes
        out = export_sft(rows_dir, tmp_path / f"oa-{rows_dir.name}")
        recs = [json.loads(l) for l in out.read_text().splitlines()]
        assert len(recs) == len(originals)
        for rec, (row, d) in zip(recs, originals):
            assert rec["messages"][-1] == {"role": "assistant", "content": row["target"]}
            for got, want in zip(rec["messages"][:-1], row["messages"], strict=True):
                for p, q in zip(_parts(got["content"]), _parts(want["content"]), strict=True):
                    if q.get("type") == "image_url":            # a data URI of the very bytes: a loader needs nothing beside it
                        head, data = p["image_url"]["url"].split(",", 1)
                        assert head == "data:image/png;base64" and base64.b64decode(data) == (d / q["image_url"]["url"]).read_bytes()
                    else: assert p == q
        files = [json.loads(l) for l in export_sft(rows_dir, tmp_path / f"of-{rows_dir.name}", images="file").read_text().splitlines()]
        urls = [p["image_url"]["url"] for r in files for m in r["messages"] for p in _parts(m["content"]) if p.get("type") == "image_url"]
        assert urls and all(u.startswith("file:///") and Path(urlsplit(u).path).is_file() for u in urls)   # absolute, there
        # a Hugging Face dataset on disk: the same rows, images embedded, messages back as they were
        hf = datasets.load_from_disk(str(export_sft(rows_dir, tmp_path / f"hf-{rows_dir.name}", format="hf")))
        assert len(hf) == len(originals)
        raw = hf.cast_column("images", datasets.Sequence(datasets.Image(decode=False)))
        for i, (row, d) in enumerate(originals):
            want = [{"role": m["role"], "content": _parts(m["content"])} for m in row["messages"]]
            want.append({"role": "assistant", "content": [{"type": "text", "text": row["target"]}]})
            assert messages_from_hf(hf[i]) == want
            names = hf[i]["image_names"]
            assert [im["bytes"] for im in raw[i]["images"]] == [(d / n).read_bytes() for n in names]
        from PIL import Image
        first, d0 = originals[0][0], originals[0][1]
        assert hf[0]["images"][0].size == Image.open(d0 / hf[0]["image_names"][0]).size and hf[0]["task_id"] == first["task_id"]
    # the CLI: the same export, and a one-line refusal of a folder without rows
    p = subprocess.run(["webmix", "export-sft", str(plan), str(tmp_path / "cli")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and (tmp_path / "cli" / "train.jsonl").read_text() == (tmp_path / "oa-plan" / "train.jsonl").read_text()
    # how long the rows are, and a warning when a trainer truncating at --max-length would cut them (TRL's default 1024)
    fig = length_report(load_rows(plan), 1024)[0]
    assert fig["longest"] > 1024 and "tokens per row" in p.stdout and f"{fig['over']} of {fig['rows']} rows are longer than 1,024" in p.stdout, p.stdout
    p = subprocess.run(["webmix", "export-sft", str(plan), str(tmp_path / "cli2"), "--max-length", str(fig["longest"])],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "tokens per row" in p.stdout and "warning" not in p.stdout, p.stdout
    p = subprocess.run(["webmix", "export-sft", str(tmp_path / "cli"), str(tmp_path / "x")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and "no rows.jsonl" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_rows_with_unicode_line_separators_inside_strings_open_and_export(tmp_path):
    """A rows file as webmix writes it (ensure_ascii=False) whose messages and target hold U+2028, U+2029 and U+0085:
    lines end at "\\n" only, so the rows open in the RowsInspector, step in the EpisodeViewer, and export with export_sft
    and `webmix export-sft`, the characters kept."""
    from PIL import Image
    chain = tmp_path / "plan" / "c1"
    chain.mkdir(parents=True)
    (chain / "episode.json").write_text(json.dumps({"layout": "rows", "runner": "plan-data", "task_id": "c1", "site": "shop"}))
    text = "first line\u2028second\u2029third\x85fourth"
    rows = [{"task_id": "c1", "step": n, "family": "planner",
             "messages": [{"role": "user", "content": [{"type": "text", "text": text},
                                                       {"type": "image_url", "image_url": {"url": f"step_{n}.png"}}]}],
             "target": json.dumps({"memory": text, "action": [{"done": {"text": "ok"}}]}, ensure_ascii=False)} for n in (0, 1)]
    (chain / "rows.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    assert "\u2028" in (chain / "rows.jsonl").read_text() and len((chain / "rows.jsonl").read_text().splitlines()) > 2
    for n in (0, 1): Image.new("RGB", (64, 40), (200, 210, 220)).save(chain / f"step_{n}.png")
    ri = RowsInspector(tmp_path)
    assert ri.error is None and len(ri.df) == 2 and list(ri.df["op"]) == ["done", "done"]
    assert ri.df.iloc[0]["messages"][0]["content"][0]["text"] == text
    ev = EpisodeViewer(chain)
    assert ev.error is None and len(ev.episode.steps) == 2 and ev.episode.steps[0].memory == text
    out = export_sft(tmp_path, tmp_path / "sft")
    recs = [json.loads(line) for line in out.read_text().split("\n") if line]
    assert [r["messages"][0]["content"][0]["text"] for r in recs] == [text, text]
    assert [r["messages"][-1]["content"] for r in recs] == [r["target"] for r in rows]
    p = subprocess.run(["webmix", "export-sft", str(tmp_path), str(tmp_path / "cli")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "2 rows" in p.stdout and (tmp_path / "cli" / "train.jsonl").read_text() == out.read_text()


def test_verdicts_beside_the_backend_and_the_run_dashboard(episodes):
    T = pytest.importorskip("webmix.eval.taskjudge")
    ev, dg = episodes["eval"], episodes["dg"]
    truth = runs.latest(runs.read_results(ev))
    T.judge_run(ev, spec=None, workers=1, progress=False, say=lambda *a: None)     # the judge's scripted stand-ins
    jd = T.judge_dir(ev)
    recs = {f.stem: json.loads(f.read_text()) for f in jd.glob("*.json") if not f.name.startswith("_")}
    vi = VerdictInspector(ev)
    assert vi.error is None and dict(zip(vi.df["task_id"], vi.df["judged"])) == {k: r["predicted_label"] for k, r in recs.items()}
    assert list(vi.df["agree"]) == [bool(r["predicted_label"]) == truth[k]["ok"] for k, r in recs.items()]
    # a judge that errs on one episode (its record's label flipped): the disagreement is listed with both sides
    tid = next(iter(recs))
    (jd / f"{tid}.json").write_text(json.dumps({**recs[tid], "predicted_label": int(not truth[tid]["ok"])}))
    vi = VerdictInspector(ev)
    assert tid in vi.pick.options and int(confusion(vi.df).values.sum()) == len(recs)
    row = vi.df[vi.df["task_id"] == tid].iloc[0]
    assert row["reasons"] and esc(row["reasons"])[:40] in vi.side.value
    assert esc(truth[tid]["detail"])[:40] in vi.side.value and "GET /sites/" in vi.side.value
    vi.open_episode(tid)
    assert vi.episode.children[0].error is None and vi.episode.children[0].episode.id
    assert "no verdict folder" in VerdictInspector(dg).error
    for run in (ev, dg):
        figs = run_dashboard(run)
        assert set(figs) >= {"success by arm x family", "success by site", "durations and steps", "failure causes"}
        assert all(f.data for k, f in figs.items() if k != "failure causes")
    both = run_dashboard(ev, dg)                     # two runs side by side: each arm a column of the heatmap
    whos = set(run_results(ev)["arm"]) | {"datagen"}
    assert set(both.df["who"]) == whos and set(both["success by arm x family"].data[0].x) == whos
    assert repr(both).startswith(f"Dashboard of {len(both.df)} episodes") and len(repr(both)) < 400



def _benchmark(name):
    "The module benchmarks/<name>.py (its helpers build the test's folders as the benchmark builds them)."
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_rows_inspector_opens_2000_rows_in_under_2_s_a_page_at_a_time(tmp_path):
    """2,000 rows as plan-data writes them (benchmarks/rows_load.py's folder): the inspector opens in under 2 s,
    reading one screenshot (the first row's); it lists a page of PAGE_ROWS rows, pages on, and makes the plotly chart
    only when asked."""
    folder = _benchmark("rows_load").make_rows(tmp_path / "rows", 2000)
    read_before = _thumb.cache_info().misses
    t = time.perf_counter()
    ri = RowsInspector(folder)
    took = time.perf_counter() - t
    assert ri.error is None and len(ri.df) == 2000 and took < 2, (ri.error, took)
    assert _thumb.cache_info().misses - read_before == 1                            # the shown row's image, no other
    assert [v for _, v in ri.page.options] == list(range(1, PAGE_ROWS + 1)) and ri.page.value == 1
    assert "row 1 of 2000" in ri.view.value and ri.view.value.count("<img src='data:image/jpeg") == 1
    assert ri.where.value == f"rows 1–{PAGE_ROWS} of 2000" and "<td style='text-align:right'>400</td>" in ri.counts.value
    ri.next.click()                                                                  # the next page, its first row shown
    assert ri.index.value == PAGE_ROWS + 1 and ri.page.options[0][1] == PAGE_ROWS + 1
    assert f"row {PAGE_ROWS + 1} of 2000" in ri.view.value and ri.page.options[0][0].startswith(f"{PAGE_ROWS + 1}. plan-shop-")
    ri.page.value = PAGE_ROWS + 3                                                    # a row chosen from the list
    assert ri.index.value == PAGE_ROWS + 3 and f"row {PAGE_ROWS + 3} of 2000" in ri.view.value
    ri.prev.click()
    assert ri.index.value == 1 and ri.page.options[0][1] == 1
    ri.index.value = 1999                                                            # the slider: the page that holds it
    assert ri.page.options[0][1] == 1981 and ri.page.value == 1999 and "row 1999 of 2000" in ri.view.value
    ri.filters["op"].value = "done"
    assert ri._figure is None and len(ri.filtered()) == 400 and ri.index.max == 400 and "row 1 of 400" in ri.view.value
    assert sum(sum(t.y) for t in ri.figure.data) == 400                               # made when asked, of the 400
    ri.filters["family"].value = "Navigation"                                        # none left: said, no row listed
    assert ri.view.value == "no row matches these filters" and ri.page.options == () and ri.figure is None
    static = ri._repr_mimebundle_()["text/html"]
    assert "<p>2000 rows</p>" in static and "wm-counts" in static and static.count("data:image/jpeg") == 1


def _hand_run(run, steps, result, task="shop-count-1"):
    "A run folder `run` holding one datagen episode of `task` written by hand: `steps` [(action, params, element)], its result line."
    ep = run / "accepted" / task
    ep.mkdir(parents=True)
    recs = []
    for n, (action, params, element) in enumerate(steps, 1):
        (ep / f"step_{n}.png").write_bytes(_png((320, 225), (200, 210 + 10 * n, 240)))
        recs.append({"n": n, "action": action, "params": params, "screenshot": f"step_{n}.png",
                     **({"element": element, "box": [10, 20 * n, 80, 16]} if element else {})})
    (ep / "episode.json").write_text(json.dumps({"layout": "datagen", "runner": "datagen", "task_id": task, "site": "shop",
                                                 "macro": "count_entries", "instruction": "Count the kettle's reviews.", "steps": recs}))
    (run / "manifest.json").write_text(json.dumps({"runner": "datagen"}))
    (run / "results.jsonl").write_text(json.dumps({"task_id": task, "site": "shop", "macro": "count_entries", **result}) + "\n")
    return ep


def test_episode_viewer_opens_a_folder_of_runs(episodes, tmp_path):
    """A folder holding two runs the real runners made (datagen, evaluate): a run picker by their paths, the first run's
    episodes listed with their filters and its first episode shown; choosing the other run lists its episodes; a run
    that cannot be read says so in one line and the picker stays; the static page shows the first run's first episode
    and how many runs there are. The dashboard finds the same runs."""
    runs = tmp_path / "runs"
    shutil.copytree(episodes["dg"], runs / "a-datagen")
    shutil.copytree(episodes["eval"], runs / "b-eval")
    v = EpisodeViewer(runs)
    assert v.error is None and [label for label, _ in v.run_pick.options] == ["a-datagen", "b-eval"]
    dg = find_episodes(runs / "a-datagen")
    assert v.run == runs / "a-datagen" and [e["id"] for e in v.episodes] == [e["id"] for e in dg]
    assert v.episode.path == dg[0]["path"] and v.episode.kind == "datagen" and v.shown.children[0].ep is v.episode
    static = v._repr_mimebundle_()["text/html"]
    assert "2 runs in runs: a-datagen, b-eval; run a-datagen is shown" in static and "type='range'" in static
    assert esc(dg[0]["id"]) in static and "data:image/jpeg;base64," in static
    macro = v.episodes[0]["macro"]
    v.filters["macro"].value = macro
    assert all(e["macro"] == macro for e in v.matching()) and len(v.pick.options) == len(v.matching())
    v.run_pick.value = str(runs / "b-eval")                                      # the other run: its episodes, filters anew
    ev = find_episodes(runs / "b-eval")
    assert v.run == runs / "b-eval" and [e["id"] for e in v.episodes] == [e["id"] for e in ev]
    assert all(f.value == "(all)" for f in v.filters.values()) and len(v.pick.options) == len(ev)
    assert set(v.filters["site"].options) == {"(all)"} | {e["site"] for e in ev if e["site"]}
    assert v.episode.kind == "agent" and v.episode.path == ev[0]["path"] and "data:image/jpeg" in v.shown.children[0].screens.value
    assert set(run_dashboard(runs).df["run"]) == {"a-datagen", "b-eval"}                 # the same discovery
    (runs / "c-bad").mkdir()
    (runs / "c-bad" / "results.jsonl").write_text("[" * 50_000 + "]" * 50_000 + "\n")
    v = EpisodeViewer(runs)
    assert v.error is None and len(v.run_pick.options) == 3
    v.run_pick.value = str(runs / "c-bad")
    _one_line(v.shown.children[0].value, "c-bad/results.jsonl", "nested more than 100 deep")
    assert v.episodes == [] and v.pick.options == ()
    v.run_pick.value = str(runs / "a-datagen")
    assert v.episode.kind == "datagen"
    # a run folder is still a run (its list, no picker), and a folder with neither runs nor episodes one line
    assert not hasattr(EpisodeViewer(runs / "b-eval"), "run_pick") and EpisodeViewer(runs / "b-eval").runs == []
    (tmp_path / "empty").mkdir()
    _one_line(EpisodeViewer(tmp_path / "empty").error, "no episode folders")


def test_two_runs_of_one_task_side_by_side(tmp_path):
    """One task in two runs, written by hand: side_by_side shows each run's outcome and cause at the top and step n of
    each in one row (action, element, the screenshot before it); the viewer of the folder of runs compares the episode
    shown with the same task's episode in another run."""
    kettle = {"tag": "a", "control_id": "kettles", "text": "Kettles"}
    a = _hand_run(tmp_path / "runs" / "base", [("click", {"index": 7}, kettle), ("done", {"text": "11"}, None)],
                  {"ok": False, "cause": "wrong answer: '11' (expected '12')"})
    b = _hand_run(tmp_path / "runs" / "tuned", [("click", {"index": 4}, {"tag": "a", "text": "Reviews"}),
                                                ("scroll", {"down": True}, None), ("done", {"text": "12"}, None)],
                  {"ok": True, "detail": "answer '12' is the count"})
    page = side_by_side(load_episode(a), load_episode(b))
    head, *rows = page.split("<tr>")[1:]
    assert "base" in head and "✘ failed" in head and esc("wrong answer: '11' (expected '12')") in head
    assert "tuned" in head and "✔ passed" in head and head.index("base") < head.index("tuned")
    assert len(rows) == 3 and [r.count("data:image/jpeg;base64,") for r in rows] == [2, 2, 1]
    first, second, third = rows
    assert first.index("click(index=7)") < first.index("click(index=4)") and esc("<a kettles> 'Kettles'") in first
    assert second.index(esc('done(text="11")')) < second.index("scroll(down=true)")
    assert "ended before this step" in third and esc('done(text="12")') in third
    other = _hand_run(tmp_path / "runs2" / "x", [("done", {"text": "0"}, None)], {"ok": True}, task="shop-other-1")
    assert "not one task: shop-count-1 and shop-other-1" in side_by_side(load_episode(a), load_episode(other))
    # from the viewer of the folder of runs: the shown episode (base's) beside the same task in `tuned`, by its name
    v = EpisodeViewer(tmp_path / "runs")
    assert v.error is None and v.episode.path == a
    got = v.compare("tuned").data
    assert got.split("<tr>")[2:] == rows and "<b>base</b>" in got and "<b>tuned</b>" in got
    assert v.compare(tmp_path / "runs" / "tuned").data == got                         # or by its folder
    with pytest.raises(ViewError, match="no episode shop-count-1"): v.compare(tmp_path / "runs2" / "x")

# ── in JupyterLab, in Chromium ───────────────────────────────────────────────

def _wait_http(url, timeout=90):
    end = time.time() + timeout
    while time.time() < end:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except Exception: time.sleep(0.5)
    raise TimeoutError(url)


def test_episode_viewer_live_in_jupyterlab(episodes, tmp_path):
    from playwright.sync_api import sync_playwright
    ep = sorted((episodes["dg"] / "accepted").iterdir(), key=lambda p: -len(list(p.glob("step_*.png"))))[0]
    steps = load_episode(ep).steps
    assert len(steps) >= 2
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "id": "c1",
                     "source": f"from webmix.views.episode_viewer import EpisodeViewer\nEpisodeViewer({str(ep)!r})"}],
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "viewer.ipynb").write_text(json.dumps(nb))
    port, token = free_ports(1)[0], "webmix-test"
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "jcfg"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "jrt"),
           "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "jset"), "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "jws")}
    lab = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
                            f"--ServerApp.token={token}", f"--ServerApp.root_dir={tmp_path}", "--allow-root",
                            "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
                           env=env, stdout=subprocess.DEVNULL, stderr=open(tmp_path / "lab.log", "w"), start_new_session=True)
    try:
        _wait_http(f"http://127.0.0.1:{port}/api/status?token={token}")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            outside = []
            page.route("**/*", lambda r: (r.continue_() if r.request.url.startswith(("http://127.0.0.1", "data:", "blob:"))
                                          else (outside.append(r.request.url), r.abort())))
            page.goto(f"http://127.0.0.1:{port}/lab/tree/viewer.ipynb?token={token}")
            page.wait_for_selector(".jp-Notebook .jp-Cell .cm-content", timeout=90_000)
            # the kernel first: a cell run while the status bar still says "Connecting" can be lost
            page.wait_for_function("() => /\\| Idle/.test(document.querySelector('.jp-StatusBar-Widget')?.innerText || '')",
                                   timeout=120_000)
            page.click(".jp-Notebook .jp-Cell .cm-content")
            page.keyboard.press("Shift+Enter")
            try: action = page.wait_for_selector(".jp-OutputArea .wm-action", timeout=120_000)
            except Exception:
                page.screenshot(path=str(tmp_path / "lab.png"))           # what the page showed, for the failure report
                raise
            img = page.locator(".jp-OutputArea figure img").first
            first_action, first_src = action.inner_text(), img.get_attribute("src")
            assert first_action == steps[0].action and first_src.startswith("data:image/jpeg")
            page.focus(".jp-OutputArea .widget-slider .noUi-handle")       # the slider, moved by the keyboard
            page.keyboard.press("ArrowRight")
            page.wait_for_function("(a) => document.querySelector('.jp-OutputArea .wm-action').innerText !== a",
                                   arg=first_action, timeout=30_000)
            assert page.locator(".jp-OutputArea .wm-action").inner_text() == steps[1].action
            assert page.locator(".jp-OutputArea figure img").first.get_attribute("src") != first_src
            assert page.get_by_text(f"step 2 of {len(steps)}", exact=True).is_visible()      # where it is, of how many
            browser.close()
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        lab.wait(timeout=30)
