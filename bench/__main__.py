"""`python -m bench`: run every benchmark module in turn (each prints its own table and JSON)."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import bench


def main() -> int:
    names = sorted(m.name for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_"))
    wanted = set(sys.argv[1:])
    failed = 0
    for name in names:
        if wanted and name.removeprefix("bench_") not in wanted and name not in wanted:
            continue
        print(f"\n=== {name} ===", flush=True)
        module = importlib.import_module(f"bench.{name}")
        result = module.main()
        failed += 1 if result else 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
