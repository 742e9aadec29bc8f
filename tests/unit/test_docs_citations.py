"""The code cites the repository's own docs/architecture.md by section
(`docs/architecture.md, "The wire protocol"`): every citation names a section that is there,
and nothing cites a design file outside the repository."""

import os
import re

from tests.support.sshd import REPO

DOC = os.path.join(REPO, "docs", "architecture.md")
CITED = ("tui", "remote_probe", "tests", "bench")
# a citation may wrap onto the next line of a comment or docstring
CITATION = re.compile(r'docs/architecture\.md,\s*(?:#\s*)?"([^"]+)"')


def sections(path=DOC):
    with open(path, encoding="utf-8") as f:
        return {line[3:].strip() for line in f if line.startswith("## ")}


def citations(root=REPO, folders=CITED):
    """(file, section) for every citation under root's folders and in its pyproject.toml."""
    paths = [os.path.join(root, "pyproject.toml")]
    for folder in folders:
        for d, _dirs, files in os.walk(os.path.join(root, folder)):
            paths += [os.path.join(d, n) for n in files if n.endswith((".py", ".toml", ".md"))]
    found = []
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in CITATION.finditer(text):
            section = re.sub(r"\s*\n\s*#?\s*", " ", m.group(1)).strip()
            found.append((os.path.relpath(path, root), section))
    return found


def test_the_architecture_doc_has_the_sections_the_code_relies_on():
    assert {"The rooms", "The route of a sample", "The wire protocol", "The probe",
            "Notifications", "Safety rules"} <= sections()


def test_every_citation_names_a_section_that_exists():
    here = os.path.relpath(__file__, REPO)
    cited = [(path, s) for path, s in citations() if path != here]  # this file's are examples
    assert len(cited) >= 5, cited  # the wire package, the daemon, notifications, ssh, ...
    missing = [(path, s) for path, s in cited if s not in sections()]
    assert missing == [], missing


def test_a_citation_of_a_missing_section_is_found(tmp_path):
    (tmp_path / "tui").mkdir()
    (tmp_path / "tui" / "a.py").write_text('"""See docs/architecture.md, "The\n# wire protocol"."""\n'
                                           '# docs/architecture.md, "The Attic"\n')
    cited = citations(str(tmp_path), ("tui",))
    assert cited == [(os.path.join("tui", "a.py"), "The wire protocol"),
                     (os.path.join("tui", "a.py"), "The Attic")]
    assert [s for _p, s in cited if s not in sections()] == ["The Attic"]


def test_nothing_cites_a_design_file_outside_the_repository():
    hits = []
    for folder in CITED:
        for d, _dirs, files in os.walk(os.path.join(REPO, folder)):
            for n in files:
                if n.endswith(".py") and n != os.path.basename(__file__):
                    with open(os.path.join(d, n), encoding="utf-8") as f:
                        if "DESIGN.md" in f.read():
                            hits.append(os.path.join(d, n))
    assert hits == []
