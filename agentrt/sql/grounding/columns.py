"""Internal. Which columns of the chosen tables a question gets, within the budget: the keys
that join them, the columns the tables are there for, then the others by worth; a column of a
table not joined yet comes with the keys of its join path, or not at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agentrt.sql.database import Schema
from agentrt.sql.grounding.graph import JoinGraph, components
from agentrt.sql.grounding.models import SchemaItem, words

CORE_BONUS = 0.1
"""Added to the worth of a column of an anchor or a bridge when the budget is filled by worth:
the tables the question is about come first, not so far first that their incidental columns
(a customer's fax) pass another table's wanted one."""
FIRST_TABLES = 3
"""The tables whose columns come first when more are grounded: a fourth or fifth table's
keys come after theirs and its other columns after all of theirs, so more tables cost the
first three a column only for the keys of a table joined to them."""
TABLE_IN_COLUMN = 0.15
"""The share of a table's score that its columns inherit when columns are ranked."""


class Picking:
    """The columns chosen so far, within a budget: which are join columns, which tables they
    ground."""

    def __init__(self, budget: int, items: Sequence[SchemaItem]) -> None:
        self.budget = budget
        self.items = items
        self.picked: dict[int, None] = {}
        self.joins: set[int] = set()
        self.grounded: set[str] = set()

    def take(self, path: list[int], column: int | None = None, partner: int | None = None) -> None:
        """The join columns `path` and the `column` they reach, all of them or, when they do
        not fit the budget, none; then the column's `partner`, when it fits."""
        new = [c for c in dict.fromkeys([*path, column]) if c is not None and c not in self.picked]
        if partner is not None and len(self.picked) + len(new) < self.budget:
            new.append(partner)
        if len(self.picked) + len(new) <= self.budget:
            self.picked.update(dict.fromkeys(new))
            self.joins.update(path)
            self.grounded.update(self.items[c].table for c in new)


class ColumnChoice:
    """The column choice of one index.

    :param schema: its schema (which columns make up a composite primary key)
    :param items: the index's items
    :param span: the positions of its columns among them
    :param graph: the join graph of its schema, whose paths it gives as those positions
    """

    def __init__(
        self, schema: Schema, items: Sequence[SchemaItem], span: range, graph: JoinGraph
    ) -> None:
        self.items = items
        self._span = span
        self._graph = graph
        self._composite = {
            (t.name, c.name)
            for t in schema.tables
            if sum(c.primary_key for c in t.columns) > 1
            for c in t.columns
            if c.primary_key
        }
        """The columns of composite primary keys: data as much as keys (film_actor.actor_id)."""
        self._partner = self._partners()
        """A person's first name column ↔ the last name column of the same table."""
        self._label = self._labels()
        """Table → the column that names its rows (a name, a title), when it has one."""

    def holds_data(self, item: SchemaItem) -> bool:
        """Whether a column holds data of its own, not only a key (an id, a reference): a
        column of a composite primary key does (the language of a country's languages)."""
        if (item.table, item.column) in self._composite:
            return True
        return not (item.primary_key or item.references)

    def _labels(self) -> dict[str, int]:
        """Each table's first data column with "name" or "title" in its name: what a question
        asking which rows wants shown ("which customer": a customer's name)."""
        labels: dict[str, int] = {}
        for i in self._span:
            item = self.items[i]
            said = set(words(item.column or "").split())
            if item.table not in labels and self.holds_data(item) and said & {"name", "title"}:
                labels[item.table] = i
        return labels

    def _partners(self) -> dict[int, int]:
        """Columns whose names differ only by first ↔ last (`first_name`, `FirstName`,
        `cust_first_name`): a person is named by both, and a query selects them together."""
        by_words = {
            (item.table, words(item.column or "")): i for i in self._span if (item := self.items[i])
        }
        found: dict[int, int] = {}
        for (table, name), i in by_words.items():
            split = name.split()
            if "first" in split:
                last = " ".join("last" if w == "first" else w for w in split)
                partner = by_words.get((table, last))
                if partner is not None:
                    found[i], found[partner] = partner, i
        return found

    def choose(
        self,
        chosen: Mapping[str, float],
        anchors: set[str],
        bridges: set[str],
        table_score: Mapping[str, float],
        score: Mapping[int, float],
        budget: int,
    ) -> tuple[list[int], set[int]]:
        """At most `budget` columns of the chosen tables, join columns first, and which of them
        are join columns. Unless the later tables are what joins the core (anchors and
        bridges) of the first `FIRST_TABLES`, those come first at each step and a later
        table the first one cannot join through the chosen tables takes no column: their
        needed columns (`_needed_columns`), then the needed columns of all, then the other
        columns of the first tables' core, of the first tables, of the core of all, of all,
        by score (their own plus a share of their table's). A column of a table not joined
        yet comes with the keys of the shortest join path to it, or not at all, so the keys
        of a table only similar to the question never crowd out the columns of the tables
        the question is about ("stock clerks in Turin": not a customer's city). Last, the
        other keys between grounded tables (a second route between them)."""
        first = dict(list(chosen.items())[:FIRST_TABLES])
        groups = [chosen]
        ends = _core(first, anchors, bridges)
        if len(chosen) > len(first) and self._graph.parts(chosen, ends) == self._graph.parts(
            first, ends
        ):
            # The later tables join no two parts of the first ones' core: they wait, and only
            # those joined to the first table come at all (a part the first table cannot reach
            # serves no query on it: its keys would only take the budget).
            main = components(chosen, self._graph.neighbours)
            start = main[next(iter(chosen))]
            groups = [first, {t: s for t, s in chosen.items() if t in first or main[t] == start}]
        picking = Picking(budget, self.items)
        cores = [
            self._needed_columns(
                group, anchors, bridges & group.keys(), table_score, score, picking
            )
            for group in groups
        ]
        worth = self._column_worth(chosen, table_score, score)
        for core, group in zip(cores, groups, strict=True):
            ranked = sorted(
                (i for i in worth if self.items[i].table in group),
                key=lambda i: -worth[i] - CORE_BONUS * (self.items[i].table in core),
            )
            for i in ranked:
                if len(picking.picked) == picking.budget:
                    break
                path = self._graph.join_path(self.items[i].table, picking.grounded, group)
                picking.take(path, i, self._partner.get(i))
        for path in self._graph.keys_between(picking.grounded):
            picking.take(path)
        return sorted(picking.picked, key=lambda i: i not in picking.joins), picking.joins

    def _needed_columns(
        self,
        chosen: Mapping[str, float],
        anchors: set[str],
        bridges: set[str],
        table_score: Mapping[str, float],
        score: Mapping[int, float],
        picking: Picking,
    ) -> list[str]:
        """The columns a query on the chosen tables needs, into `picking`, each only when it
        fits whole; the core tables. In this order:

        1. the core: the chosen anchors and bridges, or the best table when there is no anchor.
           The keys of shortest join paths (through chosen tables) that connect the core, and
           every key between two core tables: cheap, and required to write the query;
        2. the best data column (not a key) of each anchor and of each bridge that every
           shortest route between two anchors crosses, when it has none yet: the question
           names an anchor for something, and the bridge of a many-to-many question usually
           holds what is counted or summed (the quantity of a sale); a bridge on one of
           several equally short routes may be the route the query does not take.
        """
        take, grounded = picking.take, picking.grounded
        core = _core(chosen, anchors, bridges)
        for table in core:
            take(self._graph.join_path(table, grounded, chosen))
            grounded.add(table)
        for path in self._graph.keys_between(core):
            take(path)
        worth = self._column_worth(chosen, table_score, score)
        for table in self._counted_tables(core, chosen, anchors, bridges):
            own = [
                i for i in worth if self.items[i].table == table and self.holds_data(self.items[i])
            ]
            if own and not picking.picked.keys() & own:
                best = max(own, key=worth.__getitem__)
                take(self._graph.join_path(table, grounded, chosen), best, self._partner.get(best))
        for table in [t for t in core if t in anchors]:
            label = self._label.get(table)
            if label is not None and label not in picking.picked:
                take(
                    self._graph.join_path(table, grounded, chosen), label, self._partner.get(label)
                )
        return core

    def _column_worth(
        self,
        chosen: Mapping[str, float],
        table_score: Mapping[str, float],
        score: Mapping[int, float],
    ) -> dict[int, float]:
        """Each column of the chosen tables: its own score plus a share of its table's."""
        return {
            i: score.get(i, 0.0) + TABLE_IN_COLUMN * table_score[self.items[i].table]
            for i in self._span
            if self.items[i].table in chosen
        }

    def _counted_tables(
        self, core: list[str], chosen: Mapping[str, float], anchors: set[str], bridges: set[str]
    ) -> list[str]:
        """The core tables whose best data column is wanted: the anchors, and the bridges
        that every shortest route between two anchors crosses."""
        pairs = self._graph.anchor_pairs(chosen, anchors)
        return [
            table
            for table in core
            if table not in bridges
            or any(
                0 < self._graph.routes_through(table, a, b) == self._graph.routes[a][b]
                for a, b in pairs
            )
        ]


def _core(chosen: Mapping[str, float], anchors: set[str], bridges: set[str]) -> list[str]:
    """The chosen anchors and bridges, or the best chosen table when there is none."""
    return [t for t in chosen if t in anchors | bridges] or list(chosen)[:1]
