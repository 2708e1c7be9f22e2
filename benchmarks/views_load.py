"""How long the EpisodeViewer (webmix.views.episode_viewer) takes to open a folder of 1,000 episodes (the list with its filters and the first episode shown).

    python benchmarks/views_load.py RUN_DIR [--n 1000]

RUN_DIR is any datagen run folder (with accepted/); its kept attempts are copied (screenshots hard-linked) into a
temporary run of N episodes with a results.jsonl and the run's manifest.json, and the EpisodeViewer is timed on it."""
import argparse, json, os, shutil, tempfile, time
from pathlib import Path

from webmix import runs
from webmix.views.episode_viewer import EpisodeViewer


def make_run(src: Path, n: int, dst: Path) -> Path:
    kept = sorted((src / "accepted").iterdir())
    results = runs.latest(runs.read_results(src))
    lines = []
    for i in range(n):
        d = kept[i % len(kept)]
        out = dst / "accepted" / f"{d.name}-{i:04d}"
        out.mkdir(parents=True)
        for f in d.iterdir():
            if f.suffix == ".png": os.link(f, out / f.name)
            else: shutil.copyfile(f, out / f.name)
        lines.append(json.dumps({**results.get(d.name, {"ok": True}), "task_id": out.name}))
    (dst / "results.jsonl").write_text("\n".join(lines) + "\n")
    if (src / "manifest.json").is_file(): shutil.copyfile(src / "manifest.json", dst / "manifest.json")   # the episodes' layout
    return dst


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--n", type=int, default=1000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = make_run(Path(a.run), a.n, Path(tmp) / "run")
        t = time.perf_counter()
        v = EpisodeViewer(run)
        dt = time.perf_counter() - t
        assert v.error is None and len(v.episodes) == a.n, v.error
        print(json.dumps({"episodes": len(v.episodes), "open_s": round(dt, 3)}))
