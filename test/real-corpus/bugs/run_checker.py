#!/usr/bin/env python3
"""Checks the real-bug corpus with ddpguard and measures recall at the
verdicts' lines, each buggy file alone and with its project folder.

A verdict is found when a finding of the verdict's check is at the
verdict's file and line. A finding at one of the verdict's call_sites (a
call that runs the verdict's line, named when the verdict was written) and a
finding of the same check elsewhere in that file are counted apart, as are
runs with files the checker could not parse and runs that crash.

    run_checker.py --ddpguard build/bin/ddpguard            # every ready entry
    run_checker.py --ddpguard ... --json out.json --markdown BASELINE-table.md ID ...

Entries are materialized first (materialize.py); skipped ones are listed
with the reason.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import materialize

TORCH_VERSION = "2.11.0"
TIMEOUT_S = 600


def run_ddpguard(ddpguard, target, cwd):
    """Findings of one run from cwd (the snapshot's root, as a user runs it in
    their clone), its exit status and its time."""
    started = time.monotonic()
    try:
        done = subprocess.run([ddpguard, f"--torch-version={TORCH_VERSION}", "--format=json", str(target)],
                              capture_output=True, text=True, timeout=TIMEOUT_S, cwd=cwd)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "findings": [], "seconds": TIMEOUT_S}
    seconds = round(time.monotonic() - started, 2)
    try:
        document = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"status": f"no report (exit {done.returncode})", "findings": [],
                "stderr_tail": done.stderr[-400:], "seconds": seconds}
    # Exit status 0 is clean, 1 findings, 2 errors (files it could not read or
    # parse, listed in the report; the rest was checked). No report is a crash.
    errors = document.get("errors", [])
    status = "ok" if done.returncode in (0, 1) else (
        "errors" if done.returncode == 2 and errors else f"exit {done.returncode}")
    return {"status": status, "findings": document.get("findings", []),
            "errors": errors, "seconds": seconds}


def same_file(finding_file, path):
    return os.path.realpath(finding_file) == os.path.realpath(path)


def score(verdict, base, run):
    """'found'; 'call site' (at a call, named by the verdict's call_sites,
    that runs the verdict's line); 'elsewhere' (same check, same file, another
    line); or 'missed'."""
    def at(file, line):
        return any(finding.get("check") == verdict["check"] and finding["line"] == line
                   and same_file(finding["file"], base / file) for finding in run["findings"])
    if at(verdict["file"], verdict["line"]):
        return "found"
    if any(at(site["file"], site["line"]) for site in verdict.get("call_sites", [])):
        return "call site"
    in_file = [finding for finding in run["findings"] if finding.get("check") == verdict["check"]
               and same_file(finding["file"], base / verdict["file"])]
    return "elsewhere" if in_file else "missed"


def check_entry(entry, status, ddpguard):
    base = Path(status["path"])
    alone = {file: run_ddpguard(ddpguard, base / file, base)
             for file in sorted({verdict["file"] for verdict in entry["verdicts"]})}
    folder = run_ddpguard(ddpguard, Path(status["root"]), base)
    verdicts = []
    for verdict in entry["verdicts"]:
        verdicts.append({**verdict, "alone": score(verdict, base, alone[verdict["file"]]),
                         "folder": score(verdict, base, folder)})
    return {"id": entry["id"], "verdicts": verdicts,
            "runs": {"alone": {file: {k: v for k, v in run.items() if k != "findings"}
                               | {"findings": len(run["findings"])} for file, run in alone.items()},
                     "folder": {k: v for k, v in folder.items() if k != "findings"}
                     | {"findings": len(folder["findings"])}},
            "findings_in_folder": [{"file": os.path.relpath(f["file"], base), "line": f["line"],
                                    "check": f["check"]} for f in folder["findings"]]}


def markdown(entries, results, skipped):
    """One row per verdict: found alone, found in the folder, what it needs."""
    by_id = {entry["id"]: entry for entry in entries}
    rows = ["| entry | verdict (file:line, check) | alone | folder | needs (when missed) |",
            "| --- | --- | --- | --- | --- |"]
    for result in results:
        needs = ", ".join(by_id[result["id"]]["needs"]) or "-"
        for verdict in result["verdicts"]:
            missed = verdict["alone"] != "found"
            rows.append(f"| {result['id']} | {verdict['file']}:{verdict['line']} {verdict['check']} "
                        f"| {verdict['alone']} | {verdict['folder']} | {needs if missed else '-'} |")
    for status in skipped:
        rows.append(f"| {status['id']} | skipped: {status['reason']} | | | |")
    return "\n".join(rows) + "\n"


def totals(results):
    verdicts = [verdict for result in results for verdict in result["verdicts"]]
    def count(where):
        return sum(verdict[where] == "found" for verdict in verdicts)
    def entries_found(where):
        return sum(all(v[where] == "found" for v in r["verdicts"]) for r in results)
    def any_found(where):
        return sum(any(v[where] == "found" for v in r["verdicts"]) for r in results)
    def at_call_site(where):
        return sum(verdict[where] == "call site" for verdict in verdicts)
    runs = [run for r in results for run in [*r["runs"]["alone"].values(), r["runs"]["folder"]]]
    return {"entries": len(results), "verdicts": len(verdicts),
            "verdicts_found_alone": count("alone"), "verdicts_found_folder": count("folder"),
            "verdicts_at_call_site_alone": at_call_site("alone"),
            "verdicts_at_call_site_folder": at_call_site("folder"),
            "entries_all_found_alone": entries_found("alone"), "entries_all_found_folder": entries_found("folder"),
            "entries_any_found_alone": any_found("alone"), "entries_any_found_folder": any_found("folder"),
            "runs": len(runs), "runs_with_errors": sum(run["status"] == "errors" for run in runs),
            "runs_crashed": sum(run["status"] not in ("ok", "errors") for run in runs),
            "seconds": round(sum(run["seconds"] for run in runs), 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ddpguard", required=True)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("ids", nargs="*")
    args = parser.parse_args()
    args.ddpguard = str(Path(args.ddpguard).resolve())
    entries = [entry for entry in materialize.load_manifest() if not args.ids or entry["id"] in args.ids]
    statuses = {entry["id"]: materialize.materialize(entry, materialize.DEFAULT_CACHE,
                                                     materialize.DEFAULT_MIRRORS, fetch_raw=False)
                for entry in entries}
    skipped = [status for status in statuses.values() if status["status"] != "ready"]
    results = []
    for entry in entries:
        if statuses[entry["id"]]["status"] == "ready":
            results.append(check_entry(entry, statuses[entry["id"]], args.ddpguard))
            marks = " ".join(f"{v['alone']}/{v['folder']}" for v in results[-1]["verdicts"])
            print(f"{entry['id']}: {marks}", flush=True)
    summary = totals(results)
    print(json.dumps(summary, indent=2))
    for status in skipped:
        print(f"skipped {status['id']}: {status['reason']}")
    if args.json:
        args.json.write_text(json.dumps({"torch": TORCH_VERSION, "totals": summary, "results": results,
                                         "skipped": skipped}, indent=2) + "\n")
    if args.markdown:
        args.markdown.write_text(markdown(entries, results, skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
