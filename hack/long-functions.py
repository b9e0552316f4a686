#!/usr/bin/env python3
"""Lists the production functions longer than N lines (default 80), longest first.

    hack/long-functions.py [N] [FOLDER...]

Production: the crates' `src/` (default: manager, assisted-api, assisted-core, provider-api,
bootstrap-provider, controlplane-provider), outside `#[cfg(test)]` modules, `tests/` folders and
`tests.rs` files. A function is counted from its `fn` line to its closing brace, found by
counting braces outside string and character literals and line comments: a reading, not a
parser, good enough to keep the count honest from one change to the next.
"""
import pathlib
import re
import sys

FN = re.compile(r'^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)')
CRATES = [f"{c}/src" for c in ["manager", "assisted-api", "assisted-core", "provider-api",
                                "bootstrap-provider", "controlplane-provider"]]


def code_of(line):
    """The line without string and character literals and without its line comment."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    return line.split('//')[0]


def long_functions(path, limit):
    lines = path.read_text().splitlines()
    found, open_fns = [], []  # open_fns: (name, first line, depth before its body)
    depth, test_depth, cfg_test_pending = 0, None, False
    for number, line in enumerate(lines, 1):
        code = code_of(line)
        if '#[cfg(test)]' in line:
            cfg_test_pending = True
        m = FN.match(line)
        if m and test_depth is None:
            open_fns.append((m.group(6), number, depth))
        for ch in code:
            if ch == '{':
                if cfg_test_pending and test_depth is None:
                    test_depth, cfg_test_pending = depth, False
                depth += 1
            elif ch == '}':
                depth -= 1
                if test_depth is not None and depth == test_depth:
                    test_depth = None
                while open_fns and depth == open_fns[-1][2]:
                    name, first, _ = open_fns.pop()
                    if number - first + 1 > limit and test_depth is None:
                        found.append((number - first + 1, f"{path}:{first}", name))
        stripped = code.strip()
        if open_fns and open_fns[-1][1] == number and '{' not in code and stripped.endswith(';'):
            open_fns.pop()  # a declaration without a body (in a trait)
        if cfg_test_pending and stripped.endswith(';') and '{' not in code:
            cfg_test_pending = False  # `#[cfg(test)] use ...;` or `mod x;`
    return found


def main(args):
    limit = int(args[0]) if args and args[0].isdigit() else 80
    roots = [a for a in args if not a.isdigit()] or CRATES
    found = []
    for root in roots:
        for path in sorted(pathlib.Path(root).rglob('*.rs')):
            if '/tests/' in str(path) or path.name == 'tests.rs':
                continue
            found += long_functions(path, limit)
    for length, where, name in sorted(found, reverse=True):
        print(f"{length:5} {where} {name}")
    print(f"{len(found)} functions over {limit} lines")


if __name__ == '__main__':
    main(sys.argv[1:])
