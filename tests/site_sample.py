"""The sites the per-site tests go through: a seeded sample that holds every control kind any site has, filled up to
SAMPLE_SIZE sites, or every site with WEBMIX_TEST_SITES=all (or the comma-separated names it gives).

Every site is still served, listed and rendered page by page in each run (test_miniweb); the sample is for the tests
that send many requests per site (every form's malformed inputs, every control over HTTP). Likewise the human-style
tasks replayed in Chromium: one task of every site (filled up to TASK_SAMPLE_SIZE when there are fewer sites), or all of them with
WEBMIX_TEST_TASKS=all. WEBMIX_TEST_SEED draws other samples."""
import os, random

from webmix.config import split_of
from webmix.world.sites import load_sites

SAMPLE_SIZE = 16
TASK_SAMPLE_SIZE = 64


def sample_sites(size=SAMPLE_SIZE) -> list:
    "Sorted site names: every control kind and both splits covered, then random sites up to `size`."
    sites = load_sites()
    want = os.environ.get("WEBMIX_TEST_SITES", "").strip()
    if want == "all": return sorted(sites)
    if want:
        names = [n.strip() for n in want.split(",") if n.strip()]
        unknown = [n for n in names if n not in sites]
        if unknown: raise SystemExit(f"WEBMIX_TEST_SITES: unknown site(s) {unknown}")
        return sorted(names)
    order = sorted(sites)
    random.Random(int(os.environ.get("WEBMIX_TEST_SEED", "0"))).shuffle(order)
    chosen, covered = [], set()
    for n in order:                           # a site joins when it brings a control kind or a split not yet in
        has = {c.kind for c in sites[n].controls} | {"split:" + split_of(n)}
        if has - covered: chosen.append(n); covered |= has
    chosen += [n for n in order if n not in chosen][:max(0, size - len(chosen))]
    return sorted(chosen)


def sample_tasks(items, site_of, size=TASK_SAMPLE_SIZE) -> list:
    "The items (in their order) of a seeded sample: one of every site `site_of` names, then random ones up to `size`."
    if os.environ.get("WEBMIX_TEST_TASKS", "").strip() == "all": return list(items)
    order = list(range(len(items)))
    random.Random(int(os.environ.get("WEBMIX_TEST_SEED", "0"))).shuffle(order)
    chosen, sites = set(), set()
    for i in order:
        if site_of(items[i]) not in sites: chosen.add(i); sites.add(site_of(items[i]))
    chosen |= set([i for i in order if i not in chosen][:max(0, size - len(chosen))])
    return [x for i, x in enumerate(items) if i in chosen]


if __name__ == "__main__": print(" ".join(sample_sites()))
