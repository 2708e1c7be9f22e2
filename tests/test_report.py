"""`webmix report` and `webmix compare` on run folders as evaluate writes them: n and a 95% interval beside every rate,
ungraded counted and masked apart, the three formats, the tasks that flipped, and a folder that is not a run in one line."""
import json, subprocess

from webmix.report import compare, report, wilson


def _run(root, name, oks, masked=(), family=lambda i: "Form" if i % 2 else "Navigation"):
    d = root / name
    d.mkdir()
    lines = [{"task_id": f"t{i}", "arm": "base", "family": family(i), "site": "shop" if i < 6 else "mail", "ok": ok,
              "steps": 4, "duration_s": 9.5, **({"masked": True} if i in masked else {})} for i, ok in enumerate(oks)]
    (d / "results.jsonl").write_text("".join(json.dumps(l) + "\n" for l in lines))
    return d


def webmix(*args):
    return subprocess.run(["webmix", *map(str, args)], capture_output=True, text=True, timeout=120)


def test_report_and_compare_on_two_runs(tmp_path):
    a = _run(tmp_path, "before", [True, False, False, None, True, False, False, True], masked=(7,))
    b = _run(tmp_path, "after", [True, True, False, True, False, True, False, True])
    p = webmix("report", a, b, "--format", "markdown")
    assert p.returncode == 0, p.stderr
    lo, hi = wilson(2, 7)
    # before: 8 episodes, one masked (not counted), one ungraded (counted, no pass): 2 of 7
    assert f"| before | 7 | 2 | 29% [{lo * 100:.0f}-{hi * 100:.0f}] | 1 | 1 |" in p.stdout, p.stdout
    assert "| after | 8 | 5 | 62% [" in p.stdout and "### by family" in p.stdout and "### by site" in p.stdout, p.stdout
    assert "### by variant" not in p.stdout                                  # one variant: no table of it
    t = report(a, b)["by site"].set_index(["who", "site"])
    assert t.loc[("before", "mail"), "n"] == 1 and t.loc[("before", "mail"), "masked"] == 1
    csv = webmix("report", a, "--format", "csv", "--by", "family").stdout.splitlines()
    assert csv[0].startswith("who,n,passed,success,ci_low,ci_high,ungraded,masked") and len(csv) == 1 + 1 + 2, csv
    assert "\\begin{tabular}" in webmix("report", a, b, "--format", "latex").stdout
    # the dashboard's charts as pages that open offline: each rate with its n, the bars with their intervals
    p = webmix("report", a, b, "--plots", tmp_path / "plots")
    pages = {f.name: f.read_text() for f in (tmp_path / "plots").glob("*.html")}
    assert p.returncode == 0 and (tmp_path / "plots" / "plotly.min.js").is_file(), p.stderr
    assert "n=4" in pages["success-by-arm-x-family.html"] and '"error_y"' in pages["success-by-site.html"], sorted(pages)
    # compare: pairs exclude the masked task; flipped ones named
    c = compare(a, b)
    assert c["pairs"] == 7 and c["masked"] == ["t7"] and c["fixed"] == ["t1", "t3", "t5"] and c["broken"] == ["t4"], c
    assert c["ci"][0] <= c["diff"] == 2 / 7 <= c["ci"][1]
    p = webmix("compare", a, b)
    assert p.returncode == 0 and "fixed (failed in A, passed in B): t1, t3, t5" in p.stdout and "broken (passed in A, failed in B): t4" in p.stdout, p.stdout
    assert "1 masked in either" in p.stdout


def test_report_refuses_what_is_not_a_run_in_one_line(tmp_path):
    for args in (["report", tmp_path / "nothing"], ["compare", tmp_path, tmp_path], ["report", tmp_path, "--by", "colour"]):
        (tmp_path / "results.jsonl").write_text("") if args[0] == "compare" else None
        p = webmix(*args)
        assert p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, (args, p.stderr)
