"""The docs hold together: every relative link in README.md and docs/ reaches a file (and a heading), every
``contract §N`` citation names a section of docs/contract.md, every docs page (and quoted section) the code
names exists, no citation names the shared SPEC file, which is not in the repository, and docs/configuration.md
documents exactly the variables the settings read.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "docs" / "contract.md"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Where citations live: source, tests, benches, scripts, templates, the extension, the docs.
CITING_DIRS = ("threadmem", "api", "console", "tests", "bench", "scripts", "templates", "static", "pg", "docs")
CITING_SUFFIXES = {".py", ".md", ".html", ".txt", ".sh", ".c", ".sql", ".toml", ".css", ".js", ""}
SKIPPED_PARTS = {"fixtures", "node_modules", "__pycache__"}

LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
CITATION = re.compile(r"contract (§\d+(?:(?:, | and )§\d+)*)")
# A page named in a comment or docstring, and a section of it: docs/search.md, "Under load".
PAGE_MENTION = re.compile(r"\bdocs/([\w-]+\.md)(?:,? \(?\"([^\"]+)\")?")
OLD_CITATION = "SPEC " + "§"  # split so that this file does not cite the old form itself
SETTINGS = ROOT / "config" / "settings.py"
CONFIGURATION = ROOT / "docs" / "configuration.md"
# A variable read from the environment: by config/env.py's readers in the settings, or os.environ in the code.
ENV_READ = re.compile(r"\benv_\w+\(\s*\"([A-Z][A-Z0-9_]*)\"|os\.environ(?:\.get\(|\[)\s*\"([A-Z][A-Z0-9_]*)\"")
# Where the server reads its environment (the clients', the benches' and the tests' own variables are theirs).
SERVER_DIRS = ("config", "threadmem", "api", "console", "cli", "mcp_server", "oauth")
THREADMEM_NAME = re.compile(r"\bTHREADMEM_[A-Z0-9_]*[A-Z0-9]\b")


def prose_lines(page: Path) -> list[str]:
    """A page's lines outside fenced code blocks (a link or heading inside one is an example, not the page's)."""
    lines, fenced = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: link text kept, lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in prose_lines(page):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def contract_sections() -> set[int]:
    return {int(m.group(1)) for line in prose_lines(CONTRACT) if (m := re.match(r"^## (\d+)\. ", line))}


def citing_files() -> list[Path]:
    files = [ROOT / "README.md"]
    for folder in CITING_DIRS:
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in CITING_SUFFIXES and not SKIPPED_PARTS & set(path.parts):
                files.append(path)
    return files


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for line in prose_lines(page):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            path_part, _, anchor = target.partition("#")
            linked = (page.parent / path_part).resolve() if path_part else page
            if not linked.exists():
                broken.append(f"{target}: no file {linked}")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(f"{target}: no heading with anchor #{anchor} in {linked.name}")
    assert not broken, "\n".join(broken)


def test_the_contract_numbers_its_sections_in_order():
    numbers = [int(m.group(1)) for line in prose_lines(CONTRACT) if (m := re.match(r"^## (\d+)\. ", line))]
    assert numbers == list(range(1, 13))


def test_every_contract_citation_names_a_section():
    sections = contract_sections()
    cited, unknown = 0, []
    for path in citing_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in CITATION.finditer(text):
            for number in re.findall(r"§(\d+)", match.group(1)):
                cited += 1
                if int(number) not in sections:
                    unknown.append(f"{path.relative_to(ROOT)}: contract §{number}")
    assert not unknown, "\n".join(unknown)
    assert cited > 50  # the code does cite it: a pattern that matched nothing would pass vacuously


def test_every_page_and_section_the_code_names_exists():
    headings = {
        page.name: [line.lstrip("#").strip().lower() for line in prose_lines(page) if HEADING.match(line)]
        for page in PAGES
    }
    missing, named = [], 0
    for path in citing_files():
        for match in PAGE_MENTION.finditer(path.read_text(encoding="utf-8", errors="replace")):
            page, section = match.groups()
            named += 1
            if page not in headings:
                missing.append(f"{path.relative_to(ROOT)}: docs/{page}")
            elif section and not any(h.startswith(section.lower()) for h in headings[page]):
                missing.append(f'{path.relative_to(ROOT)}: docs/{page}, "{section}"')
    assert not missing, "\n".join(missing)
    assert named > 20


def test_no_citation_of_a_file_outside_the_repository():
    stale = [
        str(path.relative_to(ROOT))
        for path in citing_files()
        if OLD_CITATION in path.read_text(encoding="utf-8", errors="replace")
    ]
    assert not stale, f"cite docs/contract.md as 'contract §N' instead: {stale}"


def read_from_environment() -> set[str]:
    names = set()
    for folder in SERVER_DIRS:
        for path in (ROOT / folder).rglob("*.py"):
            for match in ENV_READ.finditer(path.read_text(encoding="utf-8")):
                names.add(match.group(1) or match.group(2))
    return names - {"DJANGO_SETTINGS_MODULE"}


def documented() -> tuple[set[str], str]:
    """The variables in the first column of docs/configuration.md's table, and the whole table's text."""
    rows = [line for line in prose_lines(CONFIGURATION) if line.startswith("| `")]
    first = {name for row in rows for name in re.findall(r"`([A-Z][A-Z0-9_]*)`", row.split("|")[1])}
    return first, "\n".join(rows)


def test_every_documented_variable_is_read_by_the_server():
    variables, _ = documented()
    assert len(variables) > 20  # the table was found
    unread = sorted(variables - read_from_environment())
    assert not unread, f"docs/configuration.md documents variables no code reads: {unread}"


def test_every_variable_the_server_reads_is_documented():
    variables, table = documented()
    read = read_from_environment()
    # A threadmem variable has a row of its own; Django's own may be named in a row's text (THREADMEM_HTTPS').
    missing = sorted(
        name for name in read if name not in variables and (name.startswith("THREADMEM_") or f"`{name}`" not in table)
    )
    assert not missing, f"read from the environment but not in docs/configuration.md: {missing}"


# Anything else reads: Python's environment reads (a name, or a ``*_VARIABLE`` constant naming it) in the product
# and the capture hook, and the variables the Procfile and the Makefile take.
ANY_ENV_READ = re.compile(
    r"\b(?:os\.environ(?:\.get|\.setdefault)?[\[(]|getenv\(|env_\w+\()\s*\"([A-Z][A-Z0-9_]*)\"|"
    r"\b[A-Z_]*VARIABLE\s*=\s*\"([A-Z][A-Z0-9_]*)\""
)
SHELL_READ = re.compile(r"\$\$?\{([A-Z][A-Z0-9_]*)|\$\(([A-Z][A-Z0-9_]*)\)|^([A-Z][A-Z0-9_]*) \?=", re.MULTILINE)
MAKE_OWN = {"PY", "VENV", "HOME"}  # make's own variables and the shell's, not settings


def read_anywhere() -> set[str]:
    names = set()
    for path in [*(p for folder in SERVER_DIRS for p in (ROOT / folder).rglob("*.py")), *(ROOT / "plugin").rglob("*")]:
        if path.is_file():
            names |= {a or b for a, b in ANY_ENV_READ.findall(path.read_text(encoding="utf-8", errors="replace"))}
    for name in ("Procfile", "Makefile"):
        names |= {a or b or c for a, b, c in SHELL_READ.findall((ROOT / name).read_text(encoding="utf-8"))}
    return names - MAKE_OWN


def test_every_variable_anything_reads_is_named_on_the_configuration_page():
    """The server's in the table, the clients', the process's, make's and the Procfile's after it."""
    page = CONFIGURATION.read_text(encoding="utf-8")
    read = read_anywhere()
    assert {"THREADMEM_TOKEN", "THREADMEM_URL", "THREADMEM_CAPTURE_STATE", "WEB_CONCURRENCY"} <= read  # found
    missing = sorted(name for name in read if f"`{name}`" not in page)
    assert not missing, f"read but not named in docs/configuration.md: {missing}"


MAX_DOCUMENTED = 35  # issue 44: the settings a user needs, each with its user story


def test_at_most_35_variables_are_documented_each_with_who_sets_it():
    """A row naming three variables counts three; a new setting makes room by replacing one (or is a constant)."""
    variables, table = documented()
    assert len(variables) <= MAX_DOCUMENTED, f"{len(variables)} variables documented: {sorted(variables)}"
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    without_story = [
        row.split("|")[1].strip() for row in rows if len(row.split("|")) < 5 or not row.split("|")[3].strip()
    ]
    assert not without_story, f"rows without a user story: {without_story}"


def test_every_threadmem_name_in_the_docs_is_one_the_code_has():
    """A setting removed from the code is removed from the docs too (docs/changelog.md keeps the history)."""
    code = "\n".join(
        path.read_text(encoding="utf-8", errors="replace")
        for folder in (*SERVER_DIRS, "clients", "bench", "scripts", "tests", "plugin")
        for path in (ROOT / folder).rglob("*")
        if path.is_file() and path.suffix in {".py", ".sh", ".js", ".json", ""} and not SKIPPED_PARTS & set(path.parts)
    ) + (ROOT / "Makefile").read_text(encoding="utf-8")
    known = set(THREADMEM_NAME.findall(code))
    stale = sorted(
        f"{page.relative_to(ROOT)}: {name}"
        for page in PAGES
        if page.name != "changelog.md"
        for name in set(THREADMEM_NAME.findall(page.read_text(encoding="utf-8"))) - known
    )
    assert not stale, "\n".join(stale)


ARCHITECTURE = ROOT / "docs" / "architecture.md"
# Packages whose own sections other pages keep (search.md, scaling.md): the map names the package, not each file.
MAPPED_WHOLE = {"search", "replica_backend", "migrations"}


def test_the_architecture_page_names_every_layer_command_and_module():
    """docs/architecture.md maps the whole code: every import-linter layer, every management command, every
    module of threadmem/ (each package's files too), of api/ and its views, of the other surfaces and of config/."""
    page = ARCHITECTURE.read_text(encoding="utf-8")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = pyproject["tool"]["importlinter"]["contracts"]
    layers = [m.strip() for c in contracts if c["type"] == "layers" for layer in c["layers"] for m in layer.split("|")]
    missing = [f"layer {name}" for name in layers if f"`{name}`" not in page]
    commands = [
        path.stem
        for folder in ("cli", "mcp_server")
        for path in (ROOT / folder / "management" / "commands").glob("*.py")
        if path.stem != "__init__"
    ]
    missing += [f"command {name}" for name in commands if f"`{name}" not in page]
    threadmem = ROOT / "threadmem"
    named = [path for path in threadmem.iterdir() if not path.name.startswith(("_", "."))]
    for package in threadmem.rglob("*/"):
        if package.is_dir() and not MAPPED_WHOLE & set(package.relative_to(threadmem).parts):
            named += [path for path in package.iterdir() if path.suffix == ".py" and path.stem != "__init__"]
    for folder in ("api", "api/views", "cli", "mcp_server", "oauth", "config"):
        named += [path for path in (ROOT / folder).glob("*.py") if path.stem not in {"__init__", "apps"}]
    missing += [
        str(path.relative_to(ROOT))
        for path in named
        if "__pycache__" not in path.parts and not re.search(rf"\b{re.escape(path.stem)}(\.py|/|\b)", page)
    ]
    assert len(layers) > 15 and len(commands) >= 14 and len(named) > 100  # found
    assert not missing, f"docs/architecture.md does not name: {missing}"
