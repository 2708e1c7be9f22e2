"""Build the docs site into _site/: the notebooks of nbs/ as Markdown pages, rendered by MkDocs with Material.

Why MkDocs with Material: it installs from the package index (Quarto, nbdev's own renderer, cannot be installed here),
builds offline, and its theme gives what nbdev's site has: a sidebar in sections, full-text search that runs in the
browser (no server), "on this page" contents, previous/next links and code blocks that scroll. The notebooks are
turned into Markdown here rather than by a notebook plugin so that each page reads as nbdev's do: an export cell
becomes its names' cards (signature, docstring, parameter table: nbdev's `show_doc`, which reads fastcore's docments)
with the cell's source folded under "source"; examples show their code and saved outputs; progress bars show their
last state. Nothing is executed and nothing is loaded from outside the site (the build fails if a page names an
outside script, style sheet or image).

    python docs/build.py [--out _site] [--nbs nbs]
"""
import argparse, ast, base64, html, importlib, inspect, json, re, shutil, subprocess, sys, tempfile, time, uuid, warnings
from pathlib import Path

import nbformat, yaml

warnings.filterwarnings("ignore", module="nbformat")   # notebooks without cell ids: nbdev-clean's choice
ROOT = Path(__file__).resolve().parent.parent
WIDGET = "application/vnd.jupyter.widget-view+json"
PLOTLY = "application/vnd.plotly.v1+json"
EXTERNAL = re.compile(r"<(script|link|img|iframe|source)\b[^>]*?\b(src|href)\s*=\s*[\"']?(https?:)?//", re.I)
WINGS = {"tutorials": "Tutorials", "guide": "Guide", "": "Ground floor", "world": "World", "agents": "Agents", "data": "Data", "eval": "Evaluation", "env": "Environment", "views": "Views"}
EXPLANATIONS = ("01_formats", "02b_folders", "02c_episode_layout", "91_job")   # ground-floor notebooks that explain


# ------------------------------------------------------------------ which notebooks, in which order
def notebooks(nbs_dir: Path) -> list:
    "Every notebook, wing by wing as WINGS orders them, each wing's in name order."
    nbs = [p for p in nbs_dir.rglob("*.ipynb") if not any(s.startswith(".") for s in p.relative_to(nbs_dir).parts)]
    def key(p):
        wing = p.relative_to(nbs_dir).parent.as_posix().replace(".", "")
        return (list(WINGS).index(wing) if wing in WINGS else len(WINGS), p.stem)
    return sorted(nbs, key=key)


def title_of(nb, fallback) -> str:
    "A page's title: its notebook's first heading."
    for c in nb.cells:
        if c.cell_type == "markdown" and (m := re.search(r"^#\s+(.+)$", c.source, re.M)): return m.group(1).strip()
    return fallback


def module_of(nb) -> str | None:
    "The module a notebook exports to (its `#| default_exp`)."
    for c in nb.cells:
        if c.cell_type == "code" and (m := re.search(r"^#\|\s*default_exp\s+([\w.]+)", c.source, re.M)): return m.group(1)
    return None


# ------------------------------------------------------------------ export cells: cards, source folded
def defined_names(src: str) -> list:
    "The top-level functions and classes a cell defines, in order."
    try: tree = ast.parse(src)
    except SyntaxError: return []
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def card(obj, name: str, anchor: str, level: int = 3) -> str:
    "One name's card as nbdev's show_doc renders it (signature, docstring, docments table), under a heading of our own."
    from nbdev.showdoc import BasicMarkdownRenderer
    try: md = BasicMarkdownRenderer(obj, name=name, title_level=level)._repr_markdown_()
    except Exception as e:                                  # a name show_doc cannot read still gets its heading
        md = f"{'#' * level} {name}\n\n(no signature: {type(e).__name__})"
    md = whole_doc(md, obj)
    md = re.sub(r"^\s*---\s*\n", "", md)                     # show_doc's rule above each card: the heading suffices
    md = re.sub(rf"^{'#' * level} .*$", f"{'#' * level} {name} {{ #{anchor} .wm-card }}", md, count=1, flags=re.M)
    return md.strip()


def whole_doc(md: str, obj) -> str:
    "show_doc's card with its docstring whole in italics: show_doc italicises the first line only and leaves the rest loose."
    lines = (inspect.getdoc(obj) or "").splitlines()
    head = f"*{lines[0]}*\n" + "\n".join(lines[1:]) if len(lines) > 1 else None
    if head is None or head not in md: return md
    paras = " ".join(l.strip() if l.strip() else "\n\n" for l in lines).replace(" \n\n ", "\n\n").split("\n\n")
    return md.replace(head, "\n\n".join(f"*{p.strip()}*" for p in paras if p.strip()), 1)


def api_line(mod) -> str:
    "A module page's first line after its summary: its public names, each linked to its card."
    names = [n for n in getattr(mod, "__all__", []) or [] if inspect.isfunction(f := getattr(mod, n, None)) or inspect.isclass(f)]
    return ("**Public API:** " + " · ".join(f"[`{n}`](#{mod.__name__}.{n})" for n in names)) if names else ""


def class_methods(cls) -> list:
    "A class's own public methods and properties (those it defines, not inherited), as (name, object)."
    out = []
    for n, v in vars(cls).items():
        if n.startswith("_"): continue
        f = v.fget if isinstance(v, property) else getattr(v, "__func__", v)
        if inspect.isfunction(f): out.append((n, f))
    return out


def cards_of(src: str, mod) -> list:
    "The cards of the public names an export cell defines (a class's with its methods')."
    public = set(getattr(mod, "__all__", []))
    out = []
    for n in defined_names(src):
        obj = getattr(mod, n, None)
        if n not in public or obj is None: continue
        anchor = f"{mod.__name__}.{n}"
        out.append(card(obj, n, anchor))
        if inspect.isclass(obj):
            out += [card(f, f"{n}.{m}", f"{anchor}.{m}", level=4) for m, f in class_methods(obj)]
    return out


def fence(text: str, lang: str = "text") -> str:
    "A fenced block that holds `text` whatever backticks it has."
    ticks = "`" * max(3, max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def folded(text: str, title: str = "source") -> str:
    "Code folded under a title (pymdownx.details: closed until clicked)."
    body = "\n".join("    " + l if l else "" for l in fence(text, "python").splitlines())
    return f'??? abstract "{title}"\n\n{body}'


# ------------------------------------------------------------------ outputs
def last_state(text: str) -> str:
    "Terminal text as it last looked: a carriage return redraws its line (a progress bar shows its final state)."
    lines = [l.split("\r")[-1] if "\r" in l.rstrip("\r") else l.rstrip("\r") for l in text.split("\n")]
    return "\n".join(lines)


def plotly_div(fig: dict) -> str:
    "A plotly figure's JSON as a div drawn by the site's own plotly.js."
    fid = "fig-" + uuid.uuid4().hex[:10]
    data = json.dumps({"data": fig.get("data", []), "layout": fig.get("layout", {})}).replace("</", "<\\/")
    return (f'<div id="{fid}" class="wm-plotly"></div><script>(function(){{var f={data};'
            f'Plotly.newPlot("{fid}", f.data, f.layout, {{responsive: true}});}})();</script>')


def raw_html(body: str) -> str:
    "HTML output as a raw block that scrolls sideways rather than clip (a wide table, a viewer)."
    body = re.sub(r"\n\s*\n", "\n", body.strip())           # a blank line would end Markdown's raw HTML block
    return f'<div class="wm-out">\n{body}\n</div>'


TEMP = re.compile(r"/tmp/(?:tmp|pytest-of-[^/\s]+/pytest-\d+/|views-demo-)[\w.-]*")

def plain_paths(text: str) -> str:
    "Output text with the notebook run's temporary folders as <tmp> and this clone's root as `.`: no machine's paths."
    return TEMP.sub("<tmp>", text).replace(str(ROOT), ".")


def output_md(o, page) -> str:
    "One cell output as Markdown or raw HTML; figures and images written beside the page."
    return plain_paths(_output_md(o, page))


def _output_md(o, page) -> str:
    if o.output_type == "stream":
        text = last_state(o.text).strip("\n")
        return fence(text) if text.strip() else ""
    if o.output_type == "error": return fence(f"{o.ename}: {o.evalue}")
    data = dict(o.get("data", {}))
    if PLOTLY in data:
        page["plotly"] = True
        return raw_html(plotly_div(data[PLOTLY]))
    data.pop(WIDGET, None)                                   # no kernel on the site: the widget's own HTML, if it has one
    for mime, ext in (("image/png", "png"), ("image/jpeg", "jpg")):
        if mime in data:
            name = f"{page['stem']}_out{len(page['images'])}.{ext}"
            page["images"][name] = base64.b64decode(data[mime])
            return f"![output](figs/{name})"
    if "text/html" in data: return raw_html(data["text/html"])
    if "text/markdown" in data: return data["text/markdown"]
    if "text/plain" in data: return fence(data["text/plain"])
    return ""


# ------------------------------------------------------------------ a notebook as a page
def directives(src: str) -> list:
    return [l[3:].strip() if l.startswith("#| ") else l[2:].strip() for l in src.splitlines() if l.startswith("#|")]


def page_md(nb, mod, page) -> str:
    "A notebook as Markdown: prose as written, export cells as cards with their source folded, examples with outputs."
    parts = []
    for c in nb.cells:
        if c.cell_type == "markdown":
            parts.append(re.sub(r"(\]\([^)\s]+)\.ipynb\b", r"\1.md", c.source))   # links between notebooks
            if len(parts) == 1 and mod is not None and (api := api_line(mod)): parts.append(api)   # the public API first
            continue
        if c.cell_type != "code": continue
        flags = directives(c.source)
        if any(f.split()[0] in ("hide", "default_exp") for f in flags if f): continue
        code = "\n".join(l for l in c.source.splitlines() if not l.startswith("#|")).strip("\n")
        if any(f.split()[0] in ("export", "exporti") for f in flags if f):
            cards = cards_of(code, mod) if mod else []
            parts += cards
            if code: parts.append(folded(code, "source" if cards else "source (internal helpers)"))
            continue
        if code and not any(f.replace(" ", "") == "echo:false" for f in flags): parts.append(fence(code, "python"))   # Quarto's echo
        parts += [md for o in c.get("outputs", []) if (md := output_md(o, page))]
    return "\n\n".join(parts) + "\n"


# ------------------------------------------------------------------ the pages of the site's own
def sites_md(images_dir: Path) -> str:
    "The sites page: every site's picture (a tile of the contact sheet), name, split and title."
    from webmix.config import split_of
    from webmix.world.sites import load_sites
    from webmix.world.sheet import sheet_tiles
    sites = load_sites()
    names = sorted(sites)
    sheet = ROOT / "nbs" / "images" / "sites.png"
    tiles = sheet_tiles(sheet, names, images_dir / "sites")
    by_split = {}
    for n in names: by_split.setdefault(split_of(n), []).append(n)
    out = ["# The sites", "",
           f"MiniWeb serves {len(names)} sites: {len(by_split.get('train', []))} training sites and "
           f"{len(by_split.get('test', []))} held-out test sites (`data/site_split.json`). Each picture is the site's "
           "first list page in Chromium, as `webmix sites list --sheet` takes it.", ""]
    for split, title in (("train", "Training sites"), ("test", "Held-out test sites")):
        out += [f"## {title}", "", '<div class="wm-sites">']
        for n in by_split.get(split, []):
            out.append(f'<figure class="wm-site" id="site-{n}"><a href="images/sites/{tiles[n].name}">'
                       f'<img src="images/sites/{tiles[n].name}" alt="{n}: {html.escape(sites[n].title)}" loading="lazy"></a>'
                       f'<figcaption><b>{n}</b> · {html.escape(sites[n].title)}</figcaption></figure>')
        out += ["</div>", ""]
    return "\n".join(out)


def api_md(entries) -> str:
    "The API index: every module and the names it exports, each linked to its card on its notebook's page."
    out = ["# API index", "", "Every module's exported names, as `from webmix.X import name`; each links to its card.", ""]
    for mod_name, page, names in entries:
        out += [f"## webmix.{mod_name} {{ #{mod_name} }}", "", f"[{page['title']}]({page['md']})", ""]
        if names: out.append(" · ".join(f"[`{n}`]({page['md']}#webmix.{mod_name}.{n})" for n in names))
        out.append("")
    return "\n".join(out)


def config(out: Path, docs_dir: Path, nav: list) -> dict:
    "mkdocs.yml: docs/mkdocs.base.yml with this build's folders and sidebar."
    cfg = yaml.safe_load((ROOT / "docs" / "mkdocs.base.yml").read_text())
    cfg.update(docs_dir=str(docs_dir), site_dir=str(out.resolve()), nav=nav)
    return cfg


def build(out: Path, nbs_dir: Path) -> list:
    t0 = time.time()
    sys.path.insert(0, str(ROOT))
    nbs = notebooks(nbs_dir)
    with tempfile.TemporaryDirectory() as tmp:
        docs = Path(tmp) / "docs"
        (docs / "_static").mkdir(parents=True)
        import plotly
        shutil.copyfile(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", docs / "_static" / "plotly.min.js")
        shutil.copyfile(ROOT / "docs" / "extra.css", docs / "_static" / "extra.css")
        shutil.copytree(nbs_dir / "images", docs / "images")
        for md in (ROOT / "docs").glob("*.md"): shutil.copyfile(md, docs / md.name)
        (docs / "sites.md").write_text(sites_md(docs / "images"))
        wings, explain, api_entries, pages = {}, [], [], []
        for p in nbs:
            rel = p.relative_to(nbs_dir).with_suffix(".md")
            nb = nbformat.read(p, as_version=4)
            mod_name = module_of(nb)
            mod = importlib.import_module(f"webmix.{mod_name}") if mod_name else None
            page = {"stem": rel.stem, "images": {}, "plotly": False, "md": rel.as_posix(), "title": title_of(nb, p.stem)}
            if p.stem == "index" and p.parent == nbs_dir: page["title"] = "Home"
            body = page_md(nb, mod, page)
            if page["plotly"]:                                 # the figure's script, once, before the page's figures
                up = "../" * (len(rel.parts) - 1)
                body = f'<script src="{up}_static/plotly.min.js"></script>\n\n' + body
            (docs / rel).parent.mkdir(parents=True, exist_ok=True)
            (docs / rel).write_text(body)
            for name, data in page["images"].items():
                (docs / rel.parent / "figs").mkdir(exist_ok=True)
                (docs / rel.parent / "figs" / name).write_bytes(data)
            pages.append(page)
            if mod_name: api_entries.append((mod_name, page, list(getattr(mod, "__all__", []))))
            wing = p.relative_to(nbs_dir).parent.as_posix()
            if page["md"] == "index.md": continue
            if wing in ("", ".") and p.stem in EXPLANATIONS: explain.append({page["title"]: page["md"]})
            elif wing in ("", ".") and p.stem.startswith("90"): wings.setdefault("Command line", []).append({page["title"]: page["md"]})
            else: wings.setdefault(WINGS.get(wing.replace(".", ""), wing), []).append({page["title"]: page["md"]})
        (docs / "api.md").write_text(api_md(api_entries))
        nav = [{"Home": "index.md"}, {"Tutorials": wings.pop("Tutorials", [])}, {"Guide": wings.pop("Guide", [])},
               {"Explanations": [{"The sites": "sites.md"}] + explain},
               {"API": [{"API index": "api.md"}] + [{w: ps} for w, ps in wings.items() if w != "Command line"]},
               {"Command line": wings.get("Command line", [])}]
        cfg_path = Path(tmp) / "mkdocs.yml"
        cfg_path.write_text(yaml.safe_dump(config(out, docs, nav), sort_keys=False))
        p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(cfg_path)], capture_output=True, text=True)
        if p.returncode: sys.exit(f"mkdocs build failed:\n{p.stderr[-3000:]}")
    bad = [f"{f.relative_to(out)}: {m.group(0)[:80]}" for f in out.rglob("*.html") for m in EXTERNAL.finditer(f.read_text())]
    if bad: sys.exit("pages load from outside the site:\n" + "\n".join(bad[:20]))
    print(f"docs: {len(pages) + 3} pages in {out} ({time.time() - t0:.1f}s)")
    return pages


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "_site"))
    ap.add_argument("--nbs", default=str(ROOT / "nbs"))
    a = ap.parse_args()
    build(Path(a.out), Path(a.nbs))
