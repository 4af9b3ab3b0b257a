-- A company's HR and order-entry database, after Oracle's HR and OE sample schemas
-- (regions .. job_history, customers .. inventories, product_descriptions) with the
-- purchasing and shipping tables an AdventureWorks-style ERP adds (suppliers, shippers,
-- purchase orders, shipments, invoices, payments): 23 tables.
-- Joined by name and value only (no REFERENCES): locations.country_id, inventories.warehouse_id,
-- order_items.product_id, shipments.shipper_id.
-- Numbers kept as text: postal_code, phone_number, phone, products.model_year.
CREATE TABLE regions (
  region_id INTEGER PRIMARY KEY,
  region_name TEXT NOT NULL
);
CREATE TABLE countries (
  country_id TEXT PRIMARY KEY,
  country_name TEXT NOT NULL,
  region_id INTEGER REFERENCES regions (region_id)
);
CREATE TABLE locations (
  location_id INTEGER PRIMARY KEY,
  street_address TEXT,
  postal_code TEXT,
  city TEXT NOT NULL,
  state_province TEXT,
  country_id TEXT
);
CREATE TABLE jobs (
  job_id TEXT PRIMARY KEY,
  job_title TEXT NOT NULL,
  min_salary INTEGER,
  max_salary INTEGER
);
CREATE TABLE departments (
  department_id INTEGER PRIMARY KEY,
  department_name TEXT NOT NULL,
  manager_id INTEGER REFERENCES employees (employee_id),
  location_id INTEGER REFERENCES locations (location_id)
);
CREATE TABLE employees (
  employee_id INTEGER PRIMARY KEY,
  first_name TEXT,
  last_name TEXT NOT NULL,
  email TEXT NOT NULL,
  phone_number TEXT,
  hire_date DATE NOT NULL,
  job_id TEXT NOT NULL REFERENCES jobs (job_id),
  salary NUMERIC,
  commission_pct NUMERIC,
  manager_id INTEGER REFERENCES employees (employee_id),
  department_id INTEGER REFERENCES departments (department_id)
);
CREATE TABLE job_history (
  employee_id INTEGER NOT NULL REFERENCES employees (employee_id),
  start_date DATE NOT NULL,
  end_date DATE NOT NULL,
  job_id TEXT NOT NULL REFERENCES jobs (job_id),
  department_id INTEGER REFERENCES departments (department_id),
  PRIMARY KEY (employee_id, start_date)
);
CREATE TABLE customers (
  customer_id INTEGER PRIMARY KEY,
  cust_first_name TEXT NOT NULL,
  cust_last_name TEXT NOT NULL,
  street_address TEXT,
  postal_code TEXT,
  city TEXT,
  state_province TEXT,
  country_id TEXT REFERENCES countries (country_id),
  phone_number TEXT,
  credit_limit NUMERIC,
  cust_email TEXT,
  account_mgr_id INTEGER REFERENCES employees (employee_id),
  date_of_birth DATE,
  marital_status TEXT,
  gender TEXT,
  income_level TEXT
);
CREATE TABLE warehouses (
  warehouse_id INTEGER PRIMARY KEY,
  warehouse_name TEXT,
  location_id INTEGER REFERENCES locations (location_id)
);
CREATE TABLE product_categories (
  category_id INTEGER PRIMARY KEY,
  category_name TEXT NOT NULL,
  category_description TEXT,
  parent_category_id INTEGER REFERENCES product_categories (category_id)
);
CREATE TABLE suppliers (
  supplier_id INTEGER PRIMARY KEY,
  supplier_name TEXT NOT NULL,
  contact_name TEXT,
  phone TEXT,
  country_id TEXT REFERENCES countries (country_id)
);
CREATE TABLE products (
  product_id INTEGER PRIMARY KEY,
  product_name TEXT NOT NULL,
  product_description TEXT,
  category_id INTEGER REFERENCES product_categories (category_id),
  weight_class INTEGER,
  supplier_id INTEGER REFERENCES suppliers (supplier_id),
  product_status TEXT,
  list_price NUMERIC,
  min_price NUMERIC,
  model_year TEXT
);
CREATE TABLE product_descriptions (
  product_id INTEGER NOT NULL REFERENCES products (product_id),
  language_id TEXT NOT NULL,
  translated_name TEXT NOT NULL,
  PRIMARY KEY (product_id, language_id)
);
CREATE TABLE inventories (
  product_id INTEGER NOT NULL REFERENCES products (product_id),
  warehouse_id INTEGER NOT NULL,
  quantity_on_hand INTEGER NOT NULL,
  PRIMARY KEY (product_id, warehouse_id)
);
CREATE TABLE promotions (
  promo_id INTEGER PRIMARY KEY,
  promo_name TEXT NOT NULL
);
CREATE TABLE orders (
  order_id INTEGER PRIMARY KEY,
  order_date DATE NOT NULL,
  order_mode TEXT,
  customer_id INTEGER NOT NULL REFERENCES customers (customer_id),
  order_status INTEGER,
  order_total NUMERIC,
  sales_rep_id INTEGER REFERENCES employees (employee_id),
  promotion_id INTEGER REFERENCES promotions (promo_id)
);
CREATE TABLE order_items (
  order_id INTEGER NOT NULL REFERENCES orders (order_id),
  line_item_id INTEGER NOT NULL,
  product_id INTEGER NOT NULL,
  unit_price NUMERIC,
  quantity INTEGER,
  PRIMARY KEY (order_id, line_item_id)
);
CREATE TABLE shippers (
  shipper_id INTEGER PRIMARY KEY,
  company_name TEXT NOT NULL,
  phone TEXT
);
CREATE TABLE shipments (
  shipment_id INTEGER PRIMARY KEY,
  order_id INTEGER NOT NULL REFERENCES orders (order_id),
  shipper_id INTEGER,
  warehouse_id INTEGER REFERENCES warehouses (warehouse_id),
  shipped_date DATE,
  tracking_number TEXT
);
CREATE TABLE invoices (
  invoice_id INTEGER PRIMARY KEY,
  order_id INTEGER NOT NULL REFERENCES orders (order_id),
  invoice_date DATE NOT NULL,
  amount_due NUMERIC NOT NULL,
  status TEXT NOT NULL
);
CREATE TABLE payments (
  payment_id INTEGER PRIMARY KEY,
  invoice_id INTEGER NOT NULL REFERENCES invoices (invoice_id),
  payment_date DATE NOT NULL,
  amount NUMERIC NOT NULL,
  method TEXT
);
CREATE TABLE purchase_orders (
  purchase_order_id INTEGER PRIMARY KEY,
  supplier_id INTEGER NOT NULL REFERENCES suppliers (supplier_id),
  warehouse_id INTEGER REFERENCES warehouses (warehouse_id),
  order_date DATE NOT NULL,
  status TEXT
);
CREATE TABLE purchase_order_lines (
  purchase_order_id INTEGER NOT NULL REFERENCES purchase_orders (purchase_order_id),
  product_id INTEGER NOT NULL REFERENCES products (product_id),
  quantity INTEGER NOT NULL,
  unit_cost NUMERIC,
  PRIMARY KEY (purchase_order_id, product_id)
);
