#!/usr/bin/env python3
"""Generates tests/data/specs/pep440_vectors.jsonl from the `packaging` library.

`packaging` is the reference for PEP 440 behaviour: where envkit and it
disagree, envkit is wrong. The inputs below are envkit's own; the expected
answers are whatever `packaging` says. Each output line is one request for
`envkit debug specs` plus the expected answer:

    {"request": {...}, "expect": {"ok": true, "value": ...}}   (or {"ok": false})

Rerun after changing the inputs or upgrading packaging:

    python3 -m venv /tmp/pv && /tmp/pv/bin/pip install packaging
    /tmp/pv/bin/python scripts/gen-spec-vectors.py > tests/data/specs/pep440_vectors.jsonl
"""
import itertools
import json
import sys

import packaging
from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.utils import canonicalize_version
from packaging.version import InvalidVersion, Version

# Spellings to normalize, valid and invalid (numbers stay within 64 bits: envkit's limit).
NORMALIZE = [
    "1.0", "1", "1.0.0", "01.02.03", "v1.0", "V1.0", " 1.0 ", "\t1.0\n", "1.0RC1", "1.0rc1",
    "1.0c1", "1.0C1", "1.0pre1", "1.0preview1", "1.0-rc.1", "1.0_rc_1", "1.0.rc1", "1.0a", "1.0A",
    "1.0alpha1", "1.0ALPHA", "1.0beta2", "1.0b", "1.0-b-2", "1.0-1", "1.0-r1", "1.0r", "1.0rev1",
    "1.0-rev-3", "1.0.post", "1.0post", "1.0-post-1", "1.0_post_1", "1.0.POST7", "1.0.dev",
    "1.0dev", "1.0-dev1", "1.0_dev_2", "1.0DEV1", "1.0.dev01", "1!1.0", "0!1.0", "10!2.0b3",
    "1.0+abc", "1.0+ABC.5", "1.0+abc-007", "1.0+abc_def", "1.0+1.2.3", "1.0+0", "1.0+cu121",
    "2.1.2+cu118", "1.0a1.post2.dev3+local.1", "1.0a.1", "1.0a_post1", "1.0a.dev1",
    "1.0-1.dev2", "1.0.post.dev", "1.0a.", "1.0.post.", "450.80.02", "8.9.7.29", "12.4.127",
    "550.54.15", "535.129.03", "9.0.176", "2024.01.01", "20240101123456789", "0", "0.0",
    "1.0.", "1..0", "", "   ", "abc", "1.0+", "1.0+abc.", "1.0+abc..d", "1.0+ab$", "1.0-",
    "1.0a1a2", "1.0.post1.post2", "1_0", "1.0 a1", "1.0 .post1", ".1", "1.", "v", "vv1.0",
    "1.0-alpha", "1!", "!1.0", "1!2!3", "1.0.dev1.dev2", "1.0rc1.post1", "1.0.0.0.0.0.0.1",
    "1.0+local-with-dashes", "1.0+UPPER", "1.0_1", "1.0-a1", "1.0~rc1", "1.0-foo",
    "1.0.x", "1.0.*", "==1.0", "1.0a1-1", "1.0.post-1", "1.0-post",
]

# Versions to order, compared pairwise (PEP 440's own examples plus GPU-world ones).
ORDER = [
    "1.0.dev456", "1.0a1", "1.0a2.dev456", "1.0a12.dev456", "1.0a12", "1.0b1.dev456", "1.0b2",
    "1.0b2.post345.dev456", "1.0b2.post345", "1.0rc1.dev456", "1.0rc1", "1.0", "1.0+abc.5",
    "1.0+abc.7", "1.0+5", "1.0+abc", "1.0.post456.dev34", "1.0.post456", "1.0.15", "1.1.dev1",
    "1!0.1", "1.0.0", "1", "0.9", "450.80.02", "450.80.2", "2.0+cu121", "2.0+cu118",
    "8.9.7.29", "8.9.7", "12.4.127", "12.4",
]

SPECS = [
    "", ">=1.0", ">1.0", "<1.0", "<=1.0", "==1.0", "!=1.0", "~=1.0", "~=1.4.5", "~=2.2.post3",
    "~=1.4.5a4", "==1.0.*", "!=1.0.*", "==1.*", "==1.0+abc", "!=1.0+abc", "===1.0",
    "===foobar", ">=1.0rc1", ">1.0.post1", ">1.0.dev1", "<1.0rc1", "<=1.0a1", ">1.0a1",
    ">=1.0,<2.0", ">=1.0,!=1.1", ">=2.1,<2.2", ">= 1.0 , < 2.0", "==v1.0", ">=1!1.0", "<0",
    "<1.0.post1", "==1.0.0", "!=1.0.0", ">=8.9,<9", "==12.4.*", ">=525.60.13", "==2.1.*",
    "~=0.9", ">1.0,<1.0.post2", "==1.0,!=1.0", "<=1.0+abc", ">=1.0+abc", "~=1", "==1.0.*.*",
    "=1.0", "1.0", "<<1.0", ">=1.0.*", "==1.0a1.*", "~=1.0.*", "== 1.0.*", "==1.0 .*",
    ">=", "===", "=== 1.0", "===1.0 x", ">=1.0;", "~=1.0+abc", ">=1.0,", ",", ">=1.0,,<2",
    "!=1.0.*,>=0.9", ">=1.0,>=1.0.0", "==1.0,==1.0.0", ">=1.0a1,<1.0", "<2,>1", "==1.0-1",
]

CONTAINS_VERSIONS = [
    "0.9", "1.0.dev0", "1.0a1", "1.0a2", "1.0rc1", "1.0", "1.0.0", "1.0+abc", "1.0+xyz",
    "1.0.post1", "1.0.post1.dev0", "1.0.post2", "1.0.post1+abc", "1.0.1", "1.1", "1.1a1",
    "1.4.5", "1.4.6", "1.5.0", "1.5a1", "2.0", "2.0.dev1", "2.2.post3", "2.2.post4", "2.3",
    "3.0", "1!1.0", "1!0.5", "8.9.7.29", "9.0.0", "12.4.127", "12.5.0", "525.60.13",
    "550.54.15", "foobar", "FOOBAR", "not a version", "2.1.2+cu121", "2.1.0", "0.0.dev0",
]

FILTERS = [
    (">=1.0", ["0.9", "1.0", "1.1a1", "1.2"]),
    (">=1.0", ["0.9", "1.1a1", "1.2b1"]),
    (">=1.0rc1", ["0.9", "1.0rc1", "1.0", "1.1a1"]),
    ("", ["1.0", "2.0a1"]),
    ("", ["2.0a1", "2.0b1"]),
    ("==2.1.*", ["2.0.1", "2.1.0", "2.1.2", "2.2.0", "2.1.3rc1"]),
    ("~=8.9", ["8.8.1", "8.9.7.29", "9.0.0", "9.1.0.70"]),
    ("<3", ["2.9rc1", "3.0a1", "2.8"]),
    ("!=2.0", ["2.0", "2.0rc1", "2.1.dev1"]),
]


def packaging_normalized_spec(text):
    """Sorted, de-duplicated clauses with each version normalized (envkit's parse_spec)."""
    clauses = []
    for s in SpecifierSet(text):
        op, v = s.operator, s.version
        if op == "===":
            clauses.append((f"==={v}", ("===", v)))
        elif v.endswith(".*"):
            norm = f"{op}{Version(v[:-2])}.*"
            clauses.append((norm, (op, norm)))
        else:
            norm = f"{op}{Version(v)}"
            key = canonicalize_version(Version(v), strip_trailing_zero=(op != "~="))
            clauses.append((norm, (op, key)))
    clauses.sort(key=lambda c: c[0])
    seen, out = set(), []
    for norm, key in clauses:
        if key in seen:
            continue
        seen.add(key)
        out.append(norm)
    return ",".join(out)


def emit(request, expect):
    print(json.dumps({"request": request, "expect": expect}, sort_keys=True))


def main():
    print(json.dumps({"generator": "scripts/gen-spec-vectors.py",
                      "packaging": packaging.__version__,
                      "python": sys.version.split()[0]}))
    for text in NORMALIZE:
        try:
            emit({"op": "normalize", "version": text}, {"ok": True, "value": str(Version(text))})
        except InvalidVersion:
            emit({"op": "normalize", "version": text}, {"ok": False})
    for a, b in itertools.product(ORDER, repeat=2):
        va, vb = Version(a), Version(b)
        emit({"op": "compare", "a": a, "b": b},
             {"ok": True, "value": -1 if va < vb else (1 if va > vb else 0)})
    for text in SPECS:
        try:
            emit({"op": "parse_spec", "spec": text},
                 {"ok": True, "value": packaging_normalized_spec(text)})
        except InvalidSpecifier:
            emit({"op": "parse_spec", "spec": text}, {"ok": False})
            continue
        spec_set = SpecifierSet(text)
        for version in CONTAINS_VERSIONS:
            for pre in (None, True, False):
                emit({"op": "contains", "spec": text, "version": version, "prereleases": pre},
                     {"ok": True, "value": spec_set.contains(version, prereleases=pre)})
    for text, versions in FILTERS:
        for pre in (None, True, False):
            emit({"op": "filter", "spec": text, "versions": versions, "prereleases": pre},
                 {"ok": True, "value": list(SpecifierSet(text).filter(versions, prereleases=pre))})


if __name__ == "__main__":
    main()
