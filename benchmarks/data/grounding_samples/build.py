"""Build, label and split the independent schema-grounding sample set (issue 23, point 3).

    python build.py OUTDIR    write sakila.db, chinook.db and erp.db into OUTDIR
    python build.py --label   recompute the labels of <db>.questions.yaml from their gold SQL
    python build.py --split   write <db>.tuning.yaml and <db>.heldout.yaml from the questions

Building needs only the standard library: each database is its DDL file (<db>.sql) filled
with rows drawn from a seed, so the same seed gives the same file. Labelling needs sqlglot and
PyYAML; see README.md for the label and split rules.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
DATABASES = ("sakila", "chinook", "erp")
SEED = 23


# ---------------------------------------------------------------------------------------------
# Value pools: real names, written here, never fetched.


def _words(text: str) -> list[str]:
    return [w.strip() for w in text.split(",") if w.strip()]


@dataclass(frozen=True)
class Place:
    country: str
    iso: str
    region: str
    city: str


def _places() -> tuple[list[tuple[str, str, str]], list[Place]]:
    """Countries (name, iso, region) in file order, and every distinct city with its country."""
    countries, places, seen = [], [], set()
    for line in (HERE / "places.txt").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        country, iso, region, cities = line.split("|")
        countries.append((country, iso, region))
        for city in cities.split(", "):
            if city not in seen:
                seen.add(city)
                places.append(Place(country, iso, region, city))
    return countries, places


COUNTRIES, PLACES = _places()
REGIONS = ["Europe", "Americas", "Asia", "Middle East and Africa"]

FIRST = _words(
    "Mary, Patricia, Linda, Barbara, Elizabeth, Jennifer, Maria, Susan, Margaret, Dorothy, "
    "Lisa, Nancy, Karen, Betty, Helen, Sandra, Donna, Carol, Ruth, Sharon, Michelle, Laura, "
    "Sarah, Kimberly, Deborah, Jessica, Shirley, Cynthia, Angela, Melissa, James, John, Robert, "
    "Michael, William, David, Richard, Charles, Joseph, Thomas, Christopher, Daniel, Paul, Mark, "
    "Donald, George, Kenneth, Steven, Edward, Brian, Ronald, Anthony, Kevin, Jason, Matthew, "
    "Gary, Timothy, Jose, Larry, Jeffrey, Frank, Scott, Eric, Stephen, Andrew, Raymond, Hiroshi, "
    "Yuki, Priya, Arjun, Fatima, Omar, Lucia, Mateo, Ingrid, Lars, Sofia, Luca, Chen, Wei, "
    "Aisha, Kwame, Olga, Dmitri, Ana, Joao, Camille, Pierre, Hannah, Lukas, Emma, Noah"
)
LAST = _words(
    "Smith, Johnson, Williams, Jones, Brown, Davis, Miller, Wilson, Moore, Taylor, Anderson, "
    "Thomas, Jackson, White, Harris, Martin, Thompson, Garcia, Martinez, Robinson, Clark, "
    "Rodriguez, Lewis, Lee, Walker, Hall, Allen, Young, Hernandez, King, Wright, Lopez, Hill, "
    "Scott, Green, Adams, Baker, Gonzalez, Nelson, Carter, Mitchell, Perez, Roberts, Turner, "
    "Phillips, Campbell, Parker, Evans, Edwards, Collins, Tanaka, Suzuki, Sato, Patel, Sharma, "
    "Khan, Okafor, Mensah, Ivanov, Petrov, Silva, Santos, Costa, Rossi, Bianchi, Muller, "
    "Schmidt, Schneider, Dubois, Lefebvre, Jansen, De Vries, Nielsen, Hansen, Johansson, "
    "Larsen, Kowalski, Novak, Horvath, Papadopoulos, Yilmaz, Cohen, Nguyen, Tran, Kim, Park, "
    "Wang, Li, Zhang, Liu, Chen, O'Brien, Murphy, Kelly, Fernandes, Guinness, Wahlberg"
)
ADJECTIVES = _words(
    "Academy, Ace, Affair, African, Airport, Alabama, Alamo, Alaska, Ali, Alien, Amadeus, "
    "Amelie, American, Angels, Apache, Arabia, Arizona, Atlantis, Attraction, Bang, Beach, "
    "Bedazzled, Betrayed, Birds, Blade, Blanket, Blues, Boiled, Bound, Brave, Bright, Bull, "
    "Caddyshack, Canyon, Casablanca, Celebrity, Chamber, Chicago, Chill, Circus, Clockwork, "
    "Crystal, Dancing, Desert, Dragon, Drifter, Dynamite, Eagles, Element, Empire, Fantasia, "
    "Fiction, Flamingos, Frontier, Galaxy, Gladiator, Golden, Grit, Half, Heaven, Hollow, "
    "Hunting, Iron, Jungle, Lonely, Lost, Midnight, Mission, Moonshine, Mystic, Northwest, "
    "Outlaw, Paradise, Pirates, Purple, Rebel, Rocket, Saturday, Silent, Spirit, Stone, "
    "Sunset, Thief, Titanic, Velvet, Wild, Wonder, Zorro"
)
NOUNS = _words(
    "Dinosaur, Goldfinger, Harvey, Hobbit, Egg, Lust, Elf, Gables, Roof, Fury, Graffiti, Idols, "
    "Trip, Kiss, Hook, Wedding, Hunter, Rings, Shawshank, Anything, Pond, Swarm, Doors, Splash, "
    "Princess, Coast, Tomatoes, Mummy, Wars, Orange, Fever, Express, Crossing, Divorce, "
    "Journey, Lady, Legend, Machine, Mile, Money, Night, Odyssey, Patriot, Quest, River, "
    "Saga, Secret, Storm, Story, Sun, Theory, Trouble, Voyage, Window, Witness, Zone"
)
STREETS = _words(
    "Main, Oak, Pine, Maple, Cedar, Elm, Lake, Hill, Park, Church, Mill, Market, King, Queen, "
    "Bridge, Station, Garden, Harbor, Sunset, River, Forest, Valley, Meadow, Orchard, Spring"
)
STREET_KINDS = _words("Street, Avenue, Road, Lane, Drive, Boulevard, Way, Place, Parkway")
DISTRICTS = _words(
    "California, Texas, New York, Ontario, Buenos Aires, Sao Paulo, Maharashtra, Tamil Nadu, "
    "Punjab, Gauteng, Kanagawa, Hokkaido, Bavaria, Lombardy, Catalonia, Andalusia, Ile-de-France, "
    "Queensland, Victoria, Alberta, Quebec, Jalisco, Nuevo Leon, Guangdong, Sichuan, Gyeonggi, "
    "West Java, Central Luzon, Lagos, Nairobi, Istanbul, Attica, Mazowieckie, Stockholm, "
    "England, Scotland, Wales, Leinster, North Holland, Flanders"
)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().splitlines()]


# ---------------------------------------------------------------------------------------------
# The engine: one rule per column that is not a key; keys follow the schema.


@dataclass
class Ctx:
    """What a column rule sees: the row so far, its index, and the tables already filled."""

    rng: random.Random
    i: int
    row: dict[str, Any]
    made: dict[str, list[dict[str, Any]]]
    rows: dict[str, int]


Rule = list[Any] | Callable[[Ctx], Any]


@dataclass
class Spec:
    rows: dict[str, int]
    rules: dict[str, Rule] = field(default_factory=dict)


def day(ctx: Ctx, first: int, last: int) -> str:
    start = dt.date(first, 1, 1)
    span = (dt.date(last + 1, 1, 1) - start).days
    return (start + dt.timedelta(days=ctx.rng.randrange(span))).isoformat()


def moment(ctx: Ctx, first: int, last: int) -> str:
    date, r = day(ctx, first, last), ctx.rng
    return f"{date} {r.randrange(24):02d}:{r.randrange(60):02d}:{r.randrange(60):02d}"


def digits(ctx: Ctx, n: int) -> str:
    return "".join(str(ctx.rng.randrange(10)) for _ in range(n))


def street(ctx: Ctx) -> str:
    r = ctx.rng
    return f"{r.randrange(1, 2000)} {r.choice(STREETS)} {r.choice(STREET_KINDS)}"


def pick(pool: list[Any]) -> Callable[[Ctx], Any]:
    """A random draw from `pool` on every row (a plain list rule walks the pool first)."""
    return lambda c: c.rng.choice(pool)


def fill(connection: sqlite3.Connection, spec: Spec, seed: str) -> None:
    """Insert `spec.rows[table]` rows into each table, in the order the DDL creates them."""
    rng = random.Random(seed)
    tables = [
        t
        for (t,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid"
        )
    ]
    info = {t: connection.execute(f'PRAGMA table_info("{t}")').fetchall() for t in tables}
    # A single-column primary key makes its column name a join key: declared or not, a column
    # of another table with that name joins to it.
    keys: dict[str, tuple[str, str, str]] = {}
    for t in tables:
        pk = [c for c in info[t] if c[5]]
        if len(pk) == 1:
            keys[pk[0][1].lower()] = (t, pk[0][1], pk[0][2].upper())
    made: dict[str, list[dict[str, Any]]] = {}
    for t in tables:
        declared = {fk[3]: fk[2] for fk in connection.execute(f'PRAGMA foreign_key_list("{t}")')}
        rows = []
        for i in range(spec.rows[t]):
            ctx = Ctx(rng, i, {}, made, spec.rows)
            for column in info[t]:
                ctx.row[column[1]] = _value(ctx, t, column, declared, keys, spec.rules)
            rows.append(ctx.row)
        made[t] = rows
        names = [c[1] for c in info[t]]
        marks = ", ".join("?" for _ in names)
        quoted = ", ".join(f'"{n}"' for n in names)
        connection.executemany(  # a composite key drawn twice keeps its first row
            f'INSERT OR IGNORE INTO "{t}" ({quoted}) VALUES ({marks})',
            [[r[n] for n in names] for r in rows],
        )


def _value(
    ctx: Ctx,
    table: str,
    column: tuple[Any, ...],
    declared: dict[str, str],
    keys: dict[str, tuple[str, str, str]],
    rules: dict[str, Rule],
) -> Any:
    name, kind, pk = column[1], column[2].upper(), column[5]
    if pk and kind == "INTEGER" and keys.get(name.lower(), ("",))[0] == table:
        return ctx.i + 1  # before the rules: a rule named for a foreign key must not hit it
    rule = rules.get(f"{table}.{name}", rules.get(name))
    if isinstance(rule, list):
        return rule[ctx.i] if ctx.i < len(rule) else ctx.rng.choice(rule)
    if rule is not None:
        return rule(ctx)
    parent = declared.get(name) or keys.get(name.lower(), (table,))[0]
    if parent != table:
        _, key, key_kind = (
            keys[name.lower()]
            if name.lower() in keys
            else next(v for v in keys.values() if v[0] == parent)
        )
        if key_kind == "INTEGER":
            return ctx.rng.randint(1, ctx.rows[parent])
        return ctx.rng.choice(ctx.made[parent])[key]
    msg = f"no rule for {table}.{name} ({kind})"
    raise ValueError(msg)


# ---------------------------------------------------------------------------------------------
# The three databases.


def _email(first: str, last: str, domain: str) -> Callable[[Ctx], str]:
    def rule(c: Ctx) -> str:
        local = f"{c.row[first]}.{c.row[last]}".lower().replace(" ", "").replace("'", "")
        return f"{local}@{domain}"

    return rule


PLACES_IN_FILMS = ["A Jet Boat", "The Gulf of Mexico", "A Shark Tank", "Ancient India", "Berlin"]


def _film_description(c: Ctx) -> str:
    r = c.rng
    return (
        f"A {r.choice(['Epic', 'Touching', 'Thoughtful', 'Fanciful', 'Astounding', 'Boring'])}"
        f" {r.choice(['Drama', 'Story', 'Documentary', 'Saga', 'Yarn', 'Panorama'])} of a "
        f"{r.choice(['Dentist', 'Astronaut', 'Feminist', 'Squirrel', 'Robot', 'Cat'])} And a "
        f"{r.choice(['Monkey', 'Car', 'Mad Scientist', 'Lumberjack', 'Boat', 'Dog'])} who must "
        f"{r.choice(['Chase', 'Outgun', 'Defeat', 'Meet', 'Find', 'Reach'])} a "
        f"{r.choice(['Student', 'Girl', 'Husband', 'Pioneer', 'Crocodile', 'Hunter'])} in "
        f"{r.choice(PLACES_IN_FILMS)}"
    )


def sakila() -> Spec:
    countries = sorted({p.country for p in PLACES})
    stamp = "2006-02-15 04:34:33"  # Sakila's every last_update
    upper_first, upper_last = [n.upper() for n in FIRST], [n.upper() for n in LAST]
    return Spec(
        rows={
            "language": 6,
            "category": 16,
            "actor": 200,
            "country": len(countries),
            "city": len(PLACES),
            "address": 1000,
            "film": 500,
            "film_actor": 2500,
            "film_category": 600,
            "staff": 2,
            "store": 2,
            "customer": 599,
            "inventory": 2000,
            "rental": 4000,
            "payment": 4000,
        },
        rules={
            "last_update": lambda c: stamp,
            "language.name": _words("English, Italian, Japanese, Mandarin, French, German"),
            "category.name": _words(
                "Action, Animation, Children, Classics, Comedy, Documentary, Drama, Family, "
                "Foreign, Games, Horror, Music, New, Sci-Fi, Sports, Travel"
            ),
            "actor.first_name": pick(upper_first),
            "actor.last_name": pick(upper_last),
            "customer.first_name": pick(upper_first),
            "customer.last_name": pick(upper_last),
            "country.country": countries,
            "city.city": [p.city for p in PLACES],
            "city.country_id": lambda c: countries.index(PLACES[c.i].country) + 1,
            "address.address": street,
            "address.address2": lambda c: None,
            "address.district": pick(DISTRICTS),
            "address.postal_code": lambda c: digits(c, 5),
            "address.phone": lambda c: digits(c, 12),
            "film.title": lambda c: f"{c.rng.choice(ADJECTIVES)} {c.rng.choice(NOUNS)}".upper(),
            "film.description": _film_description,
            "film.release_year": lambda c: str(c.rng.randint(1995, 2012)),
            "film.original_language_id": lambda c: c.rng.choice([None, None, None, 2, 3, 5]),
            "rental_duration": lambda c: c.rng.randint(3, 7),
            "rental_rate": pick([0.99, 2.99, 4.99]),
            "length": lambda c: c.rng.randint(46, 185),
            "replacement_cost": lambda c: c.rng.randint(9, 29) + 0.99,
            "rating": pick(["G", "PG", "PG-13", "R", "NC-17"]),
            "special_features": pick(
                [
                    "Trailers",
                    "Commentaries",
                    "Deleted Scenes",
                    "Behind the Scenes",
                    "Trailers,Deleted Scenes",
                    "Commentaries,Behind the Scenes",
                ]
            ),
            "staff.first_name": ["Mike", "Jon"],
            "staff.last_name": ["Hillyer", "Stephens"],
            "staff.store_id": [1, 2],
            "store.manager_staff_id": [1, 2],
            "staff.email": _email("first_name", "last_name", "sakilastaff.com"),
            "customer.email": _email("first_name", "last_name", "sakilacustomer.org"),
            "active": lambda c: 0 if c.rng.random() < 0.03 else 1,
            "username": lambda c: c.row["first_name"],
            "password": lambda c: hashlib.sha1(str(c.i).encode()).hexdigest(),
            "create_date": lambda c: moment(c, 2006, 2006),
            "rental_date": lambda c: moment(c, 2005, 2005),
            "return_date": lambda c: None if c.rng.random() < 0.05 else moment(c, 2005, 2005),
            "staff_id": lambda c: c.rng.randint(1, 2),
            "amount": pick([0.99, 1.99, 2.99, 3.99, 4.99, 5.99, 6.99, 7.99, 8.99, 9.99, 10.99]),
            "payment_date": lambda c: moment(c, 2005, 2005),
        },
    )


ARTISTS = _words(
    "AC/DC, Accept, Aerosmith, Alanis Morissette, Alice In Chains, Antonio Carlos Jobim, "
    "Apocalyptica, Audioslave, BackBeat, Billy Cobham, Black Label Society, Black Sabbath, "
    "Body Count, Bruce Dickinson, Buddy Guy, Caetano Veloso, Chico Buarque, Chico Science, "
    "Cidade Negra, Claudio Zoli, Various Artists, Led Zeppelin, Frank Zappa, Marcos Valle, "
    "Milton Nascimento, Azymuth, Gilberto Gil, Joao Gilberto, Bebel Gilberto, Jorge Vercilo, "
    "Baby Consuelo, Ney Matogrosso, Luiz Melodia, Nando Reis, Pedro Luis, Deep Purple, "
    "Faith No More, Falamansa, Foo Fighters, Frank Sinatra, Funk Como Le Gusta, Godsmack, "
    "Guns N' Roses, Incognito, Iron Maiden, James Brown, Jamiroquai, JET, Jimi Hendrix, "
    "Joe Satriani, Jota Quest, Judas Priest, Legiao Urbana, Lenny Kravitz, Lulu Santos, "
    "Marillion, Marisa Monte, Men At Work, Metallica, Miles Davis, Motorhead, Mundo Livre S/A, "
    "Nirvana, O Rappa, Os Paralamas Do Sucesso, Ozzy Osbourne, Page & Plant, Paul D'Ianno, "
    "Pearl Jam, Pink Floyd, Planet Hemp, Queen, R.E.M., Raul Seixas, Red Hot Chili Peppers, "
    "Rush, Skank, Smashing Pumpkins, Soundgarden, Stevie Ray Vaughan, Stone Temple Pilots, "
    "System Of A Down, Terry Bozzio, The Black Crowes, The Clash, The Cult, The Doors, "
    "The Police, The Rolling Stones, The Tea Party, The Who, Tim Maia, Titas, Battlestar "
    "Galactica, Heroes, Lost, U2, UB40, Van Halen, Velvet Revolver, Zeca Pagodinho, "
    "Kiss, Spyro Gyra, Green Day, Creedence Clearwater Revival, Cassia Eller, Def Leppard, "
    "Dennis Chambers, Djavan, Eric Clapton, Ed Motta, Elis Regina, Eugene Ormandy, "
    "Berliner Philharmoniker, Yo-Yo Ma, Academy of St. Martin in the Fields, Maria Callas, "
    "Luciano Pavarotti, Amy Winehouse, Aisha Duo, Habib Koite and Bamada, Karsh Kale, "
    "Adrian Leaper, Emerson String Quartet, Nash Ensemble, Philip Glass Ensemble, Otto Klemperer"
)
GENRES = _words(
    "Rock, Jazz, Metal, Alternative & Punk, Rock And Roll, Blues, Latin, Reggae, Pop, "
    "Soundtrack, Bossa Nova, Easy Listening, Heavy Metal, R&B/Soul, Electronica/Dance, World, "
    "Hip Hop/Rap, Science Fiction, TV Shows, Sci Fi & Fantasy, Drama, Comedy, Alternative, "
    "Classical, Opera"
)
MEDIA = _words(
    "MPEG audio file, Protected AAC audio file, Protected MPEG-4 video file, "
    "Purchased AAC audio file, AAC audio file"
)
PLAYLISTS = _lines("""
    Music
    Movies
    TV Shows
    Audiobooks
    90s Music
    Music Videos
    Classical
    Classical 101 - Deep Cuts
    Classical 101 - Next Steps
    Classical 101 - The Basics
    Grunge
    Heavy Metal Classic
    On-The-Go 1
    Brazilian Music
""")
COMPANIES = _words(
    "Embraer, JetBrains s.r.o., Woodstock Discos, Telus, Rogers Canada, Google Inc., "
    "Apple Inc., Microsoft Corporation, Banco do Brasil S.A., Riotur"
)
CHINOOK_COUNTRY = {"United States": "USA"}  # Chinook spells it so; questions say otherwise
STATES = {
    "United States": _words("CA, NY, TX, WA, IL, FL, MA, AZ, NV, UT, WI"),
    "Canada": _words("AB, BC, ON, QC, NS, MB, NT, YT"),
    "Brazil": _words("SP, RJ, DF, MG, RS"),
    "Australia": _words("NSW, VIC, QLD"),
}


def _state(c: Ctx) -> str | None:
    states = STATES.get(PLACES[c.i % len(PLACES)].country)
    return c.rng.choice(states) if states else None


def chinook() -> Spec:
    def billing(field_name: str) -> Callable[[Ctx], Any]:
        return lambda c: c.made["customers"][c.row["CustomerId"] - 1][field_name]

    staff = _lines("""
        Adams|Andrew|General Manager|
        Edwards|Nancy|Sales Manager|1
        Peacock|Jane|Sales Support Agent|2
        Park|Margaret|Sales Support Agent|2
        Johnson|Steve|Sales Support Agent|2
        Mitchell|Michael|IT Manager|1
        King|Robert|IT Staff|6
        Callahan|Laura|IT Staff|6
    """)
    people = [line.split("|") for line in staff]
    return Spec(
        rows={
            "artists": len(ARTISTS),
            "albums": 347,
            "genres": len(GENRES),
            "media_types": len(MEDIA),
            "tracks": 3000,
            "playlists": len(PLAYLISTS),
            "playlist_track": 4000,
            "employees": 8,
            "customers": len(PLACES),
            "invoices": 1500,
            "invoice_items": 4000,
        },
        rules={
            "artists.Name": ARTISTS,
            "genres.Name": GENRES,
            "media_types.Name": MEDIA,
            "playlists.Name": PLAYLISTS,
            "albums.Title": lambda c: f"{c.rng.choice(ADJECTIVES)} {c.rng.choice(NOUNS)}",
            "albums.ReleaseYear": lambda c: str(c.rng.randint(1965, 2012)),
            "tracks.Name": lambda c: f"{c.rng.choice(ADJECTIVES)} {c.rng.choice(NOUNS)}".title(),
            "MediaTypeId": lambda c: c.rng.choice([1, 1, 1, 2, 2, 3, 4, 5]),
            "Composer": lambda c: c.rng.choice([None, *ARTISTS[:40]]),
            "Milliseconds": lambda c: c.rng.randint(60_000, 600_000),
            "Bytes": lambda c: c.row["Milliseconds"] * 32,
            "tracks.UnitPrice": lambda c: 1.99 if c.row["MediaTypeId"] == 3 else 0.99,
            "employees.LastName": [p[0] for p in people],
            "employees.FirstName": [p[1] for p in people],
            "employees.Title": [p[2] for p in people],
            "ReportsTo": [int(p[3]) if p[3] else None for p in people],
            "BirthDate": lambda c: moment(c, 1947, 1973),
            "HireDate": lambda c: moment(c, 2002, 2004),
            "employees.City": pick(["Calgary", "Edmonton", "Lethbridge"]),
            "employees.State": lambda c: "AB",
            "employees.Country": lambda c: "Canada",
            "customers.FirstName": pick(FIRST),
            "customers.LastName": pick(LAST),
            "Company": lambda c: c.rng.choice([None] * 6 + COMPANIES),
            "Address": street,
            "customers.City": lambda c: PLACES[c.i % len(PLACES)].city,
            "customers.State": _state,
            "customers.Country": lambda c: CHINOOK_COUNTRY.get(
                PLACES[c.i % len(PLACES)].country, PLACES[c.i % len(PLACES)].country
            ),
            "PostalCode": lambda c: digits(c, 5),
            "Phone": lambda c: f"+{digits(c, 2)} {digits(c, 3)} {digits(c, 4)}",
            "Fax": lambda c: None if c.rng.random() < 0.7 else f"+{digits(c, 2)} {digits(c, 7)}",
            "Email": _email("FirstName", "LastName", "chinookcorp.com"),
            "customers.Email": _email("FirstName", "LastName", "example.com"),
            "SupportRepId": lambda c: c.rng.randint(3, 5),
            "InvoiceDate": lambda c: moment(c, 2021, 2025),
            "BillingAddress": billing("Address"),
            "BillingCity": billing("City"),
            "BillingState": billing("State"),
            "BillingCountry": billing("Country"),
            "BillingPostalCode": billing("PostalCode"),
            "Total": lambda c: round(c.rng.choice([0.99, 1.98, 3.96, 5.94, 8.91, 13.86]), 2),
            "invoice_items.UnitPrice": pick([0.99, 0.99, 0.99, 1.99]),
            "Quantity": lambda c: 1,
        },
    )


JOBS = _lines("""
    AD_PRES|President|20080|40000
    AD_VP|Administration Vice President|15000|30000
    AD_ASST|Administration Assistant|3000|6000
    FI_MGR|Finance Manager|8200|16000
    FI_ACCOUNT|Accountant|4200|9000
    AC_MGR|Accounting Manager|8200|16000
    AC_ACCOUNT|Public Accountant|4200|9000
    SA_MAN|Sales Manager|10000|20080
    SA_REP|Sales Representative|6000|12008
    PU_MAN|Purchasing Manager|8000|15000
    PU_CLERK|Purchasing Clerk|2500|5500
    ST_MAN|Stock Manager|5500|8500
    ST_CLERK|Stock Clerk|2008|5000
    SH_CLERK|Shipping Clerk|2500|5500
    IT_PROG|Programmer|4000|10000
    MK_MAN|Marketing Manager|9000|15000
    MK_REP|Marketing Representative|4000|9000
    HR_REP|Human Resources Representative|4000|9000
    PR_REP|Public Relations Representative|4500|10500
""")
DEPARTMENTS = _words(
    "Administration, Marketing, Purchasing, Human Resources, Shipping, IT, Public Relations, "
    "Sales, Executive, Finance, Accounting, Treasury, Corporate Tax, Control And Credit, "
    "Shareholder Services, Benefits, Manufacturing, Construction, Contracting, Operations, "
    "IT Support, NOC, IT Helpdesk, Government Sales, Retail Sales, Recruiting, Payroll"
)
LOCATIONS = _lines("""
    1297 Via Cola di Rie|00989|Roma||IT
    93091 Calle della Testa|10934|Venice||IT
    2017 Shinjuku-ku|1689|Tokyo|Tokyo Prefecture|JP
    9450 Kamiya-cho|6823|Hiroshima||JP
    2014 Jabberwocky Rd|26192|Southlake|Texas|US
    2011 Interiors Blvd|99236|South San Francisco|California|US
    2007 Zagora St|50090|South Brunswick|New Jersey|US
    2004 Charade Rd|98199|Seattle|Washington|US
    147 Spadina Ave|10934|Toronto|Ontario|CA
    6092 Boxwood St|36720|Whitehorse|Yukon|CA
    40-5-12 Laogianggen|190518|Beijing||CN
    1298 Vileparle (E)|490231|Bombay|Maharashtra|IN
    12-98 Victoria Street|2901|Sydney|New South Wales|AU
    198 Clementi North|540198|Singapore||SG
    8204 Arthur St|11932|London||UK
    Magdalen Centre, The Oxford Science Park|9999|Oxford|Oxford|UK
    9702 Chester Road|09629850293|Stretford|Manchester|UK
    Schwanthalerstr. 7031|80925|Munich|Bavaria|DE
    Rua Frei Caneca 1360|01307002|Sao Paulo|Sao Paulo|BR
    20 Rue des Corps-Saints|1730|Geneva|Geneve|CH
    Murtenstrasse 921|3095|Bern|BE|CH
    Pieter Breughelstraat 837|3029SK|Utrecht|Utrecht|NL
    Mariano Escobedo 9991|11932|Mexico City|Distrito Federal|MX
""")
WAREHOUSES = [
    ("Southlake, Texas", 5),
    ("San Francisco", 6),
    ("New Jersey", 7),
    ("Seattle, Washington", 8),
    ("Toronto", 9),
    ("Sydney", 13),
    ("Mexico City", 23),
    ("Beijing", 11),
    ("Bombay", 12),
]
CATEGORIES = _lines("""
    Hardware|computer hardware and parts|
    Software|operating systems, office and developer software|
    Office Equipment|machines for the office|
    Monitors|LCD and LED displays|1
    Printers|laser and inkjet printers|3
    Storage|hard disks, tapes and flash memory|1
    Networking|routers, switches and cabling|1
    Accessories|keyboards, mice and adapters|1
    Furniture|desks and chairs|3
    Stationery|paper, toner and supplies|3
    Operating Systems|server and desktop operating systems|2
    Development Tools|compilers, databases and IDEs|2
""")
PRODUCT_BASES = _words(
    "LCD Monitor, LED Monitor, Hard Disk, SSD Drive, Laser Printer, Inkjet Printer, Keyboard, "
    "Mouse, Docking Station, Network Switch, Router, Tape Drive, Memory Module, Motherboard, "
    "Graphics Card, Sound Card, Modem, Desk, Office Chair, Filing Cabinet, Toner Cartridge, "
    "Copy Paper, Database Server License, Spreadsheet Suite, Compiler Kit, Web Server, "
    "Backup Software, Antivirus, Projector, Webcam, Headset, Scanner, UPS Battery, Cable Kit"
)
SUPPLIERS = _words(
    "Acme Components, Globex Supply, Initech Hardware, Northwind Traders, Contoso Ltd, "
    "Fabrikam Inc, Tailspin Toys, Wide World Importers, Litware Inc, Adventure Works Cycles, "
    "Proseware Inc, Fourth Coffee, Coho Winery, Lucerne Publishing, Margie's Travel, "
    "Trey Research, Wingtip Toys, Alpine Ski House, Blue Yonder Airlines, City Power & Light, "
    "Consolidated Messenger, Graphic Design Institute, Humongous Insurance, Southridge Video, "
    "Woodgrove Bank, Tokyo Traders, Exotic Liquids, Pavlova Ltd, Leka Trading, Nord-Ost-Fisch"
)
INCOME = _words(
    "A: Below 30000, B: 30000 - 49999, C: 50000 - 69999, D: 70000 - 89999, "
    "E: 90000 - 109999, F: 110000 - 129999, G: 130000 - 149999, "
    "H: 150000 - 169999, I: 170000 - 189999, J: 190000 - 249999, "
    "K: 250000 - 299999, L: 300000 and above"
)


def _hire(c: Ctx) -> Any:
    return None if c.i == 0 else c.rng.randint(1, min(c.i, 12))


def erp() -> Spec:
    jobs = [j.split("|") for j in JOBS]
    locations = [loc.split("|") for loc in LOCATIONS]
    categories = [cat.split("|") for cat in CATEGORIES]

    def place(c: Ctx) -> Place:
        return PLACES[c.i % len(PLACES)]

    def product(c: Ctx) -> dict[str, Any]:
        return c.made["products"][c.row["product_id"] - 1]

    return Spec(
        rows={
            "regions": 4,
            "countries": len(COUNTRIES),
            "locations": len(LOCATIONS),
            "jobs": len(JOBS),
            "departments": len(DEPARTMENTS),
            "employees": 107,
            "job_history": 40,
            "customers": len(PLACES),
            "warehouses": len(WAREHOUSES),
            "product_categories": len(CATEGORIES),
            "suppliers": len(SUPPLIERS),
            "products": 288,
            "product_descriptions": 900,
            "inventories": 1100,
            "promotions": 5,
            "orders": 1500,
            "order_items": 4000,
            "shippers": 5,
            "shipments": 1300,
            "invoices": 1400,
            "payments": 1200,
            "purchase_orders": 300,
            "purchase_order_lines": 900,
        },
        rules={
            "region_name": REGIONS,
            "countries.country_id": [c[1] for c in COUNTRIES],
            "country_name": [
                {"United States": "United States of America"}.get(c[0], c[0]) for c in COUNTRIES
            ],
            "countries.region_id": [REGIONS.index(c[2]) + 1 for c in COUNTRIES],
            "locations.street_address": [loc[0] for loc in locations],
            "locations.postal_code": [loc[1] for loc in locations],
            "locations.city": [loc[2] for loc in locations],
            "locations.state_province": [loc[3] or None for loc in locations],
            "locations.country_id": [loc[4] for loc in locations],
            "jobs.job_id": [j[0] for j in jobs],
            # Employee 1 is the president, as in Oracle's HR sample.
            "employees.job_id": lambda c: "AD_PRES" if c.i == 0 else c.rng.choice(jobs[1:])[0],
            "job_title": [j[1] for j in jobs],
            "min_salary": [int(j[2]) for j in jobs],
            "max_salary": [int(j[3]) for j in jobs],
            "department_name": DEPARTMENTS,
            "departments.manager_id": lambda c: c.rng.randint(1, 107),
            "first_name": pick(FIRST),
            "last_name": pick(LAST),
            "employees.email": lambda c: (c.row["first_name"][0] + c.row["last_name"]).upper(),
            "employees.phone_number": lambda c: f"515.{digits(c, 3)}.{digits(c, 4)}",
            "hire_date": lambda c: day(c, 2010, 2024),
            "salary": lambda c: c.rng.randrange(2100, 24000, 100),
            "commission_pct": lambda c: (
                c.rng.choice([0.1, 0.15, 0.2, 0.25, 0.3])
                if c.row["job_id"].startswith("SA_")
                else None
            ),
            "employees.manager_id": _hire,
            "start_date": lambda c: day(c, 2005, 2015),
            "end_date": lambda c: day(c, 2016, 2023),
            "cust_first_name": pick(FIRST),
            "cust_last_name": pick(LAST),
            "customers.street_address": street,
            "customers.postal_code": lambda c: digits(c, 5),
            "customers.city": lambda c: place(c).city,
            "customers.state_province": _state,
            "customers.country_id": lambda c: place(c).iso,
            "customers.phone_number": lambda c: f"+1 {digits(c, 3)} {digits(c, 3)} {digits(c, 4)}",
            "credit_limit": pick([100, 300, 500, 700, 1200, 1500, 2000, 2500, 3500, 5000]),
            "cust_email": _email("cust_first_name", "cust_last_name", "example.net"),
            "account_mgr_id": lambda c: c.rng.randint(1, 107),
            "date_of_birth": lambda c: day(c, 1945, 2002),
            "marital_status": pick(["single", "married"]),
            "gender": pick(["M", "F"]),
            "income_level": pick(INCOME),
            "warehouse_name": [w[0] for w in WAREHOUSES],
            "warehouses.location_id": [w[1] for w in WAREHOUSES],
            "category_name": [cat[0] for cat in categories],
            "category_description": [cat[1] for cat in categories],
            "parent_category_id": [int(cat[2]) if cat[2] else None for cat in categories],
            "supplier_name": SUPPLIERS,
            "contact_name": lambda c: f"{c.rng.choice(FIRST)} {c.rng.choice(LAST)}",
            "phone": lambda c: digits(c, 10),
            "product_name": lambda c: (
                f"{PRODUCT_BASES[c.i % len(PRODUCT_BASES)]} "
                f"{['S', 'M', 'L', 'XL', 'Pro', 'Plus', 'Lite'][c.i % 7]}/{100 + c.i}"
            ),
            "product_description": lambda c: (
                f"{c.row['product_name']}, "
                f"{c.rng.choice(['refurbished', 'new', 'bulk pack', 'enterprise edition'])}"
            ),
            "weight_class": lambda c: c.rng.randint(1, 5),
            "product_status": pick(
                ["orderable", "orderable", "planned", "under development", "obsolete"]
            ),
            "list_price": lambda c: c.rng.randrange(5, 5000),
            "min_price": lambda c: round(c.row["list_price"] * 0.8),
            "model_year": lambda c: str(c.rng.randint(2015, 2025)),
            "language_id": pick(["US", "F", "D", "E", "I", "JA", "ZHS", "PT", "NL"]),
            "translated_name": lambda c: f"{product(c)['product_name']} ({c.row['language_id']})",
            "quantity_on_hand": lambda c: c.rng.randint(0, 400),
            "promo_name": _words(
                "everyday low price, blowout sale, holiday clearance, back to school, spring sale"
            ),
            "order_date": lambda c: day(c, 2019, 2025),
            "order_mode": pick(["direct", "online"]),
            "order_status": lambda c: c.rng.randint(0, 10),
            "order_total": lambda c: round(c.rng.uniform(10, 20000), 2),
            "sales_rep_id": lambda c: c.rng.randint(1, 107),
            "promotion_id": lambda c: c.rng.choice([None, None, None, 1, 2, 3, 4, 5]),
            "line_item_id": lambda c: c.rng.randint(1, 6),
            "unit_price": lambda c: c.rng.randrange(5, 5000),
            "quantity": lambda c: c.rng.randint(1, 50),
            "company_name": _words(
                "Speedy Express, United Package, Federal Shipping, Blue Dart, Nippon Express"
            ),
            "shipped_date": lambda c: day(c, 2019, 2025),
            "tracking_number": lambda c: digits(c, 12),
            "invoice_date": lambda c: day(c, 2019, 2025),
            "amount_due": lambda c: round(c.rng.uniform(10, 20000), 2),
            "invoices.status": pick(["paid", "paid", "open", "overdue", "void"]),
            "payment_date": lambda c: day(c, 2019, 2025),
            "amount": lambda c: round(c.rng.uniform(10, 20000), 2),
            "method": pick(["credit card", "wire transfer", "check", "cash"]),
            "purchase_orders.order_date": lambda c: day(c, 2019, 2025),
            "purchase_orders.status": pick(["received", "pending", "cancelled"]),
            "unit_cost": lambda c: c.rng.randrange(2, 4000),
        },
    )


SPECS: dict[str, Callable[[], Spec]] = {"sakila": sakila, "chinook": chinook, "erp": erp}


def build(name: str, out: Path, seed: int = SEED) -> Path:
    """Write `out/<name>.db` afresh from `<name>.sql` and `seed`."""
    path = out / f"{name}.db"
    path.unlink(missing_ok=True)
    connection = sqlite3.connect(path)
    try:
        connection.executescript((HERE / f"{name}.sql").read_text())
        fill(connection, SPECS[name](), f"{name}:{seed}")
        connection.commit()
    finally:
        connection.close()
    return path


# ---------------------------------------------------------------------------------------------
# Labels, computed from the gold SQL; the split, computed from the question text.


def schema(name: str) -> dict[str, dict[str, str]]:
    """{table: {column: declared type}} of `<name>.sql`, spelled as the DDL spells them."""
    connection = sqlite3.connect(":memory:")
    try:
        connection.executescript((HERE / f"{name}.sql").read_text())
        tables = [
            t
            for (t,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid"
            )
        ]
        return {
            t: {c[1]: c[2] for c in connection.execute(f'PRAGMA table_info("{t}")')} for t in tables
        }
    finally:
        connection.close()


def label(sql: str, tables: dict[str, dict[str, str]]) -> dict[str, list[str]]:
    """Tables and `table.column`s the query references, and the string literals it compares
    with `=`, `!=` or `IN` to a column in a WHERE or ON clause, as `table.column=Value`."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.optimizer.qualify import qualify

    # sqlglot folds SQLite identifiers to lower case; labels keep the DDL's spelling.
    spelled = {t.lower(): t for t in tables}
    column_spelled = {(t.lower(), c.lower()): c for t, cs in tables.items() for c in cs}
    lowered = {t.lower(): {c.lower(): k for c, k in cs.items()} for t, cs in tables.items()}
    tree = qualify(
        sqlglot.parse_one(sql, read="sqlite"),
        schema=lowered,
        dialect="sqlite",
        expand_stars=False,
        quote_identifiers=False,
    )
    aliases: dict[str, str] = {}
    found_tables: list[str] = []
    for table in tree.find_all(exp.Table):
        name = spelled[table.name.lower()]
        alias = (table.alias or table.name).lower()
        if aliases.setdefault(alias, name) != name:
            msg = f"alias {alias!r} names both {aliases[alias]} and {name}: {sql}"
            raise ValueError(msg)
        found_tables.append(name)

    def qualified(column: exp.Column) -> str | None:
        table = aliases.get(column.table.lower())
        if table is None:  # a derived table's column: its own columns are labelled inside
            return None
        return f"{table}.{column_spelled[(table.lower(), column.name.lower())]}"

    columns = [q for c in tree.find_all(exp.Column) if (q := qualified(c))]
    values = []
    for node in tree.find_all(exp.EQ, exp.NEQ, exp.In):
        if not node.find_ancestor(exp.Where, exp.Join):
            continue
        sides = (
            [node.this, node.expression]
            if not isinstance(node, exp.In)
            else [node.this, *node.expressions]
        )
        column = next((s for s in sides if isinstance(s, exp.Column)), None)
        if column is None or (where := qualified(column)) is None:
            continue
        values += [f"{where}={s.this}" for s in sides if isinstance(s, exp.Literal) and s.is_string]
    return {"tables": _unique(found_tables), "columns": _unique(columns), "values": _unique(values)}


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def split(questions: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Order by sha1 of the question text; even places tune, odd places are held out."""
    ordered = sorted(questions, key=lambda q: hashlib.sha1(q["q"].encode()).hexdigest())
    return ordered[0::2], ordered[1::2]


HEADER = {
    "questions": "# {name}: questions and gold SQL written by hand; tables/columns/values are\n"
    "# computed from the SQL by `python build.py --label` (see README.md).\n",
    "tuning": "# {name}: the tuning half (sha1 split, see README.md). Tune on this one only.\n",
    "heldout": "# {name}: the held-out half (sha1 split, see README.md). Run only at the end,\n"
    "# once; never tune on it.\n",
}


def load(name: str, part: str = "questions") -> list[dict[str, Any]]:
    import yaml

    data = yaml.safe_load((HERE / f"{name}.{part}.yaml").read_text())
    return list(data["questions"])


def save(name: str, part: str, questions: list[dict[str, Any]]) -> None:
    import yaml

    body = yaml.safe_dump(
        {"questions": questions},
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=None,
        width=1_000_000,
    )
    (HERE / f"{name}.{part}.yaml").write_text(HEADER[part].format(name=name) + body)


def relabel(name: str) -> None:
    tables = schema(name)
    questions = [{"q": q["q"], "sql": q["sql"], **label(q["sql"], tables)} for q in load(name)]
    save(name, "questions", questions)


def main(argv: list[str]) -> None:
    if argv == ["--label"]:
        for name in DATABASES:
            relabel(name)
    elif argv == ["--split"]:
        for name in DATABASES:
            tuning, heldout = split(load(name))
            save(name, "tuning", tuning)
            save(name, "heldout", heldout)
    elif len(argv) == 1 and not argv[0].startswith("-"):
        out = Path(argv[0])
        out.mkdir(parents=True, exist_ok=True)
        for name in DATABASES:
            build(name, out)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
