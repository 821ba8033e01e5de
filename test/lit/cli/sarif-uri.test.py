"""Checks that every artifactLocation.uri in a SARIF log is a percent-encoded
file:// URI that decodes to the expected path."""
import json
import os
import sys
import urllib.parse

log, source, broken = sys.argv[1], sys.argv[2], sys.argv[3]
doc = json.load(open(log, encoding="utf-8"))
[run] = doc["runs"]


def uris(value):
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "artifactLocation":
                yield item["uri"]
            else:
                yield from uris(item)
    elif isinstance(value, list):
        for item in value:
            yield from uris(item)


def expected(path):
    # Only RFC 3986's unreserved characters and '/' stay as they are.
    return "file://" + urllib.parse.quote(os.path.abspath(path).encode(), safe="/")


found = list(uris(run))
assert found, "no artifactLocation"
for uri in found:
    assert uri.startswith("file:///"), uri
    assert " " not in uri and "#" not in uri and "?" not in uri, uri
    assert all(ord(c) < 128 for c in uri), uri
    decoded = urllib.parse.unquote(urllib.parse.urlparse(uri).path)
    assert os.path.exists(decoded), (uri, decoded)

[result] = run["results"]
location = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
assert location == expected(source), (location, expected(source))
assert "%20%231%20100%25/tr%C3%A1in.cpp" in location, location
change = result["fixes"][0]["artifactChanges"][0]["artifactLocation"]["uri"]
assert change == expected(source), change
[note] = run["invocations"][0]["toolExecutionNotifications"]
uri = note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
assert uri == expected(broken) and uri.endswith("br%C3%B6ken%3F.cpp"), uri
