"""Schema grounding: the few tables, columns and values of a database that a question needs.

Offline, `SchemaIndex.build` indexes a SQLite database: every table and every column, each
with an embedding of its name (and of a description, when one is given) and its metadata (item
kind, column type, primary key, the foreign key it is: declared, or inferred from the column's
name and values, `agentrt.sql.database.infer_joins`); the most frequent distinct textual values
of each column, embedded too; and every distinct text value, numbers stored as text included,
within a budget per database, in a SQLite file searched word for word and with FTS5
(`agentrt.sql.values`). It is built once and cached on disk:

    <cache>/grounding/<embedder>/<schema>/items.json     the items (their documents, metadata)
    <cache>/grounding/<embedder>/<schema>/vectors.npz    their vectors (`agentrt.vectors.cache`)
    <cache>/grounding/<embedder>/<schema>/values.sqlite  every value (`agentrt.sql.values`)

keyed by a hash of the schema and the descriptions, so a database seen before is grounded
without embedding anything or reading its rows again. `rebuild=True` reads the values again
(after the data changed) and embeds only the ones not seen before.

At query time, `SchemaIndex.ground` embeds the question (and earlier turns of the dialogue, at a
discount), retrieves candidates of each kind from FAISS (inner product of normalised vectors),
matches values word for word (every run of the question's words, as Porter stems, possessives
stripped: "Isaac Newman's" finds 'Isaac Newman') and by FTS5 (values holding some of its words,
scored by the share they say), applies the database's synonyms (`Synonyms`: "united states" is
country.Code = 'USA'), and re-ranks with the structure:

- the tables the dialogue names (a table, even by a stem its name extends: "shipped" names
  `shipments`; a column by words no other table's names have; a value found word for word; a
  synonym) are its anchors; words many tables' names have
  ("name", "date") weigh little and anchor none; a value several tables hold anchors only those
  nearest the others; a value inside a longer one said ('Orange' in "Orange Free State") is
  not said, a number of up to four digits anchors nothing (a year, as often as not), and a
  code of one or two letters is said as it is written ("US", not "us");
- a row a value names gives its code to the columns holding it: "Switzerland" is
  `countries.country_name`, and 'CH', its text primary key, is the value to compare
  `locations.country_id` with;
- a value found lifts its column, and a column lifts its table;
- tables are chosen greedily, each next one with a bonus when a foreign key joins it to those
  already chosen, and a larger one when it lies on a shortest join path between two chosen
  anchors (a bridge), so that the choice tends to be a joinable whole; when two anchors are
  joined by several equally short routes, every route that fits comes in, and the SQL writer
  chooses ("fines per branch": a member's branch, or the branch of the copy lent);
- columns are chosen within the budget in this order: the keys joining the anchors and
  bridges (cheap, and required), the best column of each anchor and of each bridge that
  every shortest route crosses, then the others by score (those of anchors and bridges
  slightly ahead), where a column of a table not joined yet brings the keys of its join path
  with it; unless the fourth and fifth tables are what joins the first three's anchors and
  bridges, the first three go through these steps before them, and a later table the first
  one cannot join through the chosen tables takes no column, so grounding more tables costs
  a column of the first ones only for the keys of a table joined to them; a column of a
  composite primary key (film_actor.actor_id) is data as well as a key; a first name brings
  the last name of the same table with it; an anchor's label (its first name or title
  column) is needed too, since "which customer" shows the customer's name;
- values are taken from the chosen tables, literal matches first.

The result holds at most `tables` tables, `columns` columns and `values` values;
`Grounding.render()` is the grounded schema a prompt gets instead of the whole one, an inferred
join marked as such.

The package's modules, one idea each, each using only those before it: `models` (the items,
the result, the synonyms), `graph` (the join graph), `matching` (values said in a question),
`columns` (the choice of columns), `index` (`SchemaIndex`: the build, the scores, the choice
of tables).
"""

# NAMED_SCORE is no public API, but the tests reason with it where it always lived.
from agentrt.sql.grounding.index import NAMED_SCORE as NAMED_SCORE
from agentrt.sql.grounding.index import SchemaIndex
from agentrt.sql.grounding.models import (
    GroundedColumn,
    GroundedTable,
    GroundedValue,
    Grounding,
    SchemaItem,
    Synonyms,
    load_synonyms,
    normalize_value,
)

__all__ = [
    "GroundedColumn",
    "GroundedTable",
    "GroundedValue",
    "Grounding",
    "SchemaIndex",
    "SchemaItem",
    "Synonyms",
    "load_synonyms",
    "normalize_value",
]
