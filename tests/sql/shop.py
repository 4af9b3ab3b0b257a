"""A small shop database for the tests: four tables joined by foreign keys, and a view."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

SHOP_SCHEMA = """
CREATE TABLE stores (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT);
CREATE TABLE employees (
    id INTEGER PRIMARY KEY, name TEXT, title TEXT, salary REAL,
    store_id INTEGER REFERENCES stores(id)
);
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, category TEXT, price REAL);
CREATE TABLE sales (
    id INTEGER PRIMARY KEY,
    employee_id INTEGER REFERENCES employees(id),
    product_id INTEGER REFERENCES products,
    quantity INTEGER,
    sold_on TEXT
);
CREATE VIEW store_staff AS
    SELECT stores.name AS store, employees.name AS employee
    FROM employees JOIN stores ON employees.store_id = stores.id;
"""
STORES = [(1, "Northgate", "Lyon"), (2, "Riverside", "  Porto "), (3, "Old Town", "Leeds")]
EMPLOYEES = [
    (1, "Alice Martin", "Cashier", 2100.0, 1),
    (2, "Bruno Silva", "Store Manager", 4200.0, 2),
    (3, "Chloe Novak", "Cashier", 2150.0, 3),
    (4, "Diego Rossi", "Stock Clerk", 1900.0, 1),
]
PRODUCTS = [
    (1, "Espresso Machine", "Kitchen", 249.0),
    (2, "Yoga Mat", "Sports", 25.0),
    (3, "Desk Lamp", "Lighting", 39.5),
]


def make_shop(path: Path) -> Path:
    """Write the shop database to `path`: 3 stores, 4 employees, 3 products, 240 sales."""
    with sqlite3.connect(path) as connection:
        connection.executescript(SHOP_SCHEMA)
        connection.executemany("INSERT INTO stores VALUES (?, ?, ?)", STORES)
        connection.executemany("INSERT INTO employees VALUES (?, ?, ?, ?, ?)", EMPLOYEES)
        connection.executemany("INSERT INTO products VALUES (?, ?, ?, ?)", PRODUCTS)
        connection.executemany(
            "INSERT INTO sales VALUES (?, ?, ?, ?, ?)",
            [
                (i, i % 4 + 1, i % 3 + 1, i % 5 + 1, f"2024-{i % 12 + 1:02d}-{i % 28 + 1:02d}")
                for i in range(1, 241)
            ],
        )
    connection.close()
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
