"""How much of the secrets agent sessions hold ``threadmem.lib.redact`` removes, what it takes that is none, how fast.

    .venv/bin/python bench/redaction.py [--half tune|report] [--gitleaks PATH] [--sessions DIR] [--json PATH]

Only the public ``redact`` and ``redactions`` are used, so the bench runs on any version of the redactor. A secret
counts as removed when, after ``redact``, no 12 consecutive characters of it (the whole of a shorter one) remain.

1. Own corpus (bench/secret_corpus.py): agent-session contexts holding made-up secrets in their vendors' shapes,
   by context and by vendor, in two halves (``tune``, ``report``: other seeds, other templates).
2. gitleaks' published true positives (each rule function's ``tps`` in a gitleaks checkout, read at bench time),
   per rule and family, rules split into the two halves by a stable hash of their id; and gitleaks' own rules,
   emulated in Python, over the own corpus.
3. Bait: texts holding no secret (digests, ids, placeholders …): every changed one is listed.
4. Real sessions (../shared/data/claude-code): every redaction, its label and its masked context.
5. Throughput: MB/s over the sessions' strings mixed with the corpus, and one 5 MB line.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# ``bench.…`` and ``threadmem.…`` from the repository root.
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from typing import Any  # noqa: E402

from bench.gitleaks_rules import GitleaksRules, GitleaksSource, rule_functions, shannon_entropy  # noqa: E402
from bench.secret_corpus import HALVES, Sample, bait_texts, long_tool_output, own_corpus  # noqa: E402
from threadmem.lib.redact import redact, redactions  # noqa: E402

PIECE = 12
DEFAULT_GITLEAKS = Path("/work/.mirror/gitleaks+gitleaks/repo")
DEFAULT_SESSIONS = ROOT / "../shared/data/claude-code"

TARGET_REMOVED = 97.0
TARGET_MB_PER_S = 20.0
TARGET_LONG_LINE_S = 1.0

# gitleaks' rules by family (rule-id prefixes): the ones issue 51 names, then the other vendors of the own corpus.
FAMILIES = {
    "OpenAI": ("openai",),
    "Anthropic": ("anthropic",),
    "AWS": ("aws",),
    "generic keyword assignments": ("generic-api-key",),
    "GitHub": ("github",),
    "GitLab": ("gitlab",),
    "Slack": ("slack",),
    "Hugging Face": ("huggingface",),
    "Stripe": ("stripe",),
    "SendGrid": ("sendgrid",),
    "npm": ("npm",),
    "PyPI": ("pypi",),
    "Vault": ("vault",),
    "Terraform Cloud": ("hashicorp",),
    "Sentry": ("sentry",),
    "Mailgun": ("mailgun",),
    "Azure AD": ("azure-ad",),
    "Discord": ("discord",),
    "Datadog": ("datadog",),
    "Cloudflare": ("cloudflare",),
    "Kubernetes secret": ("kubernetes",),
    "curl auth": ("curl",),
    "Google": ("gcp",),
    "Twilio": ("twilio",),
    "DigitalOcean": ("digitalocean",),
    "Shopify": ("shopify",),
    "Doppler": ("doppler",),
    "Linear": ("linear",),
    "Notion": ("notion",),
    "Grafana": ("grafana",),
    "Postman": ("postman",),
    "PlanetScale": ("planetscale",),
    "Pulumi": ("pulumi",),
    "JWT": ("jwt",),
    "private keys": ("private-key",),
}
# Families whose every true positive must go (issue 51: "every rule family named above whole").
NAMED_FAMILIES = (
    "OpenAI",
    "AWS",
    "generic keyword assignments",
    "Hugging Face",
    "Stripe",
    "SendGrid",
    "npm",
    "PyPI",
    "Vault",
    "Sentry",
    "Mailgun",
    "Azure AD",
    "Discord",
    "Datadog",
    "Cloudflare",
    "Kubernetes secret",
    "curl auth",
)


def family_of(rule_id: str) -> str:
    return next((family for family, prefixes in FAMILIES.items() if rule_id.startswith(prefixes)), "other")


# --- measuring ------------------------------------------------------------------------------------------------


def removed(secret: str, text: str, before: str = "") -> bool:
    """No piece of ``PIECE`` consecutive characters of ``secret`` (the whole of a shorter one) is left in ``text``.

    A piece that ``before`` (the text as it was) also holds outside the secret is not the secret's: base64 of two
    JSON documents can share one.
    """
    if len(secret) <= PIECE:
        return secret not in text
    elsewhere = before.replace(secret, "\0")
    pieces = {secret[i : i + PIECE] for i in range(len(secret) - PIECE + 1)}
    return not any(piece in text for piece in pieces if piece not in elsewhere)


def masked(secret: str) -> str:
    return f"{secret[:6]}…({len(secret)})"


def percent(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 100.0


def table(title: str, rows: list[tuple[str, int, int]]) -> list[str]:
    """``title`` and a row per (name, total, removed), with the sum last."""
    width = max([len(title), *(len(name) for name, _, _ in rows)]) + 2
    lines = [f"{title:<{width}} {'secrets':>8} {'removed':>8} {'%':>7}"]
    for name, total, gone in rows:
        lines.append(f"{name:<{width}} {total:>8} {gone:>8} {percent(gone, total):>6.1f}%")
    total, gone = sum(r[1] for r in rows), sum(r[2] for r in rows)
    lines.append(f"{'all':<{width}} {total:>8} {gone:>8} {percent(gone, total):>6.1f}%")
    return lines


def by_key(results: list[dict[str, Any]], key: str) -> list[tuple[str, int, int]]:
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for result in results:
        totals[result[key]][0] += 1
        totals[result[key]][1] += result["removed"]
    return [(name, total, gone) for name, (total, gone) in sorted(totals.items())]


# --- 1. own corpus --------------------------------------------------------------------------------------------


def own_results(samples: list[Sample], redactor: Any) -> list[dict[str, Any]]:
    results = []
    for sample in samples:
        after = redactor(sample.text)
        for vendor, secret in sample.secrets:
            results.append(
                {
                    "context": sample.context,
                    "vendor": vendor,
                    "secret": secret,
                    "removed": removed(secret, after, sample.text),
                }
            )
    return results


def section_own(half: str, gitleaks: GitleaksRules | None, out: list[str]) -> dict[str, Any]:
    samples = own_corpus(half)
    results = own_results(samples, redact)
    gone = sum(r["removed"] for r in results)
    out.append(f"\n== 1. Own corpus, half {half}: {len(samples)} texts, {len(results)} secrets ==")
    out += table("context", by_key(results, "context"))
    out.append("")
    out += table("vendor", by_key(results, "vendor"))
    misses = [r for r in results if not r["removed"]]
    out.append(f"\nmisses ({len(misses)}):")
    out += [f"  {r['context']:<26} {r['vendor']:<24} {masked(r['secret'])}" for r in misses]
    figures: dict[str, Any] = {
        "texts": len(samples),
        "secrets": len(results),
        "removed": gone,
        "percent": round(percent(gone, len(results)), 1),
        "by_context": {name: [total, g] for name, total, g in by_key(results, "context")},
        "by_vendor": {name: [total, g] for name, total, g in by_key(results, "vendor")},
        "misses": [[r["context"], r["vendor"], masked(r["secret"])] for r in misses],
    }
    if gitleaks is not None:
        emulated = own_results(samples, gitleaks.redact)
        found = sum(r["removed"] for r in emulated)
        out.append(
            f"\ngitleaks' rules, emulated, on the same texts: {found}/{len(emulated)} "
            f"({percent(found, len(emulated)):.1f} %) of the secrets found"
        )
        comparison = {name: total_gone for name, _, total_gone in by_key(emulated, "context")}
        out.append(f"{'context':<28} {'redact':>8} {'gitleaks':>9}")
        for name, total, ours in by_key(results, "context"):
            out.append(f"{name:<28} {f'{ours}/{total}':>8} {f'{comparison.get(name, 0)}/{total}':>9}")
        figures["gitleaks_emulated"] = {
            "found": found,
            "percent": round(percent(found, len(emulated)), 1),
            "by_context": comparison,
        }
    return figures


# --- 2. gitleaks' true positives ------------------------------------------------------------------------------


def half_of_rule(rule_id: str) -> str:
    return HALVES[hashlib.sha256(rule_id.encode()).digest()[0] % 2]


def gitleaks_true_positives(source: GitleaksSource, rules: GitleaksRules) -> Iterator[dict[str, Any]]:
    """Each true positive with the secret the rule's own regex finds in it (or why there is none)."""
    generic = rules.rules.get("generic-api-key")
    stopwords = tuple(w for a in (generic.allowlists if generic else []) for w in a.stopwords)
    for function in rule_functions(source, seed=51, stopwords=stopwords):
        rule = rules.rules.get(function.rule_id)
        for _ in range(function.unparsed):
            yield {"rule": function.rule_id, "status": "unparsed"}
        for text in function.true_positives:
            if rule is None or not rule.source:  # a rule the config leaves out, or one that matches paths only
                yield {"rule": function.rule_id, "status": "absent", "text": text}
                continue
            if rule.regex is None:
                yield {"rule": function.rule_id, "status": "untranslatable", "text": text}
                continue
            spans = list(rule.secret_spans(text))
            if not spans:
                yield {"rule": function.rule_id, "status": "untranslatable", "text": text}
                continue
            # gitleaks reports the secrets its entropy floor lets through; the first match when none does.
            kept = [s for s in spans if not rule.entropy or _entropy_ok(text[s[0] : s[1]], rule.entropy)] or spans[:1]
            for start, end, _ in kept:
                yield {"rule": function.rule_id, "status": "ok", "text": text, "secret": text[start:end]}


def _entropy_ok(secret: str, floor: float) -> bool:
    return shannon_entropy(secret) > floor


def section_gitleaks(
    source: GitleaksSource, rules: GitleaksRules, halves: tuple[str, ...], out: list[str]
) -> dict[str, Any]:
    cases = list(gitleaks_true_positives(source, rules))
    for case in cases:
        if case["status"] == "ok":
            case["removed"] = removed(case["secret"], redact(case["text"]), case["text"])
    figures: dict[str, Any] = {"version": source.version(), "halves": {}}
    out.append(f"\n== 2. gitleaks' published true positives (gitleaks {source.version()}, {source.path}) ==")
    out.append(
        "Regexes from config/gitleaks.toml translated to Python; true positives from cmd/generate/config/rules/*.go."
    )
    for half in halves:
        mine = [c for c in cases if half_of_rule(c["rule"]) == half]
        ok = [c for c in mine if c["status"] == "ok"]
        gone = sum(c["removed"] for c in ok)
        untranslatable = sum(c["status"] == "untranslatable" for c in mine)
        unparsed = sum(c["status"] == "unparsed" for c in mine)
        absent = sorted({c["rule"] for c in mine if c["status"] == "absent"})
        rule_ids = sorted({c["rule"] for c in mine if c["status"] != "absent"})
        out.append(
            f"\n-- half {half}: {len(rule_ids)} rules, {len(ok)} true positives measured; "
            f"{untranslatable} the Python regex does not match (untranslatable), {unparsed} Go expressions not read; "
            f"not measured, rules with true positives but no regex in config/gitleaks.toml: {', '.join(absent) or '-'}"
        )
        for rule_id in sorted({c["rule"] for c in mine if c["status"] == "untranslatable"}):
            out.append(f"  untranslatable: {rule_id} ({sum(c['rule'] == rule_id for c in mine)} true positives)")
        per_rule = by_key([{"rule": c["rule"], "removed": c["removed"]} for c in ok], "rule")
        out += table("rule id", per_rule)
        families = by_key([{"family": family_of(c["rule"]), "removed": c["removed"]} for c in ok], "family")
        out.append("")
        out += table("family", families)
        misses = [c for c in ok if not c["removed"]]
        out.append(f"\nmisses ({len(misses)}):")
        for c in misses:
            text = c["text"].replace("\n", "\\n")
            out.append(f"  {c['rule']:<40} {masked(c['secret']):<18} {text[:110]}")
        figures["halves"][half] = {
            "rules": len(rule_ids),
            "true_positives": len(ok),
            "removed": gone,
            "percent": round(percent(gone, len(ok)), 1),
            "untranslatable": untranslatable,
            "unparsed": unparsed,
            "absent_rules": absent,
            "by_rule": {name: [total, g] for name, total, g in per_rule},
            "by_family": {name: [total, g] for name, total, g in families},
            "misses": [[c["rule"], masked(c["secret"])] for c in misses],
        }
    return figures


# --- 3. bait --------------------------------------------------------------------------------------------------


def section_bait(out: list[str]) -> dict[str, Any]:
    texts = bait_texts()
    changed = []
    for text in texts:
        found = redactions(text)
        if found or redact(text) != text:
            changed.append((sorted({r.label for r in found}), text))
    out.append(f"\n== 3. Bait: {len(texts)} texts holding no secret; changed: {len(changed)} (target 0) ==")
    for labels, text in changed:
        out.append(f"  [{', '.join(labels)}] {text[:160]!r}")
    return {"texts": len(texts), "changed": len(changed), "list": [[labels, text] for labels, text in changed]}


# --- 4. real sessions -----------------------------------------------------------------------------------------


def session_strings(directory: Path) -> list[str]:
    """Every string value of every JSONL record under ``directory``."""
    strings: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for path in sorted(directory.rglob("*.jsonl")):
        with path.open() as lines:
            for line in lines:
                if line.strip():
                    walk(json.loads(line))
    return strings


def section_sessions(strings: list[str], directory: Path, out: list[str]) -> dict[str, Any]:
    labels: Counter[str] = Counter()
    listed = []
    for text in strings:
        for found in redactions(text):
            labels[found.label] += 1
            before = text[max(0, found.start - 40) : found.start]
            after = text[found.end : found.end + 40]
            shown = f"{before}[{found.label}: {masked(text[found.start : found.end])}]{after}".replace("\n", "\\n")
            listed.append([found.label, shown])
    out.append(
        f"\n== 4. Real sessions ({directory}): {len(strings)} strings; redactions: {sum(labels.values())} "
        "(target 0, or each justified) =="
    )
    for label, count in labels.most_common():
        out.append(f"  {label}: {count}")
    for label, shown in listed:
        out.append(f"  {label:<22} {shown}")
    return {"strings": len(strings), "redactions": sum(labels.values()), "by_label": dict(labels), "list": listed}


# --- 5. throughput --------------------------------------------------------------------------------------------


def mixed_texts(strings: list[str]) -> list[str]:
    """The sessions' strings with the own corpus's texts put among them, about one secret per 20 KB."""
    samples = own_corpus("tune") + own_corpus("report")
    size = sum(len(s.encode()) for s in strings)
    rng = random.Random(5197)
    wanted = max(1, size // 20_000)
    chosen: list[str] = []
    secrets = 0
    while secrets < wanted:
        sample = rng.choice(samples)
        chosen.append(sample.text)
        secrets += len(sample.secrets)
    texts = list(strings)
    for text in chosen:
        texts.insert(rng.randrange(len(texts) + 1), text)
    return texts


def _timed(work: Any) -> tuple[float, float]:
    """Wall and CPU seconds of ``work()``: the CPU's say what a core does whatever else the machine runs."""
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def section_throughput(strings: list[str], out: list[str]) -> dict[str, Any]:
    texts = mixed_texts(strings) if strings else [s.text for s in own_corpus("tune")] * 20
    megabytes = sum(len(t.encode()) for t in texts) / 1e6
    runs = [_timed(lambda: [redact(text) for text in texts]) for _ in range(5)]
    wall, cpu = (statistics.median(r[i] for r in runs) for i in (0, 1))
    rate = megabytes / cpu
    line = long_tool_output()
    long_runs = [_timed(lambda: redact(line)) for _ in range(3)]
    long_wall, long_cpu = (statistics.median(r[i] for r in long_runs) for i in (0, 1))
    out.append(
        f"\n== 5. Throughput (one process; load average {os.getloadavg()[0]:.1f}) ==\n"
        f"{'mixed session text' if strings else 'the own corpus alone (no sessions)'}: "
        f"{megabytes:.1f} MB in {len(texts)} texts, median of 5: {cpu:.3f} s of CPU = {rate:.1f} MB/s per core "
        f"(target >= {TARGET_MB_PER_S:.0f}; {wall:.3f} s of wall time)\n"
        f"one {len(line) / 1e6:.0f} MB line (minified JSON, base64, key/token/password= words), median of 3: "
        f"{long_cpu:.3f} s of CPU (target <= {TARGET_LONG_LINE_S:.0f} s; {long_wall:.3f} s of wall time)"
    )
    return {
        "megabytes": round(megabytes, 2),
        "texts": len(texts),
        "runs_cpu_s": [round(r[1], 4) for r in runs],
        "runs_wall_s": [round(r[0], 4) for r in runs],
        "mb_per_s": round(rate, 1),
        "long_line_s": round(long_cpu, 4),
        "long_line_wall_s": round(long_wall, 4),
    }


# --- the run --------------------------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--half", choices=HALVES, help="one half only (default: both, labelled)")
    parser.add_argument("--gitleaks", type=Path, default=DEFAULT_GITLEAKS, help="a gitleaks checkout or git directory")
    parser.add_argument("--sessions", type=Path, default=DEFAULT_SESSIONS, help="Claude Code JSONL sessions")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    halves = (args.half,) if args.half else HALVES

    out: list[str] = []
    figures: dict[str, Any] = {}
    summary: list[str] = []

    def flush() -> None:
        print("\n".join(out), flush=True)
        out.clear()

    source = GitleaksSource(args.gitleaks)
    rules = GitleaksRules(source.read("config/gitleaks.toml")) if source.exists() else None

    figures["own"] = {half: section_own(half, rules, out) for half in halves}
    flush()
    for half in halves:
        own = figures["own"][half]
        summary.append(
            f"own corpus, {half}: {own['removed']}/{own['secrets']} removed = {own['percent']:.1f} % "
            f"(target >= {TARGET_REMOVED:.0f} %): {verdict(own['percent'] >= TARGET_REMOVED)}"
        )

    if rules is None:
        out.append(
            f"\n== 2. gitleaks' published true positives: skipped, no gitleaks at {args.gitleaks} ==\n"
            "Get a checkout (git clone https://github.com/gitleaks/gitleaks) and pass --gitleaks PATH."
        )
        summary.append("gitleaks true positives: skipped (no checkout)")
    else:
        figures["gitleaks"] = section_gitleaks(source, rules, halves, out)
        for half in halves:
            measured = figures["gitleaks"]["halves"][half]
            families = measured["by_family"]
            broken = [f for f in NAMED_FAMILIES if f in families and families[f][1] < families[f][0]]
            summary.append(
                f"gitleaks true positives, {half}: {measured['removed']}/{measured['true_positives']} removed = "
                f"{measured['percent']:.1f} % (target >= {TARGET_REMOVED:.0f} %): "
                f"{verdict(measured['percent'] >= TARGET_REMOVED)}; named families whole: "
                f"{verdict(not broken)}{' (not: ' + ', '.join(broken) + ')' if broken else ''}"
            )
    flush()

    figures["bait"] = section_bait(out)
    summary.append(
        f"bait: {figures['bait']['changed']} changed texts (target 0): {verdict(not figures['bait']['changed'])}"
    )
    flush()

    sessions = args.sessions.resolve()
    strings = session_strings(sessions) if sessions.is_dir() else []
    if strings:
        figures["sessions"] = section_sessions(strings, sessions, out)
        count = figures["sessions"]["redactions"]
        summary.append(
            f"real sessions: {count} redactions (target 0, or each justified): "
            f"{'PASS' if not count else 'REVIEW the list in section 4'}"
        )
    else:
        out.append(f"\n== 4. Real sessions: skipped, no JSONL under {sessions} ==")
        summary.append("real sessions: skipped")
    flush()

    figures["throughput"] = section_throughput(strings, out)
    rate, seconds = figures["throughput"]["mb_per_s"], figures["throughput"]["long_line_s"]
    summary.append(f"throughput: {rate:.1f} MB/s (target >= {TARGET_MB_PER_S:.0f}): {verdict(rate >= TARGET_MB_PER_S)}")
    summary.append(
        f"5 MB line: {seconds:.3f} s (target <= {TARGET_LONG_LINE_S:.0f} s): {verdict(seconds <= TARGET_LONG_LINE_S)}"
    )
    flush()

    print("\n== Summary ==")
    print("\n".join(summary))
    figures["summary"] = summary
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
        print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
