#!/usr/bin/env python3
"""Prepare one upstream CRD for kopium (helper of hack/generate-external-types.sh).

Reads a CRD YAML document on stdin and writes it as JSON on stdout, keeping only
the requested version and applying the schema clean-ups kopium needs:

  * `enum: [true, false]` on boolean properties (BMO's firmware settings) is dropped;
    it allows every boolean anyway, and kopium 0.24 rejects non-string/int enums.

Usage: crd-for-kopium.py <version> < crd.yaml > crd.json
"""

import json
import sys

import yaml


def clean(node):
    if isinstance(node, dict):
        if node.get("type") == "boolean" and "enum" in node:
            del node["enum"]
        for value in node.values():
            clean(value)
    elif isinstance(node, list):
        for value in node:
            clean(value)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: crd-for-kopium.py <version> < crd.yaml > crd.json")
    version = sys.argv[1]
    docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
    if len(docs) != 1 or docs[0].get("kind") != "CustomResourceDefinition":
        sys.exit("crd-for-kopium.py: expected exactly one CustomResourceDefinition on stdin")
    crd = docs[0]
    versions = [v for v in crd["spec"]["versions"] if v["name"] == version]
    if not versions:
        served = ", ".join(v["name"] for v in crd["spec"]["versions"])
        sys.exit(f"crd-for-kopium.py: {crd['metadata']['name']} has no version {version} (has: {served})")
    crd["spec"]["versions"] = versions
    clean(crd)
    json.dump(crd, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
