"""Schema grounding with the real embedding model and FAISS, on the shop database."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agentrt.embedding import Embedder
from agentrt.grounding import SchemaIndex

from .shop import make_shop


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> SchemaIndex:
    shop = make_shop(tmp_path_factory.mktemp("grounding") / "shop.sqlite")
    return SchemaIndex.build(shop, embedder, cache=None)


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
        assert {p.name for p in folders[0].iterdir()} == {"items.json", "vectors.npz"}
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

    async def test_aground_and_abuild_run_in_worker_threads(
        self, tmp_path: Path, embedder: Embedder
    ) -> None:
        index = await SchemaIndex.abuild(make_shop(tmp_path / "s.sqlite"), embedder, None)
        grounding = await index.aground("best selling product")
        assert grounding.contains(tables=["sales", "products"])
