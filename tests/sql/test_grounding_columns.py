"""Grounding at column level on a schema shaped like the public ones (issue 23): values in the
long tail and numbers stored as text, possessives, words every table has, a composite primary
key, a join nobody declared, synonyms, and a column budget shared between the first tables and
the others. With the real embedding model, FAISS and SQLite FTS5."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from agentrt.exceptions import UserError, WorkspaceError
from agentrt.sql.database import all_values, infer_joins, read_schema
from agentrt.sql.grounding import SchemaIndex, Synonyms, load_synonyms
from agentrt.vectors.embedder import Embedder
from tests.helpers import ROOT, run_python

WORLD_SCHEMA = """
CREATE TABLE country (
    Code TEXT PRIMARY KEY, Code2 TEXT, Name TEXT, Continent TEXT, Population INTEGER
);
CREATE TABLE mayor (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE city (
    ID INTEGER PRIMARY KEY, Name TEXT, CountryCode TEXT, District TEXT, Population INTEGER,
    PostalCode TEXT, mayor_id INTEGER
);
CREATE TABLE clerk (
    id INTEGER PRIMARY KEY, first_name TEXT, last_name TEXT, badge TEXT, dept TEXT,
    city_id INTEGER REFERENCES city(ID)
);
CREATE TABLE rental (id INTEGER PRIMARY KEY, clerk_id INTEGER REFERENCES clerk(id), fee REAL);
CREATE TABLE countrylanguage (
    CountryCode TEXT REFERENCES country(Code), Language TEXT, IsOfficial TEXT, Percentage REAL,
    PRIMARY KEY (CountryCode, Language)
);
"""
"""city.CountryCode joins country.Code without a declared foreign key; city.mayor_id is named
like mayor's key but holds none of its ids. 'Kabul' is the rarest of 501 city names."""
COUNTRIES = [
    ("AFG", "AF", "Afghanistan", "Asia", 22720000),
    ("FRA", "FR", "France", "Europe", 59225700),
    ("USA", "US", "United States of America", "North America", 278357000),
    ("ABW", "AW", "Aruba", "North America", 103000),
    ("OFS", "OF", "Orange Free State", "Africa", 1000),
]


def make_world(path: Path) -> Path:
    with sqlite3.connect(path) as connection:
        connection.executescript(WORLD_SCHEMA)
        connection.executemany("INSERT INTO country VALUES (?, ?, ?, ?, ?)", COUNTRIES)
        connection.executemany("INSERT INTO mayor VALUES (?, ?)", [(1, "Ann"), (2, "Bo")])
        cities = [
            (i, f"Alpha {i % 250}", "FRA", "Ile", 1000 + i, f"{75000 + i % 250}", 100 + i)
            for i in range(1, 501)
        ]
        cities.append((501, "Kabul", "AFG", "Kabol", 1780000, "1001", 999))
        cities.append((502, "Orange", "FRA", "Vaucluse", 28000, "84100", 998))
        connection.executemany("INSERT INTO city VALUES (?, ?, ?, ?, ?, ?, ?)", cities)
        connection.executemany(
            "INSERT INTO clerk VALUES (?, ?, ?, ?, ?, ?)",
            [
                (1, "Rosa", "Diaz", "B-1", "Purchasing", 501),
                (2, "Tom", "Hale", "B-2", "Sales", 502),
            ],
        )
        connection.executemany(
            "INSERT INTO countrylanguage VALUES (?, ?, ?, ?)",
            [
                ("AFG", "Pashto", "T", 52.4),
                ("AFG", "Dari", "T", 32.1),
                ("FRA", "French", "T", 93.6),
                ("USA", "English", "T", 86.2),
                ("USA", "Spanish", "F", 7.5),
                ("ABW", "Papiamento", "F", 76.7),
            ],
        )
    connection.close()
    return path


SYNONYMS = Synonyms(
    phrases={
        "united states": "country.Code=USA",
        "official": ["countrylanguage.IsOfficial=T"],
        "head count": ["city.Population"],
    }
)


@pytest.fixture(scope="module")
def world_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_world(tmp_path_factory.mktemp("world") / "world.sqlite")


@pytest.fixture(scope="module")
def world(world_path: Path, embedder: Embedder) -> SchemaIndex:
    return SchemaIndex.build(world_path, embedder, cache=None, synonyms=SYNONYMS)


class TestValues:
    def test_a_value_past_the_embedded_ones_is_found_word_for_word(
        self, world: SchemaIndex
    ) -> None:
        """Only 200 values per column are embedded; every one is matched, 'Kabul' included."""
        embedded = {i.value for i in world.items if i.kind == "value" and i.column == "Name"}
        assert "Kabul" not in embedded
        grounding = world.ground("What is the population of Kabul?")
        assert grounding.contains(
            tables=["city"], columns=["city.Name", "city.Population"], values=["city.Name=Kabul"]
        )
        assert grounding.values[0].literal

    def test_numbers_stored_as_text_are_values(self, world: SchemaIndex) -> None:
        grounding = world.ground("Which district has the postal code 75123?")
        assert grounding.contains(columns=["city.PostalCode"], values=["city.PostalCode=75123"])

    def test_possessives_are_stripped_before_stemming(self, world: SchemaIndex) -> None:
        grounding = world.ground("What is Kabul's district?")
        assert grounding.contains(columns=["city.District"], values=["city.Name=Kabul"])

    def test_a_value_holding_some_of_the_words_is_found_by_fts5(self, world: SchemaIndex) -> None:
        """Not said whole ("America" of 'North America'): found, not literal, ranked below."""
        grounding = world.ground("How many people live in America?")
        partial = [v for v in grounding.values if v.value == "North America"]
        assert partial
        assert not partial[0].literal

    def test_a_value_inside_a_longer_one_said_is_not_literal(self, world: SchemaIndex) -> None:
        """ "Orange Free State" is said; 'Orange', a city, only holds one of its words."""
        grounding = world.ground("What is the population of Orange Free State?")
        found = {v.value: v.literal for v in grounding.values}
        assert found["Orange Free State"]
        assert not found.get("Orange", False)
        assert grounding.tables[0].name == "country"

    def test_a_short_number_is_a_value_but_names_no_table(self, world: SchemaIndex) -> None:
        """'1001' is Kabul's postal code, stored as text; "in 1001" may as well be a year."""
        grounding = world.ground("How many languages were spoken in 1001?", tables=4)
        assert grounding.tables[0].name == "countrylanguage"
        assert grounding.contains(values=["city.PostalCode=1001"])

    def test_a_word_is_said_as_it_is_or_in_the_plural(self, world: SchemaIndex) -> None:
        """ "purchase" has the stem of 'Purchasing' but does not say it; "sales" says 'Sales'."""
        found = {v.value: v.literal for v in world.ground("What did Rosa purchase?").values}
        assert not found.get("Purchasing", False)
        found = {v.value: v.literal for v in world.ground("Which clerks work in sales?").values}
        assert found["Sales"]

    def test_a_two_letter_code_is_said_as_it_is_written(self, world: SchemaIndex) -> None:
        """ "US" is the code; "us" is a word."""
        assert world.ground("Which country is US?").contains(values=["country.Code2=US"])
        found = world.ground("Tell us of France").values
        assert ("Code2", "US") not in {(v.column, v.value) for v in found if v.literal}

    def test_past_the_budget_each_column_keeps_a_fair_share(self, world_path: Path) -> None:
        schema = read_schema(world_path)
        values = list(all_values(world_path, schema, budget=60))
        assert len(values) <= 60
        per_column: dict[tuple[str, str], int] = {}
        for table, column, _ in values:
            per_column[(table, column)] = per_column.get((table, column), 0) + 1
        # Small columns whole, what they leave shared: no dates, no two-digit numbers.
        assert per_column[("mayor", "name")] == 2
        assert per_column[("countrylanguage", "IsOfficial")] == 2
        assert per_column[("city", "Name")] == per_column[("city", "PostalCode")] > 2


class TestColumns:
    def test_a_word_every_table_has_names_none_of_them(self, world: SchemaIndex) -> None:
        """ "name" is a column of three tables: saying it anchors none of them, so the columns
        of the table the question is about come first even on a tight budget."""
        grounding = world.ground("Name the district of Kabul", tables=3, columns=3)
        assert grounding.tables[0].name == "city"
        assert grounding.contains(columns=["city.Name", "city.District"])
        assert grounding.tables[1].score < grounding.tables[0].score / 2

    def test_a_first_name_comes_with_the_last_name(self, world: SchemaIndex) -> None:
        """'Rosa' finds the first name; the last name comes with it, before the badge."""
        grounding = world.ground("Which badge has the clerk called Rosa?", tables=1, columns=3)
        names = [f"{c.table}.{c.name}" for c in grounding.columns]
        assert names == ["clerk.first_name", "clerk.last_name", "clerk.badge"]

    def test_a_named_table_comes_with_its_label(self, world: SchemaIndex) -> None:
        """ "Which clerk": the answer shows the clerk's name, which the question does not say."""
        grounding = world.ground("Which clerk has the badge B-2?", tables=1, columns=3)
        assert grounding.contains(
            columns=["clerk.badge", "clerk.first_name", "clerk.last_name"],
            values=["clerk.badge=B-2"],
        )

    def test_a_stem_names_the_table_whose_name_extends_it(self, world: SchemaIndex) -> None:
        """Porter keeps "rented" (rent) and `rental` apart; the table is named all the same."""
        grounding = world.ground("How much did Rosa charge when she rented?", tables=2)
        assert grounding.contains(tables=["rental", "clerk"], columns=["rental.fee"])

    def test_a_column_of_a_composite_primary_key_is_data(self, world: SchemaIndex) -> None:
        grounding = world.ground("Which languages are spoken in Aruba?")
        assert grounding.contains(
            tables=["countrylanguage", "country"],
            columns=["countrylanguage.Language", "countrylanguage.CountryCode", "country.Code"],
            values=["country.Name=Aruba"],
        )

    def test_an_undeclared_join_is_inferred_and_marked(
        self, world: SchemaIndex, world_path: Path
    ) -> None:
        inferred = infer_joins(world_path, read_schema(world_path))
        assert [(k.table, k.column, k.ref_table, k.ref_column) for k in inferred] == [
            ("city", "CountryCode", "country", "Code")
        ]  # not mayor_id: none of its values is a mayor's id
        grounding = world.ground("How many cities does Afghanistan have?")
        assert grounding.contains(
            tables=["city", "country"], columns=["city.CountryCode", "country.Code"]
        )
        key = next(c for c in grounding.columns if c.name == "CountryCode" and c.table == "city")
        assert key.inferred
        assert key.join
        assert "REFERENCES country(Code) (inferred, not declared)" in grounding.render()

    def test_a_row_named_gives_its_code_to_the_columns_holding_it(self, world: SchemaIndex) -> None:
        """ "Afghanistan" is country.Name; what city.CountryCode compares with is 'AFG'."""
        grounding = world.ground("How many cities are there in Afghanistan?", tables=2)
        assert grounding.contains(
            values=["country.Name=Afghanistan", "city.CountryCode=AFG", "country.Code=AFG"]
        )

    def test_five_tables_never_lose_a_column_three_tables_give(self, world: SchemaIndex) -> None:
        for question in [
            "What is the population of Kabul?",
            "Which languages are spoken in Aruba?",
            "Name the district of Kabul",
            "How many cities does Afghanistan have?",
            "Which official languages does the United States have?",
        ]:
            three = world.ground(question, tables=3)
            five = world.ground(question, tables=5)
            assert five.contains(
                [t.name for t in three.tables], [f"{c.table}.{c.name}" for c in three.columns]
            ), question

    def test_a_part_the_first_table_cannot_join_takes_no_column(
        self, tmp_path: Path, embedder: Embedder
    ) -> None:
        """Purchasing and sales meet only at a warehouse. "orders" makes `orders` a third
        table, apart; `shipments`, on the way to it, came fourth, and its keys took a column
        that three tables gave, though without the warehouse it joins nothing of the first
        three (a question of the samples' tuning half, whose fifth table was not the warehouse)."""
        path = tmp_path / "erp.sqlite"
        with sqlite3.connect(path) as connection:
            connection.executescript(TWO_PARTS)
            connection.executemany(
                "INSERT INTO suppliers (supplier_id, supplier_name) VALUES (?, ?)",
                [(1, "Northwind Traders"), (2, "Tokyo Traders")],
            )
            connection.executemany(
                "INSERT INTO purchase_orders (purchase_order_id, supplier_id, status, order_date)"
                " VALUES (?, ?, ?, ?)",
                [(i, 1 + i % 2, ["pending", "received"][i % 2], "2024-01-01") for i in range(20)],
            )
        index = SchemaIndex.build(path, embedder, cache=None)
        question = "Which purchase orders from Northwind Traders are still pending?"
        three = index.ground(question, tables=3)
        four = index.ground(question, tables=4)
        assert [t.name for t in four.tables][3:] == ["shipments"]
        assert four.contains(
            [t.name for t in three.tables], [f"{c.table}.{c.name}" for c in three.columns]
        )


TWO_PARTS = """
CREATE TABLE warehouses (warehouse_id INTEGER PRIMARY KEY, warehouse_name TEXT, city TEXT);
CREATE TABLE suppliers (
    supplier_id INTEGER PRIMARY KEY, supplier_name TEXT NOT NULL, contact_name TEXT, phone TEXT
);
CREATE TABLE purchase_orders (
    purchase_order_id INTEGER PRIMARY KEY,
    supplier_id INTEGER NOT NULL REFERENCES suppliers (supplier_id),
    warehouse_id INTEGER REFERENCES warehouses (warehouse_id), order_date DATE NOT NULL,
    status TEXT
);
CREATE TABLE orders (
    order_id INTEGER PRIMARY KEY, order_date DATE NOT NULL, order_mode TEXT,
    order_status INTEGER, order_total NUMERIC
);
CREATE TABLE order_items (
    order_id INTEGER NOT NULL REFERENCES orders (order_id), line_item_id INTEGER NOT NULL,
    product_id INTEGER NOT NULL, unit_price NUMERIC, quantity INTEGER,
    PRIMARY KEY (order_id, line_item_id)
);
CREATE TABLE shipments (
    shipment_id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL REFERENCES orders (order_id),
    warehouse_id INTEGER REFERENCES warehouses (warehouse_id), shipped_date DATE,
    tracking_number TEXT
);
"""


class TestSynonyms:
    def test_a_phrase_grounds_its_value(self, world: SchemaIndex) -> None:
        grounding = world.ground("Which official languages does the United States have?")
        assert grounding.contains(
            columns=["countrylanguage.IsOfficial", "countrylanguage.Language"],
            values=["countrylanguage.IsOfficial=T", "country.Code=USA"],
        )

    def test_a_phrase_grounds_its_column(self, world: SchemaIndex) -> None:
        assert world.ground("The head count of Kabul").contains(columns=["city.Population"])

    def test_a_synonyms_file_is_read_and_checked(
        self, tmp_path: Path, world_path: Path, embedder: Embedder
    ) -> None:
        good = tmp_path / "synonyms.yaml"
        good.write_text("united states: country.Code=USA\nofficial: [countrylanguage]\n")
        assert load_synonyms(good).phrases == {
            "united states": ["country.Code=USA"],
            "official": ["countrylanguage"],
        }
        bad = tmp_path / "bad.yaml"
        bad.write_text("- a list\n")
        with pytest.raises(WorkspaceError, match=r"bad\.yaml"):
            load_synonyms(bad)
        wrong = Synonyms(phrases={"usa": ["country.Kode=USA"]})
        with pytest.raises(UserError, match=r"country\.Kode"):
            SchemaIndex.build(world_path, embedder, tmp_path, synonyms=wrong)


def test_the_readme_grounding_snippet_runs_as_written(tmp_path: Path) -> None:
    """The README's synonyms file and snippet, on the world database, from a fresh process."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Database copilot\n", 1)[1].split("\n## ", 1)[0]
    synonyms = re.search(r"^```yaml\n(.*?)^```$", section, re.DOTALL | re.MULTILINE)
    snippet = re.search(r"^```python\n(.*?)^```$", section, re.DOTALL | re.MULTILINE)
    assert synonyms is not None
    assert snippet is not None
    make_world(tmp_path / "world.sqlite")
    (tmp_path / "synonyms.yaml").write_text(synonyms.group(1), encoding="utf-8")
    (tmp_path / "snippet.py").write_text(snippet.group(1), encoding="utf-8")
    out = run_python("snippet.py", cwd=tmp_path).stdout
    assert "countrylanguage(" in out
    assert "countrylanguage.IsOfficial = 'T'" in out
    assert "country.Code = 'USA'" in out
