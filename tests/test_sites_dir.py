"""Site specs of one's own beside the embedded ones: WEBMIX_SITES_DIR and load_sites(sites_dir=...), in-process and served."""
import json, os
from urllib.request import Request, urlopen

import pytest
import yaml

from webmix.config import SITES_DIR, admin_headers
from webmix.world.specs import SpecError
from webmix.world.sites import load_sites
from webmix.world.admin import site_summary
from webmix.world.servers import Servers, free_ports


def write_copy(folder, name, of="shop"):
    "An embedded spec copied under another name into `folder`; -> the folder."
    spec = yaml.safe_load((SITES_DIR / f"{of}.yaml").read_text()) | {"name": name, "title": name.title()}
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(spec))
    return folder


def get(url):
    with urlopen(Request(url, headers=admin_headers()), timeout=30) as r: return r.status, r.read().decode()


def test_sites_dir_adds_its_specs_beside_the_embedded_ones(tmp_path):
    embedded = load_sites()
    sites = load_sites(sites_dir=write_copy(tmp_path, "myshop"))
    assert set(sites) == set(embedded) | {"myshop"}
    assert load_sites(sites_dir=SITES_DIR) == embedded          # the embedded folder named again adds nothing
    assert site_summary(sites["myshop"])["split"] == "none" and sites["myshop"].sitemap()["split"] == "none"


def test_WEBMIX_SITES_DIR_folders_are_added_too(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(); b.mkdir()
    monkeypatch.setenv("WEBMIX_SITES_DIR", os.pathsep.join([str(write_copy(a, "mine-a")), str(write_copy(b, "mine-b", of="kanban"))]))
    assert {"mine-a", "mine-b", "shop"} <= set(load_sites())


def test_a_name_clash_with_an_embedded_site_names_both_files(tmp_path):
    write_copy(tmp_path, "shop", of="kanban")
    with pytest.raises(ValueError) as e: load_sites(sites_dir=tmp_path)
    assert isinstance(e.value, SpecError)
    assert str(SITES_DIR / "shop.yaml") in str(e.value) and str(tmp_path.resolve() / "shop.yaml") in str(e.value)


def test_a_missing_folder_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("WEBMIX_SITES_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="nowhere"): load_sites()


def served_names(base):
    status, body = get(base + "/_admin/sites")
    assert status == 200
    return {s["name"]: s for s in json.loads(body)}


def test_a_server_started_with_WEBMIX_SITES_DIR_serves_the_extra_site(tmp_path, monkeypatch):
    monkeypatch.setenv("WEBMIX_SITES_DIR", str(write_copy(tmp_path, "myshop")))
    with Servers(ports=free_ports(1)) as srv:                 # the server process inherits the variable
        served = served_names(srv.bases[0])
        assert set(served) == set(load_sites()) and served["myshop"]["split"] == "none"
        for path in ("", "/products", "/products/1", "/orders/new"):
            status, html = get(f"{srv.bases[0]}/sites/myshop{path}")
            assert status == 200 and "Myshop" in html, path


def test_servers_pass_an_explicit_sites_dir_to_the_server(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                                # a relative folder reaches the server as an absolute one
    (tmp_path / "specs").mkdir()
    write_copy(tmp_path / "specs", "myboard", of="kanban")
    with Servers(ports=free_ports(1), sites_dir="specs") as srv:
        assert set(served_names(srv.bases[0])) == set(load_sites(sites_dir="specs"))
        assert get(f"{srv.bases[0]}/sites/myboard/board")[0] == 200


def test_a_broken_sites_dir_stops_every_command_in_one_line_before_it_starts(tmp_path):
    import subprocess
    cases = {"broken.yaml": b"name: [unclosed\n", "empty.yaml": b"", "latin1.yaml": b"name: caf\xe9\n"}
    dup = tmp_path / "dup"
    dup.mkdir()
    write_copy(dup, "shop", of="kanban")
    folders = {"dup": dup}
    for name, data in cases.items():
        (folders.setdefault(name, tmp_path / name.split(".")[0])).mkdir()
        (folders[name] / name).write_bytes(data)
    for why, d in folders.items():
        for cmd in (["sites", "list"], ["datagen", "--sites", "shop", "--limit", "1", "--out", str(tmp_path / "o")],
                    ["evaluate", "--human", "--arm", "base", "--out", str(tmp_path / "e")]):
            p = subprocess.run(["webmix", *cmd, "--sites-dir", str(d)], capture_output=True, text=True, timeout=120)
            err = p.stderr.strip().splitlines()
            assert p.returncode == 1 and len(err) == 1 and str(d) in err[0], (why, cmd, p.stderr[-600:])
    assert not (tmp_path / "o").exists() and not (tmp_path / "e").exists()


OWN = """
name: lockers
title: Harbour Lockers
doc: Rent a locker at the harbour, by the day.
collections:
  lockers:
    title_field: code
    fields:
      code: {type: text, required: true, unique: true, format: true, gen: {pattern: "L-{int3}"}}
      floor: {type: choice, options: [1, 2, 3], gen: {values: [1, 2, 2]}}
      rate: {type: money, min: 0, max: 9, step: 0.01}
    rows: 150
  claims:
    title_field: title
    fields:
      title: {type: text, required: true}
      note: {type: longtext}
    rows: 0
pages:
  - {id: home, kind: home, path: /, title: Home, text: Lockers by the day.}
  - {id: lockers, kind: list, path: /lockers, title: Lockers, collection: lockers, columns: [code, floor, rate], detail: true,
     create: true, filters: [{widget: dropdown, field: floor, label: Floor}, {widget: slider, field: rate, label: Rate}]}
  - {id: claims, kind: list, path: /claims, title: Claims, collection: claims, columns: [title], detail: true, search: [title],
     edit: true, create: true}
"""


def test_a_spec_of_ones_own_with_number_options_a_fine_step_unique_codes_and_an_empty_list(tmp_path):
    "What a new spec writer reaches for works: number options, a 0.01 slider step, unique formatted codes, a list left empty."
    from webmix.data.tasks import all_tasks
    (tmp_path / "lockers.yaml").write_text(OWN)
    site = load_sites(sites_dir=tmp_path)["lockers"]
    codes = [r["code"] for r in site.rows["lockers"]]
    assert len(set(codes)) == 150 and all(len(c) == 5 and c.startswith("L-") and c[2:].isdigit() for c in codes)
    assert site.collections["lockers"]["fields"]["floor"]["options"] == ["1", "2", "3"]
    assert {r["floor"] for r in site.rows["lockers"]} == {"1", "2"}
    tasks = all_tasks(["lockers"], sites_dir=tmp_path)
    macros = {t["macro"] for t in tasks}
    assert {"filter_by_slider", "filter_by_dropdown", "create_entry"} <= macros, macros
    slider = next(t for t in tasks if t["macro"] == "filter_by_slider")
    assert 0 < float(slider["option"]["value"]) < 9


OWN_COMMENTS = ("  claims:\n", "  comments:\n    fields: {body: {type: text}}\n  claims:\n")


@pytest.mark.parametrize("changes, said", [
    ([("step: 0.01", "step: 0")], "collections.lockers.fields.rate.step: a slider's step is a number above 0"),
    ([("      note: {type: longtext}", "      id: {type: int}")], "collections.claims.fields.id: id is every record's own key"),
    ([("      note: {type: longtext}", "      check-in: {type: date}")], "collections.claims.fields.check-in: a field name is letters, digits and _"),
    ([("gen: {values: [1, 2, 2]}", "gen: {values: [1, 4]}")], "collections.lockers.fields.floor.gen.values: a choice field's seeded values are some of its options"),
    ([("path: /claims", "path: claims")], "pages[2] (claims).path: a page's path starts with /"),
    ([("columns: [title], detail: true,", "columns: [title],")], "pages[2] (claims): edit need detail: true"),
    ([OWN_COMMENTS, ("edit: true, create: true}", "edit: true, create: true, comments: true}")],
     "collections.comments: comments: true on a page keeps its comments in a collection of that name"),
    ([("      title: {type: text, required: true}", "      title: {type: text, required: true, gen: {from: note}}")],
     "collections.claims.fields.title.gen.from: 'note' is not a field declared above 'title'"),
    ([("field: floor, label: Floor", "field: code, label: Code")], None),        # allowed: a dropdown over a text field
    ([OWN_COMMENTS], None),                                                       # ... and a collection named comments, unused
])
def test_a_spec_mistake_stops_at_load_in_one_line_naming_where(tmp_path, changes, said):
    spec = OWN
    for old, new in changes:
        assert old in spec
        spec = spec.replace(old, new, 1)
    (tmp_path / "lockers.yaml").write_text(spec)
    if said is None:
        assert "lockers" in load_sites(sites_dir=tmp_path)
        return
    with pytest.raises(SpecError) as e: load_sites(sites_dir=tmp_path)
    assert said in str(e.value) and "\n" not in str(e.value), str(e.value)
