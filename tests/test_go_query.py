"""Go extraction speed-ups that must not change facts: the shared query pass hands each
group exactly what its own QueryCursor would, and the catalog name index never hides a
name that a catalog pattern matches."""

from __future__ import annotations

from fnmatch import fnmatchcase

from hypothesis import given
from hypothesis import strategies as st
from tree_sitter import Parser, Query, QueryCursor

from deadline_audit.catalog import load_catalog
from deadline_audit.extract.go import _QUERIES
from deadline_audit.extract.go_marks import query_groups, shared_query
from deadline_audit.extract.go_query import GO, FileMatches, SharedQuery
from deadline_audit.extract.go_text import _Patterns

SOURCE = b"""package worker

import (
    "context"
    "net/http"
    "time"
)

var table = map[string]int{"upload": 1, "backup": 2}

// Poll renews the lease until ctx ends.
func Poll(ctx context.Context, d time.Duration, w http.ResponseWriter) error {
    if d > time.Minute {
        d = time.Minute
    }
    t := time.NewTicker(d)
    lease.KeepAliveOnce(ctx, 1)
    defer t.Stop()
    go func() { _ = ctx.Err() }()
    for {
        select {
        case <-ctx.Done():
            return ctx.Err()
        case <-t.C:
            w.(http.Flusher).Flush()
        }
    }
}
"""


def _spans(matches: list[dict]) -> list[dict[str, list[tuple[int, int]]]]:
    return [{name: [(n.start_byte, n.end_byte) for n in nodes] for name, nodes in caps.items()} for caps in matches]


def test_each_group_gets_what_its_own_cursor_finds():
    catalog = load_catalog()
    groups = query_groups(catalog, _QUERIES)
    root = Parser(GO).parse(SOURCE).root_node
    found = FileMatches(shared_query(catalog, _QUERIES), root)
    nonempty = 0
    for name, text in groups.items():
        own = [caps for _, caps in QueryCursor(Query(GO, text)).matches(root)]
        assert _spans(found.get(name)) == _spans(own), name
        nonempty += bool(own)
    assert nonempty >= 8  # the snippet exercises most groups


def test_a_group_text_must_hold_whole_patterns():
    whole = SharedQuery({"a": "(if_statement) @i", "b": "(for_statement) @f (go_statement) @g"})
    assert whole.owner == ["a", "b", "b"]
    assert Query(GO, "(if_statement) @i").pattern_count == 1


PATTERNS = ["net/http.Client.Do", "time.*", "github.com/*/redis.Client.Set?", "x.[ab]c", "plain.Name"]
NAMES = st.sampled_from(["net/http.Client.Do", "time.After", "time.", "github.com/a/redis.Client.SetX",
                         "github.com/a/b/redis.Client.Set", "x.ac", "x.cc", "plain.Name", "plain.Names",
                         "other.Thing", ""])


@given(st.lists(st.sampled_from(PATTERNS), max_size=5), st.one_of(NAMES, st.text(max_size=12)))
def test_pattern_index_agrees_with_fnmatch(patterns, name):
    assert _Patterns(patterns).may_match(name) == any(fnmatchcase(name, p) for p in patterns)
