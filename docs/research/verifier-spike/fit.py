"""Route (b): logistic-regression verdicts over the model's own features + lexical signals.

Fits on EVEN rows only (row index in the file), reports on ODD rows.
Needs research/cache/{halueval,averitec,atomic,diahalu}.json/.npz from research/extract.py.
Run: .venv/bin/python research/fit.py [--tag SUFFIX] > research/results_b.txt
"""
from __future__ import annotations

import json, re, sys, time
from collections import Counter
from pathlib import Path

import numpy as np
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score, recall_score
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent)); sys.path.insert(0, str(ROOT))
from extract import items  # noqa: E402
from agents.text import content_words, coverage, names, numbers, words  # noqa: E402

CACHE = ROOT / "cache"
ART = ROOT / "artifacts"
TAG = sys.argv[sys.argv.index("--tag") + 1] if "--tag" in sys.argv else ""


def load(ds):
    recs = json.loads((CACHE / f"{ds}{TAG}.json").read_text())
    emb = np.load(CACHE / f"{ds}{TAG}.npz")["emb"]
    if ds.startswith("diahalu"):
        return recs, emb
    if ds.startswith("atomic"):  # agents.atomic_claims breaks name ties by set order (hash seed): rebuild evidence by row
        from extract import averitec_evidence, load as load_rows
        rows = load_rows("averitec")
        for r in recs:
            r["evidence"], r["context"] = averitec_evidence(rows[r["row"]]), "Claim:"
        return recs, emb
    its = list(items(ds))[: len(recs)]
    for r, it in zip(recs, its):
        assert r["row"] == it["row"] and r["text"] == it["text"]
        r["evidence"], r["context"] = it["evidence"], it["context"]
    return recs, emb


def norm(s):
    return " ".join(words(s))


# ---------- general features -----------------------------------------------------------------------------
LEX_NAMES = ["contained", "cov", "cov_new", "num_missing", "num_match", "name_missing", "name_found", "n_words_log"]


def lexical(text, evidence, context=""):
    """Claim-vs-evidence support: does the evidence contain the claim (or its new words, names, numbers)?"""
    t, e = norm(text), norm(evidence)
    cw = content_words(text)
    new = cw - content_words(context)
    ew = content_words(evidence)
    tn, en = numbers(text), numbers(evidence)
    nm = {n for n in names(" x " + text) | {w.lower() for w in re.findall(r"\b[A-Z][a-z]+", text)} if n not in content_words(context)}
    return [
        float(bool(t) and f" {t} " in f" {e} "),
        coverage(cw, ew),
        coverage(new, ew) if new else 1.0,
        float(bool(tn - en)),
        float(bool(tn) and not (tn - en)),
        float(any(n not in ew for n in nm)),
        float(bool(nm) and all(n in ew for n in nm)),
        float(np.log1p(len(words(text)))),
    ]


POLARITY_NAMES = ["ev_yes", "ev_no", "ev_unanswered", "ev_count_log"]


def polarity(evidence):
    """AVeriTeC-style evidence (Q/A lines): share of answers that begin yes / no / cannot be answered."""
    answers = [l.split(" A: ", 1)[1].strip().lower() if " A: " in l else "" for l in evidence.split("\n") if l.strip()]
    n = max(1, len(answers))
    return [sum(a.startswith("yes") for a in answers) / n, sum(a.startswith("no") and not a.startswith("no answer") for a in answers) / n,
            sum("no answer" in a or a == "" for a in answers) / n, float(np.log1p(len(answers)))]


LLM_NAMES = ["lp_mean", "lp_min", "lp_low", "lp_gap", "lp_top1", "lp_first", "pmi_mean", "pmi_min", "pmi_top1", "pmi_first", "pmi_sum_per_tok"]


def llm_feats(r):
    w, o = r["with"], r["without"] or r["with"]
    return [w["mean"], w["min"], w["low_share"], w["gap"], w["top1_share"], w["first"], w["mean"] - o["mean"], w["min"] - o["min"],
            w["top1_share"] - o["top1_share"], w["first"] - o["first"], (w["sum"] - o["sum"]) / max(1, w["n_tok"])]


CB_NAMES = ["lp_mean", "lp_min", "lp_low", "lp_top1", "n_tok_log", "n_numbers", "n_names", "has_year"]


def closed_book(r):
    w = r["with"]
    t = r["text"]
    return [w["mean"], w["min"], w["low_share"], w["top1_share"], float(np.log1p(w["n_tok"])), float(len(numbers(t))),
            float(len(names(" x " + t))), float(bool(re.search(r"\b(1[5-9]|20)\d\d\b", t)))]


# ---------- fitting / reporting -----------------------------------------------------------------------------
def report(name, gold, pred, labels, extra=""):
    gold, pred = list(gold), list(pred)
    maj = Counter(gold).most_common(1)[0]
    rec = recall_score(gold, pred, labels=labels, average=None, zero_division=0)
    line = (f"{name:58s} n={len(gold):3d} acc={accuracy_score(gold, pred):.3f} macroF1={f1_score(gold, pred, labels=labels, average='macro', zero_division=0):.3f} "
            + " ".join(f"R[{l}]={x:.2f}" for l, x in zip(labels, rec)) + f" | majority '{maj[0]}' acc={maj[1]/len(gold):.3f} {extra}")
    print(line, flush=True)
    return line


def model_for(C, pca=None, balanced=True):
    steps = [StandardScaler()]
    if pca:
        steps.append(PCA(n_components=pca, random_state=0))
    steps.append(LogisticRegression(C=C, max_iter=5000, class_weight="balanced" if balanced else None))
    return make_pipeline(*steps)


def choose(X, y, groups_parity_ok=True, pca=None, balanced=True, grid=(0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0), score="macro", seed=0, groups=None):
    """C by 5-fold CV on the fitting rows only (folds grouped by dialogue when groups are given)."""
    from sklearn.model_selection import StratifiedGroupKFold
    cv = StratifiedKFold(5, shuffle=True, random_state=seed) if groups is None else StratifiedGroupKFold(5, shuffle=True, random_state=seed)
    best = None
    for C in grid:
        p = cross_val_predict(model_for(C, pca, balanced), X, y, cv=cv, groups=groups)
        s = f1_score(y, p, average="macro") + (accuracy_score(y, p) if score == "macro+acc" else 0)
        if best is None or s > best[0]:
            best = (s, C)
    return best[1], best[0]


def fit_eval(name, Xtr, ytr, Xte, yte, labels, pca=None, balanced=True, score="macro", save=None, feature_names=None):
    t = time.time()
    C, cvs = choose(Xtr, ytr, pca=pca, balanced=balanced, score=score)
    m = model_for(C, pca, balanced).fit(Xtr, ytr)
    pred = m.predict(Xte)
    line = report(name, yte, pred, labels, f"(C={C}, cv={cvs:.3f}, fit {time.time()-t:.1f}s)")
    if save and not pca:
        sc, lr = m.named_steps["standardscaler"], m.named_steps["logisticregression"]
        ART.mkdir(exist_ok=True)
        (ART / save).write_text(json.dumps({
            "features": feature_names, "classes": [str(c) for c in lr.classes_],
            "mean": sc.mean_.tolist(), "scale": sc.scale_.tolist(), "coef": lr.coef_.tolist(), "intercept": lr.intercept_.tolist(),
            "C": C, "class_weight": "balanced" if balanced else None, "fit_rows": "even rows of " + name,
            "note": "p = softmax(coef @ ((x - mean) / scale) + intercept) (binary: sigmoid, positive class = classes[1])"}, indent=1))
    return m, pred, line


def split(recs, X):
    ev = np.array([r["row"] % 2 == 0 for r in recs])
    return ev, ~ev


def halueval():
    print("\n== HaluEval QA (items = 2 per row: right answer -> factual, hallucinated answer -> hallucination) ==")
    recs, E = load("halueval")
    y = np.array([r["label"] for r in recs])
    L = np.array([lexical(r["text"], r["evidence"], r["context"]) for r in recs])
    M = np.array([llm_feats(r) for r in recs])
    ev, od = split(recs, L)
    labels = ["factual", "hallucination"]
    report("baseline: contained-in-knowledge rule (no fit)", y[od], np.where(L[od, 0] > 0, "factual", "hallucination"), labels)
    fit_eval("lexical (8)", L[ev], y[ev], L[od], y[od], labels, save="halueval_lexical.json", feature_names=LEX_NAMES)
    nolen = [i for i, n in enumerate(LEX_NAMES) if n != "n_words_log"]
    fit_eval("lexical without length (7)", L[ev][:, nolen], y[ev], L[od][:, nolen], y[od], labels, save="halueval_lexical_nolength.json", feature_names=[LEX_NAMES[i] for i in nolen])
    fit_eval(f"model log-probs only ({len(LLM_NAMES)})", M[ev], y[ev], M[od], y[od], labels, save="halueval_logprob.json", feature_names=LLM_NAMES)
    if np.abs(E).sum() > 0:
        fit_eval("hidden state only (640, PCA 32)", E[ev], y[ev], E[od], y[od], labels, pca=32)
    LM = np.hstack([L, M])
    fit_eval(f"lexical + log-probs ({len(LEX_NAMES) + len(LLM_NAMES)})", LM[ev], y[ev], LM[od], y[od], labels, save="halueval_lex_logprob.json", feature_names=LEX_NAMES + LLM_NAMES)
    LMn = np.hstack([L[:, nolen], M])
    fit_eval(f"lexical(no length) + log-probs ({len(LEX_NAMES) - 1 + len(LLM_NAMES)})", LMn[ev], y[ev], LMn[od], y[od], labels)


def averitec():
    print("\n== AVeriTeC (true / false / unverifiable; evidence = the row's Q/A pairs) ==")
    recs, E = load("averitec")
    y = np.array([r["label"] for r in recs])
    L = np.array([lexical(r["text"], r["evidence"]) for r in recs])
    P = np.array([polarity(r["evidence"]) for r in recs])
    M = np.array([llm_feats(r) for r in recs])
    ev, od = split(recs, L)
    labels = ["true", "false", "unverifiable"]
    report("baseline: majority of even rows ('false')", y[od], ["false"] * od.sum(), labels)
    for bal in (True, False):
        tag = "balanced" if bal else "unweighted"
        fit_eval(f"polarity (4) [{tag}]", P[ev], y[ev], P[od], y[od], labels, balanced=bal, score="macro+acc")
        X = np.hstack([L, P, M])
        fit_eval(f"lexical + polarity + log-probs ({len(LEX_NAMES) + 4 + len(LLM_NAMES)}) [{tag}]", X[ev], y[ev], X[od], y[od], labels, balanced=bal, score="macro+acc",
                 save=f"averitec_lex_pol_logprob_{tag}.json", feature_names=LEX_NAMES + POLARITY_NAMES + LLM_NAMES)
        XP = np.hstack([P, M])
        fit_eval(f"polarity + log-probs ({4 + len(LLM_NAMES)}) [{tag}]", XP[ev], y[ev], XP[od], y[od], labels, balanced=bal, score="macro+acc",
                 save=f"averitec_pol_logprob_{tag}.json", feature_names=POLARITY_NAMES + LLM_NAMES)
        if np.abs(E).sum() == 0:
            continue  # extracted without hidden states (HW_EMB=0)
        fit_eval(f"hidden state (PCA 16) [{tag}]", E[ev], y[ev], E[od], y[od], labels, pca=16, balanced=bal, score="macro+acc")
        XE = np.hstack([P, M, E])
        fit_eval(f"polarity + log-probs + hidden (PCA 16) [{tag}]", XE[ev], y[ev], XE[od], y[od], labels, pca=16, balanced=bal, score="macro+acc")
    # + atomic claims built from even rows as extra fitting data
    try:
        arecs, AE = load("atomic")
    except FileNotFoundError:
        return
    ay = np.array([r["label"] for r in arecs])
    aev = np.array([r["row"] % 2 == 0 for r in arecs])
    AX = np.hstack([np.array([lexical(r["text"], r["evidence"]) for r in arecs]), np.array([polarity(r["evidence"]) for r in arecs]),
                    np.array([llm_feats(r) for r in arecs])])
    X = np.hstack([L, P, M])
    report("atomic claims: n per label (even)", ay[aev], ay[aev], labels)
    for bal in (True, False):
        tag = "balanced" if bal else "unweighted"
        fit_eval(f"lex+pol+logprob, fit even AVeriTeC + even atomic [{tag}]", np.vstack([X[ev], AX[aev]]), np.concatenate([y[ev], ay[aev]]),
                 X[od], y[od], labels, balanced=bal, score="macro+acc")
    fit_eval("atomic claims odd (fit: even atomic) lex+pol+logprob", AX[aev], ay[aev], AX[~aev], ay[~aev], labels)


def diahalu():
    print("\n== DiaHalu (closed-book; turn classifier on even dialogues' assistant turns, dialogue = max over turns) ==")
    recs, E = load("diahalu")
    y = np.array([r["label"] for r in recs])
    X = np.array([closed_book(r) for r in recs])
    rows = np.array([r["row"] for r in recs])
    ev = rows % 2 == 0
    dl = {r["row"]: r["dialogue_label"] for r in recs}
    labels = ["factual", "hallucination"]
    odd_rows = sorted(set(rows[~ev])); even_rows = sorted(set(rows[ev]))
    gold = [dl[i] for i in odd_rows]
    report("baseline: majority of even dialogues", gold, [Counter(dl[i] for i in even_rows).most_common(1)[0][0]] * len(gold), labels)
    configs = [("closed-book log-probs + counts (8)", X, None, 0), ("hidden state (PCA 16)", E, 16, 0),
               ("log-probs + counts + hidden (PCA 16)", np.hstack([X, E]), 16, 0)]
    if "--sensitivity" in sys.argv:
        configs += [(f"log-probs + counts + hidden (PCA {k}) cv-seed {sd}", np.hstack([X, E]), k, sd) for k in (8, 16, 32) for sd in (0, 1, 2)]
        configs += [(f"hidden state (PCA {k}) cv-seed {sd}", E, k, sd) for k in (8, 16, 32) for sd in (1, 2)]
    for fname, F, pca, seed in configs:
        C, cvs = choose(F[ev], y[ev], pca=pca, seed=seed, groups=rows[ev])
        # threshold on the dialogue max-probability chosen by CV predictions on even dialogues (folds = dialogues)
        from sklearn.model_selection import StratifiedGroupKFold, cross_val_predict as cvp
        cv = StratifiedGroupKFold(5, shuffle=True, random_state=seed)
        pe = cvp(model_for(C, pca), F[ev], y[ev], cv=cv, groups=rows[ev], method="predict_proba")[:, 1]
        dmax_even = {i: pe[rows[ev] == i].max() for i in even_rows}
        best = max(np.unique(list(dmax_even.values())), key=lambda th: f1_score([dl[i] for i in even_rows],
                   ["hallucination" if dmax_even[i] >= th else "factual" for i in even_rows], average="macro"))
        m = model_for(C, pca).fit(F[ev], y[ev])
        po = m.predict_proba(F[~ev])[:, 1]
        dmax = {i: po[rows[~ev] == i].max() for i in odd_rows}
        pred = ["hallucination" if dmax[i] >= best else "factual" for i in odd_rows]
        report(f"dialogue: {fname}", gold, pred, labels, f"(C={C}, threshold {best:.3f} from even-row CV)")
        if fname == "log-probs + counts + hidden (PCA 16)":
            sc, pc, lr = m.named_steps["standardscaler"], m.named_steps["pca"], m.named_steps["logisticregression"]
            ART.mkdir(exist_ok=True)
            (ART / "diahalu_turn_pca16.json").write_text(json.dumps({
                "features": CB_NAMES + [f"hidden_{k}" for k in range(E.shape[1])], "classes": [str(c) for c in lr.classes_],
                "mean": sc.mean_.tolist(), "scale": sc.scale_.tolist(), "pca_mean": pc.mean_.tolist(), "pca_components": pc.components_.tolist(),
                "coef": lr.coef_.tolist(), "intercept": lr.intercept_.tolist(), "C": C, "dialogue_threshold": float(best),
                "hidden": "llama.cpp embedding (pooling none) at the last token of the assistant turn, dialogue rendered 'User: ...\\nAssistant: ...\\n'",
                "note": "turn p = sigmoid(coef @ pca((x-mean)/scale) + intercept); dialogue = hallucination when max turn p >= dialogue_threshold"}))
    # dialogue-level aggregate features
    def agg(ids, F):
        out = []
        for i in ids:
            f = F[rows == i]
            out.append(np.concatenate([f.max(0), f.min(0), f.mean(0)]))
        return np.array(out)
    Ae, Ao = agg(even_rows, X), agg(odd_rows, X)
    fit_eval("dialogue-level: max/min/mean of turn features (24)", Ae, np.array([dl[i] for i in even_rows]), Ao, np.array(gold), labels)


if __name__ == "__main__":
    parts = [a for a in sys.argv[1:] if a in ("halueval", "averitec", "diahalu")]
    for part in parts or ["halueval", "averitec", "diahalu"]:
        try:
            globals()[part]()
        except FileNotFoundError as exc:
            print(part, "skipped:", exc)
