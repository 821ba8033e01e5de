"""Validates a SARIF log against the SARIF 2.1.0 JSON schema (draft-04)."""
import json
import sys

import jsonschema

schema = json.load(open(sys.argv[1], encoding="utf-8"))
log = json.load(open(sys.argv[2], encoding="utf-8"))
jsonschema.Draft4Validator.check_schema(schema)
errors = sorted(jsonschema.Draft4Validator(schema).iter_errors(log), key=str)
for error in errors:
    print("schema error at", "/".join(map(str, error.absolute_path)), ":", error.message)
if errors:
    sys.exit(1)
print("valid SARIF 2.1.0:", sys.argv[2])
# Code scanning shows the rule's help next to each alert.
for run in log["runs"]:
    for rule in run["tool"]["driver"]["rules"]:
        assert rule["help"]["text"] and rule["help"]["markdown"], rule
