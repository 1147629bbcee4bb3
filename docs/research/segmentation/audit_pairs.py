"""The hand-read possible restatement pairs of docs/results/segmentation-restatement-audit.txt, parsed.

No halluwatch import, so a probe that runs in an environment of its own (embedding_restatements.py) reads the
pairs the same way as those that run in the project's (nli_restatements.py, judge_restatements.py).
"""

import re

AUDIT = "docs/results/segmentation-restatement-audit.txt"


def pairs() -> list[tuple[str, str, str, str]]:
    """(label, case, first claim, second claim) for each hand-read pair; labels R/S/D/G as the audit's header says."""
    found = []
    for line in open(AUDIT):
        m = re.match(r"^([RSDG]) (\S+) (.+?): (.*) \| (.*)$", line.strip())
        if m:
            found.append((m.group(1), m.group(2), m.group(4), m.group(5)))
    return found
