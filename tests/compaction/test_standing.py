"""Where a touched file stands for the pointer after a compaction (compaction/standing.py), and a patch's files."""

from __future__ import annotations

import pytest

from threadmem.features.compaction.catalogue import collect_resources
from threadmem.features.compaction.pointer import _Row, touched_resources
from threadmem.features.compaction.standing import Place, file_place, patched_files

CWD = "/home/dev/ledger"


@pytest.mark.parametrize(
    ("path", "place"),
    [
        (f"{CWD}/lib/ledger/export.ex", Place.PROJECT),
        ("lib/ledger/export.ex", Place.PROJECT),  # relative: to the session's cwd
        ("/home/dev/other/README.md", Place.OUTSIDE),
        ("../other/README.md", Place.OUTSIDE),
        (f"{CWD}/assets/node_modules/phoenix/priv/static/phoenix.js", Place.DEPENDENCY),
        ("deps/phoenix/lib/phoenix/router.ex", Place.DEPENDENCY),
        (f"{CWD}/_build/dev/lib/ledger/priv/repo/migrations/1_init.exs", Place.DEPENDENCY),
        ("/home/dev/.venv/lib/python3.12/site-packages/django/db/models/query.py", Place.DEPENDENCY),
        ("/home/dev/go/pkg/mod/github.com/spf13/cobra@v1.8.0/command.go", Place.DEPENDENCY),
        ("~/.cargo/registry/src/index.crates.io-6f17d22bba15001f/serde-1.0.197/src/lib.rs", Place.DEPENDENCY),
        ("/home/dev/.m2/repository/org/slf4j/slf4j-api/2.0.9/slf4j-api-2.0.9.pom", Place.DEPENDENCY),
        ("/tmp/claude-1000/-home-dev-ledger/tasks/b7636e2.output", Place.SCRATCH),
        ("/tmp/pytest-output.txt", Place.SCRATCH),
        ("/home/dev/.claude/plans/drifting-tumbling-whisper.md", Place.SCRATCH),
        ("~/.claude/projects/-home-dev-ledger/5f0c0a52.jsonl", Place.SCRATCH),
    ],
)
def test_a_file_stands_where_its_path_puts_it(path, place):
    assert file_place(path, cwd=CWD) == place


def test_a_project_under_a_folder_named_like_a_dependency_is_still_the_project():
    assert file_place("/home/dev/vendor/ledger/lib/export.ex", cwd="/home/dev/vendor/ledger") == Place.PROJECT
    assert file_place("/tmp/scratch-project/app.py", cwd="/tmp/scratch-project") == Place.PROJECT


PATCH = """*** Begin Patch
*** Update File: lib/ledger/export.ex
@@
-  # see lib/ledger/keys.ex
+  # see lib/ledger/keys.ex and config/prod.env
*** Add File: test/ledger/export_test.exs
+defmodule Ledger.ExportTest do
*** End Patch"""


def test_a_patch_touches_and_writes_the_files_its_headers_name_not_those_its_lines_mention():
    call = {"id": "c1", "name": "apply_patch", "arguments": {"input": PATCH}}
    rows = [
        _Row(id=1, role="assistant", kind="", content="", tool_calls=[call], tool_call_id=""),
        _Row(id=2, role="tool", kind="", content="Success.", tool_calls=[], tool_call_id="c1"),
    ]

    touched = touched_resources(
        collect_resources(rows), cwd=CWD, summary=None, patched={1: patched_files(call["arguments"])}
    )

    assert {(t.name, t.written) for t in touched} == {
        ("lib/ledger/export.ex", True),
        ("test/ledger/export_test.exs", True),
    }
