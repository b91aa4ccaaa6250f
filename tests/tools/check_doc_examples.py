#!/usr/bin/python3
"""Checks that code examples in the docs are the code the tests compile and run.

  check_doc_examples.py SOURCE [SOURCE ...]

Each SOURCE marks the region a doc shows with two lines of their own:

  // [docs/hooks.md example begin]
  ...code...
  // [docs/hooks.md example end]

The lines between the markers (markers excluded) must appear in the named doc, byte for byte, as
the whole body of a ```cpp fenced block. The doc path is relative to the repository root (the
directory two levels above this script). Exits 0 when every region is in its doc; 1, naming the
file and the first differing line, otherwise; 2 for bad usage or a source without a region.
"""
import difflib
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MARKER = re.compile(r"^[ \t]*// \[(?P<doc>[^\]\s]+) example (?P<what>begin|end)\][ \t]*$")


def regions(source_path):
    """Yields (doc, region text, line of the begin marker) for every marked region."""
    with open(source_path, encoding="utf-8", newline="") as f:
        lines = f.read().splitlines(keepends=True)
    open_doc, start, body = None, 0, []
    for number, line in enumerate(lines, 1):
        m = MARKER.match(line.rstrip("\r\n"))
        if not m:
            if open_doc is not None:
                body.append(line)
            continue
        if m.group("what") == "begin":
            if open_doc is not None:
                raise ValueError("%s:%d: a region begins inside the one begun at line %d"
                                 % (source_path, number, start))
            open_doc, start, body = m.group("doc"), number, []
        else:
            if open_doc != m.group("doc"):
                raise ValueError("%s:%d: end marker for %s without its begin marker"
                                 % (source_path, number, m.group("doc")))
            yield open_doc, "".join(body), start
            open_doc = None
    if open_doc is not None:
        raise ValueError("%s:%d: region for %s is never ended" % (source_path, start, open_doc))


def cpp_blocks(doc_text):
    """The bodies of the ```cpp fenced blocks of a Markdown text."""
    return re.findall(r"^```cpp\n(.*?)^```[ \t]*$", doc_text, flags=re.S | re.M)


def check(source_path):
    """Returns a list of problems (empty when the source's regions are all in their docs)."""
    problems = []
    found = list(regions(source_path))
    if not found:
        raise ValueError("%s: no '// [docs/... example begin]' region" % source_path)
    for doc, region, line in found:
        if not region.strip():
            problems.append("%s:%d: the region for %s is empty" % (source_path, line, doc))
            continue
        doc_path = os.path.join(ROOT, doc)
        try:
            with open(doc_path, encoding="utf-8", newline="") as f:
                blocks = cpp_blocks(f.read())
        except OSError as e:
            problems.append("%s:%d: cannot read %s: %s" % (source_path, line, doc, e))
            continue
        if region in blocks:
            continue
        # Report against the most similar cpp block, so the message shows what drifted.
        closest = max(blocks, key=lambda b: difflib.SequenceMatcher(None, b, region).ratio(),
                      default="")
        diff = "".join(difflib.unified_diff(
            closest.splitlines(keepends=True), region.splitlines(keepends=True),
            fromfile=doc + " (closest ```cpp block)",
            tofile="%s (lines after %d)" % (os.path.relpath(source_path, ROOT), line), n=1))
        problems.append("%s:%d: the example is not in %s verbatim as a ```cpp block:\n%s"
                        % (source_path, line, doc, diff or "(no ```cpp block in the doc)\n"))
    return problems


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    problems = []
    for source in argv[1:]:
        try:
            problems += check(source)
        except (OSError, ValueError) as e:
            sys.stderr.write("check_doc_examples: %s\n" % e)
            return 2
    for p in problems:
        sys.stderr.write(p if p.endswith("\n") else p + "\n")
    if not problems:
        print("doc examples in sync: %s" % ", ".join(os.path.relpath(s, ROOT) for s in argv[1:]))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
