"""Internal. The periods of the pipeline's `filters` vocabulary, as `filter_rows` reads them: a
year "2024", a half "2024-H2", a quarter "2024-Q3", a month "2024-03", a day "2024-03-15", days
from one to another "2024-05-01..2024-05-15"; and the period a question names in words ("the
second half of 2024", "Q3 2024", "in March 2024", "from 2024-05-01 through 2024-05-15")."""

from __future__ import annotations

import re
from datetime import date

_PERIOD = re.compile(
    r"^(?P<year>\d{4})(?:-(?:H(?P<half>[12])|Q(?P<quarter>[1-4])"
    r"|(?P<month>0[1-9]|1[0-2])(?:-(?P<day>\d{2}))?))?$"
)
_MONTHS = [
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
]  # fmt: skip
_ORDINALS = ["first", "second", "third", "fourth"]
_NTH = ["1st", "2nd", "3rd", "4th"]
_YEAR = re.compile(r"(?<!\d)((?:19|20)\d{2})(?!\d)")
_DAY = re.compile(r"(?<![\d.])((?:19|20)\d{2}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01]))(?![\d.])")
_OPEN = re.compile(r"\b(?:since|after|before|until|till|from|starting|through|up to)\b")
_RANGE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.\.(\d{4}-\d{2}-\d{2})$")


def period_bounds(period: str) -> tuple[date, date] | None:
    """The first and last day of a period ("2024", "2024-H2", "2024-Q3", "2024-03",
    "2024-03-15", "2024-05-01..2024-05-15"); None for text that is not one."""
    days = _RANGE.match(period.strip())
    if days is not None:
        try:
            start, end = date.fromisoformat(days[1]), date.fromisoformat(days[2])
        except ValueError:
            return None
        return (start, end) if start <= end else None
    match = _PERIOD.match(period.strip().upper())
    if match is None:
        return None
    year = int(match["year"])
    try:
        if match["day"]:
            day = date(year, int(match["month"]), int(match["day"]))
            return day, day
    except ValueError:
        return None
    if match["half"]:
        first, months = 6 * int(match["half"]) - 5, 6
    elif match["quarter"]:
        first, months = 3 * int(match["quarter"]) - 2, 3
    elif match["month"]:
        first, months = int(match["month"]), 1
    else:
        return date(year, 1, 1), date(year, 12, 31)
    after = first - 1 + months
    end = date(year + after // 12, after % 12 + 1, 1)
    return date(year, first, 1), date.fromordinal(end.toordinal() - 1)


def period_cued(period: str, question: str) -> bool:
    """`question` (lowercase) names `period`: its year, and its half, quarter or month; and
    no other year (the 1.5B kept "2024" of "from 2023 to 2024", which compares the two); a
    range of days, both its days."""
    days = _RANGE.match(period.strip())
    if days is not None:
        return days[1] in question and days[2] in question
    match = _PERIOD.match(period.strip().upper())
    if match is None or years_named(question) != [match["year"]]:
        return False
    if period.strip().lower() in question:
        return True
    for part, cue in (("half", _half_cue), ("quarter", _quarter_cue), ("month", _month_cue)):
        if match[part]:
            return re.search(cue(int(match[part])), question) is not None
    return True


def years_named(question: str) -> list[str]:
    """The distinct years `question` (lowercase) names, in order."""
    return list(dict.fromkeys(_YEAR.findall(question)))


def named_period(question: str) -> str | None:
    """The one period `question` (lowercase) names, in the vocabulary's form; None when it
    names none, or periods of more than one year ("from 2023 to 2024" is a comparison, not a
    filter). A half, quarter or month of that year is the period when exactly one is named;
    two dates written as such ("2024-05-01 through 2024-05-15") are the days from one to the
    other, and one is that day unless it bounds an open range ("since 2024-05-01": none of
    this vocabulary's periods); a month's number in a date is no month."""
    days: list[str] = sorted(set(_DAY.findall(question)))
    if len(days) == 2:
        return f"{days[0]}..{days[1]}"
    if len(days) == 1:
        return None if _OPEN.search(question) else days[0]
    years = years_named(question)
    if len(years) != 1:
        return None
    year = years[0]
    parts = [
        f"{year}-{form.format(n)}"
        for form, cue, count in (("H{}", _half_cue, 2), ("Q{}", _quarter_cue, 4))
        for n in range(1, count + 1)
        if re.search(cue(n), question)
    ]
    parts += [f"{year}-{n:02d}" for n in range(1, 13) if re.search(_month_cue(n), question)]
    return parts[0] if len(parts) == 1 else year if not parts else None


def _half_cue(n: int) -> str:
    return rf"\bh{n}\b|\b(?:{_ORDINALS[n - 1]}|{_NTH[n - 1]}) half\b"


def _quarter_cue(n: int) -> str:
    return rf"\bq{n}\b|\bquarter {n}\b|\b(?:{_ORDINALS[n - 1]}|{_NTH[n - 1]}) quarter\b"


def _month_cue(n: int) -> str:
    month = _MONTHS[n - 1]
    # "may" is a word as well as a month: it counts only beside a year.
    if month == "may":
        return r"\bmay,? (?:19|20)\d{2}\b|\b(?:19|20)\d{2}-05\b"
    return rf"\b(?:{month}|{month[:3]}\.?)(?![a-z])|\b(?:19|20)\d{{2}}-{n:02d}\b"
