"""The units a query's durations are written in (`WITHIN 1 week`): each
unit's seconds, and every spelling accepted for each."""

UNIT_SECONDS: dict[str, float] = {"ms": 0.001, "s": 1, "min": 60, "h": 3600, "day": 86400, "week": 604800}
_UNIT_SPELLINGS = {
    "ms": ("ms", "msec", "millisecond", "milliseconds"),
    "s": ("s", "sec", "secs", "second", "seconds"),
    "min": ("min", "mins", "minute", "minutes"),
    "h": ("h", "hr", "hrs", "hour", "hours"),
    "day": ("d", "day", "days"),
    "week": ("w", "week", "weeks"),
}
UNIT_ALIASES = {alias: unit for unit, aliases in _UNIT_SPELLINGS.items() for alias in aliases}
