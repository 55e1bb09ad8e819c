"""Task functions of examples/ork-pipeline.yaml, written as for Ork.

Each function receives the task's inputs as keyword arguments and returns
its output (JSON-encoded by orkwal; datetimes become ISO 8601 strings).
"""
import os
from datetime import datetime, timezone


def extract(day: str, limit: int) -> dict:
    print(f"extracting {limit} rows for {day}")
    rows = [{"id": i, "value": i * i} for i in range(limit)]
    return {"rows": rows, "extracted_at": datetime.now(timezone.utc)}


def transform(rows: list) -> dict:
    attempt = int(os.environ["ORK_ATTEMPT"])
    if attempt < 2:
        # A transient failure: the workflow's retries run this again.
        raise RuntimeError(f"transient failure on attempt {attempt}")
    return {"total": sum(r["value"] for r in rows), "count": len(rows)}


def load(total: int, count: int) -> dict:
    print(f"loaded {count} rows, total {total}")
    return {"loaded": count}
