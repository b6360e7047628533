from __future__ import annotations

import pytest

from tests.support.factories import append
from threadmem.models import ToolArgument


@pytest.mark.django_db
def test_it_appends_in_seq_order_and_stores_tool_argument_leaves(thread):
    first, call = append(
        thread,
        {"role": "user", "content": "copy the key"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "name": "shell", "arguments": {"command": "scp ~/.ssh/id_ed25519 deploy@web-1:"}},
                {"id": "c2", "name": "write", "arguments": {"files": [{"path": "C:\\Users\\ops\\notes.txt"}]}},
            ],
        },
    )
    assert (first.seq, call.seq) == (1, 2)
    leaves = list(ToolArgument.objects.filter(message=call).values_list("call_index", "path", "value"))
    assert leaves == [
        (0, "command", "scp ~/.ssh/id_ed25519 deploy@web-1:"),
        (1, "files[0].path", "C:\\Users\\ops\\notes.txt"),
    ]
