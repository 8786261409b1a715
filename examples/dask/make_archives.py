"""Writes N order archives (JSON arrays) for the example, the same bytes on every machine."""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import List

REGIONS = ["eu-west", "eu-north", "us-east", "us-west", "ap-south"]


def make_archives(directory: Path, count: int, orders: int = 2000) -> List[str]:
    """Writes `archive-000.json` … into `directory`; returns their names (relative paths)."""
    directory.mkdir(parents=True, exist_ok=True)
    names = []
    for n in range(count):
        rng = random.Random(n)
        records = [
            {
                "id": f"o-{n}-{i}",
                "region": rng.choice(REGIONS),
                "amount": rng.randint(1, 500),
                "items": [rng.randint(1, 9) for _ in range(rng.randint(1, 4))],
                "note": "señal ✓" if i % 97 == 0 else "",
            }
            for i in range(orders)
        ]
        name = f"archive-{n:03}.json"
        (directory / name).write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
        names.append(name)
    return names


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--count", type=int, default=8)
    parser.add_argument("--orders", type=int, default=2000)
    args = parser.parse_args()
    for name in make_archives(args.directory, args.count, args.orders):
        print(args.directory / name)
