"""Functions of orkwal's Ork fixture (ork.yaml)."""
import dataclasses
import datetime
import os
import pathlib


@dataclasses.dataclass
class Totals:
    tripled: list
    sum: int
    label: str


def start():
    return {"values": [1, 2, 3], "at": datetime.datetime(2026, 1, 2, 3, 4, 5)}


def summarize(totals: Totals):
    return "%s=%d over %d" % (totals.label, totals.sum, len(totals.tripled))


def flaky(path):
    attempt = int(os.environ["ORK_ATTEMPT"])
    if attempt == 1:
        raise RuntimeError("the first attempt fails")
    out = pathlib.Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("attempt %d\n" % attempt)
    return {"attempt": attempt}
