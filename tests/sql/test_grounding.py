"""Schema grounding with the real embedding model and FAISS, on the shop database."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agentrt.sql.grounding import NAMED_SCORE, GroundedValue, Grounding, SchemaIndex
from agentrt.vectors.embedder import Embedder

from .shop import make_shop

LIBRARY_SCHEMA = """
CREATE TABLE branches (id INTEGER PRIMARY KEY, name TEXT, city TEXT);
CREATE TABLE staff (
    id INTEGER PRIMARY KEY, name TEXT, role TEXT, branch_id INTEGER REFERENCES branches(id)
);
CREATE TABLE members (
    id INTEGER PRIMARY KEY, name TEXT, branch_id INTEGER REFERENCES branches(id)
);
CREATE TABLE authors (id INTEGER PRIMARY KEY, name TEXT, city TEXT);
CREATE TABLE books (
    id INTEGER PRIMARY KEY, title TEXT, author_id INTEGER REFERENCES authors(id)
);
CREATE TABLE copies (
    id INTEGER PRIMARY KEY,
    book_id INTEGER REFERENCES books(id),
    branch_id INTEGER REFERENCES branches(id),
    condition TEXT
);
CREATE TABLE loans (
    id INTEGER PRIMARY KEY,
    copy_id INTEGER REFERENCES copies(id),
    member_id INTEGER REFERENCES members(id),
    borrowed_on TEXT
);
"""
"""Members reach books only through loans and copies; "Lyon" is both a branch's city and an
author's."""
LIBRARY_ROWS: dict[str, list[tuple[object, ...]]] = {
    "branches": [(1, "Central", "Lyon"), (2, "Harbor", "Leeds")],
    "staff": [(1, "Rosa Diaz", "Librarian", 1), (2, "Tom Hale", "Porter", 2)],
    "members": [(1, "Ivy Chen", 1), (2, "Omar Aziz", 2)],
    "authors": [(1, "Frank Herbert", "Lyon"), (2, "Ursula Le Guin", "Berkeley")],
    "books": [(1, "Dune", 1), (2, "Earthsea", 2)],
    "copies": [(1, 1, 1, "Good"), (2, 2, 2, "Worn")],
    "loans": [(1, 1, 1, "2024-03-01"), (2, 2, 2, "2024-04-02")],
}
BORROWED_DUNE = [
    "loans.member_id",
    "members.id",
    "loans.copy_id",
    "copies.id",
    "copies.book_id",
    "books.id",
]
"""The keys of the join path members → loans → copies → books."""


def make_library(path: Path) -> Path:
    with sqlite3.connect(path) as connection:
        connection.executescript(LIBRARY_SCHEMA)
        for table, rows in LIBRARY_ROWS.items():
            marks = ", ".join("?" * len(rows[0]))
            connection.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    connection.close()
    return path


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> SchemaIndex:
    shop = make_shop(tmp_path_factory.mktemp("grounding") / "shop.sqlite")
    return SchemaIndex.build(shop, embedder, cache=None)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> SchemaIndex:
    path = make_library(tmp_path_factory.mktemp("grounding") / "library.sqlite")
    return SchemaIndex.build(path, embedder, cache=None)


class TestIndex:
    def test_items_carry_their_metadata(self, index: SchemaIndex) -> None:
        """Every table and column, and textual values, each with kind, type and keys."""
        kinds = {(i.kind, i.table, i.column, i.value): i for i in index.items}
        assert ("table", "sales", None, None) in kinds
        store_id = kinds[("column", "employees", "store_id", None)]
        assert (store_id.type, store_id.references) == ("INTEGER", "stores.id")
        assert kinds[("column", "stores", "id", None)].primary_key
        porto = kinds[("value", "stores", "city", "Porto")]
        assert porto.type == "TEXT"
        assert not any(i.kind == "value" and i.column == "sold_on" for i in index.items)

    def test_built_once_then_loaded_by_schema_hash(
        self, tmp_path: Path, embedder: Embedder
    ) -> None:
        """The second build embeds nothing; a schema change (not a row change) is a new key."""
        shop = make_shop(tmp_path / "shop.sqlite")
        cache = tmp_path / "cache"
        first = SchemaIndex.build(f"sqlite:///{shop}", embedder, cache)
        assert first.embedded == len(first.items) > 20
        folders = list((cache / "grounding" / embedder.fingerprint).iterdir())
        assert len(folders) == 1
        assert {p.name for p in folders[0].iterdir()} == {
            "items.json",
            "vectors.npz",
            "values.sqlite",
        }
        again = SchemaIndex.build(shop, embedder, cache)
        assert again.embedded == 0
        assert again.items == first.items

        with sqlite3.connect(shop) as connection:
            connection.execute("ALTER TABLE products ADD COLUMN colour TEXT")
        connection.close()
        changed = SchemaIndex.build(shop, embedder, cache)
        assert changed.embedded > 0
        assert len(list((cache / "grounding" / embedder.fingerprint).iterdir())) == 2

    def test_descriptions_are_embedded_and_part_of_the_key(
        self, tmp_path: Path, embedder: Embedder
    ) -> None:
        shop = make_shop(tmp_path / "shop.sqlite")
        notes = {"sales.quantity": "units sold", "stores": "the shops of the chain"}
        index = SchemaIndex.build(shop, embedder, tmp_path, descriptions=notes)
        described = {i.column or i.table: i.document() for i in index.items if i.description}
        assert described == {
            "quantity": "quantity of sales: units sold",
            "stores": "stores table: the shops of the chain",
        }
        assert SchemaIndex.build(shop, embedder, tmp_path).embedded > 0


class TestGround:
    def test_a_question_gets_its_tables_columns_and_values(self, index: SchemaIndex) -> None:
        """Values are found literally, plural or not ("yoga mats"), and lift their tables;
        the table between them (sales) comes with them."""
        grounding = index.ground("How many yoga mats did Alice Martin sell?")
        assert grounding.contains(
            tables=["sales", "products", "employees"],
            columns=["products.name", "employees.name"],
            values=["products.name=Yoga Mat", "employees.name=Alice Martin"],
        )
        assert all(v.literal for v in grounding.values[:2])

    @pytest.mark.parametrize(
        "question", ["units sold by each employee", "price of the products sold in Lyon"]
    )
    def test_join_columns_between_chosen_tables_are_added(
        self, index: SchemaIndex, question: str
    ) -> None:
        """Both ends of each foreign key between grounded tables are there, first."""
        grounding = index.ground(question, tables=3)
        chosen = {t.name for t in grounding.tables}
        expected = {
            end
            for k in index.schema.foreign_keys
            if k.table in chosen and k.ref_table in chosen
            for end in (f"{k.table}.{k.column}", f"{k.ref_table}.{k.ref_column}")
        }
        joins = [f"{c.table}.{c.name}" for c in grounding.columns if c.join]
        assert expected
        assert set(joins) == expected
        assert [f"{c.table}.{c.name}" for c in grounding.columns[: len(joins)]] == joins

    def test_a_bridge_table_joins_two_chosen_ones(self, index: SchemaIndex) -> None:
        """Employees and products are not joined directly; sales joins them."""
        grounding = index.ground("Did Alice Martin ever sell a Desk Lamp?", tables=3)
        assert grounding.contains(
            tables=["employees", "products", "sales"],
            columns=["sales.employee_id", "employees.id", "sales.product_id", "products.id"],
        )

    def test_at_most_i_tables_j_columns_k_values(self, index: SchemaIndex) -> None:
        grounding = index.ground(
            "sales of espresso machines in Lyon", tables=2, columns=3, values=1
        )
        assert len(grounding.tables) <= 2
        assert len(grounding.columns) <= 3
        assert len(grounding.values) <= 1
        assert all(c.table in {t.name for t in grounding.tables} for c in grounding.columns)

    @pytest.mark.parametrize("said", ["porto", "PORTO", "  Porto  ", "Porto?"])
    def test_values_match_trimmed_and_case_insensitively(
        self, index: SchemaIndex, said: str
    ) -> None:
        """ "  Porto " is stored; any casing and spacing of it in the question finds it."""
        grounding = index.ground(f"which store is in {said}")
        (porto,) = [v for v in grounding.values if v.column == "city" and v.literal]
        assert porto.value == "Porto"
        assert grounding.tables[0].name == "stores"

    def test_earlier_turns_of_the_dialogue_count(self, index: SchemaIndex) -> None:
        """A follow-up says "he": the first turn names the person."""
        alone = index.ground("and what is his salary?", tables=1)
        with_context = index.ground(
            "and what is his salary?", context=["Which store does Bruno Silva work in?"], tables=2
        )
        assert with_context.tables[0].name == "employees"
        named = [v for v in with_context.values if v.literal]
        assert [v.value for v in named] == ["Bruno Silva"]
        assert not any(v.literal for v in alone.values)

    def test_the_prompt_gets_only_the_grounded_schema(self, index: SchemaIndex) -> None:
        grounding = index.ground("price of the desk lamp", tables=1, columns=3)
        text = grounding.render()
        assert text.splitlines()[0].startswith("products(")
        for other in ("sales", "employees", "stores", "store_staff"):
            assert other not in text
        assert "products.name = 'Desk Lamp'" in text

    def test_values_named_word_for_word_stand_alone(self) -> None:
        """Look-alikes, of their column or another, are left out of the prompt."""
        found = [
            ("genres", "Name", "Alternative", False),
            ("genres", "Name", "Alternative & Punk", True),
            ("genres", "Name", "Rock And Roll", False),
            ("tracks", "Composer", "Foo Fighters", False),
        ]
        grounding = Grounding(
            question="Which tracks are Alternative & Punk?",
            values=[
                GroundedValue(table=t, column=c, value=v, literal=literal, score=0.5)
                for t, c, v, literal in found
            ],
        )
        assert grounding.render().splitlines() == [
            "Values in the data that match the question:",
            "genres.Name = 'Alternative & Punk'",
        ]

    def test_look_alikes_are_shown_when_no_value_is_named_word_for_word(self) -> None:
        """ "the United States" is 'USA' by its meaning only: similar values are all there is."""
        grounding = Grounding(
            question="How many customers are in the United States?",
            values=[
                GroundedValue(table="customers", column="Country", value=v, literal=False, score=s)
                for v, s in (("USA", 0.37), ("United Kingdom", 0.35))
            ],
        )
        assert grounding.render().splitlines() == [
            "Values in the data that match the question:",
            "customers.Country = 'USA'",
            "customers.Country = 'United Kingdom'",
        ]

    async def test_aground_and_abuild_run_in_worker_threads(
        self, tmp_path: Path, embedder: Embedder
    ) -> None:
        index = await SchemaIndex.abuild(make_shop(tmp_path / "s.sqlite"), embedder, None)
        grounding = await index.aground("best selling product")
        assert grounding.contains(tables=["sales", "products"])


class TestJoinPaths:
    """Tables and columns chosen along the foreign keys between the tables a question names."""

    def test_the_tables_on_a_join_path_between_two_named_ones_are_chosen(
        self, library: SchemaIndex
    ) -> None:
        """Members and books are three keys apart: loans and copies, which the question does
        not name, are chosen before any table only similar to it."""
        grounding = library.ground("Which members borrowed Dune?", tables=4)
        assert {t.name for t in grounding.tables} == {"members", "books", "loans", "copies"}
        assert grounding.contains(columns=BORROWED_DUNE, values=["books.title=Dune"])

    def test_join_columns_are_kept_when_the_column_budget_is_tight(
        self, library: SchemaIndex
    ) -> None:
        """Eight slots: the six keys of the path, then the best column of each named table."""
        grounding = library.ground("Which members borrowed Dune?", tables=4, columns=8)
        assert len(grounding.columns) == 8
        assert grounding.contains(columns=[*BORROWED_DUNE, "books.title", "members.name"])
        assert {f"{c.table}.{c.name}" for c in grounding.columns if c.join} == set(BORROWED_DUNE)

    def test_tables_only_similar_to_the_question_cost_no_join_columns(
        self, library: SchemaIndex
    ) -> None:
        """With every table chosen, the keys of the others do not crowd out those the question
        needs."""
        grounding = library.ground("Which members borrowed Dune?", tables=7, columns=8)
        assert len(grounding.tables) == 7
        assert grounding.contains(columns=[*BORROWED_DUNE, "books.title", "members.name"])
        assert {c.table for c in grounding.columns} == {"members", "books", "loans", "copies"}

    def test_a_value_several_tables_hold_anchors_the_one_nearest_the_others(
        self, library: SchemaIndex
    ) -> None:
        """Lyon is a branch's city and an author's: librarians (staff) work in branches."""
        grounding = library.ground("Which librarians work in Lyon?", tables=2)
        assert {t.name for t in grounding.tables} == {"staff", "branches"}
        assert grounding.contains(
            columns=["staff.branch_id", "branches.id", "staff.role", "branches.city"],
            values=["staff.role=Librarian", "branches.city=Lyon"],
        )

    @pytest.mark.parametrize(
        ("question", "column"),
        [("Who borrowed the most?", "borrowed_on"), ("copies in poor condition", "condition")],
    )
    def test_a_column_named_in_other_words_forms_is_named(
        self, library: SchemaIndex, question: str, column: str
    ) -> None:
        """Names match stemmed, without their stop words: "borrowed" names `borrowed_on`."""
        grounding = library.ground(question, tables=1)
        (named,) = [c for c in grounding.columns if c.name == column]
        assert named.score >= NAMED_SCORE

    def test_equally_short_routes_between_anchors_all_come_in_when_they_fit(
        self, library: SchemaIndex
    ) -> None:
        """A loan reaches a branch through its member or through the copy lent, both two keys
        long: with a spare table slot both routes are grounded and the SQL writer chooses;
        with none, only the one route."""
        both = library.ground("How many loans per branch?", tables=4, columns=9)
        assert {t.name for t in both.tables} == {"branches", "loans", "members", "copies"}
        assert {f"{c.table}.{c.name}" for c in both.columns if c.join} == {
            "loans.member_id",
            "members.id",
            "members.branch_id",
            "branches.id",
            "loans.copy_id",
            "copies.id",
            "copies.branch_id",
        }
        one = library.ground("How many loans per branch?", tables=3, columns=9)
        assert {t.name for t in one.tables} == {"branches", "loans", "members"}
        assert one.contains(columns=["loans.member_id", "members.id", "members.branch_id"])

    def test_a_bridge_on_one_of_several_routes_gets_no_column_ahead_of_the_anchors(
        self, library: SchemaIndex
    ) -> None:
        """Nine slots: the seven keys of both routes, then the anchors' best columns; neither
        rival bridge (members, copies) is sure to be the route, so neither gets a data column
        of its own ahead of them."""
        grounding = library.ground("How many loans per branch?", tables=4, columns=9)
        data = {f"{c.table}.{c.name}" for c in grounding.columns if not c.join}
        assert len(data) == 2
        assert {name.partition(".")[0] for name in data} == {"branches", "loans"}

    def test_the_anchors_columns_come_before_those_of_tables_only_similar(
        self, library: SchemaIndex
    ) -> None:
        """Lyon is also an author's city: with four column slots, the librarians' role and
        branch come before a column of authors, a table the question is only similar to (the
        next slots go by worth, and 'Lyon' of an author may take one)."""
        grounding = library.ground("Which librarians work in Lyon?", tables=4, columns=4)
        assert "authors" in {t.name for t in grounding.tables}
        assert {c.table for c in grounding.columns} == {"staff", "branches"}
        assert grounding.contains(
            columns=["staff.role", "staff.branch_id", "branches.id", "branches.city"]
        )
