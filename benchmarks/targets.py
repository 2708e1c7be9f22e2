"""What a benchmark prints last: each target it measured, met or missed, and its exit status (1 when one is missed).

    from targets import verdict          # a script in benchmarks/ finds its sibling modules on its own path
    sys.exit(verdict({"resume at 1M units (s)": (2.65, "< 5", 2.65 < 5)}))
"""


def verdict(checks: dict) -> int:
    "checks: {what: (value, the target as text, met)} -> printed one a line; 0 when every one is met, else 1."
    w = max(map(len, checks), default=0)
    print()
    for what, (value, target, met) in checks.items():
        print(f"{what:<{w}}  {value!s:>10}  target {target:<10}  {'met' if met else 'MISSED'}")
    missed = [what for what, (*_, met) in checks.items() if not met]
    print("targets: " + ("all met" if not missed else "MISSED: " + "; ".join(missed)), flush=True)
    return 1 if missed else 0
