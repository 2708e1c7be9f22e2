"""chain_specs over a synthetic pool: webmix.data.chains' indexed sampler against a straightforward transcription of the
reference loop (the reference system's plan_data.chain_specs), which scans every record of the site for every part it adds.

    python benchmarks/chains.py [--records 100000] [--chains 10000] [--reference-chains 1000]

The reference loop is too slow for 10,000 chains over 100,000 records (quadratic), so the ratio is measured on the
first --reference-chains chains of the same pool, for both, in this run; the index's full-size time is printed too.
"""
import argparse, random, time
from collections import Counter, defaultdict
from pathlib import Path

from webmix.world.catalog import CHAIN_FIRST, MACROS, QA_MACROS
from webmix.data.chains import chain_specs_from_records, follow


def synthetic_site(rng, name, n_tables=6, n_pages=9, n_controls=40):
    "A site: its home path and controls (id, page, macro, the 1-2 tables it touches)."
    home = f"/sites/{name}"
    pages = [home] + [f"{home}/page{j}" for j in range(1, n_pages)]
    tables = [f"{name}_t{j}" for j in range(n_tables)]
    controls = [{"id": f"{name}-c{j}", "page": rng.choice(pages), "macro": rng.choice(sorted(MACROS)),
                 "tables": rng.sample(tables, rng.choice((1, 1, 2)))} for j in range(n_controls)]
    return {"name": name, "home": home, "controls": controls}


def synthetic_record(rng, i, site):
    "A kept trajectory's record (see webmix.data.chains.record) for one task on one of the site's controls."
    c = rng.choice(site["controls"])
    start = site["home"] if rng.random() < 0.3 else c["page"]          # a third start home and walk to the control
    fresh = rng.random() < 0.9
    return {"id": f"{site['name']}-{i:06d}", "dir": None, "traj": None, "task": None, "site": site["name"],
            "macro": c["macro"], "start": start, "control": c["id"], "scope": set(c["tables"]),
            "answers": c["macro"] in QA_MACROS or rng.random() < 0.03, "fresh": fresh,
            "stays": rng.random() < (0.8 if c["macro"] in CHAIN_FIRST else 0.3),
            "home_start": fresh and start == site["home"] and rng.random() < 0.85}


def synthetic_records(n, n_sites=12, seed=0):
    "n records over n_sites sites (6 tables, 9 pages, 40 controls each)."
    rng = random.Random(seed)
    sites = [synthetic_site(rng, f"site{s:02d}") for s in range(n_sites)]
    return [synthetic_record(rng, i, rng.choice(sites)) for i in range(n)]


def reference_chain_specs(records, n_chains, sizes=(2, 3, 4), seed=0, tries=40, answer_share=0.5):
    "The reference system's plan_data.chain_specs loop, transcribed as it is (records given instead of dirs)."
    by_site = defaultdict(list)
    for r in records:
        by_site[r["site"]].append(r)
    rng, out, seen = random.Random(seed), [], set()
    sites = sorted(by_site)
    misses = Counter()
    while len(out) < n_chains and sites:
        for site in list(sites):
            if len(out) >= n_chains:
                break
            recs = by_site[site]
            got = None
            for _ in range(tries):
                k = rng.choice(sizes)
                a = rng.choice(recs)
                if a["answers"]:
                    continue
                chain = [(a, None)]
                while len(chain) < k:
                    used = {r["id"] for r, _ in chain}
                    ctrls = {r["control"] for r, _ in chain}
                    scopes = set().union(*(r["scope"] for r, _ in chain))
                    last = chain[-1][0]
                    nxt = [(b, v) for b in recs if b["id"] not in used and b["control"] not in ctrls
                           and not (b["scope"] & scopes) and (v := follow(last, b))]
                    if not nxt:
                        break
                    ans = [x for x in nxt if x[0]["answers"]]
                    if len(chain) == k - 1 and ans and rng.random() < answer_share:
                        chain.append(rng.choice(ans))
                        break
                    nxt = [x for x in nxt if not x[0]["answers"]] or nxt
                    page = [x for x in nxt if x[1] == "page"]
                    chain.append(rng.choice(page if page and rng.random() < 0.75 else nxt))
                    if chain[-1][0]["answers"]:
                        break
                key = "+".join(r["id"] for r, _ in chain)
                if len(chain) >= 2 and key not in seen:
                    got = chain
                    seen.add(key)
                    break
            if got:
                out.append(got)
            else:
                misses[site] += 1
                if misses[site] >= 3:
                    sites.remove(site)
    rng.shuffle(out)
    return out


def timed(f, *args, **kw):
    t0 = time.perf_counter()
    out = f(*args, **kw)
    return out, time.perf_counter() - t0


def ids(chains):
    return [[(r["id"], via) for r, via in c] for c in chains]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--chains", type=int, default=10_000)
    ap.add_argument("--reference-chains", type=int, default=1_000, help="chains for the reference loop's comparison run")
    args = ap.parse_args(argv)
    pool = synthetic_records(args.records)
    full, t_full = timed(chain_specs_from_records, pool, args.chains)
    parts = Counter(len(c) for c in full)
    print(f"pool: {len(pool):,} records, {len({r['site'] for r in pool})} sites, "
          f"{sum(r['answers'] for r in pool):,} answering, {sum(r['home_start'] for r in pool):,} home starts")
    print(f"index: {len(full):,} chains from {len(pool):,} records in {t_full:.2f} s "
          f"(parts per chain: {dict(sorted(parts.items()))})")
    mine, t_mine = timed(chain_specs_from_records, pool, args.reference_chains)
    theirs, t_ref = timed(reference_chain_specs, pool, args.reference_chains)
    print(f"{args.reference_chains:,} chains from {len(pool):,} records: reference loop {t_ref:.2f} s, index {t_mine:.3f} s, "
          f"ratio {t_ref / t_mine:.0f}x, same chains: {ids(mine) == ids(theirs)}")
    if args.reference_chains < args.chains:
        est = t_ref / args.reference_chains * args.chains
        print(f"reference loop at {args.chains:,} chains, extrapolated per chain: ~{est:.0f} s (ratio ~{est / t_full:.0f}x)")


if __name__ == "__main__":
    main()
