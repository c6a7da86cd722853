#!/usr/bin/env python3
# Keeps the pointers in docs and file headers true: `make check-docs` (and `make test`,
# before ctest; ctest -R check_docs). Usage: scripts/check_docs.py [BUILD_DIR]
"""Fails (exit 1, listing every offending file) when

- a C++, Python or shell source file does not open with a header comment of at least
  two lines that says how to run or test it (a test, `ctest`, `make`, `Run`, `Usage`...);
- a doc (every tracked *.md: README.md, docs/*.md, bench/*/README.md...) or a file header
  (the opening comment of a source file; every comment of CMakeLists.txt, *.cmake and the
  Makefile) names
  * a ctest test that is not registered: `ctest -R PATTERN` / `scripts/test.sh build -R
    PATTERN` must match a test of `ctest -N` in BUILD_DIR, `ctest -L LABEL` a label, a
    bare `something_test` must be a test name, and `build/bin/NAME` a built program;
  * a make target the Makefile does not have (`make TARGET` inside backticks or a code
    block);
  * a repository file that does not exist: paths under a top-level folder of the
    repository (`worker/harness/checker.h`, `docs/*.md`, `op_spec.{h,cpp}` braces and
    globs expand), markdown links, paths that climb out of the repository (`../x`), and
    bare source file names (`checker.cpp`) that no tracked file carries.

Placeholders are not checked: anything with `<...>`, `$`, or a segment of one repeated
capital (`NNN_name.sql`). Test fixtures written as their authors would write them need no
header: KernelBench problems (tests/tools/problems/) and Triton candidates
(tests/worker/harness/triton/).
"""
import fnmatch
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_EXTS = (".cpp", ".h", ".py", ".sh")
HEADER_EXEMPT = ("tests/tools/problems/", "tests/worker/harness/triton/")
# Words a header uses to say how to run or test the file.
HOW_TO = re.compile(r"ctest|[Tt]est|[Rr]un|[Uu]sage|\bmake\b|[Bb]ench")
# Bare file names with these extensions must be carried by some tracked file.
CODE_EXT = r"(?:cpp|h|py|sh|cmake|md)"


def tracked_files():
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        return sorted(path for path in out.split("\n") if path and os.path.exists(os.path.join(ROOT, path)))
    except (OSError, subprocess.CalledProcessError):
        found = []
        for folder, dirs, files in os.walk(ROOT):
            dirs[:] = [d for d in dirs if not d.startswith(".") and not d.startswith("build")]
            found += [os.path.relpath(os.path.join(folder, name), ROOT) for name in files]
        return sorted(found)


def registered_tests(build_dir):
    """Test names and labels from ctest in the configured build folder."""
    if not os.path.exists(os.path.join(build_dir, "CTestTestfile.cmake")):
        sys.exit("check-docs: %s is not a configured build folder (run `make build` first)" % build_dir)
    listing = subprocess.run(["ctest", "-N"], cwd=build_dir, capture_output=True, text=True).stdout
    tests = re.findall(r"Test\s+#\d+: (\S+)", listing)
    # A binary registered in shards (kforge_add_test SHARDS: name.1ofN ...) is named by its base name too.
    tests += sorted({shard.group(1) for shard in map(re.compile(r"^(.+)\.\d+of\d+$").match, tests) if shard})
    labels_out = subprocess.run(["ctest", "--print-labels"], cwd=build_dir, capture_output=True, text=True).stdout
    labels = [line.strip() for line in labels_out.split("\n")[1:] if line.strip()]
    return tests, labels


def make_targets():
    targets = set()
    with open(os.path.join(ROOT, "Makefile")) as makefile:
        for line in makefile:
            match = re.match(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", line)
            if match and not match.group(1).startswith("."):
                targets.add(match.group(1))
    return targets


# ----------------------------------------------------------------- headers

def opening_comment(path, text):
    """The opening comment block of a source file, as (first line number, lines)."""
    lines = text.split("\n")
    idx = 0
    if lines and lines[0].startswith("#!"):
        idx = 1
    if path.endswith(".py") and idx < len(lines) and re.match(r"#.*coding[:=]", lines[idx]):
        idx += 1
    start = idx
    if path.endswith(".py") and idx < len(lines) and lines[idx].lstrip()[:3] in ('"""', "'''"):
        quote = lines[idx].lstrip()[:3]
        block = [lines[idx]]
        if lines[idx].count(quote) < 2:
            for line in lines[idx + 1:]:
                block.append(line)
                if quote in line:
                    break
        return start + 1, block
    prefix = "//" if path.endswith((".cpp", ".h")) else "#"
    block = []
    while idx < len(lines) and lines[idx].startswith(prefix):
        block.append(lines[idx])
        idx += 1
    return start + 1, block


def comment_lines(path, text):
    """The documentation of a file: (line number, text) pairs to search for references."""
    lines = text.split("\n")
    if path.endswith(".md"):
        return list(enumerate(lines, 1))
    if os.path.basename(path) in ("CMakeLists.txt", "Makefile") or path.endswith(".cmake"):
        found = []
        for number, line in enumerate(lines, 1):
            if "#" in line:
                found.append((number, line[line.index("#"):]))
        return found
    first, block = opening_comment(path, text)
    return [(first + offset, line) for offset, line in enumerate(block)]


def header_problems(path, text):
    if not path.endswith(SOURCE_EXTS) or path.startswith(HEADER_EXEMPT):
        return []
    _, block = opening_comment(path, text)
    words = " ".join(block)
    if len(block) < 2 and not (path.endswith(".py") and block and len(words) > 80):
        return ["1: no opening header of two or more lines (what the file is; how to run or test it)"]
    if not HOW_TO.search(words):
        return ["1: the header does not say how to run or test the file (name a test, `ctest -R ...`, a command)"]
    return []


# -------------------------------------------------------------- references

def expand_braces(token):
    match = re.search(r"\{([^{}]*)\}", token)
    if not match:
        return [token]
    out = []
    for choice in match.group(1).split(","):
        out += expand_braces(token[:match.start()] + choice + token[match.end():])
    return out


def is_placeholder(token):
    if "<" in token or ">" in token or "$" in token or "..." in token:
        return True
    return any(re.fullmatch(r"([A-Z])\1+", part) for part in re.split(r"[/._-]", token) if part)


class Checker:
    def __init__(self, build_dir):
        self.files = tracked_files()
        self.file_set = set(self.files)
        self.dirs = {os.path.dirname(path) for path in self.files}
        for path in list(self.dirs):
            while path:
                path = os.path.dirname(path)
                self.dirs.add(path)
        self.basenames = {os.path.basename(path) for path in self.files}
        self.top = {path.split("/")[0] for path in self.files if "/" in path}
        self.tests, self.labels = registered_tests(build_dir)
        self.test_prefixes = {test.split("_")[0] for test in self.tests}
        self.targets = make_targets()
        bin_dir = os.path.join(build_dir, "bin")
        self.binaries = set(os.listdir(bin_dir)) if os.path.isdir(bin_dir) else None
        self.problems = {}

    def fail(self, path, message):
        self.problems.setdefault(path, []).append(message)

    def exists(self, repo_path):
        repo_path = os.path.normpath(repo_path).rstrip("/")
        if any(ch in repo_path for ch in "*?["):
            return any(fnmatch.fnmatch(path, repo_path) or fnmatch.fnmatch(path, repo_path + "/*")
                       for path in self.files)
        if repo_path in self.file_set or repo_path in self.dirs:
            return True
        # A module named without its extension ("api/router" for router.h and router.cpp).
        return "." not in os.path.basename(repo_path) and any(path.startswith(repo_path + ".") for path in self.files)

    def check_tests(self, path, number, line):
        for match in re.finditer(r"(?:ctest|test\.sh)\b[^`\n]*?\s-R\s+('([^']*)'|\"([^\"]*)\"|([^\s`'\")]+))", line):
            pattern = match.group(2) or match.group(3) or (match.group(4) or "").rstrip(".,;:")
            if not pattern or is_placeholder(pattern):
                continue
            try:
                regex = re.compile(pattern)
            except re.error:
                self.fail(path, "%d: `ctest -R %s` is not a valid pattern" % (number, pattern))
                continue
            if not any(regex.search(test) for test in self.tests):
                self.fail(path, "%d: `ctest -R %s` matches no registered test" % (number, pattern))
        for match in re.finditer(r"ctest\b[^`\n]*?\s-L\s+([A-Za-z0-9_<>-]+)", line):
            label = match.group(1)
            if not is_placeholder(label) and label not in self.labels:
                self.fail(path, "%d: `ctest -L %s`: no test has that label" % (number, label))
        for match in re.finditer(r"(?<![\w/.-])([a-z][a-z0-9]*(?:_[a-z0-9]+)*_test)(?![\w.])", line):
            # Only names shaped like tests: a folder prefix that registered tests use.
            if match.group(1).split("_")[0] not in self.test_prefixes:
                continue
            if match.group(1) not in self.tests:
                self.fail(path, "%d: `%s` is not a registered test" % (number, match.group(1)))

    def check_make(self, path, number, code):
        for match in re.finditer(r"(?<![\w-])make\s+((?:-\S+\s+|\w+=\S*\s+)*)([a-z][a-z0-9-]*)", code):
            if match.group(2) not in self.targets:
                self.fail(path, "%d: `make %s`: the Makefile has no such target" % (number, match.group(2)))

    def check_paths(self, path, number, line):
        folder = os.path.dirname(path)
        # Built programs: build/bin/NAME must be something the build makes.
        for match in re.finditer(r"(?<![\w/])build/bin/([A-Za-z0-9_.-]+)", line):
            if self.binaries is not None and match.group(1) not in self.binaries:
                self.fail(path, "%d: `build/bin/%s`: the build makes no such program" % (number, match.group(1)))
        # Markdown links: relative to the document.
        for match in re.finditer(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", line):
            target = match.group(1)
            if re.match(r"[a-z]+:", target) or is_placeholder(target):
                continue
            self.check_one(path, number, os.path.normpath(os.path.join(folder, target)), target)
        token_re = r"(?<![\w/:.\-~])((?:\.\./)+|\./)?([A-Za-z0-9_.\-{},*]+(?:/[A-Za-z0-9_.\-{},*]*)+)"
        for match in re.finditer(token_re, line):
            climb, token = match.group(1) or "", match.group(2).rstrip(".,;:")
            if is_placeholder(token) or line[match.end():match.end() + 1] in "<$":
                continue
            if climb == "./" and token.split("/")[0] not in self.top:
                continue
            if climb:
                self.check_one(path, number, os.path.normpath(os.path.join(folder, climb + token)), climb + token)
            elif token.split("/")[0] in self.top:
                # Relative to the repository, or (docs) to the document's own folder.
                if folder and self.exists(os.path.join(folder, token)):
                    continue
                self.check_one(path, number, token, token)
        for match in re.finditer(r"(?<![\w/.\-{},*<>])([A-Za-z0-9_\-{},*]+\." + CODE_EXT + r"|[A-Za-z0-9_\-]+\.\{[a-z,]+\})(?![\w/])",
                                 line):
            for name in expand_braces(match.group(1)):
                if is_placeholder(name) or "*" in name:
                    continue
                if name not in self.basenames:
                    self.fail(path, "%d: `%s`: no file of that name in the repository" % (number, name))

    def check_one(self, path, number, repo_path, shown):
        if repo_path.startswith(".."):
            self.fail(path, "%d: `%s` points outside the repository" % (number, shown))
            return
        for candidate in expand_braces(repo_path):
            if not self.exists(candidate):
                self.fail(path, "%d: `%s`: no such file or folder in the repository" % (number, shown))
                return

    def check_file(self, path):
        try:
            with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
                text = handle.read()
        except (UnicodeDecodeError, OSError):
            return
        for message in header_problems(path, text):
            self.fail(path, message)
        in_code = False
        for number, line in comment_lines(path, text):
            if path.endswith(".md") and line.lstrip().startswith("```"):
                in_code = not in_code
                continue
            self.check_tests(path, number, line)
            spans = " ".join(re.findall(r"`([^`]+)`", line)) + " " + " ".join(re.findall(r"'(make [^']+)'", line))
            self.check_make(path, number, line if in_code else spans)
            self.check_paths(path, number, line)


def main():
    build_dir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
    checker = Checker(build_dir)
    documented = [path for path in checker.files
                  if path.endswith(".md") or path.endswith(SOURCE_EXTS) or path.endswith(".cmake")
                  or os.path.basename(path) in ("CMakeLists.txt", "Makefile")]
    for path in documented:
        checker.check_file(path)
    if not checker.problems:
        print("check-docs: %d files, every header present, every test, target and path they name exists"
              % len(documented))
        return 0
    count = sum(len(messages) for messages in checker.problems.values())
    for path in sorted(checker.problems):
        for message in checker.problems[path]:
            print("%s:%s" % (path, message))
    print("\ncheck-docs: %d problems in %d files:" % (count, len(checker.problems)))
    for path in sorted(checker.problems):
        print("  " + path)
    return 1


if __name__ == "__main__":
    sys.exit(main())
