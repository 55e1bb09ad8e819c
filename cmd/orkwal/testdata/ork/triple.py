"""A process task of orkwal's Ork fixture: its inputs from ORK_INPUT_JSON,
its output as the last ORK_OUTPUT: line."""
import json
import os

values = json.loads(os.environ["ORK_INPUT_JSON"])["start"]["values"]
tripled = [3 * v for v in values]
print("ORK_OUTPUT:" + json.dumps({"tripled": [], "sum": 0}))
print("tripling", values)
print("ORK_OUTPUT:" + json.dumps({"tripled": tripled, "sum": sum(tripled)}))
