"""Internal. What grounding holds and gives: the indexed items (`SchemaItem`), the result
(`Grounding` and its tables, columns and values), and the database's synonyms (`Synonyms`).

Nothing here searches or ranks: `agentrt.sql.grounding.index` does.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentrt._validation import load_yaml, load_yaml_model

ItemKind = Literal["table", "column", "value"]

_WORD = re.compile(r"\w+(?:['’.-]\w+)*")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def normalize_value(text: str) -> str:
    """A value as compared: its words, lower-cased (casefolded), single-spaced."""
    return " ".join(_WORD.findall(text.casefold()))


def words(name: str) -> str:
    """An identifier as words: `unit_price` → `unit price`, `soldOn` → `sold on`."""
    return " ".join(_CAMEL.sub(" ", name).replace("_", " ").split()).lower()


class SchemaItem(BaseModel):
    """One table, column or value of the index, with its metadata."""

    model_config = ConfigDict(frozen=True)

    kind: ItemKind
    table: str
    column: str | None = None
    value: str | None = None
    type: str | None = None
    """A column's (or a value's column's) declared type."""
    primary_key: bool = False
    references: str | None = None
    """For a column that is a foreign key: the `table.column` it references."""
    inferred: bool = False
    """`references` is not declared but inferred (`agentrt.sql.database.infer_joins`)."""
    description: str | None = None

    def document(self) -> str:
        """The text embedded for this item."""
        if self.kind == "table":
            text = f"{words(self.table)} table"
        elif self.kind == "column":
            assert self.column is not None
            text = f"{words(self.column)} of {words(self.table)}"
        else:
            assert self.column is not None
            assert self.value is not None
            text = f"{self.value} ({words(self.column)})"
        return f"{text}: {self.description}" if self.description else text


class GroundedTable(BaseModel):
    name: str
    score: float


class GroundedColumn(BaseModel):
    table: str
    name: str
    type: str
    primary_key: bool = False
    references: str | None = None
    inferred: bool = False
    """`references` is not declared in the schema but inferred from the column's name and
    values: the SQL writer should know that the join may not hold for every row."""
    join: bool = False
    """Chosen because it joins two of the grounded tables."""
    score: float


class GroundedValue(BaseModel):
    table: str
    column: str
    value: str
    """As stored (trimmed): what a query must compare with."""
    literal: bool
    """Found word for word (ignoring case) in the dialogue, not only by similarity."""
    score: float


class Grounding(BaseModel):
    """What a question needs of a database, best first within each kind."""

    question: str
    tables: list[GroundedTable] = Field(default_factory=list)
    columns: list[GroundedColumn] = Field(default_factory=list)
    values: list[GroundedValue] = Field(default_factory=list)

    def contains(
        self,
        tables: Sequence[str] = (),
        columns: Sequence[str] = (),
        values: Sequence[str] = (),
    ) -> bool:
        """Whether every one of these is grounded: tables by name, columns as `table.column`,
        values as `table.column=value` (compared as `normalize_value` does); all
        case-insensitively."""
        have_tables = {t.name.casefold() for t in self.tables}
        have_columns = {f"{c.table}.{c.name}".casefold() for c in self.columns}
        have_values = {
            (f"{v.table}.{v.column}".casefold(), normalize_value(v.value)) for v in self.values
        }
        wanted_values = set()
        for item in values:
            column, _, value = item.partition("=")
            wanted_values.add((column.casefold(), normalize_value(value)))
        return (
            {t.casefold() for t in tables} <= have_tables
            and {c.casefold() for c in columns} <= have_columns
            and wanted_values <= have_values
        )

    def render(self) -> str:
        """The grounded schema as a prompt shows it: each table with its grounded columns (in
        the table's order), then the values found: when the question names any value word for
        word, only such values."""
        lines = []
        by_table: dict[str, list[GroundedColumn]] = defaultdict(list)
        for column in self.columns:
            by_table[column.table].append(column)
        for table in self.tables:
            parts = []
            for c in by_table.get(table.name, []):
                part = f"{c.name} {c.type}".rstrip()
                if c.primary_key:
                    part += " PRIMARY KEY"
                if c.references:
                    ref_table, _, ref_column = c.references.partition(".")
                    part += f" REFERENCES {ref_table}({ref_column})"
                    if c.inferred:
                        part += " (inferred, not declared)"
                parts.append(part)
            lines.append(f"{table.name}({', '.join(parts)})")
        # Values the question names word for word stand alone: shown 'Alternative & Punk'
        # with 'Alternative', 'Rock And Roll' and 'Soundtrack' beside it, the 1.5B compared the
        # genre with all of them; shown 'ARIZONA DINOSAUR' with a look-alike of another column
        # (actor.last_name = 'MURPHY', or a city and an income level beside a country's code),
        # it added a filter on that too (issue 24). The look-alikes stay when nothing is named
        # word for word: "the United States" is 'USA' only by its meaning.
        literal = [v for v in self.values if v.literal]
        values = literal or self.values
        if values:
            lines.append("Values in the data that match the question:")
            lines += [f"{v.table}.{v.column} = {_sql_string(v.value)}" for v in values]
        return "\n".join(lines)


class Synonyms(BaseModel):
    """What a database's users call things, for grounding: a phrase of questions → what it
    means here, one target or a list of them, each a value (`table.column=value`, as stored),
    a column (`table.column`) or a table. Phrases are compared by their words' stems.

        united states: country.Code=USA
        official: countrylanguage.IsOfficial=T
        head count: [employees, employees.id]
    """

    model_config = ConfigDict(frozen=True)

    phrases: dict[str, list[str]]

    @field_validator("phrases", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        """A single target needs no list."""
        if isinstance(value, dict):
            return {k: [v] if isinstance(v, str) else v for k, v in value.items()}
        return value


def load_synonyms(path: Path) -> Synonyms:
    """The synonyms file at `path` (YAML: phrase → target or list of targets, see `Synonyms`).

    :raises WorkspaceError: the file cannot be read or is not such a mapping
    """
    return load_yaml_model(path, Synonyms, data={"phrases": load_yaml(path) or {}})


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
