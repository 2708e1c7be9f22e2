"""Build the docs site: every notebook in nbs/ as a page with its saved outputs, an API reference, into _site/.

nbconvert renders the pages (JupyterLab's look, through the template in docs/templates/webmix). Nothing is executed:
a page shows the outputs its notebook was saved with. Nothing is loaded from outside the site: plotly figures are
drawn by the plotly.js that the installed plotly package ships (copied to _site/_static/), widget outputs show their
HTML form (webmix.views' viewers carry a self-contained stepper), and the build fails if a page still names a script,
style sheet or image elsewhere.

    python docs/build.py [--out _site] [--nbs nbs]
"""
import argparse, html, importlib, inspect, json, re, shutil, sys, time, uuid
from pathlib import Path

import nbformat, warnings
from nbconvert import HTMLExporter
from nbconvert.exporters.templateexporter import TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

warnings.filterwarnings("ignore", module="nbformat")   # notebooks without cell ids: nbdev-clean's choice
ROOT = Path(__file__).resolve().parent.parent
WIDGET = "application/vnd.jupyter.widget-view+json"
PLOTLY = "application/vnd.plotly.v1+json"
HIDDEN = ("#| hide", "#| default_exp", "#|hide", "#|default_exp")
EXTERNAL = re.compile(r"<(script|link|img|iframe|source)\b[^>]*?\b(src|href)\s*=\s*[\"']?(https?:)?//", re.I)


class SiteExporter(HTMLExporter):
    """nbconvert's HTML exporter without its last pass (a BeautifulSoup parse of the whole page to add alt texts and
    tab stops), which took most of the build's time; the viewers' images carry their own alt text."""
    def from_notebook_node(self, nb, resources=None, **kw):
        lang = nb.metadata.get("language_info", {})
        self.register_filter("highlight_code", self.filters.get(
            "highlight_code", Highlight2HTML(pygments_lexer=lang.get("pygments_lexer", lang.get("name")), parent=self)))
        resources = self._init_resources(resources)
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self,
                                                                       resources=resources))
        return TemplateExporter.from_notebook_node(self, nb, resources, **kw)

    def lab_css(self) -> str:
        "JupyterLab's page style sheets (light theme), written once to _static/ instead of inlined in every page."
        env = self.environment
        return "\n".join(env.loader.get_source(env, f"static/{n}")[0] for n in ("index.css", "theme-light.css"))


def title_of(nb, fallback) -> str:
    "A page's title: its notebook's first heading."
    for c in nb.cells:
        if c.cell_type == "markdown" and (m := re.search(r"^#\s+(.+)$", c.source, re.M)): return m.group(1).strip()
    return fallback


def plotly_html(fig: dict) -> str:
    "A plotly figure's JSON as a div drawn by the site's own plotly.js."
    fid = "fig-" + uuid.uuid4().hex[:10]
    data = json.dumps({"data": fig.get("data", []), "layout": fig.get("layout", {})}).replace("</", "<\\/")
    return (f'<div id="{fid}" class="wm-plotly"></div><script>(function(){{var f={data};'
            f'Plotly.newPlot("{fid}", f.data, f.layout, {{responsive: true}});}})();</script>')


def prepare(nb) -> bool:
    """Make the notebook a page: cells nbdev hides are dropped, directives removed from the code shown, widget outputs
    shown by their HTML, plotly figures as divs. -> whether the page needs plotly.js."""
    needs_plotly, cells = False, []
    for c in nb.cells:
        c.metadata = {k: v for k, v in c.get("metadata", {}).items() if k == "tags"}   # kernels' timing data, etc.
        if c.cell_type == "code":
            if any(c.source.lstrip().startswith(h) for h in HIDDEN): continue
            c.source = "\n".join(l for l in c.source.splitlines() if not l.startswith("#|")).strip("\n")
            for o in c.get("outputs", []):
                data = o.get("data")
                if not data: continue
                if PLOTLY in data:
                    o["data"] = {"text/html": plotly_html(data[PLOTLY])}
                    needs_plotly = True
                elif WIDGET in data:                       # no kernel on the site: the widget's own HTML, if it has one
                    data.pop(WIDGET)
                    if "text/html" not in data: data["text/plain"] = "(a live widget: open the notebook in JupyterLab)"
        cells.append(c)
    nb.cells = cells
    return needs_plotly


def readme_notebook():
    "The home page from README.md, when nbs/index.ipynb is missing or empty."
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell((ROOT / "README.md").read_text())])


def api_notebook(modules) -> "nbformat.NotebookNode":
    "The API reference: every webmix module's docstring and the signature and docstring of each name it exports."
    cells = [nbformat.v4.new_markdown_cell("# API reference\n\nEvery module's exported names, as `from webmix.X import name`.")]
    for name in modules:
        try: mod = importlib.import_module(f"webmix.{name}")
        except Exception as e:                             # a module that cannot import is named, not skipped silently
            cells.append(nbformat.v4.new_markdown_cell(f"## webmix.{name}\n\n(could not be imported: {type(e).__name__}: {e})"))
            continue
        parts = [f"<div class='wm-api'><h2 id='{name}'>webmix.{name}</h2>"]
        if mod.__doc__: parts.append(f"<p>{html.escape(inspect.cleandoc(mod.__doc__))}</p>")
        for n in getattr(mod, "__all__", []):
            obj = getattr(mod, n, None)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)): continue
            try: sig = str(inspect.signature(obj))
            except (TypeError, ValueError): sig = "(...)"
            kind = "class " if inspect.isclass(obj) else ""
            doc = inspect.getdoc(obj) or ""
            parts.append(f"<h3 id='{name}.{n}'><code>{kind}{html.escape(n + sig)}</code></h3>"
                         + (f"<pre class='wm-doc'>{html.escape(doc)}</pre>" if doc else ""))
        parts.append("</div>")
        cells.append(nbformat.v4.new_markdown_cell("\n".join(parts)))
    return nbformat.v4.new_notebook(cells=cells)


def modules_of(nbs) -> list:
    "The modules the notebooks export (their #| default_exp), in notebook order."
    out = []
    for p in nbs:
        m = re.search(r"#\|\s*default_exp\s+([\w.]+)", p.read_text())
        if m: out.append(m.group(1))
    return out


WINGS = {"": "Ground floor", "world": "World", "agents": "Agents", "data": "Data", "eval": "Evaluation", "views": "Views"}


def notebooks(nbs_dir: Path) -> list:
    "Every notebook, wing by wing as WINGS orders them (the ground floor's first, the CLI's last), each wing's in name order."
    nbs = [p for p in nbs_dir.rglob("*.ipynb") if not any(s.startswith(".") for s in p.relative_to(nbs_dir).parts)]
    def key(p):
        wing = p.relative_to(nbs_dir).parent.as_posix().replace(".", "")
        last = wing == "" and p.stem.startswith("9")          # the CLI sits on top of every wing
        return (last, list(WINGS).index(wing) if wing in WINGS else len(WINGS), p.stem)
    return sorted(nbs, key=key)


def page_of(p: Path, nbs_dir: Path) -> str:
    "A notebook's page: its path under nbs/ with '-' for '/', so two wings' notebooks of one name stay apart."
    return "-".join(p.relative_to(nbs_dir).with_suffix("").parts) + ".html"


def wing_of(p: Path, nbs_dir: Path) -> str:
    wing = p.relative_to(nbs_dir).parent.as_posix().replace(".", "")
    return WINGS.get(wing, wing) if not (wing == "" and p.stem.startswith("9")) else "Command line"


def build(out: Path, nbs_dir: Path) -> list:
    t0 = time.time()
    nbs = notebooks(nbs_dir)
    if out.exists(): shutil.rmtree(out)
    (out / "_static").mkdir(parents=True)
    import plotly
    shutil.copyfile(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", out / "_static" / "plotly.min.js")
    shutil.copyfile(ROOT / "docs" / "site.css", out / "_static" / "site.css")
    if (nbs_dir / "images").is_dir(): shutil.copytree(nbs_dir / "images", out / "images")   # the notebooks' pictures
    pages = []                                             # (file, title, notebook, wing)
    for p in nbs:
        nb = nbformat.read(p, as_version=4)
        if p.stem == "index" and p.parent == nbs_dir:
            if not nb.cells: nb = readme_notebook()
            pages.insert(0, ("index.html", "Home", nb, ""))
        else: pages.append((page_of(p, nbs_dir), title_of(nb, p.stem), nb, wing_of(p, nbs_dir)))
    if not any(f == "index.html" for f, *_ in pages): pages.insert(0, ("index.html", "Home", readme_notebook(), ""))
    pages.append(("api.html", "API reference", api_notebook(modules_of(nbs)), ""))
    exporter = SiteExporter(template_name="webmix", extra_template_basedirs=[str(ROOT / "docs" / "templates")],
                            exclude_anchor_links=False)
    (out / "_static" / "lab.css").write_text(exporter.lab_css())
    nav, shown = [], set()
    for f, t, _, wing in pages:                            # a wing's name heads its first page
        nav.append({"file": f, "title": t, "wing": wing if wing and wing not in shown else ""}); shown.add(wing)
    bad = []
    for f, title, nb, _ in pages:
        nb.metadata["title"] = f"{title} · webmix"
        nb.metadata.pop("widgets", None)                   # its state would need the widget manager from a CDN
        for c in nb.cells:                                 # pages are flat: a notebook's ../images/ is the site's images/
            if c.cell_type == "markdown": c.source = re.sub(r"\]\((?:\.\./)+images/", "](images/", c.source)
        needs = prepare(nb)
        res = {"webmix": {"pages": nav, "current": f, "plotly": needs}}
        try: body, _ = exporter.from_notebook_node(nb, resources=res)
        except Exception as e:                             # one notebook that cannot render does not stop the site
            print(f"docs: {f} not rendered: {type(e).__name__}: {str(e).splitlines()[0][:200]}", file=sys.stderr)
            failed = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
                f"# {title}\n\nThis notebook could not be rendered: `{type(e).__name__}`.")])
            body, _ = exporter.from_notebook_node(failed, resources=res)
        (out / f).write_text(body)
        bad += [f"{f}: {m.group(0)[:80]}" for m in EXTERNAL.finditer(body)]
    if bad: sys.exit("pages load from outside the site:\n" + "\n".join(bad))
    print(f"docs: {len(pages)} pages in {out} ({time.time() - t0:.1f}s)")
    return pages


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "_site"))
    ap.add_argument("--nbs", default=str(ROOT / "nbs"))
    a = ap.parse_args()
    build(Path(a.out), Path(a.nbs))
