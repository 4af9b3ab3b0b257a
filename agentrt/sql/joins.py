"""Internal. How tables join: the shortest route of foreign keys between them, and its JOIN
clauses.

The guard names such a route when a statement reads a column of a table it did not join
(`agentrt.sql.guard`), and with `join_missing` adds it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from agentrt.sql.database import ForeignKey, quote_identifier

__all__ = ["join_clauses", "join_route", "join_steps", "sql_name", "walk"]


def join_route(
    joins: Sequence[ForeignKey], start: Collection[str], goal: str, through: Collection[str]
) -> list[ForeignKey] | None:
    """The fewest foreign keys that join `goal` to any of the tables `start`, each table between
    them one of `through` (the tables that may be read); None when no such route exists. In the
    order a query would join them, from a `start` table to `goal`. Between two tables, a declared
    key whose column has the name of the one it references is taken first (`film.language_id`,
    not `film.original_language_id`, to `language.language_id`)."""
    joins = sorted(
        joins, key=lambda k: (k.inferred, k.column.casefold() != k.ref_column.casefold())
    )
    came: dict[str, ForeignKey | None] = dict.fromkeys(start)
    frontier = list(start)
    while frontier and goal not in came:
        reached = []
        for table in frontier:
            for key in joins:
                if table not in (key.table, key.ref_table):
                    continue
                other = key.ref_table if key.table == table else key.table
                if other not in came and other in through:
                    came[other] = key
                    reached.append(other)
        frontier = reached
    if goal not in came:
        return None
    route: list[ForeignKey] = []
    table = goal
    while (step := came[table]) is not None:
        route.append(step)
        table = step.ref_table if step.table == table else step.table
    return route[::-1]


def walk(route: Sequence[ForeignKey], goal: str) -> list[tuple[ForeignKey, str]]:
    """Each key of `route` (in join order, ending at table `goal`) with the table it joins."""
    walked = []
    new = goal
    for key in reversed(route):
        walked.append((key, new))
        new = key.ref_table if key.table == new else key.table
    return walked[::-1]


def join_steps(
    route: Sequence[ForeignKey], goal: str, aliases: Mapping[str, str]
) -> list[tuple[str, str]]:
    """The table each key of `route` joins and the condition, from a table the statement reads
    (as it names it) to `goal`."""
    named = dict(aliases)
    steps = []
    for key, new in walk(route, goal):
        new_column, old, old_column = (
            (key.column, key.ref_table, key.ref_column)
            if key.table == new
            else (key.ref_column, key.table, key.column)
        )
        condition = (
            f"{sql_name(new)}.{sql_name(new_column)} = "
            f"{sql_name(named[old])}.{sql_name(old_column)}"
        )
        named[new] = new
        steps.append((sql_name(new), condition))
    return steps


def join_clauses(route: Sequence[ForeignKey], goal: str, aliases: Mapping[str, str]) -> str:
    """`join_steps` as SQL: `JOIN t ON …` for each."""
    return " ".join(f"JOIN {new} ON {on}" for new, on in join_steps(route, goal, aliases))


def sql_name(name: str) -> str:
    """`name` as SQL: as it is when it is a plain identifier, else quoted."""
    return name if name.isidentifier() else quote_identifier(name)
