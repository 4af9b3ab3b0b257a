-- A DVD rental chain, after MySQL's Sakila sample database (as ported to SQLite).
-- Declared joins carry REFERENCES; inventory.store_id, rental.staff_id and payment.rental_id
-- join by name and value only, as in ports that dropped those constraints.
-- Numbers kept as text: film.release_year, address.postal_code, address.phone.
CREATE TABLE language (
  language_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  last_update TIMESTAMP NOT NULL
);
CREATE TABLE category (
  category_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  last_update TIMESTAMP NOT NULL
);
CREATE TABLE actor (
  actor_id INTEGER PRIMARY KEY,
  first_name TEXT NOT NULL,
  last_name TEXT NOT NULL,
  last_update TIMESTAMP NOT NULL
);
CREATE TABLE country (
  country_id INTEGER PRIMARY KEY,
  country TEXT NOT NULL,
  last_update TIMESTAMP NOT NULL
);
CREATE TABLE city (
  city_id INTEGER PRIMARY KEY,
  city TEXT NOT NULL,
  country_id INTEGER NOT NULL REFERENCES country (country_id),
  last_update TIMESTAMP NOT NULL
);
CREATE TABLE address (
  address_id INTEGER PRIMARY KEY,
  address TEXT NOT NULL,
  address2 TEXT,
  district TEXT NOT NULL,
  city_id INTEGER NOT NULL REFERENCES city (city_id),
  postal_code TEXT,
  phone TEXT NOT NULL,
  last_update TIMESTAMP NOT NULL
);
CREATE TABLE film (
  film_id INTEGER PRIMARY KEY,
  title TEXT NOT NULL,
  description TEXT,
  release_year TEXT,
  language_id INTEGER NOT NULL REFERENCES language (language_id),
  original_language_id INTEGER REFERENCES language (language_id),
  rental_duration INTEGER NOT NULL,
  rental_rate NUMERIC NOT NULL,
  length INTEGER,
  replacement_cost NUMERIC NOT NULL,
  rating TEXT,
  special_features TEXT,
  last_update TIMESTAMP NOT NULL
);
CREATE TABLE film_actor (
  actor_id INTEGER NOT NULL REFERENCES actor (actor_id),
  film_id INTEGER NOT NULL REFERENCES film (film_id),
  last_update TIMESTAMP NOT NULL,
  PRIMARY KEY (actor_id, film_id)
);
CREATE TABLE film_category (
  film_id INTEGER NOT NULL REFERENCES film (film_id),
  category_id INTEGER NOT NULL REFERENCES category (category_id),
  last_update TIMESTAMP NOT NULL,
  PRIMARY KEY (film_id, category_id)
);
CREATE TABLE staff (
  staff_id INTEGER PRIMARY KEY,
  first_name TEXT NOT NULL,
  last_name TEXT NOT NULL,
  address_id INTEGER NOT NULL REFERENCES address (address_id),
  email TEXT,
  store_id INTEGER NOT NULL REFERENCES store (store_id),
  active INTEGER NOT NULL,
  username TEXT NOT NULL,
  password TEXT,
  last_update TIMESTAMP NOT NULL
);
CREATE TABLE store (
  store_id INTEGER PRIMARY KEY,
  manager_staff_id INTEGER NOT NULL REFERENCES staff (staff_id),
  address_id INTEGER NOT NULL REFERENCES address (address_id),
  last_update TIMESTAMP NOT NULL
);
CREATE TABLE customer (
  customer_id INTEGER PRIMARY KEY,
  store_id INTEGER NOT NULL REFERENCES store (store_id),
  first_name TEXT NOT NULL,
  last_name TEXT NOT NULL,
  email TEXT,
  address_id INTEGER NOT NULL REFERENCES address (address_id),
  active INTEGER NOT NULL,
  create_date TIMESTAMP NOT NULL,
  last_update TIMESTAMP NOT NULL
);
CREATE TABLE inventory (
  inventory_id INTEGER PRIMARY KEY,
  film_id INTEGER NOT NULL REFERENCES film (film_id),
  store_id INTEGER NOT NULL,
  last_update TIMESTAMP NOT NULL
);
CREATE TABLE rental (
  rental_id INTEGER PRIMARY KEY,
  rental_date TIMESTAMP NOT NULL,
  inventory_id INTEGER NOT NULL REFERENCES inventory (inventory_id),
  customer_id INTEGER NOT NULL REFERENCES customer (customer_id),
  return_date TIMESTAMP,
  staff_id INTEGER NOT NULL,
  last_update TIMESTAMP NOT NULL
);
CREATE TABLE payment (
  payment_id INTEGER PRIMARY KEY,
  customer_id INTEGER NOT NULL REFERENCES customer (customer_id),
  staff_id INTEGER NOT NULL REFERENCES staff (staff_id),
  rental_id INTEGER,
  amount NUMERIC NOT NULL,
  payment_date TIMESTAMP NOT NULL,
  last_update TIMESTAMP NOT NULL
);
