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
