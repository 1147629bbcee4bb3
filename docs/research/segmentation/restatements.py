"""Every pair of claims within a turn that the duplicate rule kept but `shares_a_fact`
(agents.stages.restatements) flags, one a line.

    python dump_claims.py DIALOGUES.jsonl ANSWERS.jsonl CLAIMS.jsonl
    python restatements.py CLAIMS.jsonl
"""

import json
import sys
from itertools import combinations

from agents.stages.restatements import shares_a_fact
from agents.stages.standalone import near_duplicate

for line in open(sys.argv[1]):
    row = json.loads(line)
    for a, b in combinations(row["claims"], 2):
        if not near_duplicate(a, b) and shares_a_fact(a, b):
            print(f"{row['conv']} {row['turn']}: {a} | {b}")
