"""What a training row looks like, apart from its contents: the layout a speed change must leave as it was
(tests/data/row_layout.json, recorded from rows made before the harness's waits and tabs were cut)."""
import json, struct
from pathlib import Path

REFERENCE = json.loads((Path(__file__).parent / "data" / "row_layout.json").read_text())


def png_size(p) -> list:
    head = Path(p).read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{p} is not a PNG"
    return list(struct.unpack(">II", head[16:24]))


def planner_layout(row: dict, folder: Path) -> dict:
    "A planner row's keys, its messages' roles and content part types, and the size of the screenshot it names."
    parts = lambda c: "text" if isinstance(c, str) else [p["type"] for p in c]
    shots = [p["image_url"]["url"] for m in row["messages"] if isinstance(m["content"], list)
             for p in m["content"] if p["type"] == "image_url"]
    return {"keys": sorted(row), "messages": [[m["role"], parts(m["content"])] for m in row["messages"]],
            "screenshots": [png_size(folder / s) for s in shots]}


def datagen_layout(folder: Path) -> dict:
    "A kept datagen unit's files, its trajectory's keys, its steps' keys (but the optional event and to) and screenshot sizes."
    traj = json.loads((folder / "trajectory.json").read_text())
    steps = sorted({k for s in traj["steps"] for k in s} - {"event", "to"})
    return {"files": sorted(p.name for p in folder.iterdir() if not p.name.startswith("step_")), "keys": sorted(traj),
            "step_keys": steps, "screenshots": [list(s) for s in sorted({tuple(png_size(p)) for p in folder.glob("step_*.png")})]}
