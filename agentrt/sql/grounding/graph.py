"""Internal. The join graph of a schema: its tables joined by their foreign keys, declared and
inferred, with the fewest keys between any two tables and how many join paths are that short.

Grounding asks it which tables lie between the ones a question names (a bridge), which of
them a question can join, and which key columns a join path crosses.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence

from agentrt.sql.database import ForeignKey
from agentrt.sql.grounding.models import SchemaItem


class JoinGraph:
    """The tables of one schema and the foreign keys between them.

    :param tables: every table's name
    :param joins: the foreign keys, declared and inferred
    :param position: an item's key (`("column", table, column)`) → its position among the
        index's items: what a join path's columns are given as
    """

    def __init__(
        self,
        tables: Iterable[str],
        joins: Sequence[ForeignKey],
        position: Mapping[tuple[str, ...], int],
    ) -> None:
        self.joins = joins
        self._position = position
        self.neighbours: dict[str, set[str]] = defaultdict(set)
        for key in joins:
            self.neighbours[key.table].add(key.ref_table)
            self.neighbours[key.ref_table].add(key.table)
        self.distance: dict[str, dict[str, int]] = {}
        """Table → table → the fewest foreign keys a join between them crosses."""
        self.routes: dict[str, dict[str, int]] = {}
        """Table → table → how many join paths between them are that short."""
        for table in tables:
            self.distance[table], self.routes[table] = self._hops(table)

    def hops_to(self, table: str, others: set[str]) -> int:
        """The fewest foreign keys between `table` and any of `others` (as many as there are
        tables when none is reachable, or none given)."""
        near = self.distance[table]
        return min((near[o] for o in others if o in near), default=len(self.distance))

    def anchor_pairs(self, chosen: Iterable[str], anchors: set[str]) -> list[tuple[str, str]]:
        """The pairs of chosen anchors that a join can connect with no other chosen anchor on
        any shortest path between them: members and books are no such pair when loans (named by
        "borrowed") lies between them, so a route through the members' branch is no rival."""
        ends = [t for t in chosen if t in anchors]
        return [
            (a, b)
            for i, a in enumerate(ends)
            for b in ends[i + 1 :]
            if b in self.distance[a]
            and not any(self.routes_through(c, a, b) for c in ends if c not in (a, b))
        ]

    def routes_through(self, table: str, a: str, b: str) -> int:
        """How many of the shortest join paths between `a` and `b` go through `table`."""
        near = self.distance[a]
        if table not in near or b not in near or near[table] + self.distance[table][b] > near[b]:
            return 0
        return self.routes[a][table] * self.routes[table][b]

    def parts(self, tables: Collection[str], core: Collection[str]) -> int:
        """Into how many parts the `core` tables fall when joined through `tables` alone: when
        the tables chosen after the first make fewer, they are needed to join them (the bridge
        of a many-to-many question), and do not wait for the first tables' columns."""
        component = components(tables, self.neighbours)
        return len({component[t] for t in core})

    def keys_between(self, tables: Collection[str]) -> list[list[int]]:
        """The columns of each foreign key between two of `tables`."""
        return [
            self._key_columns(key)
            for key in self.joins
            if key.table in tables and key.ref_table in tables
        ]

    def join_path(self, start: str, grounded: set[str], chosen: Mapping[str, float]) -> list[int]:
        """The join columns of a shortest path from `start` to a grounded table, through chosen
        tables only, the more worthy tables first among equally short paths: every key between
        two tables of the path (a flight's origin and its destination). Empty when `start` is
        grounded or none joins."""
        if start in grounded or not grounded:
            return []
        came_from: dict[str, str] = {start: start}
        frontier = [start]
        while frontier:
            following = []
            for table in frontier:
                nearby = sorted(self.neighbours[table] & chosen.keys(), key=lambda t: -chosen[t])
                for neighbour in nearby:
                    if neighbour in came_from:
                        continue
                    came_from[neighbour] = table
                    if neighbour in grounded:
                        return self._path_columns(neighbour, came_from)
                    following.append(neighbour)
            frontier = following
        return []

    def _path_columns(self, end: str, came_from: Mapping[str, str]) -> list[int]:
        columns: list[int] = []
        table = end
        while came_from[table] != table:
            previous = came_from[table]
            for key in self.joins:
                if {key.table, key.ref_table} == {table, previous}:
                    columns += self._key_columns(key)
            table = previous
        return columns

    def _key_columns(self, key: ForeignKey) -> list[int]:
        """A foreign key's column, then the column it references (when it is indexed)."""
        pair = [self._position[("column", key.table, key.column)]]
        ref = ("column", key.ref_table, key.ref_column)
        if ref in self._position:
            pair.append(self._position[ref])
        return pair

    def _hops(self, start: str) -> tuple[dict[str, int], dict[str, int]]:
        """Breadth first over the foreign keys: each table reachable from `start`, by hops, and
        by how many join paths of that length reach it."""
        hops = {start: 0}
        routes = {start: 1}
        frontier = [start]
        while frontier:
            following = []
            for table in frontier:
                for neighbour in self.neighbours[table]:
                    if neighbour not in hops:
                        hops[neighbour] = hops[table] + 1
                        routes[neighbour] = 0
                        following.append(neighbour)
                    if hops[neighbour] == hops[table] + 1:
                        routes[neighbour] += routes[table]
            frontier = following
        return hops, routes


def components(tables: Iterable[str], neighbours: Mapping[str, set[str]]) -> dict[str, int]:
    """Each table → a number shared by the tables it joins to through the others given."""
    among = set(tables)
    component: dict[str, int] = {}
    for number, first in enumerate(among):
        if first in component:
            continue
        stack = [first]
        while stack:
            table = stack.pop()
            if table not in component:
                component[table] = number
                stack += [n for n in neighbours[table] if n in among]
    return component


def inferred_joins(items: Iterable[SchemaItem]) -> list[ForeignKey]:
    """The inferred joins the column items carry."""
    found = []
    for item in items:
        if item.inferred and item.references and item.column:
            ref_table, _, ref_column = item.references.partition(".")
            found.append(
                ForeignKey(
                    table=item.table,
                    column=item.column,
                    ref_table=ref_table,
                    ref_column=ref_column,
                    inferred=True,
                )
            )
    return found
