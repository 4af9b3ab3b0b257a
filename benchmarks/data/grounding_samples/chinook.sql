-- A digital music store, after the Chinook sample database (Luis Rocha), SQLite edition:
-- PascalCase columns, plural table names, employees.ReportsTo pointing back at employees.
-- tracks.MediaTypeId and invoice_items.TrackId join by name and value only (no REFERENCES).
-- Numbers kept as text: PostalCode, Phone, Fax, albums.ReleaseYear.
CREATE TABLE artists (
  ArtistId INTEGER PRIMARY KEY,
  Name TEXT
);
CREATE TABLE albums (
  AlbumId INTEGER PRIMARY KEY,
  Title TEXT NOT NULL,
  ArtistId INTEGER NOT NULL REFERENCES artists (ArtistId),
  ReleaseYear TEXT
);
CREATE TABLE genres (
  GenreId INTEGER PRIMARY KEY,
  Name TEXT
);
CREATE TABLE media_types (
  MediaTypeId INTEGER PRIMARY KEY,
  Name TEXT
);
CREATE TABLE tracks (
  TrackId INTEGER PRIMARY KEY,
  Name TEXT NOT NULL,
  AlbumId INTEGER REFERENCES albums (AlbumId),
  MediaTypeId INTEGER NOT NULL,
  GenreId INTEGER REFERENCES genres (GenreId),
  Composer TEXT,
  Milliseconds INTEGER NOT NULL,
  Bytes INTEGER,
  UnitPrice NUMERIC NOT NULL
);
CREATE TABLE playlists (
  PlaylistId INTEGER PRIMARY KEY,
  Name TEXT
);
CREATE TABLE playlist_track (
  PlaylistId INTEGER NOT NULL REFERENCES playlists (PlaylistId),
  TrackId INTEGER NOT NULL REFERENCES tracks (TrackId),
  PRIMARY KEY (PlaylistId, TrackId)
);
CREATE TABLE employees (
  EmployeeId INTEGER PRIMARY KEY,
  LastName TEXT NOT NULL,
  FirstName TEXT NOT NULL,
  Title TEXT,
  ReportsTo INTEGER REFERENCES employees (EmployeeId),
  BirthDate DATETIME,
  HireDate DATETIME,
  Address TEXT,
  City TEXT,
  State TEXT,
  Country TEXT,
  PostalCode TEXT,
  Phone TEXT,
  Fax TEXT,
  Email TEXT
);
CREATE TABLE customers (
  CustomerId INTEGER PRIMARY KEY,
  FirstName TEXT NOT NULL,
  LastName TEXT NOT NULL,
  Company TEXT,
  Address TEXT,
  City TEXT,
  State TEXT,
  Country TEXT,
  PostalCode TEXT,
  Phone TEXT,
  Fax TEXT,
  Email TEXT NOT NULL,
  SupportRepId INTEGER REFERENCES employees (EmployeeId)
);
CREATE TABLE invoices (
  InvoiceId INTEGER PRIMARY KEY,
  CustomerId INTEGER NOT NULL REFERENCES customers (CustomerId),
  InvoiceDate DATETIME NOT NULL,
  BillingAddress TEXT,
  BillingCity TEXT,
  BillingState TEXT,
  BillingCountry TEXT,
  BillingPostalCode TEXT,
  Total NUMERIC NOT NULL
);
CREATE TABLE invoice_items (
  InvoiceLineId INTEGER PRIMARY KEY,
  InvoiceId INTEGER NOT NULL REFERENCES invoices (InvoiceId),
  TrackId INTEGER NOT NULL,
  UnitPrice NUMERIC NOT NULL,
  Quantity INTEGER NOT NULL
);
