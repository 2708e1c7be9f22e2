"""How long the RowsInspector (webmix.views.rows) takes to open a folder of 2,000 training rows: its list, its counts and
its first page shown.

    python benchmarks/rows_load.py [--n 2000] [--per-chain 8] [--limit 2.0] [--keep DIR]

It writes N rows as plan-data writes them (folders of chains, each an episode.json of layout rows, a rows.jsonl whose
lines hold a system prompt, the page's text and a screenshot referenced by file name, and that screenshot as a small
PNG) into a temporary folder, times `RowsInspector(folder)`, and times in the same run the least any viewer of those
rows must do (`json.loads` of every row line and a `stat` of each image it names) as the baseline. It prints the
first opening in the process (pandas imported on the way), a second one, the baseline and their ratios as one JSON
line, and exits 1 when the first opening takes `--limit` seconds or more."""
import argparse, json, os, sys, tempfile, time
from pathlib import Path

SYSTEM = ("You are a planner that hands each part of a web task to a specialist. " * 120)[:8000]   # a real prompt's size
PAGE = "".join(f"[{i}]<button data-control-id=c{i}>Item {i}</button>\n" for i in range(60))      # the page's elements
FAMILIES = ("Navigation", "Discrete selection", "Text entry", "Information extraction", "planner")
OPS = ("click", "select_dropdown", "input_text", "extract", "done")


def screenshot(path: Path, k: int) -> None:
    "A small real PNG, a different one for each row (its colour and number drawn on it)."
    from PIL import Image, ImageDraw
    im = Image.new("RGB", (320, 200), (90 + k * 37 % 160, 120 + k * 53 % 120, 200 - k * 29 % 150))
    ImageDraw.Draw(im).text((12, 12), f"row {k}", fill=(0, 0, 0))
    im.save(path, "PNG")


def row(chain: str, step: int, k: int) -> dict:
    "Row `k`, step `step` of chain `chain`: the keys and message layout of a plan-data row (tests/data/row_layout.json)."
    fam, op = FAMILIES[k % len(FAMILIES)], OPS[k % len(OPS)]
    user = [{"type": "text", "text": f"Task: the chain {chain}, turn {step}."}, {"type": "text", "text": PAGE},
            {"type": "image_url", "image_url": {"url": f"step_{step}.png"}}]
    target = {"memory": f"Turn {step} of {chain}.", "action": [{op: {"index": k % 60}}]}
    return {"task_id": chain, "step": step, "segment": step, "macro": f"macro_{k % 7}", "family": fam, "op": op,
            "delegated": fam, "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
            "target": json.dumps(target)}


def make_rows(folder, n: int = 2000, per_chain: int = 8) -> Path:
    "`n` rows in chain folders of `per_chain` rows each under `folder` (made), one PNG a row -> `folder`."
    folder = Path(folder)
    for c in range(0, n, per_chain):
        chain = f"plan-shop-{c // per_chain:05d}"
        d = folder / chain
        d.mkdir(parents=True)
        (d / "episode.json").write_text(json.dumps({"layout": "rows", "runner": "plan-data", "task_id": chain, "site": "shop"}))
        steps = range(min(per_chain, n - c))
        (d / "rows.jsonl").write_text("".join(json.dumps(row(chain, s, c + s)) + "\n" for s in steps))
        for s in steps: screenshot(d / f"step_{s}.png", c + s)
    return folder


def baseline(folder: Path) -> tuple:
    "(seconds, rows) of the least a viewer must do: parse every row line, stat every image a row names."
    t, n = time.perf_counter(), 0
    for f in sorted(folder.rglob("rows.jsonl")):
        for line in f.read_text().split("\n"):
            if not line: continue
            r, n = json.loads(line), n + 1
            for m in r["messages"]:
                for p in m["content"] if isinstance(m["content"], list) else []:
                    if p["type"] == "image_url": os.stat(f.parent / p["image_url"]["url"])
    return time.perf_counter() - t, n


def open_inspector(folder: Path) -> tuple:
    "(seconds, the inspector) of RowsInspector(folder), the import of webmix.views.rows (ipywidgets) left out of the time."
    from webmix.views.rows import RowsInspector
    t = time.perf_counter()
    ri = RowsInspector(folder)
    return time.perf_counter() - t, ri


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="rows to write (default 2000)")
    ap.add_argument("--per-chain", type=int, default=8, help="rows per chain folder (default 8)")
    ap.add_argument("--limit", type=float, default=2.0, help="seconds opening may take (default 2.0): at or over it, exit 1")
    ap.add_argument("--keep", type=Path, help="write the rows into this folder (new) and keep them")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = make_rows(a.keep or Path(tmp) / "rows", a.n, a.per_chain)
        base_s, rows = baseline(folder)
        open_s, ri = open_inspector(folder)               # the first in this process: pandas imported on the way
        assert ri.error is None and len(ri.df) == rows == a.n, ri.error
        again_s, _ = open_inspector(folder)               # a second time, as a kernel opens it after a first use
        print(json.dumps({"rows": rows, "open_s": round(open_s, 3), "again_s": round(again_s, 3),
                          "baseline_s": round(base_s, 3), "ratio": round(open_s / base_s, 1),
                          "ratio_again": round(again_s / base_s, 1), "limit_s": a.limit}))
    return 0 if open_s < a.limit else 1


if __name__ == "__main__":
    sys.exit(main())
