"""The table of checks as --list-checks writes it is SARIF's rules, each
doc page exists, and a C++ finding's fix and note kinds are JSON fields."""
import json
import os
import sys

checks_json, sarif, report, root = sys.argv[1:]
checks = json.load(open(checks_json))
names = [c["name"] for c in checks]
assert len(names) == len(set(names)) >= 4, names
for check in checks:
    assert check["fixAvailability"] in ("always", "sometimes", "never"), check
    # Ruff's applicability: only of a fix the check can offer.
    assert check.get("fixApplicability", "none") in ("safe", "unsafe", "none"), check
    assert ("fixApplicability" not in check) == (check["fixAvailability"] == "never"), check
    assert os.path.isfile(os.path.join(root, check["doc"])), check

[run] = json.load(open(sarif))["runs"]
rules = run["tool"]["driver"]["rules"]
assert [r["id"] for r in rules] == names, (rules, names)
for rule, check in zip(rules, checks):
    assert rule["shortDescription"]["text"] == check["summary"], rule
    assert rule["properties"]["fixAvailability"] == check["fixAvailability"], rule
    assert rule["properties"].get("fixApplicability") == check.get("fixApplicability"), rule

[finding] = json.load(open(report))["findings"]
assert finding["fixApplicability"] == "unsafe", finding
assert finding["fixTitle"] == "Set 'broadcast_buffers' to false at the construction", finding
kinds = [n["kind"] for n in finding["notes"]]
assert kinds.count("fix-effect") == 1 and kinds.count("judged-by") == 1, kinds
effect = finding["notes"][kinds.index("fix-effect")]
assert effect["message"].startswith("the fix sets 'broadcast_buffers' to false"), effect
