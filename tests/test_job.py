"""webmix.job's short evaluation: tasks of several test sites, every table and the runs' manifests naming the
scripted stand-in as the model (real MiniWeb, Chromium and the stand-in policy server)."""
import json

from webmix.eval.evaluate import human_tasks
from webmix.job import STAND_IN, MainOptions, main_evaluation, spread


def test_the_main_evaluation_spans_sites_and_names_the_stand_in_everywhere(tmp_path, capsys):
    picked = spread(human_tasks("test"), 6)
    assert len(picked) == 6 and len({t.site for t in picked}) == 6           # the default: one task of six sites
    table = main_evaluation(tmp_path, MainOptions(eval_tasks=2, workers=1, ports=[0]))
    printed = capsys.readouterr().out
    assert all("stand-in" in c for c in table.columns) and "stand-in" in table.columns.name
    assert "success by site and arm, the same stand-in" in printed and STAND_IN in printed
    for arm in ("base", "oracle"):
        lines = [json.loads(l) for l in (tmp_path / "runs" / "eval" / "main" / arm / "results.jsonl").read_text().splitlines()]
        assert len({l["site"] for l in lines}) == 2, lines
        m = json.loads((tmp_path / "runs" / "eval" / "main" / arm / "manifest.json").read_text())
        assert m["args"]["model"] == STAND_IN and len(m["args"]["sites"]) == 2
