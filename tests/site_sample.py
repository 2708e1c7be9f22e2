"""The sites the per-site tests go through: a seeded sample that holds every control kind any site has, filled up to
SAMPLE_SIZE sites, or every site with WEBMIX_TEST_SITES=all (or the comma-separated names it gives).

Every site is still served, listed and rendered page by page in each run (test_miniweb); the sample is for the tests
that send many requests per site (every form's malformed inputs, every control over HTTP). WEBMIX_TEST_SEED draws
another sample."""
import os, random

from webmix.config import split_of
from webmix.world.sites import load_sites

SAMPLE_SIZE = 16


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


if __name__ == "__main__": print(" ".join(sample_sites()))
